#include "kasoku/support/threads.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef __linux__
#include <sched.h>
#endif

#include <string>
#include <thread>

#include "kasoku/support/error.hpp"

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

void unbind([[maybe_unused]] const std::vector<int>& cpus) {
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus)
        if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
    if (CPU_COUNT(&set) > 0) sched_setaffinity(0, sizeof set, &set);  // the calling thread; a failure leaves it
#endif
}

namespace {
void pin_self(int cpu) { unbind({cpu}); }  // the calling thread to that one CPU
}  // namespace

void bind_team(const std::vector<int>& cpus) {
    if (cpus.empty()) return;
    const int n = static_cast<int>(cpus.size());
    if (n == 1) {
        pin_self(cpus[0]);
        return;
    }
#pragma omp parallel num_threads(n)
    {
#ifdef _OPENMP
        const int i = omp_get_thread_num();
#else
        const int i = 0;
#endif
        if (i < n) pin_self(cpus[static_cast<std::size_t>(i)]);
    }
}

}  // namespace kasoku
