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

// Runs body(i) for i in [0, count) on up to `threads` OpenMP threads (no team when 1, or in a build without OpenMP).
// body must not throw (an exception cannot leave an OpenMP team).
template <class F>
void parallel_for(int threads, std::size_t count, F&& body) {
    if (threads <= 1 || count <= 1) {
        for (std::size_t i = 0; i < count; ++i) body(i);
        return;
    }
    [[maybe_unused]] int t = static_cast<int>(count) < threads ? static_cast<int>(count) : threads;
#pragma omp parallel for num_threads(t) schedule(static)
    for (std::size_t i = 0; i < count; ++i) body(i);
}

}  // namespace kasoku
