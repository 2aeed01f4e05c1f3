// Verilator testbench for the NTT designs of hw/rtl: loads DIR/in.hex through the host port (one word a cycle),
// runs the transform, reads the result back and compares it bit for bit with DIR/expected.hex (kasoku::hls::ntt);
// counts the cycles of each phase and sets them beside the model in DIR/params.txt (hw_gen). Prints one JSON line.
// Exit status: 0 when the result is equal and the transform's cycles are within 10% of the model, else 1.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "Vtop.h"
#include "verilated.h"

namespace {

std::map<std::string, std::string> read_params(const std::string& path) {
    std::map<std::string, std::string> p;
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);)
        if (auto eq = line.find('='); eq != std::string::npos) p[line.substr(0, eq)] = line.substr(eq + 1);
    return p;
}

std::vector<uint64_t> read_hex(const std::string& path) {
    std::vector<uint64_t> v;
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);)
        if (!line.empty()) v.push_back(std::stoull(line, nullptr, 16));
    return v;
}

// Field `i` (w bits) of a Verilator port: a plain integer up to 64 bits, a VlWide array of 32-bit words above.
template <class T>
void set_field(T& port, int i, int w, uint64_t v) {
    for (int b = 0; b < w; ++b) {
        const int bit = i * w + b;
        const uint64_t one = (v >> b) & 1;
        if constexpr (std::is_integral_v<T>) {
            port = T((port & ~(T(1) << bit)) | (T(one) << bit));
        } else {
            port[bit / 32] = (port[bit / 32] & ~(1u << (bit % 32))) | (uint32_t(one) << (bit % 32));
        }
    }
}
template <class T>
uint64_t get_field(const T& port, int i, int w) {
    uint64_t v = 0;
    for (int b = 0; b < w; ++b) {
        const int bit = i * w + b;
        uint64_t one;
        if constexpr (std::is_integral_v<T>) one = (port >> bit) & 1;
        else one = (port[bit / 32] >> (bit % 32)) & 1;
        v |= one << b;
    }
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: tb DIR (made by hw_gen)\n";
        return 2;
    }
    const std::string dir = argv[1];
    auto params = read_params(dir + "/params.txt");
    const int m = std::stoi(params["M_LOG"]), w = std::stoi(params["W"]);
    const int lanes = params["DESIGN"] == "fig7" ? 2 : 1 << std::stoi(params["LANES_LOG"]);
    const long model = std::stol(params["MODEL_TRANSFORM"]);
    const auto in = read_hex(dir + "/in.hex"), expected = read_hex(dir + "/expected.hex");
    const long M = 1L << m, words = M / lanes;
    if (long(in.size()) != M || long(expected.size()) != M) {
        std::cerr << "tb: " << dir << " does not hold " << M << " inputs and outputs\n";
        return 2;
    }

    auto ctx = std::make_unique<VerilatedContext>();
    auto top = std::make_unique<Vtop>(ctx.get());
    auto tick = [&] {
        top->clk = 0;
        top->eval();
        top->clk = 1;
        top->eval();
    };
    top->rst = 1;
    top->start = 0;
    top->h_we = 0;
    tick();
    tick();
    top->rst = 0;

    long load = 0;
    for (long a = 0; a < words; ++a, ++load) {
        top->h_we = 1;
        top->h_addr = a;
        for (int l = 0; l < lanes; ++l) set_field(top->h_wdata, l, w, in[a * lanes + l]);
        tick();
    }
    top->h_we = 0;

    top->start = 1;
    tick();
    top->start = 0;
    long transform = 1;
    while (!top->done && transform < 100 * model) {
        tick();
        ++transform;
    }

    // One address a cycle; a word comes `latency` cycles after its address and is taken at the next edge.
    const int latency = std::stoi(params["READ_LATENCY"]);
    long unload = 0, mismatches = 0, first_bad = -1;
    for (long i = 0; i < words + latency - 1; ++i) {
        top->h_addr = i < words ? i : 0;
        tick();
        ++unload;
        if (const long a = i - (latency - 1); a >= 0)
            for (int l = 0; l < lanes; ++l)
                if (get_field(top->h_rdata, l, w) != expected[a * lanes + l] && mismatches++ == 0)
                    first_bad = a * lanes + l;
    }
    ++unload;
    top->final();

    const bool equal = mismatches == 0 && top->done == 0;  // done is a one-cycle pulse
    const double off = double(transform - model) / double(model);
    std::printf(
        "{\"design\": \"%s\", \"m\": %d, \"points\": %ld, \"lanes\": %d, \"bits\": %d, \"equal\": %s, "
        "\"mismatches\": %ld, \"load\": %ld, \"transform\": %ld, \"unload\": %ld, \"total\": %ld, "
        "\"model_transform\": %ld, \"model_off\": %.4f}\n",
        params["DESIGN"].c_str(), m, M, lanes, w, equal ? "true" : "false", mismatches, load, transform, unload,
        load + transform + unload, model, off);
    if (mismatches)
        std::fprintf(stderr, "tb: %ld outputs differ from kasoku::hls::ntt, the first at %ld\n", mismatches, first_bad);
    return equal && std::fabs(off) <= 0.10 ? 0 : 1;
}
