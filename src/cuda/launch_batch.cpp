#include "cuda/launch_batch.hpp"

#include "cuda/cuda_check.hpp"

namespace ucxdt::cuda {

namespace {

/// One kind's copies: a lone copy as its own kernel (no batch parameter to index), several
/// through the kind's batched launch.
template <class Args>
cudaError_t launch_kind(const std::vector<Args> &v, cudaError_t (*one)(const Args &, cudaStream_t),
                        cudaError_t (*many)(const Args *, int, cudaStream_t), cudaStream_t stream) {
    if (v.empty()) return cudaSuccess;
    if (v.size() == 1) return one(v[0], stream);
    return many(v.data(), static_cast<int>(v.size()), stream);
}

}  // namespace

ucxdt_status_t LaunchBatch::launch(cudaStream_t stream) {
    cudaError_t e = launch_kind(strided, kernels::launch_strided, kernels::launch_strided_batch, stream);
    if (e == cudaSuccess) e = launch_kind(units, kernels::launch_units, kernels::launch_units_batch, stream);
    if (e == cudaSuccess) e = launch_kind(points, kernels::launch_point, kernels::launch_point_batch, stream);
    if (e == cudaSuccess) e = launch_kind(tiles, kernels::launch_tiles, kernels::launch_tiles_batch, stream);
    if (e == cudaSuccess)
        e = launch_kind(transposes, kernels::launch_transpose, kernels::launch_transpose_batch, stream);
    clear();
    return check(e, "batched copy kernel launch");
}

}  // namespace ucxdt::cuda
