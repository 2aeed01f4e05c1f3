// The CUDA side of kasoku (Takao et al., docs/DESIGN.md §3.3): what this build and machine have, and device memory for
// polynomials. Built with KASOKU_CUDA=AUTO|ON (AUTO: when nvcc is found); a build without CUDA has the same API, and
// says so (cuda_info().reason; cuda_memory throws).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "kasoku/rns/backend.hpp"

namespace kasoku::gpu {

struct CudaInfo {
    bool compiled = false;   // this build has the CUDA code
    bool available = false;  // and a device can be used now
    std::string reason;      // why not, when !available (from CUDA when it answered)
    int devices = 0;
    std::string name;  // device 0
    std::size_t memory_bytes = 0;
    int compute_major = 0, compute_minor = 0;
    int runtime_version = 0, driver_version = 0;  // CUDA's encoding: 1000 * major + 10 * minor
    std::string architectures;  // what the kernels were compiled for (CMAKE_CUDA_ARCHITECTURES, comma separated)
};

// Never throws. A device counts as available only when this build's kernels have an image it runs (reason says which
// architectures were compiled and what to rebuild with otherwise).
CudaInfo cuda_info();

// Why kernels compiled for `architectures` (CMake's CMAKE_CUDA_ARCHITECTURES entries, comma or semicolon separated:
// "90" = machine code and PTX for sm_90, "90-real" = machine code only, "90-virtual" = PTX only, "90a" = sm_90a
// machine code only) would not run on a device of compute capability major.minor, with what to rebuild with; empty
// when they run (machine code of the same major version and a minor at most the device's, or PTX of a version at most
// the device's, which the driver compiles) or when the list names no architecture ("native", "all").
std::string architecture_mismatch(const std::string& architectures, int major, int minor);

// Device memory of `device` from its stream-ordered pool (cudaMallocAsync on one stream; transfers synchronise that
// stream). The memory's methods throw DeviceError (with CUDA's message) when CUDA fails later (out of device memory
// among others).
// @throws DeviceError if this build has no CUDA, no device can be used, there is no such device, or this build's
//     kernels do not run on it
std::shared_ptr<const rns::PolyMemory> cuda_memory(int device = 0);

// The CUDA backend on device 0: a factory for ckks::Context::create(params, threads, make_cuda_backend). Its
// operations throw DeviceError when CUDA fails.
// @throws DeviceError as cuda_memory, or when uploading the ring's tables fails
// @throws ParameterError if a prime of the ring is not an NTT prime for its degree (arith::NttTables)
std::unique_ptr<const rns::Backend> make_cuda_backend(std::shared_ptr<const rns::RnsContext> ring);

}  // namespace kasoku::gpu
