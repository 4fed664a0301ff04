#include "uct_cuda/launch_batch.hpp"

#include "uct_cuda/cuda_check.hpp"

namespace ucxdt::cuda {

ucxdt_status_t LaunchBatch::launch(cudaStream_t stream) {
    cudaError_t e = cudaSuccess;
    if (strided.size() == 1) e = kernels::launch_strided(strided[0], stream);
    else if (!strided.empty()) e = kernels::launch_strided_batch(strided.data(), static_cast<int>(strided.size()), stream);
    if (e == cudaSuccess && units.size() == 1) e = kernels::launch_units(units[0], stream);
    else if (e == cudaSuccess && !units.empty())
        e = kernels::launch_units_batch(units.data(), static_cast<int>(units.size()), stream);
    if (e == cudaSuccess && points.size() == 1) e = kernels::launch_point(points[0], stream);
    else if (e == cudaSuccess && !points.empty())
        e = kernels::launch_point_batch(points.data(), static_cast<int>(points.size()), stream);
    if (e == cudaSuccess && tiles.size() == 1) e = kernels::launch_tiles(tiles[0], stream);
    else if (e == cudaSuccess && !tiles.empty())
        e = kernels::launch_tiles_batch(tiles.data(), static_cast<int>(tiles.size()), stream);
    if (e == cudaSuccess && transposes.size() == 1) e = kernels::launch_transpose(transposes[0], stream);
    else if (e == cudaSuccess && !transposes.empty())
        e = kernels::launch_transpose_batch(transposes.data(), static_cast<int>(transposes.size()), stream);
    clear();
    return check(e, "batched copy kernel launch");
}

}  // namespace ucxdt::cuda
