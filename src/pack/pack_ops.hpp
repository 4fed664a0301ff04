// The four packing operations behind both the synchronous API (ucxdt.h) and the
// stream-ordered one (ucxdt_cuda.h): argument checks, then transfer(). stream == nullptr:
// complete on return.
#pragma once

#include <ucxdt/ucxdt.h>

#include <cuda_runtime_api.h>

namespace ucxdt::ops {

ucxdt_status_t pack(const void *inbuf, int64_t incount, ucxdt_type_t type, void *outbuf,
                    int64_t outsize, int64_t *position, const cudaStream_t *stream);
ucxdt_status_t unpack(const void *inbuf, int64_t insize, int64_t *position, void *outbuf,
                      int64_t outcount, ucxdt_type_t type, const cudaStream_t *stream);
ucxdt_status_t pack_range(const void *buf, int64_t count, ucxdt_type_t type, int64_t offset,
                          void *packed, int64_t length, const cudaStream_t *stream);
ucxdt_status_t unpack_range(const void *packed, int64_t offset, int64_t length, void *buf,
                            int64_t count, ucxdt_type_t type, const cudaStream_t *stream);

}  // namespace ucxdt::ops
