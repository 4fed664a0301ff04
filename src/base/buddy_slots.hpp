// Slots of several sizes carved from one staging region: a buddy allocator. The region holds
// `top` slots of the largest size (level 0); a slot of level l is half of one of level l - 1, and
// slot i of level l starts at i times its size, so that a peer finds it from the index and the
// size alone. Freed halves merge again, so that small messages do not keep large ones out for
// longer than they hold their slots.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ucxdt {

/// The smallest slot a staging region (host or device) splits its slots into.
constexpr int64_t kMinStagingSlot = 16 << 10;

/// The level of the smallest slot of a region of `slot_bytes` slots that holds `bytes`:
/// slot_bytes halved that many times, while the half stays a whole multiple of 4 KiB and at
/// least kMinStagingSlot (0 when `bytes` needs a whole slot; with `bytes` 0, the deepest level).
/// Each side of a rendezvous computes it for its own region from the fragment size.
inline int staging_level(int64_t slot_bytes, int64_t bytes) {
    int l = 0;
    for (int64_t half = slot_bytes / 2; half * 2 == slot_bytes && half % 4096 == 0 && half >= kMinStagingSlot && half >= bytes;
         half /= 2, ++l)
        slot_bytes = half;
    return l;
}

class BuddySlots {
public:
    /// `top` free slots of level 0, each splittable down to level `levels`.
    void reset(int top, int levels) {
        levels_ = levels;
        free_.assign(static_cast<std::size_t>(levels + 1), {});
        where_.assign(static_cast<std::size_t>(levels + 1), {});
        for (int l = 0; l <= levels; ++l) where_[static_cast<std::size_t>(l)].assign(static_cast<std::size_t>(top) << l, -1);
        for (int i = top - 1; i >= 0; --i) push(0, i);
    }
    /// Takes up to `want` free slots of `level` (none when none is free), splitting larger ones
    /// when that level has none; slot 0 is handed out first.
    std::vector<int> take(int want, int level) {
        std::vector<int> got;
        while (static_cast<int>(got.size()) < want) {
            const int s = take_one(level);
            if (s < 0) break;
            got.push_back(s);
        }
        return got;
    }
    /// Returns slot `slot` of `level`, merging it with its free buddy, level by level.
    void give(int slot, int level) {
        while (level > 0 && where_[static_cast<std::size_t>(level)][static_cast<std::size_t>(slot ^ 1)] >= 0) {
            erase(level, slot ^ 1);
            slot >>= 1;
            --level;
        }
        push(level, slot);
    }
    /// Free slots of level 0 (whole, unsplit): all of them once every slot is given back.
    int free_top() const { return static_cast<int>(free_[0].size()); }

private:
    int take_one(int level) {
        if (level < 0 || level > levels_) return -1;
        auto &f = free_[static_cast<std::size_t>(level)];
        if (!f.empty()) {
            const int s = f.back();
            erase(level, s);
            return s;
        }
        const int parent = take_one(level - 1);
        if (parent < 0) return -1;
        push(level, 2 * parent + 1);  // the other half stays free
        return 2 * parent;
    }
    void push(int level, int slot) {
        auto &f = free_[static_cast<std::size_t>(level)];
        where_[static_cast<std::size_t>(level)][static_cast<std::size_t>(slot)] = static_cast<int>(f.size());
        f.push_back(slot);
    }
    void erase(int level, int slot) {  // O(1): the last free slot takes its place in the list
        auto &f = free_[static_cast<std::size_t>(level)];
        auto &w = where_[static_cast<std::size_t>(level)];
        const int i = w[static_cast<std::size_t>(slot)];
        f[static_cast<std::size_t>(i)] = f.back();
        w[static_cast<std::size_t>(f.back())] = i;
        f.pop_back();
        w[static_cast<std::size_t>(slot)] = -1;
    }

    int levels_ = 0;
    std::vector<std::vector<int>> free_;   // per level: free slots, in no particular order
    std::vector<std::vector<int>> where_;  // per level: each slot's index in free_, -1 if not free
};

}  // namespace ucxdt
