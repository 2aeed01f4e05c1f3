// Thread counts are per-call arguments (docs/DESIGN.md §3.1); 0 means "all cores".
#pragma once
#include <cstddef>
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

// Pins the calling thread to cpus[0] and the threads of the OpenMP teams it opens with up to cpus.size() threads to
// cpus[1], cpus[2], ... (team thread i to cpus[i]; libgomp gives a thread's teams the same threads in the same order).
// For callers that run teams side by side from several threads (the scheduler's runners): left to itself, Linux may
// wake a team's thread on the CPU of another team, and two threads of one team then share a core until it moves them.
// Does nothing for an empty list or where affinity cannot be set (not Linux).
void bind_team(const std::vector<int>& cpus);
// Lets the calling thread run on any of `cpus` again (nothing for an empty list, or where affinity cannot be set).
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

// Runs body(i) for i in [0, count) on up to `threads` OpenMP threads (no team when 1, or in a build without OpenMP).
// body must not throw (an exception cannot leave an OpenMP team).
template <class F>
void parallel_for(int threads, std::size_t count, F&& body, Schedule how = Schedule::interleaved) {
    if (threads <= 1 || count <= 1) {
        for (std::size_t i = 0; i < count; ++i) body(i);
        return;
    }
    [[maybe_unused]] int t = static_cast<int>(count) < threads ? static_cast<int>(count) : threads;
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
