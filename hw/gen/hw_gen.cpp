// Writes what one run of an RTL NTT design needs (hw/sim.sh, hw/flow.sh): its Verilog parameters and modelled cycles
// (params.txt), the twiddle ROM in the design's layout (rom.hex), a random input (in.hex) and the output of
// kasoku::hls::ntt for it (expected.hex): one residue per hex line unless said otherwise.
//   hw_gen --design fig7|lanes --m M [--lanes B] [--seed S] --out DIR
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "kasoku/hls/cycle_model.hpp"
#include "kasoku/hls/ntt.hpp"
#include "kasoku/support/error.hpp"

namespace {

using kasoku::hls::word;

int usage(const std::string& why) {
    std::cerr << "hw_gen: " << why << "\nusage: hw_gen --design fig7|lanes --m M [--lanes B] [--seed S] --out DIR\n";
    return 2;
}

// A line of `lanes` W-bit fields, field 0 in the low bits, as hex.
std::string hex_word(const std::vector<word>& fields, int w) {
    const int bits = int(fields.size()) * w, digits = (bits + 3) / 4;
    std::string out(digits, '0');
    for (int d = 0; d < digits; ++d) {
        int v = 0;
        for (int b = 0; b < 4; ++b) {
            const int bit = 4 * d + b;
            if (bit < bits && ((fields[bit / w] >> (bit % w)) & 1)) v |= 1 << b;
        }
        out[digits - 1 - d] = "0123456789abcdef"[v];
    }
    return out;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
    std::ofstream f(path);
    for (const auto& l : lines) f << l << '\n';
    if (!f) throw kasoku::Error("hw_gen: cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
    std::string design, out;
    int m = 0, lanes = 2;
    unsigned seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--design") design = v;
        else if (k == "--m") m = std::atoi(v.c_str());
        else if (k == "--lanes") lanes = std::atoi(v.c_str());
        else if (k == "--seed") seed = unsigned(std::atoi(v.c_str()));
        else if (k == "--out") out = v;
        else return usage("unknown option " + k);
    }
    if (argc % 2 == 0) return usage("options come in pairs");
    if ((design != "fig7" && design != "lanes") || out.empty())
        return usage("--design fig7|lanes and --out are needed");
    try {
        namespace hls = kasoku::hls;
        const hls::Rtl rtl = design == "fig7" ? hls::Rtl::fig7 : hls::Rtl::lanes;
        if (rtl == hls::Rtl::fig7) lanes = 2;
        const hls::RtlCycles cycles = hls::rtl_cycles(rtl, m, lanes);
        const hls::Field f = hls::seed_field(m);
        const int w = f.bits();
        const word M = word(1) << m;
        // Barrett's MU = floor(2^(2W) / P) < 2^(W+1).
        const unsigned long long mu = static_cast<unsigned long long>(((unsigned __int128)1 << (2 * w)) / f.p);
        int lanes_log = 0;
        while ((1 << lanes_log) < lanes) ++lanes_log;

        std::vector<word> tw(M / 2);
        for (word k = 0, x = 1; k < M / 2; ++k, x = hls::mul_mod(x, f.alpha, f.p)) tw[k] = x;
        std::vector<std::string> rom;
        if (rtl == hls::Rtl::fig7) {
            for (word v : tw) rom.push_back(hex_word({v}, w));
        } else {
            for (word c = 0; c < M / (2 * word(lanes)); ++c)
                rom.push_back(hex_word(std::vector<word>(tw.begin() + c * lanes, tw.begin() + (c + 1) * lanes), w));
        }
        write_lines(out + "/rom.hex", rom);

        // Random residues, with the extremes 0 and P - 1 among them.
        std::mt19937_64 rng(seed);
        std::vector<word> in(M);
        for (auto& v : in) v = word(rng() % f.p);
        in[0] = f.p - 1, in[1] = 0, in[M - 1] = f.p - 1;
        const std::vector<word> expected = hls::ntt(hls::Structure::two_butterflies, f, in);
        std::vector<std::string> in_lines, exp_lines;
        for (word v : in) in_lines.push_back(hex_word({v}, w));
        for (word v : expected) exp_lines.push_back(hex_word({v}, w));
        write_lines(out + "/in.hex", in_lines);
        write_lines(out + "/expected.hex", exp_lines);

        std::ofstream p(out + "/params.txt");
        p << "DESIGN=" << design << "\nTOP=kasoku_ntt_" << design << "\nM_LOG=" << m << "\nLANES_LOG=" << lanes_log
          << "\nW=" << w << "\nP=" << f.p << "\nMU=" << mu << "\nMODEL_LOAD=" << cycles.load
          << "\nMODEL_TRANSFORM=" << cycles.transform << "\nMODEL_UNLOAD=" << cycles.unload
          << "\nREAD_LATENCY=" << hls::kRtlHostReadLatency << '\n';
        if (!p) throw kasoku::Error("hw_gen: cannot write " + out + "/params.txt");
    } catch (const kasoku::Error& e) {
        std::cerr << e.what() << '\n';
        return 1;
    }
    return 0;
}
