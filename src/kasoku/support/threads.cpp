#include "kasoku/support/threads.hpp"

#ifdef _OPENMP
#include <omp.h>
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

}  // namespace kasoku
