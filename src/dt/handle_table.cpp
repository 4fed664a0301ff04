#include "dt/handle_table.hpp"

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <vector>

namespace ucxdt::handles {

namespace {

// erasures(): at namespace scope, constant-initialized, so that reading it takes no guard of
// table()'s static.
std::atomic<uint64_t> g_erasures{0};

struct Slot {
    std::shared_ptr<Type> type;
    uint32_t generation = 0;  // bumped on every reuse; 0 is never a live generation
};

class Table {
public:
    Table() {
        // Slots 0 .. UCXDT_PRIMITIVE_LAST-1 hold the predefined types forever.
        for (int p = 0; p < UCXDT_PRIMITIVE_LAST; ++p) {
            slots_.push_back(Slot{std::const_pointer_cast<Type>(
                                      primitive_type(static_cast<ucxdt_primitive_t>(p))),
                                  1});
        }
    }

    ucxdt_type_t insert(std::shared_ptr<Type> t) {
        std::unique_lock lock(mutex_);
        uint32_t slot;
        if (!free_.empty()) {
            slot = free_.back();
            free_.pop_back();
        } else {
            if (slots_.size() >= UINT32_MAX) return UCXDT_TYPE_NULL;
            slot = static_cast<uint32_t>(slots_.size());
            slots_.emplace_back();
        }
        Slot &s = slots_[slot];
        if (++s.generation == 0) s.generation = 1;
        s.type = std::move(t);
        return encode(slot, s.generation);
    }

    std::shared_ptr<Type> lookup(ucxdt_type_t h) const {
        uint32_t slot, gen;
        decode(h, &slot, &gen);
        std::shared_lock lock(mutex_);
        if (slot >= slots_.size() || gen == 0 || slots_[slot].generation != gen) return nullptr;
        return slots_[slot].type;
    }

    bool erase(ucxdt_type_t h) {
        uint32_t slot, gen;
        decode(h, &slot, &gen);
        std::shared_ptr<Type> dead;  // released after the lock
        std::unique_lock lock(mutex_);
        if (slot < UCXDT_PRIMITIVE_LAST || slot >= slots_.size() || gen == 0 ||
            slots_[slot].generation != gen || !slots_[slot].type)
            return false;
        dead = std::move(slots_[slot].type);
        if (++slots_[slot].generation == 0) slots_[slot].generation = 1;
        free_.push_back(slot);
        g_erasures.fetch_add(1, std::memory_order_release);
        return true;
    }

    static ucxdt_type_t encode(uint32_t slot, uint32_t gen) {
        return reinterpret_cast<ucxdt_type_t>((static_cast<uintptr_t>(gen) << 32) | slot);
    }

    static void decode(ucxdt_type_t h, uint32_t *slot, uint32_t *gen) {
        auto v = reinterpret_cast<uintptr_t>(h);
        *slot = static_cast<uint32_t>(v & 0xffffffffu);
        *gen = static_cast<uint32_t>(v >> 32);
    }

private:
    mutable std::shared_mutex mutex_;
    std::vector<Slot> slots_;
    std::vector<uint32_t> free_;
};

Table &table() {
    static Table t;  // never destroyed before its users: function-local, constructed on use
    return t;
}

}  // namespace

ucxdt_type_t insert(std::shared_ptr<Type> t) { return table().insert(std::move(t)); }
std::shared_ptr<Type> lookup(ucxdt_type_t h) { return table().lookup(h); }
bool erase(ucxdt_type_t h) { return table().erase(h); }
uint64_t erasures() { return g_erasures.load(std::memory_order_acquire); }

ucxdt_type_t predefined(ucxdt_primitive_t p) {
    if (p < 0 || p >= UCXDT_PRIMITIVE_LAST) return UCXDT_TYPE_NULL;
    table();
    return Table::encode(static_cast<uint32_t>(p), 1);
}

bool is_predefined(ucxdt_type_t h) {
    uint32_t slot, gen;
    Table::decode(h, &slot, &gen);
    return slot < UCXDT_PRIMITIVE_LAST && gen == 1;
}

}  // namespace ucxdt::handles
