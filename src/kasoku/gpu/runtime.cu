// Device discovery and device memory for polynomials (include/kasoku/gpu/cuda.hpp).
#include <cstdint>
#include <limits>
#include <vector>

#include "gpu/runtime_internal.hpp"
#include "kasoku/gpu/cuda.hpp"

namespace kasoku::gpu {

CudaInfo cuda_info() {
    CudaInfo info;
    info.compiled = true;
    cudaRuntimeGetVersion(&info.runtime_version);
    cudaDriverGetVersion(&info.driver_version);
    const cudaError_t e = cudaGetDeviceCount(&info.devices);
    if (e != cudaSuccess) {
        info.devices = 0;
        info.reason = std::string("CUDA found no usable device: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
        cudaGetLastError();  // clear the sticky error of the failed query
        return info;
    }
    if (info.devices == 0) {
        info.reason = "CUDA found no device";
        return info;
    }
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        info.reason = "cudaGetDeviceProperties failed";
        cudaGetLastError();
        return info;
    }
    info.available = true;
    info.name = prop.name;
    info.memory_bytes = prop.totalGlobalMem;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    return info;
}

namespace {

// Words of one device, allocated from its default memory pool in the order of one stream. The pool keeps freed
// memory for reuse (release threshold: unlimited), as the CPU's block pool does.
class CudaMemory final : public rns::PolyMemory {
public:
    explicit CudaMemory(int device) : device_(device) {
        check(cudaSetDevice(device), "cudaSetDevice");
        check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        cudaMemPool_t pool;
        check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
        std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
        check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
    }
    ~CudaMemory() override {
        cudaStreamSynchronize(stream_);
        cudaStreamDestroy(stream_);
    }
    cudaStream_t stream() const { return stream_; }

    bool host_accessible() const override { return false; }
    std::uint64_t* allocate(std::size_t words) const override {
        void* p = nullptr;
        check(cudaMallocAsync(&p, words * sizeof(std::uint64_t), stream_), "cudaMallocAsync (device memory for a polynomial)");
        return static_cast<std::uint64_t*>(p);
    }
    void deallocate(std::uint64_t* p, std::size_t) const noexcept override { cudaFreeAsync(p, stream_); }
    void copy(const std::uint64_t* src, std::size_t words, std::uint64_t* dst) const override {
        check(cudaMemcpyAsync(dst, src, words * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
    }
    void zero(std::uint64_t* p, std::size_t words) const override {
        check(cudaMemsetAsync(p, 0, words * sizeof(std::uint64_t), stream_), "cudaMemsetAsync");
    }
    void wipe(std::uint64_t* p, std::size_t words) const noexcept override {
        cudaMemsetAsync(p, 0, words * sizeof(std::uint64_t), stream_);  // device memory: no compiler to elide it
    }
    bool equal(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) const override {
        std::vector<std::uint64_t> x(words), y(words);
        to_host(a, words, x.data());
        to_host(b, words, y.data());
        return x == y;
    }
    void to_host(const std::uint64_t* src, std::size_t words, std::uint64_t* host_dst) const override {
        check(cudaMemcpyAsync(host_dst, src, words * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (to host)");
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    }
    void from_host(const std::uint64_t* host_src, std::size_t words, std::uint64_t* dst) const override {
        check(cudaMemcpyAsync(dst, host_src, words * sizeof(std::uint64_t), cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (from host)");
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");  // the host buffer may go when this returns
    }
    void synchronize() const override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

private:
    int device_;
    cudaStream_t stream_ = nullptr;
};

}  // namespace

std::shared_ptr<const rns::PolyMemory> cuda_memory(int device) {
    const CudaInfo info = cuda_info();
    if (!info.available)
        throw DeviceError("no CUDA device to compute on (" + info.reason +
                          "); use the CPU backend, or run on a machine with an NVIDIA GPU and its driver");
    if (device < 0 || device >= info.devices)
        throw DeviceError("CUDA device " + std::to_string(device) + " does not exist (this machine has " +
                          std::to_string(info.devices) + ")");
    return std::make_shared<const CudaMemory>(device);
}

cudaStream_t stream_of(const rns::PolyMemory& memory) {
    const auto* m = dynamic_cast<const CudaMemory*>(&memory);
    if (!m) throw InternalError("a CUDA kernel was given polynomials that are not in CUDA memory");
    return m->stream();
}

}  // namespace kasoku::gpu
