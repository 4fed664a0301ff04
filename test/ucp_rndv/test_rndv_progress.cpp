// MPI's progress rule (MPI-4.1 §3.5) for staged host sends: a send whose receive is posted
// completes, however many earlier sends wait for receives not yet posted. Host layouts between
// two workers of one process, fragments as active messages (the default).
#include "harness/layout_buffer.hpp"
#include "harness/rndv_support.hpp"

#include <ucxdt/ucxdt_ucp.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::Buffer, T::packed, T::status_name, T::Type;

// Four staging slots of 16 KiB and 64 KiB non-contiguous messages (4 fragments, 2 slots each):
// the first sends, whose receives come last, take every slot there is. The last send's receive
// is posted first and must complete all the same (it once waited for a slot, with its RTS
// unsent, for ever); then the others' receives are posted and every byte arrives.
TEST(RndvProgress, SendWithPostedReceiveIsNotStarvedOfStaging) {
    T::RndvPair p{T::RndvConfig{1024, 16384, 2, 4}, std::chrono::seconds(20)};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();  // the HELLOs
    constexpr int kSends = 6;
    constexpr int64_t kBytes = 64 << 10;
    const auto t = L::vector(kBytes / 16, 2, 4, L::named(UCXDT_DOUBLE));
    Type h(*t);
    std::vector<Buffer> src, dst;
    for (int i = 0; i < kSends; ++i) src.emplace_back(*t, 1, 300 + i), dst.emplace_back(*t, 1, 400 + i);
    std::vector<ucxdt_status_ptr_t> sreqs;
    for (int i = 0; i < kSends; ++i) {
        sreqs.push_back(ucxdt_tag_send_nbx(p.ep[0], src[i].ptr(), 1, h.h, 0x70 + i, nullptr));
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreqs.back())) << ucxdt_last_error();
    }
    for (int i = 0; i < 200; ++i) p.progress();  // the first sends take the slots
    const int last = kSends - 1;
    ucxdt_status_ptr_t rlast = ucxdt_tag_recv_nbx(p.w[1], dst[last].ptr(), 1, h.h, 0x70 + last, ~0ull, nullptr);
    ASSERT_EQ(status_name(p.wait(rlast)), status_name(UCXDT_OK)) << "the receive posted first never completed";
    ASSERT_EQ(status_name(p.wait(sreqs[last])), status_name(UCXDT_OK));
    std::vector<ucxdt_status_ptr_t> rreqs;
    for (int i = 0; i < last; ++i) rreqs.push_back(ucxdt_tag_recv_nbx(p.w[1], dst[i].ptr(), 1, h.h, 0x70 + i, ~0ull, nullptr));
    for (int i = 0; i < last; ++i) {
        EXPECT_EQ(status_name(p.wait(rreqs[i])), status_name(UCXDT_OK)) << "receive " << i;
        EXPECT_EQ(status_name(p.wait(sreqs[i])), status_name(UCXDT_OK)) << "send " << i;
    }
    for (int i = 0; i < kSends; ++i) {
        const Buffer fresh(*t, 1, 400 + i);
        EXPECT_EQ(T::check_received(*t, 1, dst[i], fresh.bytes, packed(*t, src[i].ptr(), 1, kBytes), kBytes), "")
            << "message " << i;
    }
}

}  // namespace
