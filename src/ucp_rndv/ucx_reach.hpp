// What UCX itself reaches. ucxdt's node-local paths (CUDA IPC between processes, a peer's host
// staging mapped in place) are taken exactly where UCX would take its own: on the node as UCX
// identifies it, and only through transports that the UCX configuration in force (UCX_TLS, the
// devices) leaves to the context and, where UCP reports them, to the endpoint.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <set>
#include <string>

namespace ucxdt::rndv {

/// This node as UCX identifies it: ucs_get_system_id(), the kernel's boot ID, which UCX's
/// cuda_ipc and shared-memory transports compare. Containers and network namespaces of one
/// host share it (UCX 1.13: uct_cuda_ipc_iface_is_reachable).
uint64_t node_identity();

/// A random identity of this process, the same for all its workers. Not the pid: processes in
/// different PID namespaces (containers) of one node can have the same pid.
uint64_t process_identity();

/// The transports of a UCP context by UCT name ("tcp", "posix", "cuda_ipc", ...): the resources
/// that UCX_TLS and the device settings left it (ucp_context_print_info's list).
std::set<std::string> context_transports(ucp_context_h context);

/// Whether UCP's endpoint `ep` has a lane of transport `tl`: 1 or 0 where UCP reports an
/// endpoint's transports (ucp_ep_query's UCP_EP_ATTR_FIELD_TRANSPORTS, UCX >= 1.14), -1 where it
/// cannot say (UCX 1.13, or the query failed).
int ep_has_transport(ucp_ep_h ep, const char *tl);

/// Whether the UCX in use moves device memory by RMA: 1.22 or later (its protocols do; UCX 1.13
/// emulated RMA over shared memory with the CPU, which faulted on a device pointer; the versions
/// between were not measured). Device regions are registered with UCP only then.
bool ucp_rma_on_device();

/// Whether UCP's own RMA (ucp_put_nbx / ucp_get_nbx) on `ep` reaches device memory without the
/// CPU touching it: ucp_rma_on_device(), and the endpoint has a lane of cuda_ipc (CUDA IPC on a
/// node), or of rc_mlx5, rc_verbs or dc_mlx5 (GPUDirect RDMA). false where UCP cannot say.
bool ucp_rma_reaches_device(ucp_ep_h ep);

}  // namespace ucxdt::rndv
