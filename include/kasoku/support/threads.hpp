// Thread counts are per-call arguments (docs/DESIGN.md §3.1); 0 means "all cores".
#pragma once
#include <cstddef>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace kasoku {

// Number of hardware threads available to this process.
int hardware_threads();
// Resolves a user thread count: 0 -> hardware_threads().
// @throws ParameterError for a negative count
int resolve_threads(int threads);

// The CPUs the calling thread may run on (its affinity mask, in order: the process's unless the thread was pinned;
// 0 .. hardware_threads() - 1 where that cannot be read).
std::vector<int> usable_cpus();

// Lets the calling thread run on any of `cpus` and no other (one CPU: pins it there; nothing for an empty list, or
// where affinity cannot be set).
void unbind(const std::vector<int>& cpus);

// How parallel_for shares its jobs among the threads.
enum class Schedule {
    // Thread k takes jobs k, k + threads, ...: for jobs that are limbs, neighbours of which often cost alike (a
    // bootstrapping chain's 60-bit primes above its 40-bit user primes, whose kernels run faster), so that each
    // thread gets its part of every stretch.
    interleaved,
    // Thread k takes the k-th of `threads` ranges of consecutive jobs: for jobs that are neighbouring chunks of the
    // same limbs, so that each thread's memory streams run on from one job to the next (interleaved, ModUp's scaling
    // at H16 took 7 % longer on two threads).
    contiguous,
    // Each thread takes the next job when it is done with one: for jobs of unequal cost, so that the threads end
    // within one job of each other. Give the costliest jobs the first indices: the last ones, which decide when the
    // team is done, are then the cheapest.
    dynamic,
};

// Threads of its own for the parallel_for calls of one thread (a scheduler runner's tasks), in place of OpenMP's.
// libgomp gives every thread that opens parallel regions a pool of its own, and once its pools hold more threads than
// there are CPUs, a waiting team thread spins only 100 rounds before it sleeps in the kernel: with a pool per runner,
// every parallel region of a runner's task woke its second thread from a futex (8 context switches and +20 % for a
// SCHED plaintext product on 2 Zen 5 threads; docs/SCHEDULING.md). A team's helpers spin while the owner's task runs
// (each pinned to a CPU of the task's) and sleep between tasks, so a task wakes them once.
class ThreadTeam {
public:
    // A team of up to max_threads threads: the owner (the thread that engages it) and helpers made when first needed.
    explicit ThreadTeam(int max_threads);
    ~ThreadTeam();  // ends the helpers; not while engaged
    ThreadTeam(const ThreadTeam&) = delete;
    ThreadTeam& operator=(const ThreadTeam&) = delete;

    // While an Engaged lives, parallel_for on the thread that made it runs its up to `threads` threads on the team:
    // that thread and threads - 1 helpers, helper i pinned to cpus[i] (none pinned for fewer cpus than threads). Pinned
    // helpers spin between the regions meanwhile (for up to a millisecond each wait); they sleep once it ends, and
    // unpinned ones whenever they wait.
    // @throws ParameterError for threads outside 1..max_threads, or a thread that has a team engaged already
    class Engaged {
    public:
        Engaged(ThreadTeam& team, int threads, const std::vector<int>& cpus);
        ~Engaged();
        Engaged(const Engaged&) = delete;
        Engaged& operator=(const Engaged&) = delete;

    private:
        ThreadTeam& team_;
    };

    // For parallel_for: runs fn(ctx, i) for i in [0, count) on `threads` threads of the calling thread's engaged team
    // (false, nothing run, where it has none), every index once, each thread's indices as `how` gives them; a job
    // whose helper has not woken yet is run by the caller. `body` names the loop for the instruments of a build
    // configured with KASOKU_INSTRUMENTS (src/kasoku/support/region_recorder.hpp), which may run the region instead.
    static bool run(int threads, std::size_t count, void (*fn)(void*, std::size_t), void* ctx, int how,
                    const std::type_info& body = typeid(void));
    // Whether the calling thread is inside a team's region (parallel_for then runs serially, as a nested OpenMP
    // region would).
    static bool in_region();

private:
    struct State;
    State* s_;
};

// Runs body(i) for i in [0, count) on up to `threads` threads: the calling thread's engaged ThreadTeam, or else an
// OpenMP team (no team when 1, inside a team's region, or in a build without OpenMP). body must not throw (an
// exception cannot leave a team).
template <class F>
void parallel_for(int threads, std::size_t count, F&& body, Schedule how = Schedule::interleaved) {
    if (threads <= 1 || count <= 1 || ThreadTeam::in_region()) {
        for (std::size_t i = 0; i < count; ++i) body(i);
        return;
    }
    [[maybe_unused]] int t = static_cast<int>(count) < threads ? static_cast<int>(count) : threads;
    using Body = std::remove_reference_t<F>;
    void (*const call)(void*, std::size_t) = [](void* b, std::size_t i) { (*static_cast<Body*>(b))(i); };
    void* const ctx = const_cast<void*>(static_cast<const void*>(&body));
    if (ThreadTeam::run(t, count, call, ctx, static_cast<int>(how), typeid(Body))) return;
    if (how == Schedule::interleaved) {
#pragma omp parallel for num_threads(t) schedule(static, 1)
        for (std::size_t i = 0; i < count; ++i) body(i);
    } else if (how == Schedule::contiguous) {
#pragma omp parallel for num_threads(t) schedule(static)
        for (std::size_t i = 0; i < count; ++i) body(i);
    } else {
#pragma omp parallel for num_threads(t) schedule(dynamic, 1)
        for (std::size_t i = 0; i < count; ++i) body(i);
    }
}

}  // namespace kasoku
