/* Uses an installed ucxdt through its public C header only: a strided vector of int32 is
 * packed, the packed bytes are checked, and unpacking must restore exactly the type map's
 * bytes while leaving the gaps alone. Exit status 0 means the install works. */
#include <ucxdt/ucxdt.h>

#include <stdio.h>
#include <string.h>

enum { COUNT = 4, BLOCK = 2, STRIDE = 3, N = COUNT * STRIDE };

static int check(ucxdt_status_t st, const char *what)
{
    if (st != UCXDT_OK) {
        fprintf(stderr, "%s: %s (%s)\n", what, ucxdt_status_string(st), ucxdt_last_error());
        return 1;
    }
    return 0;
}

int main(void)
{
    int32_t src[N], dst[N], packed[COUNT * BLOCK];
    ucxdt_type_t vec = UCXDT_TYPE_NULL;
    int64_t size = 0, position = 0;

    for (int i = 0; i < N; ++i) {
        src[i] = 1000 + i;
        dst[i] = -1;
    }
    if (check(ucxdt_type_vector(COUNT, BLOCK, STRIDE, ucxdt_type_primitive(UCXDT_INT32), &vec),
              "vector") ||
        check(ucxdt_type_commit(vec), "commit") || check(ucxdt_pack_size(1, vec, &size), "pack_size"))
        return 1;
    if (size < (int64_t)sizeof(packed)) {
        fprintf(stderr, "pack_size %lld < %zu\n", (long long)size, sizeof(packed));
        return 1;
    }
    if (check(ucxdt_pack(src, 1, vec, packed, sizeof(packed), &position), "pack"))
        return 1;
    if (position != (int64_t)sizeof(packed)) {
        fprintf(stderr, "pack advanced position to %lld\n", (long long)position);
        return 1;
    }
    for (int b = 0; b < COUNT; ++b)
        for (int j = 0; j < BLOCK; ++j)
            if (packed[b * BLOCK + j] != src[b * STRIDE + j]) {
                fprintf(stderr, "packed[%d] = %d\n", b * BLOCK + j, (int)packed[b * BLOCK + j]);
                return 1;
            }

    position = 0;
    if (check(ucxdt_unpack(packed, sizeof(packed), &position, dst, 1, vec), "unpack"))
        return 1;
    for (int i = 0; i < N; ++i) {
        int in_map = i % STRIDE < BLOCK && i / STRIDE < COUNT;
        if (dst[i] != (in_map ? src[i] : -1)) {
            fprintf(stderr, "dst[%d] = %d after unpack\n", i, (int)dst[i]);
            return 1;
        }
    }
    if (check(ucxdt_type_free(&vec), "free") || vec != UCXDT_TYPE_NULL)
        return 1;
    printf("ucxdt install consumer: ok\n");
    return 0;
}
