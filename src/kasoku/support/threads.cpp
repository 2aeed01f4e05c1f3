#include "kasoku/support/threads.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <thread>

#include "kasoku/support/error.hpp"
#include "region_recorder.hpp"

namespace kasoku {

int hardware_threads() {
#ifdef _OPENMP
    int n = omp_get_num_procs();
#else
    int n = static_cast<int>(std::thread::hardware_concurrency());
#endif
    return n > 0 ? n : 1;
}

int resolve_threads(int threads) {
    if (threads < 0)
        throw ParameterError("thread count must be >= 0 (0 or None = all cores), got " + std::to_string(threads));
    return threads == 0 ? hardware_threads() : threads;
}

std::vector<int> usable_cpus() {
    std::vector<int> cpus;
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
    if (cpus.empty())
        for (int c = 0; c < hardware_threads(); ++c) cpus.push_back(c);
    return cpus;
}

namespace {
// Lets thread t run on `cpus` only (nothing for an empty list or no valid CPU; a failure leaves it where it is).
void set_affinity([[maybe_unused]] std::thread::native_handle_type t, [[maybe_unused]] const std::vector<int>& cpus) {
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus)
        if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
    if (CPU_COUNT(&set) > 0) pthread_setaffinity_np(t, sizeof set, &set);
#endif
}
}  // namespace

void unbind([[maybe_unused]] const std::vector<int>& cpus) {
#ifdef __linux__
    set_affinity(pthread_self(), cpus);  // the calling thread
#endif
}

// ---------------------------------------------------------------- ThreadTeam

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

thread_local void* t_engaged = nullptr;  // the State of the calling thread's engaged team, if any
thread_local bool t_in_region = false;

}  // namespace

// A region is generation g: the owner writes its job, marks the slots it does not use as taken in g, and publishes g;
// slot k (thread k's share of the indices) is run by whoever takes it first (claim[k]: from below g to g), helper k - 1
// or, once done with its own, the owner; the region ends when all `threads` slots are done. A helper that wakes too
// late finds its slot taken and waits for the next generation.
struct ThreadTeam::State {
    explicit State(int max) : max_threads(max), claim(new std::atomic<std::uint64_t>[static_cast<std::size_t>(max)]) {
        for (int k = 0; k < max; ++k) claim[k].store(0, std::memory_order_relaxed);
    }
    const int max_threads;
    std::unique_ptr<std::atomic<std::uint64_t>[]> claim;
    std::atomic<std::uint64_t> gen{0};
    std::atomic<std::uint32_t> bell{0};  // rung with every generation (the futex word the helpers sleep on)
    // spin: engaged on CPUs of its own (unpinned helpers sleep at once: spinning, they could hold a CPU another
    // thread of the process needs, as libgomp's throttling avoids)
    std::atomic<bool> spin{false}, quit{false};
    std::atomic<int> done{0};
    std::atomic<std::size_t> next{0};  // Schedule::dynamic's next index
    // The region's job: written by the owner before it publishes the generation, read after a slot is taken.
    void (*fn)(void*, std::size_t) = nullptr;
    void* ctx = nullptr;
    std::size_t count = 0;
    int threads = 0, how = 0;
    struct Helper {
        std::thread thread;
        int cpu = -1;
    };
    std::vector<Helper> helpers;

    bool take(int k, std::uint64_t g) {
        std::uint64_t prev = claim[k].load(std::memory_order_acquire);
        return prev < g && claim[k].compare_exchange_strong(prev, g, std::memory_order_acq_rel);
    }
    void run_slot(int k) {
        const auto t = static_cast<std::size_t>(threads), kk = static_cast<std::size_t>(k);
        t_in_region = true;
        if (how == static_cast<int>(Schedule::interleaved)) {
            for (std::size_t i = kk; i < count; i += t) fn(ctx, i);
        } else if (how == static_cast<int>(Schedule::contiguous)) {
            for (std::size_t i = kk * count / t, e = (kk + 1) * count / t; i < e; ++i) fn(ctx, i);
        } else {
            for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) fn(ctx, i);
        }
        t_in_region = false;
        done.fetch_add(1, std::memory_order_acq_rel);
    }
    void helper_loop(int k) {
        std::uint64_t seen = 0;
        for (;;) {
            const std::uint32_t b = bell.load(std::memory_order_acquire);
            const std::uint64_t g = gen.load(std::memory_order_acquire);
            if (quit.load(std::memory_order_acquire)) return;
            if (g == seen) {
                // Spin while engaged on CPUs of its own (the task's next region comes within microseconds), for up
                // to 1 ms; then sleep until the bell rings.
                const auto t0 = std::chrono::steady_clock::now();
                for (unsigned i = 1;
                     spin.load(std::memory_order_relaxed) && gen.load(std::memory_order_acquire) == seen &&
                     !quit.load(std::memory_order_relaxed);
                     ++i) {
                    cpu_relax();
                    if (i % 1024 == 0 && std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(1)) break;
                }
                if (gen.load(std::memory_order_acquire) == seen && !quit.load(std::memory_order_acquire))
                    bell.wait(b, std::memory_order_acquire);
                continue;
            }
            seen = g;
            if (take(k, g)) run_slot(k);
        }
    }
    void ring() {
        bell.fetch_add(1, std::memory_order_acq_rel);
        bell.notify_all();
    }
};

ThreadTeam::ThreadTeam(int max_threads) : s_(new State(max_threads < 1 ? 1 : max_threads)) {}

ThreadTeam::~ThreadTeam() {
    s_->quit.store(true, std::memory_order_release);
    s_->ring();
    for (auto& h : s_->helpers) h.thread.join();
    delete s_;
}

