// What the CUDA memory (runtime.cu) and the emulated one (launch_host.cpp) share (never installed):
//  - a workspace arena: freed blocks are kept by size and handed out again, so that an operation in steady state asks
//    the device allocator for nothing. Sizes are rounded up to classes four to an octave (size_class: at most 1.25x),
//    so that a polynomial a level or two down reuses a block freed a level up; kept by their exact sizes, a
//    bootstrap's levels each kept a set of blocks of their own (4.4 GB of ResNet-20's 15.8 counted on the emulated
//    GPU, bench/nn_device_memory.py). Reuse is safe because all work of a memory is
//    ordered on one stream: a block freed by the host after the launches that use it were queued is reused only by
//    launches queued later. When the device allocator fails, the kept blocks are released and the call retried once.
//  - while a batch is recording on the calling thread (launch.hpp), freed blocks wait for the batch's issue;
//  - copies and fills are kernels like the others (so they are recorded and merged in batches, and counted).
#pragma once
#include <atomic>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "gpu/counters.hpp"
#include "gpu/launch.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::gpu {
inline namespace KASOKU_GPU_VARIANT {

class DeviceMemory : public rns::PolyMemory {
public:
    // The block size a request of this many words takes: m * 2^e words with m in 5..8 (so under 1.25x the request),
    // the request itself up to 8 words.
    static constexpr std::size_t size_class(std::size_t words) {
        if (words <= 8) return words;
        int e = 0;
        while ((words - 1) >> (e + 3)) ++e;  // now 2^(e+2) < words <= 2^(e+3)
        return ((words + (std::size_t{1} << e) - 1) >> e) << e;
    }

    std::uint64_t* allocate(std::size_t words) const final {
        words = size_class(words);
        if (std::uint64_t* p = take(words)) return p;
        try {
            count_allocation(8 * words);
            return taken(device_allocate(words), words);
        } catch (const std::bad_alloc&) {
        } catch (const DeviceError&) {}
        release_kept();  // out of memory: give the kept blocks back and try once more
        count_allocation(8 * words);
        return taken(device_allocate(words), words);
    }
    void deallocate(std::uint64_t* p, std::size_t words) const noexcept final {
        if (!p) return;
        words = size_class(words);
        if (launch::Recorder* r = launch::Recorder::active()) return r->defer(this, p, words);
        try {
            const std::lock_guard<std::mutex> lock(mutex_);
            kept_[words].push_back(p);
        } catch (...) {  // no memory for the list: free the block instead
            given_back(p, words);
        }
    }
    Held held() const final { return {held_.load(), peak_.load()}; }
    void reset_peak() const final { peak_.store(held_.load()); }
    void copy(const std::uint64_t* src, std::size_t words, std::uint64_t* dst) const final {
        flat<kern::Op::copy>(dst, src, words);
    }
    void zero(std::uint64_t* p, std::size_t words) const final { flat<kern::Op::fill>(p, nullptr, words); }
    void wipe(std::uint64_t* p, std::size_t words) const noexcept final {
        try {
            flat<kern::Op::fill>(p, nullptr, words);  // device memory: no compiler to elide it
        } catch (const std::exception& e) {
            failed(std::string("wiping secret material: ") + e.what());
        }
    }
    // Gives every kept block back to the device allocator (also done when it runs out).
    void release_kept() const noexcept final {
        std::map<std::size_t, std::vector<std::uint64_t*>> kept;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            kept.swap(kept_);
        }
        for (auto& [words, blocks] : kept)
            for (std::uint64_t* p : blocks) given_back(p, words);
    }

protected:
    // The device allocator (counted by allocate); a failure throws std::bad_alloc or DeviceError.
    virtual std::uint64_t* device_allocate(std::size_t words) const = 0;
    virtual void device_free(std::uint64_t* p, std::size_t words) const noexcept = 0;
    // A failure where no exception may leave (reported, and raised by the memory's next call where it can).
    virtual void failed(const std::string& what) const noexcept = 0;
    // Reading device memory back while a batch is recording would read what has not been computed yet.
    static void not_recording(const char* what) {
        if (launch::Recorder::active())
            throw InternalError(std::string(what) +
                                " while a batch is being recorded: batched operations must not read "
                                "device memory back");
    }

private:
    std::uint64_t* taken(std::uint64_t* p, std::size_t words) const {
        const std::uint64_t now = held_.fetch_add(8 * words) + 8 * words;
        std::uint64_t peak = peak_.load();
        while (now > peak && !peak_.compare_exchange_weak(peak, now)) {}
        return p;
    }
    void given_back(std::uint64_t* p, std::size_t words) const noexcept {
        device_free(p, words);
        held_.fetch_sub(8 * words);
    }
    std::uint64_t* take(std::size_t words) const {
        const std::lock_guard<std::mutex> lock(mutex_);
        auto it = kept_.find(words);
        if (it == kept_.end() || it->second.empty()) return nullptr;
        std::uint64_t* p = it->second.back();
        it->second.pop_back();
        return p;
    }
    template <kern::Op op>
    void flat(std::uint64_t* out, const std::uint64_t* a, std::size_t words) const {
        if (!words) return;
        kern::EwShared s{};
        s.r.n = static_cast<kern::u32>(words);  // one "limb" of all the words (copies and fills read no prime)
        kern::EwItem it{};
        it.out = out;
        it.a = a;
        it.limbs = 1;
        launch::run<kern::Ewise<op>>(*this, s, {it});
    }

    mutable std::mutex mutex_;
    mutable std::map<std::size_t, std::vector<std::uint64_t*>> kept_;
    mutable std::atomic<std::uint64_t> held_{0}, peak_{0};  // from the device allocator (held())
};

}  // namespace KASOKU_GPU_VARIANT
}  // namespace kasoku::gpu
