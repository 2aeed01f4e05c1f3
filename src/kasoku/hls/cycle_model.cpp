#include "kasoku/hls/cycle_model.hpp"

#include <algorithm>
#include <string>

#include "kasoku/support/error.hpp"

namespace kasoku::hls {

const std::array<Method, 8>& methods() {
    static const std::array<Method, 8> kMethods{{
        {1, Structure::nested, "(none)"},
        {2, Structure::nested, "set_directive_pipeline ntt_nested/butterfly_loop"},
        {3, Structure::nested,
         "set_directive_pipeline ntt_nested/butterfly_loop; set_directive_unroll ntt_nested/stage_loop"},
        {4, Structure::inner_flattened, "set_directive_pipeline ntt_inner_flattened/butterfly_loop"},
        {5, Structure::inner_flattened,
         "set_directive_pipeline ntt_inner_flattened/butterfly_loop; set_directive_unroll "
         "ntt_inner_flattened/stage_loop"},
        {6, Structure::fully_flattened, "set_directive_pipeline ntt_fully_flattened/flat_loop"},
        {7, Structure::two_butterflies,
         "set_directive_pipeline ntt_two_butterflies/butterfly_loop; set_directive_unroll "
         "ntt_two_butterflies/stage_loop"},
        {8, Structure::two_butterflies,
         "set_directive_pipeline ntt_two_butterflies/butterfly_loop; set_directive_unroll "
         "ntt_two_butterflies/stage_loop; "
         "set_directive_array_partition -type cyclic -factor 2 -dim 2 ntt_two_butterflies st.data"},
    }};
    return kMethods;
}

const std::vector<PaperCycles>& paper_cycles() {
    static const std::vector<PaperCycles> kRows{
        {1, 16, 10, 2858, 1},      {2, 16, 20, 2777, 1},      {3, 16, 10, 324, 1},       {4, 16, 20, 2740, 1},
        {5, 16, 10, 196, 1},       {6, 16, 20, 2726, 1},      {1, 1024, 10, 485398, 2},  {2, 1024, 20, 471061, 2},
        {3, 1024, 10, 29701, 2},   {4, 1024, 20, 468012, 2},  {5, 1024, 10, 7597, 2},    {6, 1024, 20, 467974, 2},
        {7, 16, 10, 189, 3},       {8, 16, 10, 178, 3},       {7, 1024, 10, 7594, 4},    {8, 1024, 10, 5291, 4},
        {5, 4096, 10, 33337, 5},   {8, 4096, 10, 22072, 5},   {5, 8192, 10, 70273, 5},   {8, 8192, 10, 45695, 5},
        {5, 16384, 10, 148173, 5}, {8, 16384, 10, 94924, 5},  {5, 32768, 10, 312093, 5}, {8, 32768, 10, 197398, 5},
        {5, 65536, 10, 656241, 5}, {8, 65536, 10, 410480, 5},
    };
    return kRows;
}

int PaperCycles::log_points() const {
    int m = 0;
    while ((1 << m) < points) ++m;
    return m;
}

namespace {

// cycles = k * line(b) + rest for each method: the factor k on the fitted line and the structural rest.
std::pair<double, double> split(int method, int m) {
    const double M = double(1 << m), io = 2 * M;
    switch (method) {
        case 1:
        case 2:
        case 4:
        case 6: return {m * M / 2, io};
        case 3: return {M - 1, m * M / 2 + io};
        case 5: return {m, m * M / 2 + io};
        case 7: return {m, (m - 1) * (M / 2) + M / 2 + io};
        case 8: return {m, (m - 1) * (M / 4) + M / 2 + io};
    }
    throw ParameterError("hls: the seed's methods are (1) to (8), got " + std::to_string(method));
}

const Line& line_of(int method, const Latencies& lat) {
    switch (method) {
        case 1: return lat.seq;
        case 2:
        case 4:
        case 6: return lat.dep;
        case 3: return lat.fill_group;
        default: return lat.fill;
    }
}

// Least squares of (cycles - rest) / k = a + b * bits over the rows of Tables 1-4 whose method uses the line.
Line fit(std::initializer_list<int> which) {
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& r : paper_cycles()) {
        if (r.table > 4) continue;
        bool use = false;
        for (int w : which) use |= w == r.method;
        if (!use) continue;
        const int m = r.log_points();
        const auto [k, rest] = split(r.method, m);
        const double x = seed_field(m).bits(), y = (r.cycles - rest) / k;
        n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    Line l;
    l.b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    l.a = (sy - l.b * sx) / n;
    return l;
}

}  // namespace

Latencies fit_to_paper() { return {fit({1}), fit({2, 4, 6}), fit({3}), fit({5, 7, 8})}; }

double model_cycles(int method, int m, const Latencies& lat) {
    const auto [k, rest] = split(method, m);
    return k * line_of(method, lat).at(seed_field(m).bits()) + rest;
}

RtlCycles rtl_cycles(Rtl design, int m, int lanes) {
    if (design == Rtl::fig7) lanes = 2;
    const long M = 1L << std::clamp(m, 0, 30);
    if (m < 3 || m > kMaxLogPoints || lanes < 2 || (lanes & (lanes - 1)) != 0 || M < 4L * lanes)
        throw ParameterError("hls::rtl_cycles: needs m in 3.." + std::to_string(kMaxLogPoints) +
                             " and a power-of-two lane count with 4 lanes <= M = 2^m, got m = " + std::to_string(m) +
                             ", lanes = " + std::to_string(lanes));
    const long stage = kRtlDepth + 1;  // pipeline drain and the step to the next stage
    RtlCycles c;
    c.load = M / lanes;
    c.unload = M / lanes + kRtlHostReadLatency;
    c.transform =
        2 + (design == Rtl::fig7 ? (m - 1) * (M / 4 + stage) + (M / 2 + stage) : m * (M / (2 * lanes) + stage));
    return c;
}

}  // namespace kasoku::hls