ThreadTeam::Engaged::Engaged(ThreadTeam& team, int threads, const std::vector<int>& cpus) : team_(team) {
    State& s = *team.s_;
    if (threads < 1 || threads > s.max_threads)
        throw ParameterError("ThreadTeam: " + std::to_string(threads) + " threads asked of a team of at most " +
                             std::to_string(s.max_threads));
    if (t_engaged) throw ParameterError("ThreadTeam: this thread has a team engaged already");
    while (static_cast<int>(s.helpers.size()) < threads - 1) {
        const int k = static_cast<int>(s.helpers.size()) + 1;  // its slot
        s.helpers.push_back({std::thread([&s, k] { s.helper_loop(k); }), -1});
    }
    if (cpus.size() >= static_cast<std::size_t>(threads))
        for (int i = 1; i < threads; ++i) {
            auto& h = s.helpers[static_cast<std::size_t>(i) - 1];
            if (h.cpu != cpus[static_cast<std::size_t>(i)]) {
                h.cpu = cpus[static_cast<std::size_t>(i)];
                set_affinity(h.thread.native_handle(), {h.cpu});
            }
        }
    s.spin.store(cpus.size() >= static_cast<std::size_t>(threads), std::memory_order_release);
    t_engaged = &s;
}

ThreadTeam::Engaged::~Engaged() {
    team_.s_->spin.store(false, std::memory_order_release);
    t_engaged = nullptr;
}

bool ThreadTeam::in_region() { return t_in_region; }

bool ThreadTeam::run(int threads, std::size_t count, void (*fn)(void*, std::size_t), void* ctx, int how,
                     [[maybe_unused]] const std::type_info& body) {
#ifdef KASOKU_INSTRUMENTS
    if (RegionRecorder::recording()) [[unlikely]] {
        RegionRecorder::run(threads, count, fn, ctx, static_cast<Schedule>(how), body);
        return true;
    }
#endif
    if (!t_engaged) return false;
    State& s = *static_cast<State*>(t_engaged);
    if (threads > static_cast<int>(s.helpers.size()) + 1) threads = static_cast<int>(s.helpers.size()) + 1;
    s.fn = fn;
    s.ctx = ctx;
    s.count = count;
    s.threads = threads;
    s.how = how;
    s.next.store(0, std::memory_order_relaxed);
    s.done.store(0, std::memory_order_relaxed);
    const std::uint64_t g = s.gen.load(std::memory_order_relaxed) + 1;
    for (int k = 0; k < s.max_threads; ++k)
        if (k == 0 || k >= threads) s.claim[k].store(g, std::memory_order_relaxed);
    s.gen.store(g, std::memory_order_release);
    s.ring();
    s.run_slot(0);
    for (int k = 1; k < threads; ++k)  // the slots of helpers not awake yet
        if (s.take(k, g)) s.run_slot(k);
    while (s.done.load(std::memory_order_acquire) < threads) cpu_relax();
    return true;
}

// ---------------------------------------------------------------- RegionRecorder

namespace {
thread_local RegionRecorder* t_recorder = nullptr;

double seconds_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string demangled(const std::type_info& t) {
    int status = 0;
    char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
    std::string s = status == 0 && d ? d : t.name();
    std::free(d);
    return s;
}
}  // namespace

RegionRecorder::RegionRecorder() : begin_(seconds_now()) {
#ifndef KASOKU_INSTRUMENTS
    throw ParameterError(
        "RegionRecorder: this build has no instruments; configure with -DKASOKU_INSTRUMENTS=ON (the default with "
        "KASOKU_BUILD_TESTS or KASOKU_BUILD_BENCH)");
#endif
    if (t_recorder) throw ParameterError("RegionRecorder: this thread records its regions already");
    t_recorder = this;
}

RegionRecorder::~RegionRecorder() {
    if (t_recorder == this) t_recorder = nullptr;
}

double RegionRecorder::elapsed() const { return seconds_now() - begin_; }

bool RegionRecorder::recording() { return t_recorder != nullptr; }

void RegionRecorder::run(int threads, std::size_t count, void (*fn)(void*, std::size_t), void* ctx, Schedule how,
                         const std::type_info& body) {
    RegionRecorder& r = *t_recorder;
    Region g{demangled(body), how, threads, seconds_now() - r.begin_, 0, std::vector<double>(count)};
    t_in_region = true;  // nested loops run inside their job, as on a team
    for (std::size_t i = 0; i < count; ++i) {
        const double t0 = seconds_now();
        fn(ctx, i);
        g.jobs[i] = seconds_now() - t0;
    }
    t_in_region = false;
    g.end = seconds_now() - r.begin_;
    r.regions_.push_back(std::move(g));
}

double RegionRecorder::makespan(Schedule how, int threads, const std::vector<double>& jobs) {
    const std::size_t n = jobs.size(),
                      t = std::max<std::size_t>(1, std::min<std::size_t>(n, threads > 0 ? threads : 1));
    double end = 0;
    if (how == Schedule::dynamic) {
        std::priority_queue<double, std::vector<double>, std::greater<>> free_at;  // each thread's time when free
        for (std::size_t k = 0; k < t; ++k) free_at.push(0);
        for (double j : jobs) {
            const double s = free_at.top();
            free_at.pop();
            free_at.push(s + j);
            end = std::max(end, s + j);
        }
        return end;
    }
    for (std::size_t k = 0; k < t; ++k) {  // thread k's jobs, as ThreadTeam's run_slot takes them
        double sum = 0;
        if (how == Schedule::interleaved)
            for (std::size_t i = k; i < n; i += t) sum += jobs[i];
        else
            for (std::size_t i = k * n / t, e = (k + 1) * n / t; i < e; ++i) sum += jobs[i];
        end = std::max(end, sum);
    }
    return end;
}

}  // namespace kasoku
