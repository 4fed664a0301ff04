// Byte addresses of a layout: buffer + displacement, formed as an integer, because the buffer
// may be NULL (MPI_BOTTOM) with absolute displacements, and a displacement may point before
// the buffer; pointer arithmetic outside an object would be undefined.
#pragma once

#include <cstdint>

namespace ucxdt {

template <typename T>
inline T *at(T *base, int64_t disp) {
    return reinterpret_cast<T *>(reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(disp));
}

}  // namespace ucxdt
