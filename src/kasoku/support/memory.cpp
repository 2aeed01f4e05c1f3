#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "kasoku/support/aligned.hpp"

namespace kasoku::detail {

namespace {
constexpr std::size_t kAlign = 64;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// Sanitizer builds: every block goes back to the allocator at once, so that a use after release is caught.
constexpr std::size_t kPooledMin = ~std::size_t{0};
#else
constexpr std::size_t kPooledMin = 64 * 1024;  // smaller blocks are not pooled
#endif
// Free blocks held in the pools count in the process's resident memory, so the pools hold at most what keeps the
// process's large blocks (in use and held together) within kSlack of the most they have ever been in use at once:
// a process whose working set rises and falls (a bootstrap's transforms, then EvalMod, then the next bootstrap) finds
// its blocks again instead of faulting in fresh pages for them, without a peak above the one it would have without the
// pools (plus kSlack). A fixed 256 MiB per thread was too little for BOOT16's transforms: a sparse SlotToCoeff spent a
// third of its time clearing fresh huge pages (Zen 5, one thread; docs/PERFORMANCE.md).
constexpr std::size_t kSlack = 256ull << 20;
constexpr std::size_t kPoolMaxBlocks = 1024;  // per thread
// Bytes of pooled-size blocks in use and held by the pools (every thread's), and the most ever in use at once.
std::atomic<std::size_t> in_use{0}, held_total{0}, peak_in_use{0};

void note_in_use(std::size_t bytes) {
    const std::size_t now = in_use.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    std::size_t peak = peak_in_use.load(std::memory_order_relaxed);
    while (now > peak && !peak_in_use.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {}
}
// The bytes held beyond the budget once `extra` more bytes are in use or held: (in use + held + extra) above
// kSlack over the most ever in use (counting the `extra` bytes when they are a new block in use).
std::size_t over_budget(std::size_t extra, bool extra_in_use) {
    const std::size_t use = in_use.load(std::memory_order_relaxed), held = held_total.load(std::memory_order_relaxed);
    std::size_t peak = peak_in_use.load(std::memory_order_relaxed);
    if (extra_in_use && use + extra > peak) peak = use + extra;
    const std::size_t total = use + held + extra, limit = peak + kSlack;
    return total > limit ? total - limit : 0;
}
// Blocks of at least this size start on a 2 MiB boundary and ask for transparent huge pages (Linux's "madvise"
// mode): one page fault per 2 MiB instead of 512. On the development VM the faults, not the clearing, made most of a
// BOOT16 key generation's time (11.5 s of system time in 20 s for the plan and the keys), and the TLB covers a limb.
constexpr std::size_t kHugePage = 2u << 20;

// Set when this thread's pool is destroyed: objects released after it (static ones, at exit) free directly.
thread_local bool pool_dead = false;

struct Pool {
    struct Block {
        std::size_t bytes;
        void* p;
    };
    std::vector<Block> free;  // oldest first
    // Frees the oldest `count` blocks.
    void drop_oldest(std::size_t count) {
        std::size_t bytes = 0;
        for (std::size_t i = 0; i < count; ++i) {
            bytes += free[i].bytes;
            std::free(free[i].p);
        }
        free.erase(free.begin(), free.begin() + static_cast<std::ptrdiff_t>(count));
        held_total.fetch_sub(bytes, std::memory_order_relaxed);
    }
    // Frees the oldest blocks until `extra` more bytes (in use, or held) fit the budget, or none is left.
    void make_room(std::size_t extra, bool extra_in_use) {
        const std::size_t over = over_budget(extra, extra_in_use);
        std::size_t drop = 0;
        for (std::size_t freed = 0; drop < free.size() && freed < over; ++drop) freed += free[drop].bytes;
        drop_oldest(drop);
    }
    ~Pool() {
        pool_dead = true;
        drop_oldest(free.size());
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

void* pool_allocate(std::size_t bytes) {
    bytes = round_up(bytes);
    const bool pooled = bytes >= kPooledMin && !pool_dead;
    if (pooled) {
        auto& f = pool.free;
        for (std::size_t i = f.size(); i-- > 0;) {  // the most recent block of this size
            if (f[i].bytes == bytes) {
                void* p = f[i].p;
                f.erase(f.begin() + static_cast<std::ptrdiff_t>(i));
                held_total.fetch_sub(bytes, std::memory_order_relaxed);
                note_in_use(bytes);
                return p;
            }
        }
        pool.make_room(bytes, true);  // a fresh block: held ones of other sizes go first where the budget asks it
    }
    const bool huge = bytes >= kHugePage;
    void* p = std::aligned_alloc(huge ? kHugePage : kAlign, bytes);  // bytes: a multiple of the alignment
    if (!p) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
    if (huge) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP it fails and nothing changes
#endif
    if (bytes >= kPooledMin) note_in_use(bytes);
    return p;
}

void pool_free(void* p, std::size_t bytes) noexcept {
    if (!p) return;
    bytes = round_up(bytes);
    if (bytes < kPooledMin) {
        std::free(p);
        return;
    }
    in_use.fetch_sub(bytes, std::memory_order_relaxed);
    if (pool_dead) {
        std::free(p);
        return;
    }
    auto& f = pool.free;
    if (f.size() >= kPoolMaxBlocks) pool.drop_oldest(f.size() - kPoolMaxBlocks + 1);
    pool.make_room(bytes, false);
    if (over_budget(bytes, false) > 0) {  // the other threads' pools hold the room
        std::free(p);
        return;
    }
    try {
        f.push_back({bytes, p});
        held_total.fetch_add(bytes, std::memory_order_relaxed);
    } catch (...) {
        std::free(p);
    }
}

PoolBytes pool_bytes() noexcept {
    return {in_use.load(std::memory_order_relaxed), held_total.load(std::memory_order_relaxed),
            peak_in_use.load(std::memory_order_relaxed)};
}

}  // namespace kasoku::detail
