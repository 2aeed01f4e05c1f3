// Thread counts are per-call arguments (docs/DESIGN.md §3.1); 0 means "all cores".
#pragma once
#include <cstddef>

namespace kasoku {

// Number of hardware threads available to this process.
int hardware_threads();
// Resolves a user thread count: 0 -> hardware_threads().
// @throws ParameterError for a negative count
int resolve_threads(int threads);

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
