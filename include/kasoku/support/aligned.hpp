// 64-byte aligned storage for polynomial limbs (one cache line, one AVX-512 register).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace kasoku {

namespace detail {
// Per-thread pool of large blocks (>= 64 KiB, memory.cpp): polynomial buffers of a few MiB are reused instead
// of going back to the OS (mmap/munmap and a page fault per 4 KiB on every operation). Blocks may be freed by
// another thread than the one that allocated them; they then join that thread's pool.
void* pool_allocate(std::size_t bytes);  // std::bad_alloc when the memory is exhausted
void pool_free(void* p, std::size_t bytes) noexcept;
// Whether this build runs under AddressSanitizer or ThreadSanitizer (GCC's or Clang's). The pool is then bypassed:
// every block goes back to the allocator at once, so that a use after release is caught.
bool asan_or_tsan();
}  // namespace detail

// The most bytes of freed large blocks each thread keeps for reuse (default 256 MiB; from the next block freed on).
// Blocks kept count in the process's resident memory; blocks not kept go back to the allocator, and the next block
// of their size is fresh memory the kernel clears page by page. A long loop of bootstraps reuses more than the
// default keeps: BOOT16 at 2^13 slots on one Zen 5 thread took 3.9-4.1 s a bootstrap past the first with the default
// (0.3 s of it the kernel's) and 3.6 s at 2 GiB, its peak 4.2 -> 4.8 GB; ResNet-20 at 2 GiB peaked at 9.4 GB
// against 7.3 GB (docs/BOOTSTRAPPING.md).
void set_memory_pool_limit(std::size_t bytes) noexcept;
std::size_t memory_pool_limit() noexcept;

// Storage is default-initialised (not zeroed): callers write every word they read.
template <class T, std::size_t Align = 64>
struct AlignedAllocator {
    using value_type = T;
    AlignedAllocator() noexcept = default;
    template <class U>
    AlignedAllocator(const AlignedAllocator<U, Align>&) noexcept {}
    template <class U>
    struct rebind {
        using other = AlignedAllocator<U, Align>;
    };
    static_assert(Align <= 64, "the pool aligns to 64 bytes");
    T* allocate(std::size_t n) { return static_cast<T*>(detail::pool_allocate(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { detail::pool_free(p, n * sizeof(T)); }
    // vector(n) and resize(n) default-initialise (no zero fill of buffers that are about to be overwritten).
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        if constexpr (sizeof...(Args) == 0) ::new (static_cast<void*>(p)) U;
        else ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
    template <class U>
    bool operator==(const AlignedAllocator<U, Align>&) const noexcept {
        return true;
    }
};

using AlignedWords = std::vector<std::uint64_t, AlignedAllocator<std::uint64_t>>;

}  // namespace kasoku
