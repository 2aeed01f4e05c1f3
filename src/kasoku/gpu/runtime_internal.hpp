// CUDA runtime helpers shared by runtime.cu and kernels.cu (never installed).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "kasoku/rns/rns_poly.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::gpu {

inline std::string cuda_message(cudaError_t e) {
    return std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")";
}

// Throws DeviceError naming the call and CUDA's error.
inline void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw DeviceError(std::string(what) + " failed: " + cuda_message(e));
}

// Makes `device` the calling thread's current device for the guard's life and restores the previous one after: every
// call into CUDA on a memory's behalf runs under one, so several GPUs, or another library selecting a device on the
// same thread, never send work to the wrong device.
class DeviceGuard {
public:
    explicit DeviceGuard(int device) {
        check(cudaGetDevice(&previous_), "cudaGetDevice");
        if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
        else previous_ = -1;
    }
    ~DeviceGuard() {
        if (previous_ >= 0) cudaSetDevice(previous_);  // restoring a device that was current cannot fail
    }
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
    int previous_ = -1;
};

// The stream and device of a CUDA memory: kernels on its polynomials launch there, under a DeviceGuard.
struct Placement {
    cudaStream_t stream;
    int device;
};
Placement placement_of(const rns::PolyMemory& memory);

// Whether this build's kernels have an image the device runs (cudaFuncGetAttributes on one of them; kernels.cu).
cudaError_t probe_kernel_image(int device);

}  // namespace kasoku::gpu
