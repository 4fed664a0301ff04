// A byte buffer whose growth leaves the new bytes uninitialized: staging that is written in full
// before it is read (a packed stream, a tagged message) need not be zeroed first, which cost a
// memset of every small message.
#pragma once

#include <memory>
#include <vector>

namespace ucxdt {

/// std::allocator, except that value-initialization (vector::resize) leaves a char as it was.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = DefaultInitAllocator<U>;
    };
    DefaultInitAllocator() = default;
    template <class U>
    DefaultInitAllocator(const DefaultInitAllocator<U> &) noexcept {}
    template <class U>
    void construct(U *p) noexcept {
        ::new (static_cast<void *>(p)) U;
    }
    template <class U, class... Args>
    void construct(U *p, Args &&...args) {
        ::new (static_cast<void *>(p)) U(std::forward<Args>(args)...);
    }
};

/// Bytes that resize() does not zero.
using Bytes = std::vector<char, DefaultInitAllocator<char>>;

}  // namespace ucxdt
