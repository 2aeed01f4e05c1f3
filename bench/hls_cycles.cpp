// The seed-004 cycle model beside the seed's Tables 1-5, and the four loop structures timed as software on this CPU
// beside the seed's i7-5600U column of Table 5, as markdown tables (docs/HARDWARE.md):
//   ./build/cpp/bench/hls_cycles
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/hls/cycle_model.hpp"

using namespace kasoku::hls;

int main() {
    const Latencies lat = fit_to_paper();
    std::printf(
        "Fitted lines (cycles = a + b * bits of P): seq %.2f + %.3f b, dep %.2f + %.3f b, fill_group %.2f + "
        "%.3f b, fill %.2f + %.3f b\n\n",
        lat.seq.a, lat.seq.b, lat.dep.a, lat.dep.b, lat.fill_group.a, lat.fill_group.b, lat.fill.a, lat.fill.b);
    std::printf("| table | points | P (bits) | method | clock, ns | seed's cycles | model | model / seed |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const auto& r : paper_cycles()) {
        const int m = r.log_points();
        const Field f = seed_field(m);
        const double c = model_cycles(r.method, m, lat);
        std::printf("| %d%s | %d | %u (%d) | (%d) | %.0f | %ld | %.0f | %.3f |\n", r.table,
                    r.table == 5 ? " (predicted)" : "", r.points, f.p, f.bits(), r.method, r.clock_ns, r.cycles, c,
                    c / r.cycles);
    }
    // Software: median of 7 runs of each structure (the host entry: ROM, copies and the transform), and arith's
    // fast NTT (AVX2/AVX-512 bodies, a 60-bit prime) on the same number of points.
    const double seed_cpu_ms[] = {1.206, 2.649, 5.632, 12.122, 28.455};  // Table 5, m = 12..16
    auto median_ms = [](auto&& fn) {
        std::vector<double> t;
        for (int r = 0; r < 7; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            fn();
            t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(t.begin(), t.end());
        return t[3];
    };
    std::printf(
        "\n| points | seed's i7-5600U, ms | nested | inner-flattened | fully flattened | two butterflies | "
        "arith NTT (60-bit prime) |\n| --- | --- | --- | --- | --- | --- | --- |\n");
    for (int m = 12; m <= 16; ++m) {
        const Field f = seed_field(m);
        std::mt19937_64 rng(m);
        std::vector<word> x(std::size_t(1) << m);
        for (auto& v : x) v = static_cast<word>(rng() % f.p);
        std::printf("| %d | %.3f |", 1 << m, seed_cpu_ms[m - 12]);
        for (Structure st :
             {Structure::nested, Structure::inner_flattened, Structure::fully_flattened, Structure::two_butterflies})
            std::printf(" %.3f |", median_ms([&] { (void)ntt(st, f, x); }));
        const auto q = kasoku::arith::generate_ntt_primes(60, 1, std::size_t(1) << m);
        const kasoku::arith::NttTables t(q[0], std::size_t(1) << m);
        std::vector<kasoku::arith::u64> a(x.begin(), x.end());
        std::printf(" %.3f |\n", median_ms([&] { kasoku::arith::ntt_forward(a.data(), t); }));
    }
    return 0;
}
