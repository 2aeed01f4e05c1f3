#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "kasoku/support/aligned.hpp"

namespace kasoku::detail {

namespace {
constexpr std::size_t kAlign = 64;
// AddressSanitizer or ThreadSanitizer: GCC's macros, Clang's __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KASOKU_ASAN_OR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KASOKU_ASAN_OR_TSAN 1
#endif
#endif
#if defined(KASOKU_ASAN_OR_TSAN)
// Sanitizer builds: every block goes back to the allocator at once, so that a use after release is caught.
constexpr std::size_t kPooledMin = ~std::size_t{0};
#else
constexpr std::size_t kPooledMin = 64 * 1024;  // smaller blocks are not pooled
#endif
// Per thread, at most the limit (set_memory_pool_limit). Free blocks held here count in the process's resident memory:
// with 1 GiB a BOOT16 process with compact keys peaked at 6.2 GB, with 256 MiB at 5.2 GB, and its bootstraps took the
// same time (Zen 3, three bootstraps in each of two processes per size, alternated). On a Zen 5, 2 GiB took a
// 2^13-slot bootstrap from 3.9-4.1 to 3.6 s (aligned.hpp): the default stays, for the networks whose peak it would
// raise.
constexpr std::size_t kPoolDefaultBytes = 256ull << 20;
std::atomic<std::size_t> pool_limit{kPoolDefaultBytes};
// Blocks kept at most: 256 per 256 MiB of the limit (a search is linear in them).
std::size_t pool_max_blocks(std::size_t limit) { return std::max<std::size_t>(256, limit / (1u << 20)); }
// Blocks of at least a huge page's size start on a 4 KiB page, not a 2 MiB boundary: glibc's memalign leaves the space
// before an aligned block free in the heap, and with thousands of long-lived blocks (keys, encoded transforms) those
// gaps held 1.1-1.5 GB of free heap through a ResNet-20 inference (peak 10.3 GB against 9.7 GB; the same time, and
// BOOT16's bootstrap too: Zen 5, docs/NN.md). They ask for no transparent huge pages: under Linux's default defrag
// policy a region advised MADV_HUGEPAGE waits at each fault for the kernel to compact a free 2 MiB block, and on the
// Xeon VM that made a BOOT16 key generation 17-40 s instead of 5.7-8.3 s and its plan 1.6-13.5 s instead of 1.6-2.6 s
// (six pairs of processes, with the page cache full and emptied; CHANGELOG.md); where THP is "always", the kernel
// still gives them huge pages when it has them free.
constexpr std::size_t kHugePage = 2u << 20;
constexpr std::size_t kPage = 4096;

// Set when this thread's pool is destroyed: objects released after it (static ones, at exit) free directly.
thread_local bool pool_dead = false;

struct Pool {
    struct Block {
        std::size_t bytes;
        void* p;
    };
    std::vector<Block> free;
    std::size_t held = 0;
    ~Pool() {
        pool_dead = true;
        for (auto& b : free) std::free(b.p);
        free.clear();
    }
};
thread_local Pool pool;

// A block's size class: 64-byte multiples, and below a huge page's size; whole huge pages above it (the span such a
// block takes anyway), so that polynomials of a few limbs more or fewer (a level apart) reuse each other's blocks.
std::size_t round_up(std::size_t bytes) {
    if (bytes >= kHugePage) return (bytes + kHugePage - 1) / kHugePage * kHugePage;
    return bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
}
}  // namespace

bool asan_or_tsan() { return kPooledMin == ~std::size_t{0}; }

void* pool_allocate(std::size_t bytes) {
    bytes = round_up(bytes);
    if (bytes >= kPooledMin && !pool_dead) {
        auto& f = pool.free;
        for (std::size_t i = f.size(); i-- > 0;) {
            if (f[i].bytes == bytes) {
                void* p = f[i].p;
                f[i] = f.back();
                f.pop_back();
                pool.held -= bytes;
                return p;
            }
        }
    }
    const bool huge = bytes >= kHugePage;
    void* p = std::aligned_alloc(huge ? kPage : kAlign, bytes);  // bytes: a multiple of the alignment
    if (!p) throw std::bad_alloc();
    return p;
}

void pool_free(void* p, std::size_t bytes) noexcept {
    if (!p) return;
    bytes = round_up(bytes);
    const std::size_t limit = pool_limit.load(std::memory_order_relaxed), max_blocks = pool_max_blocks(limit);
    if (bytes < kPooledMin || bytes > limit || pool_dead) {
        std::free(p);
        return;
    }
    // Keep the most recent blocks: evict the oldest until the new one fits (sizes in use change with the
    // workload, e.g. key generation's blocks should not crowd out an evaluator's).
    auto& f = pool.free;
    std::size_t drop = 0;
    while (drop < f.size() && (pool.held + bytes > limit || f.size() - drop >= max_blocks)) {
        pool.held -= f[drop].bytes;
        std::free(f[drop].p);
        ++drop;
    }
    f.erase(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(drop));
    try {
        f.push_back({bytes, p});
        pool.held += bytes;
    } catch (...) {
        std::free(p);
    }
}

}  // namespace kasoku::detail

namespace kasoku {
void set_memory_pool_limit(std::size_t bytes) noexcept { detail::pool_limit.store(bytes, std::memory_order_relaxed); }
std::size_t memory_pool_limit() noexcept { return detail::pool_limit.load(std::memory_order_relaxed); }
}  // namespace kasoku
