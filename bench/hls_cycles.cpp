// The seed-004 cycle model beside the seed's Tables 1-5, as a markdown table (docs/HARDWARE.md):
//   ./build/cpp/bench/hls_cycles
#include <cmath>
#include <cstdio>

#include "kasoku/hls/cycle_model.hpp"

using namespace kasoku::hls;

int main() {
    const Latencies lat = fit_to_paper();
    std::printf("Fitted lines (cycles = a + b * bits of P): seq %.2f + %.3f b, dep %.2f + %.3f b, fill_group %.2f + "
                "%.3f b, fill %.2f + %.3f b\n\n",
                lat.seq.a, lat.seq.b, lat.dep.a, lat.dep.b, lat.fill_group.a, lat.fill_group.b, lat.fill.a, lat.fill.b);
    std::printf("| table | points | P (bits) | method | clock, ns | seed's cycles | model | model / seed |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const auto& r : paper_cycles()) {
        int m = 0;
        while ((1 << m) < r.points) ++m;
        const Field f = seed_field(m);
        const double c = model_cycles(r.method, m, lat);
        std::printf("| %d%s | %d | %u (%d) | (%d) | %.0f | %ld | %.0f | %.3f |\n", r.table, r.table == 5 ? " (predicted)" : "",
                    r.points, f.p, f.bits(), r.method, r.clock_ns, r.cycles, c, c / r.cycles);
    }
    return 0;
}
