// What the GPU backend asks of the device, counted on the host (GPU readiness: the launch budget, docs/GPU.md): kernel
// launches and stream operations (copies, fills), host synchronisations, calls into the device allocator, transfers,
// and per launch the bytes of device memory its kernel reads and writes (each operand word once) and its 64-bit
// multiplications. Both builds of the backend count the same calls (the CUDA one and the emulated one run the same
// logic), so the counts of a machine without a GPU are those of the device. A CountScope collects what the calling
// thread's GPU work does while it lives; the counters cost one thread-local test per call when none is open.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace kasoku::gpu {

struct KernelCount {
    std::uint64_t launches = 0, bytes = 0, mults = 0;
};

struct Counts {
    std::uint64_t launches = 0;     // kernels, copies and fills queued on the device
    std::uint64_t syncs = 0;        // host waits for the device
    std::uint64_t allocations = 0;  // calls into the device allocator
    std::uint64_t allocated_bytes = 0;
    std::uint64_t bytes = 0;  // device memory the launches read and write (each operand word once)
    std::uint64_t mults = 0;  // 64 x 64-bit multiplications of the launches (a Shoup or Barrett product: 2)
    std::uint64_t to_device_bytes = 0, to_host_bytes = 0;
    std::map<std::string, KernelCount> kernels;  // by kernel (launch, copy and fill names)

    Counts& operator+=(const Counts& o) {
        launches += o.launches;
        syncs += o.syncs;
        allocations += o.allocations;
        allocated_bytes += o.allocated_bytes;
        bytes += o.bytes;
        mults += o.mults;
        to_device_bytes += o.to_device_bytes;
        to_host_bytes += o.to_host_bytes;
        for (const auto& [k, c] : o.kernels) {
            KernelCount& d = kernels[k];
            d.launches += c.launches;
            d.bytes += c.bytes;
            d.mults += c.mults;
        }
        return *this;
    }
};

namespace detail {
inline thread_local Counts* active_counts = nullptr;
}

// Counts the calling thread's GPU work from construction to destruction; an enclosing scope gets the counts too.
class CountScope {
public:
    CountScope() : outer_(detail::active_counts) { detail::active_counts = &counts_; }
    ~CountScope() {
        detail::active_counts = outer_;
        if (outer_) *outer_ += counts_;
    }
    CountScope(const CountScope&) = delete;
    CountScope& operator=(const CountScope&) = delete;
    const Counts& counts() const { return counts_; }

private:
    Counts* outer_;
    Counts counts_;
};

// The calls the backend's builds make (no-ops unless a scope is open on this thread).
inline void count_launch(const char* kernel, std::uint64_t bytes, std::uint64_t mults) {
    Counts* c = detail::active_counts;
    if (!c) return;
    ++c->launches;
    c->bytes += bytes;
    c->mults += mults;
    KernelCount& k = c->kernels[kernel];
    ++k.launches;
    k.bytes += bytes;
    k.mults += mults;
}
inline void count_sync() {
    if (Counts* c = detail::active_counts) ++c->syncs;
}
inline void count_allocation(std::uint64_t bytes) {
    if (Counts* c = detail::active_counts) {
        ++c->allocations;
        c->allocated_bytes += bytes;
    }
}
inline void count_transfer(bool to_device, std::uint64_t bytes) {
    if (Counts* c = detail::active_counts) (to_device ? c->to_device_bytes : c->to_host_bytes) += bytes;
}

// A bandwidth model of a GPU: each launch costs launch_us, plus its bytes at the memory's bandwidth or its 64-bit
// multiplications at the integer units' rate, whichever takes longer (docs/GPU.md compares it with the kernels
// measured on an H100).
struct DeviceModel {
    const char* name;
    double launch_us;     // a small kernel's duration, start to end
    double bytes_per_us;  // sustained device-memory bandwidth
    double mults_per_us;  // 64 x 64-bit multiplications with their surrounding adds
};
// H100 SXM 80 GB: 3.35 TB/s HBM3 at ~90 %; 3.5 us: the 128-block kernels measured there; 0.5 T multiplications per
// second: what the measured base-conversion kernel (the one bound by its multiplications) implies (docs/GPU.md).
inline constexpr DeviceModel kH100{"H100 SXM", 3.5, 3.0e6, 0.5e6};

inline double model_us(const KernelCount& k, const DeviceModel& m) {
    const double t_mem = static_cast<double>(k.bytes) / m.bytes_per_us,
                 t_mul = static_cast<double>(k.mults) / m.mults_per_us;
    return static_cast<double>(k.launches) * m.launch_us + (t_mem > t_mul ? t_mem : t_mul);
}
inline double model_us(const Counts& c, const DeviceModel& m) {
    double t = 0;
    for (const auto& [name, k] : c.kernels) t += model_us(k, m);
    return t;
}

// The debug switch (KASOKU_CUDA_SYNC=1 in the environment, or set_sync_each_launch): the host waits for every launch
// and a failure names the kernel that failed, instead of surfacing at the next synchronisation (the emulated build
// counts those waits too).
namespace detail {
inline std::atomic<int>& sync_each_launch_flag() {
    static std::atomic<int> flag{[] {
        const char* v = std::getenv("KASOKU_CUDA_SYNC");
        return v && *v && std::strcmp(v, "0") != 0 ? 1 : 0;
    }()};
    return flag;
}
}  // namespace detail
inline bool sync_each_launch() { return detail::sync_each_launch_flag().load(std::memory_order_relaxed) != 0; }
inline void set_sync_each_launch(bool on) { detail::sync_each_launch_flag().store(on ? 1 : 0); }

}  // namespace kasoku::gpu
