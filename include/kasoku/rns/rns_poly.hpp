// A polynomial in RNS form: limbs x n words, over the primes q_0..q_{num_q-1} followed by the special primes
// p_0..p_{num_p-1}, in coefficient or evaluation (NTT) form. Its words live in the memory of the backend that made
// it (host RAM for the CPU backend, device memory for a GPU one) and are only read or written by that backend's
// operations (docs/ARCHITECTURE.md): ckks and algo see shapes, never words.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace kasoku::rns {

// The memory a backend keeps polynomials in. Pointers are to words of that memory: host pointers for host memory,
// device pointers for a device. Every method may be called from several threads at once.
class PolyMemory {
public:
    virtual ~PolyMemory() = default;
    // Whether the words are host memory that the calling thread may read and write directly.
    virtual bool host_accessible() const = 0;
    // `words` 64-bit words, 64-byte aligned, uninitialised. Throws std::bad_alloc on the host when out of memory.
    // @throws DeviceError when a device is out of memory or fails
    virtual std::uint64_t* allocate(std::size_t words) const = 0;
    virtual void deallocate(std::uint64_t* p, std::size_t words) const noexcept = 0;
    virtual void copy(const std::uint64_t* src, std::size_t words, std::uint64_t* dst) const = 0;
    virtual void zero(std::uint64_t* p, std::size_t words) const = 0;
    // Overwrites the words in a way the compiler cannot elide (secret material).
    virtual void wipe(std::uint64_t* p, std::size_t words) const noexcept = 0;
    virtual bool equal(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) const = 0;
    // Transfers between this memory and host memory. These, copy, zero, equal and synchronize throw DeviceError on a
    // device that fails (a CUDA call's error).
    virtual void to_host(const std::uint64_t* src, std::size_t words, std::uint64_t* host_dst) const = 0;
    virtual void from_host(const std::uint64_t* host_src, std::size_t words, std::uint64_t* dst) const = 0;
    // Waits until every operation queued on this memory has finished (a device's work is asynchronous; host memory's
    // is done when the call returns). Timings call it.
    virtual void synchronize() const {}
    // What a device memory holds from its allocator, now and at its most since it was made or reset_peak was last
    // called (the blocks its arena keeps for reuse count: the device's allocator sees them taken); both 0 for host
    // memory, whose use the process's resident memory gives.
    struct Held {
        std::uint64_t bytes = 0, peak_bytes = 0;
    };
    virtual Held held() const { return {}; }
    // Starts a new peak from what is held now.
    virtual void reset_peak() const {}
    // Gives the blocks a device memory keeps for reuse back to the device's allocator (host memory: nothing).
    virtual void release_kept() const noexcept {}
};

// Host RAM through the per-thread block pool of support/aligned.hpp (the CPU backend's memory).
const std::shared_ptr<const PolyMemory>& host_memory();

class RnsPoly {
public:
    RnsPoly() = default;
    // A polynomial in `memory`; the words are left uninitialised (every producer writes them all). Construction and
    // copies throw what the memory's allocate throws (std::bad_alloc on the host, DeviceError on a device).
    // @throws InternalError for a null memory
    RnsPoly(std::shared_ptr<const PolyMemory> memory, std::size_t n, std::size_t num_q, std::size_t num_p,
            bool ntt_form);
    RnsPoly(const RnsPoly& o);
    RnsPoly& operator=(const RnsPoly& o);
    RnsPoly(RnsPoly&& o) noexcept;
    RnsPoly& operator=(RnsPoly&& o) noexcept;
    ~RnsPoly();

    std::size_t n() const { return n_; }
    std::size_t num_q() const { return num_q_; }
    std::size_t num_p() const { return num_p_; }
    std::size_t limbs() const { return num_q_ + num_p_; }
    std::size_t words() const { return n_ * (num_q_ + num_p_); }
    bool ntt_form() const { return ntt_form_; }
    void set_ntt_form(bool f) { ntt_form_ = f; }
    bool empty() const { return data_ == nullptr; }
    const std::shared_ptr<const PolyMemory>& memory() const { return mem_; }
    // Whether `o` has the same n, limbs and form.
    bool same_shape(const RnsPoly& o) const {
        return n_ == o.n_ && num_q_ == o.num_q_ && num_p_ == o.num_p_ && ntt_form_ == o.ntt_form_;
    }

    void zero();
    // Keeps the first `num_q` q-limbs and the first `num_p` special limbs (the dropped words are wiped).
    // @throws InternalError if asked to keep more limbs than there are
    void truncate(std::size_t num_q, std::size_t num_p = 0);
    // Zeroes the memory (used for secret material before it is released).
    void wipe() noexcept;
    // Same shape and the same words (across memories too: both are then read on the host).
    bool operator==(const RnsPoly& o) const;

private:
    friend struct PolyAccess;
    void release() noexcept;

    std::shared_ptr<const PolyMemory> mem_;
    std::uint64_t* data_ = nullptr;
    std::size_t n_ = 0, num_q_ = 0, num_p_ = 0;
    bool ntt_form_ = false;
};

// For backends only: the words of a polynomial in its memory, limb i at data(p) + i * n. ckks and algo never use it
// (they would not run on another backend).
struct PolyAccess {
    static std::uint64_t* data(RnsPoly& p) { return p.data_; }
    static const std::uint64_t* data(const RnsPoly& p) { return p.data_; }
};

}  // namespace kasoku::rns
