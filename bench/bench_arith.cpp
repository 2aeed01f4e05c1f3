// Kernel benchmarks (Google Benchmark): every SIMD body this CPU runs, side by side.
//   build/bench/bench_arith --benchmark_format=json
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/arith/simd.hpp"

using namespace kasoku::arith;

namespace {
struct Data {
    NttTables t;
    std::vector<u64> a, b, c, r;
    Data(int log_n, int bits) : t(generate_ntt_primes(bits, 1, size_t{1} << log_n)[0], size_t{1} << log_n) {
        std::mt19937_64 rng(1);
        const size_t n = t.n();
        a.resize(n); b.resize(n); c.resize(n); r.resize(n);
        for (size_t i = 0; i < n; ++i) { a[i] = rng() % t.q(); b[i] = rng() % t.q(); c[i] = rng() % t.q(); }
    }
};

void register_all() {
    for (SimdLevel level : simd_available()) {
        const KernelTable* k = &kernel_table(level);
        const std::string body = k->name;
        for (int log_n : {12, 14, 16}) {
            benchmark::RegisterBenchmark(("BM_NttForward_" + body + "/" + std::to_string(log_n)).c_str(),
                                         [k, log_n](benchmark::State& st) {
                                             Data d(log_n, 60);
                                             for (auto _ : st) k->ntt_forward(d.a.data(), d.t);
                                         });
            benchmark::RegisterBenchmark(("BM_NttInverse_" + body + "/" + std::to_string(log_n)).c_str(),
                                         [k, log_n](benchmark::State& st) {
                                             Data d(log_n, 60);
                                             for (auto _ : st) k->ntt_inverse(d.a.data(), d.t);
                                         });
            benchmark::RegisterBenchmark(("BM_MulMod_" + body + "/" + std::to_string(log_n)).c_str(),
                                         [k, log_n](benchmark::State& st) {
                                             Data d(log_n, 60);
                                             for (auto _ : st) k->mul(d.a.data(), d.b.data(), d.t.n(), d.t.modulus(), d.r.data());
                                         });
            benchmark::RegisterBenchmark(("BM_FmaMod_" + body + "/" + std::to_string(log_n)).c_str(),
                                         [k, log_n](benchmark::State& st) {
                                             Data d(log_n, 60);
                                             for (auto _ : st)
                                                 k->fma(d.a.data(), d.b.data(), d.c.data(), d.t.n(), d.t.modulus(), d.r.data());
                                         });
            benchmark::RegisterBenchmark(("BM_AddMod_" + body + "/" + std::to_string(log_n)).c_str(),
                                         [k, log_n](benchmark::State& st) {
                                             Data d(log_n, 60);
                                             for (auto _ : st) k->add(d.a.data(), d.b.data(), d.t.n(), d.t.q(), d.r.data());
                                         });
        }
    }
}
}  // namespace

int main(int argc, char** argv) {
    register_all();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
