// The CUDA API in a build without CUDA (KASOKU_CUDA=OFF, or AUTO without nvcc): it says so.
#include "kasoku/gpu/cuda.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::gpu {

namespace {
const char* kWhy =
    "this kasoku was built without CUDA (configure with -DKASOKU_CUDA=ON, or AUTO with nvcc on the PATH)";
}

CudaInfo cuda_info() {
    CudaInfo info;
    info.reason = kWhy;  // architectures stays empty: nothing was compiled for a GPU
    return info;
}

std::shared_ptr<const rns::PolyMemory> cuda_memory(int) { throw DeviceError(std::string("no CUDA: ") + kWhy); }

std::unique_ptr<const rns::Backend> make_cuda_backend(std::shared_ptr<const rns::RnsContext>) {
    throw DeviceError(std::string("no CUDA: ") + kWhy);
}

}  // namespace kasoku::gpu
