// CUDA runtime helpers shared by runtime.cu and kernels.cu (never installed).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "kasoku/rns/rns_poly.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::gpu {

// Throws DeviceError naming the call and CUDA's error.
inline void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
        throw DeviceError(std::string(what) + " failed: " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")");
}

// The stream a CUDA memory orders its work on (kernels launch on it too).
cudaStream_t stream_of(const rns::PolyMemory& memory);

}  // namespace kasoku::gpu
