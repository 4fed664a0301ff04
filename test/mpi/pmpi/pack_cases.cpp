// The PMPI check's local case: MPI_Pack and MPI_Unpack, which the interposer serves with
// ucxdt, against the standard's packed bytes.
#include "pmpi_case.hpp"

#include <algorithm>

namespace pmpi {

namespace {

// count elements of the send type packed at a nonzero position must be the reference
// walker's stream, and unpacked into the receive type must land where the walker puts them.
void pack_unpack(Case &c) {
    const Pair &p = *c.pair;
    const int k = static_cast<int>(p.count);
    MpiType st(*p.send), rt(*p.recv);
    Outbox out(*p.send, st.t, k, c.data_seed(c.rank));
    const Bytes want = sent_stream(*p.send, k, c.data_seed(c.rank));
    const int size = static_cast<int>(want.size());
    int room = 0;
    ok(MPI_Pack_size(k, st.t, c.comm, &room), "MPI_Pack_size");
    if (room < size)
        return c.fail("MPI_Pack_size " + std::to_string(room) + " < packed size " +
                      std::to_string(size));
    const int at = 1 + static_cast<int>(mix(c.seed, 5) % 9);
    Bytes packed(static_cast<size_t>(at + room));
    int pos = at;
    ok(MPI_Pack(out.ptr(), k, st.t, packed.data(), at + room, &pos, c.comm), "MPI_Pack");
    if (pos != at + size)
        return c.fail("MPI_Pack: position " + std::to_string(pos) + ", expected " +
                      std::to_string(at + size));
    const auto diff = std::mismatch(want.begin(), want.end(), packed.begin() + at);
    if (diff.first != want.end())
        return c.fail("MPI_Pack: packed byte " + std::to_string(diff.first - want.begin()) +
                      " differs from the reference walker's");
    Inbox in(*p.recv, rt.t, k, c.data_seed(c.rank, 1000));
    in.expect(*p.recv, k, in.origin, want);
    int in_pos = at;
    ok(MPI_Unpack(packed.data(), pos, &in_pos, in.ptr(), k, rt.t, c.comm), "MPI_Unpack");
    if (in_pos != pos)
        c.fail("MPI_Unpack: position " + std::to_string(in_pos) + ", expected " +
               std::to_string(pos));
    c.check(in, "MPI_Unpack");
}

}  // namespace

std::vector<Mode> local_modes() {
    Mode pack{"pack_unpack", pack_unpack};
    pack.via_pml = false;
    return {pack};
}

}  // namespace pmpi
