// Device discovery and device memory for polynomials (include/kasoku/gpu/cuda.hpp).
#include <cstdint>
#include <cstdio>
#include <limits>
#include <mutex>
#include <vector>

#include "gpu/counters.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/runtime_internal.hpp"
#include "kasoku/gpu/cuda.hpp"

namespace kasoku::gpu {

CudaInfo cuda_info() {
    CudaInfo info;
    info.compiled = true;
    info.architectures = KASOKU_CUDA_ARCHS;
    cudaRuntimeGetVersion(&info.runtime_version);
    cudaDriverGetVersion(&info.driver_version);
    const cudaError_t e = cudaGetDeviceCount(&info.devices);
    if (e != cudaSuccess) {
        info.devices = 0;
        info.reason = "CUDA found no usable device: " + cuda_message(e);
        cudaGetLastError();  // clear the sticky error of the failed query
        return info;
    }
    if (info.devices == 0) {
        info.reason = "CUDA found no device";
        return info;
    }
    cudaDeviceProp prop{};
    if (const cudaError_t p = cudaGetDeviceProperties(&prop, 0); p != cudaSuccess) {
        info.reason = "cudaGetDeviceProperties failed: " + cuda_message(p);
        cudaGetLastError();
        return info;
    }
    info.name = prop.name;
    info.memory_bytes = prop.totalGlobalMem;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    const std::string mismatch = architecture_mismatch(info.architectures, prop.major, prop.minor);
    cudaError_t image = cudaSuccess;
    try {
        image = probe_kernel_image(0);
    } catch (const DeviceError& d) {
        info.reason = d.what();
        return info;
    }
    if (image != cudaSuccess) {
        cudaGetLastError();
        info.reason = "this build's kernels do not run on " + info.name + " (" + cuda_message(image) + ")" +
                      (mismatch.empty() ? std::string() : ": " + mismatch);
        return info;
    }
    info.available = true;
    return info;
}

namespace {

// Words of one device from its default memory pool in the order of one stream, behind the workspace arena of
// device_memory.hpp (so an operation in steady state allocates nothing). Every CUDA call runs with the memory's
// device current (DeviceGuard) and is checked; the calls that may not throw (freeing, wiping, the destructor) report
// a failure on stderr and keep it, and the next call that may throw raises it.
class CudaMemory final : public DeviceMemory {
public:
    explicit CudaMemory(int device) : device_(device) {
        const DeviceGuard guard(device);
        cudaMemPool_t pool;
        check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
        std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
        check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
        check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
              "cudaStreamCreateWithFlags");  // last: nothing to undo
    }
    ~CudaMemory() override {
        release_kept();
        try {
            const DeviceGuard guard(device_);
            report(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (releasing a CUDA memory)");
            report(cudaStreamDestroy(stream_), "cudaStreamDestroy");
        } catch (const DeviceError& e) {
            std::fprintf(stderr, "kasoku: %s\n", e.what());
        }
    }
    Placement placement() const {
        raise_deferred();
        return {stream_, device_};
    }

    bool host_accessible() const override { return false; }
    bool equal(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) const override {
        std::vector<std::uint64_t> x(words), y(words);
        to_host(a, words, x.data());
        to_host(b, words, y.data());
        return x == y;
    }
    void to_host(const std::uint64_t* src, std::size_t words, std::uint64_t* host_dst) const override {
        not_recording("a transfer to the host");
        raise_deferred();
        const DeviceGuard guard(device_);
        count_transfer(false, 8 * words);
        count_sync();
        check(cudaMemcpyAsync(host_dst, src, words * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (to host)");
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    }
    void from_host(const std::uint64_t* host_src, std::size_t words, std::uint64_t* dst) const override {
        raise_deferred();
        const DeviceGuard guard(device_);
        count_transfer(true, 8 * words);
        count_sync();
        check(cudaMemcpyAsync(dst, host_src, words * sizeof(std::uint64_t), cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync (from host)");
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");  // the host buffer may go when this returns
    }
    void synchronize() const override {
        not_recording("synchronize");
        raise_deferred();
        const DeviceGuard guard(device_);
        count_sync();
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    }

protected:
    std::uint64_t* device_allocate(std::size_t words) const override {
        raise_deferred();
        const DeviceGuard guard(device_);
        void* p = nullptr;
        check(cudaMallocAsync(&p, words * sizeof(std::uint64_t), stream_),
              "cudaMallocAsync (device memory for a polynomial)");
        return static_cast<std::uint64_t*>(p);
    }
    void device_free(std::uint64_t* p, std::size_t) const noexcept override {
        try {
            const DeviceGuard guard(device_);
            report(cudaFreeAsync(p, stream_), "cudaFreeAsync");
        } catch (const DeviceError& e) {
            failed(e.what());
        }
    }
    void failed(const std::string& message) const noexcept override {
        std::fprintf(stderr, "kasoku: %s\n", message.c_str());
        try {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (deferred_.empty()) deferred_ = message;
        } catch (...) {}
    }

private:
    void report(cudaError_t e, const char* what) const noexcept {
        if (e != cudaSuccess) failed(std::string(what) + " failed: " + cuda_message(e));
    }
    void raise_deferred() const {
        std::string message;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            message.swap(deferred_);
        }
        if (!message.empty()) throw DeviceError("an earlier CUDA call failed: " + message);
    }

    int device_;
    cudaStream_t stream_ = nullptr;
    mutable std::mutex mutex_;
    mutable std::string deferred_;
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
    if (device != 0)  // cuda_info() checked device 0's
        if (const cudaError_t e = probe_kernel_image(device); e != cudaSuccess) {
            cudaGetLastError();
            throw DeviceError("this build's kernels do not run on CUDA device " + std::to_string(device) + " (" +
                              cuda_message(e) + "); this build has kernels for " + KASOKU_CUDA_ARCHS);
        }
    return std::make_shared<const CudaMemory>(device);
}

Placement placement_of(const rns::PolyMemory& memory) {
    const auto* m = dynamic_cast<const CudaMemory*>(&memory);
    if (!m) throw InternalError("a CUDA kernel was given polynomials that are not in CUDA memory");
    return m->placement();
}

}  // namespace kasoku::gpu
