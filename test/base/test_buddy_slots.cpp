// The staging region's buddy allocator (src/base/buddy_slots.hpp): slots of every level are
// disjoint and inside the region, a small slot splits one large slot only, and every slot given
// back merges into whole slots again.
#include "base/buddy_slots.hpp"

#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

namespace {

using ucxdt::BuddySlots;
using ucxdt::staging_level;

// The level both host and device staging take for a fragment: the smallest slot that holds it,
// never below 16 KiB nor a size that is not a whole number of 4 KiB pages.
TEST(StagingLevel, SmallestSlotThatHoldsTheBytes) {
    EXPECT_EQ(staging_level(1 << 20, 20480), 5);           // 32 KiB
    EXPECT_EQ(staging_level(1 << 20, 32768), 5);           // exactly a 32 KiB slot
    EXPECT_EQ(staging_level(1 << 20, 0), 6);               // the deepest: 16 KiB
    EXPECT_EQ(staging_level(1 << 20, 1 << 20), 0);         // a whole slot
    EXPECT_EQ(staging_level(1 << 20, 2 << 20), 0);         // larger than a slot: the caller's to refuse
    EXPECT_EQ(staging_level(32 << 20, 524288), 6);         // a 512 KiB message in 32 MiB device slots
    EXPECT_EQ(staging_level(3 << 20, 700000), 2);          // 768 KiB halves of 3 MiB
    EXPECT_EQ(staging_level(1000000, 1000), 0);            // halves not whole pages: no split
}

TEST(BuddySlots, SmallSlotsSplitOneLargeSlot) {
    BuddySlots b;
    b.reset(4, 3);
    const std::vector<int> a = b.take(1, 3);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(b.free_top(), 3);
    const std::vector<int> more = b.take(7, 3);  // the other seven eighths of the same slot
    ASSERT_EQ(more.size(), 7u);
    EXPECT_EQ(b.free_top(), 3);
    for (int s : more) EXPECT_EQ(s / 8, a[0] / 8) << "an eighth from another whole slot";
    EXPECT_EQ(b.take(1, 3).size(), 1u);
    EXPECT_EQ(b.free_top(), 2);
}

TEST(BuddySlots, ExhaustedLevelsGiveNothing) {
    BuddySlots b;
    b.reset(2, 1);
    EXPECT_EQ(b.take(5, 0).size(), 2u);
    EXPECT_TRUE(b.take(1, 1).empty());
    EXPECT_TRUE(b.take(1, 2).empty()) << "a level below the deepest";
    EXPECT_TRUE(b.take(1, -1).empty());
    b.give(1, 0);
    EXPECT_EQ(b.take(3, 1), (std::vector<int>{2, 3}));
}

TEST(BuddySlots, RandomTakesAndGivesStayDisjointAndMerge) {
    constexpr int kTop = 8, kLevels = 4, kUnits = kTop << kLevels;  // units: slots of the deepest level
    std::mt19937 rng(22);
    BuddySlots b;
    b.reset(kTop, kLevels);
    std::vector<std::pair<int, int>> held;  // (slot, level)
    std::vector<int> owner(kUnits, 0);
    for (int step = 0; step < 20000; ++step) {
        if (!held.empty() && rng() % 2) {
            const size_t i = rng() % held.size();
            const auto [s, l] = held[i];
            for (int u = s << (kLevels - l); u < (s + 1) << (kLevels - l); ++u) owner[u] = 0;
            b.give(s, l);
            held[i] = held.back();
            held.pop_back();
            continue;
        }
        const int l = static_cast<int>(rng() % (kLevels + 1));
        for (int s : b.take(static_cast<int>(rng() % 3) + 1, l)) {
            ASSERT_GE(s, 0);
            ASSERT_LT(s, kTop << l) << "outside the region";
            for (int u = s << (kLevels - l); u < (s + 1) << (kLevels - l); ++u) {
                ASSERT_EQ(owner[u], 0) << "slot " << s << " of level " << l << " overlaps one held";
                owner[u] = 1;
            }
            held.emplace_back(s, l);
        }
    }
    for (const auto &[s, l] : held) b.give(s, l);
    EXPECT_EQ(b.free_top(), kTop) << "freed halves did not merge into whole slots";
    EXPECT_EQ(b.take(kTop, 0).size(), static_cast<size_t>(kTop));
}

}  // namespace
