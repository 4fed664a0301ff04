/* Every predefined datatype this Open MPI defines moves under the PML being tested (MPI-4.1
 * §3.2.2, §5.1.7 pair types, §19.1.9 Fortran types, §19.3 C++ types), on host memory or, with
 * the argument `device`, GPU memory (check.h): rank 0
 * sends 3 elements of each, alone and as a vector of 3 blocks of 2 with a stride of 3, and rank
 * 1 receives them into the same layout. The bytes compared are the packed ones (MPI_Pack), so
 * pair types' padding, which no MPI moves, is not compared. Types this Open MPI leaves out
 * (MPI_DATATYPE_NULL, or not declared where its Fortran compiler lacks them) are skipped.
 * Prints "predefined_types: OK" on rank 0 when all passed; exits non-zero otherwise. */
#define PROGRAM "predefined_types"
#include "check.h"

#define T(x) {x, #x}

/* Sends 3 elements of `t` (alone, then as a vector) from rank 0 to rank 1 and compares what rank
 * 1 received with what rank 0 sent, packed. */
static void move(MPI_Datatype t, const char *name, int me) {
    MPI_Datatype vec;
    MPI_Type_vector(3, 2, 3, t, &vec);
    MPI_Type_commit(&vec);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    const struct { MPI_Datatype type; int count; const char *how; } forms[] = {{t, 3, "alone"}, {vec, 1, "in a vector"}};
    for (int f = 0; f < 2; ++f) {
        unsigned char buf[9 * 64], packed[2][9 * 64];
        memset(packed, 0, sizeof packed);  /* MPI_Pack need not write an x87 long double's 6 pad bytes */
        if (extent > 64) {
            if (me == 0) fprintf(stderr, "predefined_types: %s has an extent of %ld bytes\n", name, (long)extent), ++failures;
            break;
        }
        for (int i = 0; i < (int)sizeof buf; ++i) buf[i] = (unsigned char)(me == 0 ? 31 * i + 7 : 0);
        int rc = MPI_SUCCESS, pos = 0;
        unsigned char *message = buffer_from(buf, sizeof buf);
        if (me == 0) {
            rc = MPI_Send(message, forms[f].count, forms[f].type, 1, 0, MPI_COMM_WORLD);
            MPI_Pack(buf, forms[f].count, forms[f].type, packed[0], sizeof packed[0], &pos, MPI_COMM_WORLD);
            MPI_Send(packed[0], pos, MPI_PACKED, 1, 1, MPI_COMM_WORLD);
        } else if (me == 1) {
            rc = MPI_Recv(message, forms[f].count, forms[f].type, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            buffer_copy(buf, message, sizeof buf);
            MPI_Pack(buf, forms[f].count, forms[f].type, packed[1], sizeof packed[1], &pos, MPI_COMM_WORLD);
            MPI_Recv(packed[0], sizeof packed[0], MPI_PACKED, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS && memcmp(packed[0], packed[1], pos) != 0) rc = -1;
        }
        buffer_free(message);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "predefined_types: rank %d, %s %s: %s\n", me, name, forms[f].how,
                    rc == -1 ? "other bytes arrived" : "the call failed");
            ++failures;
        }
    }
    MPI_Type_free(&vec);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    memory_init(argc > 1 ? argv[1] : NULL);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const struct { MPI_Datatype t; const char *name; } types[] = {
        T(MPI_CHAR), T(MPI_SHORT), T(MPI_INT), T(MPI_LONG), T(MPI_LONG_LONG_INT), T(MPI_LONG_LONG),
        T(MPI_SIGNED_CHAR), T(MPI_UNSIGNED_CHAR), T(MPI_UNSIGNED_SHORT), T(MPI_UNSIGNED), T(MPI_UNSIGNED_LONG),
        T(MPI_UNSIGNED_LONG_LONG), T(MPI_FLOAT), T(MPI_DOUBLE), T(MPI_LONG_DOUBLE), T(MPI_WCHAR), T(MPI_C_BOOL),
        T(MPI_INT8_T), T(MPI_INT16_T), T(MPI_INT32_T), T(MPI_INT64_T), T(MPI_UINT8_T), T(MPI_UINT16_T),
        T(MPI_UINT32_T), T(MPI_UINT64_T), T(MPI_AINT), T(MPI_COUNT), T(MPI_OFFSET), T(MPI_C_COMPLEX),
        T(MPI_C_FLOAT_COMPLEX), T(MPI_C_DOUBLE_COMPLEX), T(MPI_C_LONG_DOUBLE_COMPLEX), T(MPI_BYTE), T(MPI_PACKED),
        T(MPI_FLOAT_INT), T(MPI_DOUBLE_INT), T(MPI_LONG_INT), T(MPI_2INT), T(MPI_SHORT_INT), T(MPI_LONG_DOUBLE_INT),
        T(MPI_CXX_BOOL), T(MPI_CXX_FLOAT_COMPLEX), T(MPI_CXX_DOUBLE_COMPLEX), T(MPI_CXX_LONG_DOUBLE_COMPLEX),
        T(MPI_CHARACTER), T(MPI_LOGICAL), T(MPI_INTEGER), T(MPI_REAL), T(MPI_DOUBLE_PRECISION), T(MPI_COMPLEX),
        T(MPI_DOUBLE_COMPLEX), T(MPI_2REAL), T(MPI_2DOUBLE_PRECISION), T(MPI_2INTEGER),
#if OMPI_HAVE_FORTRAN_LOGICAL1
        T(MPI_LOGICAL1), T(MPI_LOGICAL2), T(MPI_LOGICAL4), T(MPI_LOGICAL8),
#endif
#if OMPI_HAVE_FORTRAN_INTEGER1
        T(MPI_INTEGER1), T(MPI_INTEGER2), T(MPI_INTEGER4), T(MPI_INTEGER8),
#endif
#if OMPI_HAVE_FORTRAN_INTEGER16
        T(MPI_INTEGER16),
#endif
#if OMPI_HAVE_FORTRAN_REAL2
        T(MPI_REAL2), T(MPI_COMPLEX4),
#endif
#if OMPI_HAVE_FORTRAN_REAL4
        T(MPI_REAL4), T(MPI_REAL8), T(MPI_COMPLEX8), T(MPI_COMPLEX16),
#endif
#if OMPI_HAVE_FORTRAN_REAL16
        T(MPI_REAL16), T(MPI_COMPLEX32),
#endif
    };
    int moved = 0;
    for (size_t i = 0; i < sizeof types / sizeof *types; ++i) {
        if (types[i].t == MPI_DATATYPE_NULL) continue;
        move(types[i].t, types[i].name, me);
        ++moved;
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0 && all == 0) printf("predefined_types: %d types moved\npredefined_types: OK\n", moved);
    MPI_Finalize();
    return all == 0 && n >= 2 ? 0 : 1;
}
