// The cycle model of Kawamura et al. (its eq. 13: a pipelined loop of trip count TC takes L = IL + II * (TC - 1) + C
// cycles), applied to each of its synthesis methods (1)-(8), and the seed's own cycle counts (Tables 1-5) to set it
// against (docs/HARDWARE.md).
// Per method, with M = 2^m points and b the bits of P; IO = 2M cycles move the input in and the output out:
//   (1)            no directives: m * M/2 butterflies one after another, each seq(b) cycles (mod-multiply latency
//                  and loop overhead): m * M/2 * seq(b) + IO;
//   (2), (4), (6)  one pipeline across the stages (the tool flattens the nest): stage s + 1 reads what stage s
//                  writes, so II is the butterfly's memory round trip dep(b): m * M/2 * dep(b) + IO;
//   (3)            a pipeline per stage (stages unrolled) around the butterflies of one group, refilled per group:
//                  sum_s 2^s * (fill_g(b) + M / 2^(s+1)) + IO = (M - 1) * fill_g(b) + m * M/2 + IO;
//   (5)            a pipeline per stage over its M/2 butterflies, II = 1: m * (fill(b) + M/2) + IO;
//   (7)            two butterflies per iteration (M/4 iterations) but one array: four reads on two ports, II = 2:
//                  (m - 1) * (fill(b) + 2 * M/4) + fill(b) + M/2 + IO;
//   (8)            as (7) with each array partitioned in two: II = 1: (m - 1) * (fill(b) + M/4) + fill(b) + M/2 + IO.
// seq, dep, fill_g and fill are lines in b fitted (least squares) to the seed's Tables 1-4 (16 and 1,024 points);
// Table 5 (4,096 to 65,536 points) is then a prediction.
// Errors: ParameterError for a method outside 1..8 or an m outside seed_field's range.
#pragma once
#include <array>
#include <vector>

#include "kasoku/hls/ntt.hpp"

namespace kasoku::hls {

struct Method {
    int number;           // the seed's (1)..(8)
    Structure structure;  // the code it synthesises
    const char* directives;
};
// The seed's methods, with their directives as Vivado-HLS Tcl on the loop labels of ntt.hpp.
const std::array<Method, 8>& methods();

// One row of the seed's tables: method, points, clock (ns) and cycles ("#Steps").
struct PaperCycles {
    int method, points;
    double clock_ns;
    long cycles;
    int table;
    int log_points() const;  // m with points = 2^m
};
const std::vector<PaperCycles>& paper_cycles();

struct Line {
    double a = 0, b = 0;
    double at(int bits) const { return a + b * bits; }
};
struct Latencies {
    Line seq, dep, fill_group, fill;
};
// The lines fitted to Tables 1-4.
Latencies fit_to_paper();
// Modelled cycles of a method at M = 2^m points.
// @throws ParameterError for a method outside 1..8, or m outside 2..kMaxLogPoints (seed_field)
double model_cycles(int method, int m, const Latencies& lat);

// The RTL designs of hw/rtl (docs/HARDWARE.md) by the same formula, with the RTL's own figures: II = 1, a pipeline of
// kRtlDepth cycles (the addresses registered, a buffer read of kRtlReadLatency, then the butterfly:
// add/subtract 2, Barrett mod-multiply 8 = three two-cycle products and two steps), one cycle to step to the next
// stage, and two to start (the host's start is registered). `fig7` is the seed's method (8) (two butterflies an
// iteration, M/4 iterations a stage, the last stage M/2 iterations of one); `lanes` is kasoku's constant-geometry
// design with `lanes` butterflies an iteration (M/(2 lanes) iterations a stage). The host moves one memory word (2 or
// `lanes` residues) a cycle; its reads come kRtlHostReadLatency cycles after the address.
enum class Rtl { fig7, lanes };
inline constexpr int kRtlReadLatency = 4, kRtlDepth = 1 + kRtlReadLatency + 10,
                     kRtlHostReadLatency = 1 + kRtlReadLatency;
struct RtlCycles {
    long load = 0, transform = 0, unload = 0;  // unload: the read latency after the last address
    long total() const { return load + transform + unload; }
};
// @throws ParameterError for m outside 3..16, lanes not a power of two >= 2, or M < 4 lanes (`lanes` design)
RtlCycles rtl_cycles(Rtl design, int m, int lanes = 2);

}  // namespace kasoku::hls
