// The free slots of a staging region (host or device), handed out and returned by index.
#pragma once

#include <vector>

namespace ucxdt {

class SlotList {
public:
    /// Slots 0 .. n-1 free; slot 0 is handed out first.
    void reset(int n) {
        free_.clear();
        for (int i = n - 1; i >= 0; --i) free_.push_back(i);
    }
    /// Takes up to `want` free slots (none when all are taken).
    std::vector<int> take(int want) {
        std::vector<int> got;
        while (static_cast<int>(got.size()) < want && !free_.empty()) {
            got.push_back(free_.back());
            free_.pop_back();
        }
        return got;
    }
    void give(int slot) { free_.push_back(slot); }
    int free_count() const { return static_cast<int>(free_.size()); }

private:
    std::vector<int> free_;
};

}  // namespace ucxdt
