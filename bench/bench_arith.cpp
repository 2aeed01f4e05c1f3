// Kernel benchmarks (Google Benchmark): every SIMD body this CPU runs, side by side.
//   build/bench/bench_arith --benchmark_format=json
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <random>
#include <vector>

#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/arith/simd.hpp"
#include "kasoku/support/aligned.hpp"

using namespace kasoku::arith;

namespace {
struct Data {
    NttTables t;
    std::vector<u64> a, b, c, r;
    Data(int log_n, int bits) : t(generate_ntt_primes(bits, 1, size_t{1} << log_n)[0], size_t{1} << log_n) {
        std::mt19937_64 rng(1);
        const size_t n = t.n();
        a.resize(n);
        b.resize(n);
        c.resize(n);
        r.resize(n);
        for (size_t i = 0; i < n; ++i) {
            a[i] = rng() % t.q();
            b[i] = rng() % t.q();
            c[i] = rng() % t.q();
        }
    }
};

// Name: BM_<Kernel>_<body>/q<bits>/<log_n>. 40-bit primes are the CKKS scaling primes (IFMA range),
// 60-bit ones the first and special primes (IFMA falls back to AVX-512DQ there).
template <class F>
void add_bench(const std::string& kernel, const KernelTable* k, int bits, int log_n, F body) {
    const std::string name = "BM_" + kernel + "_" + k->name + "/q" + std::to_string(bits) + "/" + std::to_string(log_n);
    benchmark::RegisterBenchmark(name.c_str(), [k, bits, log_n, body](benchmark::State& st) {
        Data d(log_n, bits);
        for (auto _ : st) body(*k, d);
    });
}

// Kernel grid F60 (seed 000 Table 5.2): r = a*b + c over l limbs of N words, 60-bit primes, either as MultAdd
// (mul into a temporary, then add: two passes) or as one FMA pass with a single reduction.
// Name: BM_F60_<MultAdd|Fma>_<body>/<log_n>/<l>.
struct Limbs {
    std::vector<Modulus> mods;
    std::vector<kasoku::AlignedWords> a, b, c, r, t;  // 64-byte aligned like the library's limbs
    Limbs(int log_n, int l) {
        const std::size_t n = std::size_t{1} << log_n;
        std::mt19937_64 rng(2);
        for (u64 q : generate_ntt_primes(60, static_cast<std::size_t>(l), n)) mods.emplace_back(q);
        for (auto* v : {&a, &b, &c, &r, &t}) v->assign(static_cast<std::size_t>(l), kasoku::AlignedWords(n));
        for (int i = 0; i < l; ++i)
            for (std::size_t k = 0; k < n; ++k) {
                a[i][k] = rng() % mods[i].value;
                b[i][k] = rng() % mods[i].value;
                c[i][k] = rng() % mods[i].value;
            }
    }
};

// One data set per (log_n, l), made on first use and shared by every body and repetition.
Limbs& limbs(int log_n, int l) {
    static std::map<std::pair<int, int>, std::unique_ptr<Limbs>> cache;
    auto& p = cache[{log_n, l}];
    if (!p) p = std::make_unique<Limbs>(log_n, l);
    return *p;
}

void register_f60() {
    for (SimdLevel level : simd_available()) {
        const KernelTable* k = &kernel_table(level);
        for (int log_n = 10; log_n <= 15; ++log_n)
            for (int l = 1; l <= 15; ++l) {
                const std::string suffix =
                    std::string("_") + k->name + "/" + std::to_string(log_n) + "/" + std::to_string(l);
                benchmark::RegisterBenchmark(("BM_F60_MultAdd" + suffix).c_str(), [k, log_n, l](benchmark::State& st) {
                    Limbs& d = limbs(log_n, l);
                    const std::size_t n = std::size_t{1} << log_n;
                    for (auto _ : st)
                        for (int i = 0; i < l; ++i) {
                            k->mul(d.a[i].data(), d.b[i].data(), n, d.mods[i], d.t[i].data());
                            k->add(d.t[i].data(), d.c[i].data(), n, d.mods[i].value, d.r[i].data());
                        }
                });
                benchmark::RegisterBenchmark(("BM_F60_Fma" + suffix).c_str(), [k, log_n, l](benchmark::State& st) {
                    Limbs& d = limbs(log_n, l);
                    const std::size_t n = std::size_t{1} << log_n;
                    for (auto _ : st)
                        for (int i = 0; i < l; ++i)
                            k->fma(d.a[i].data(), d.b[i].data(), d.c[i].data(), n, d.mods[i], d.r[i].data());
                });
            }
    }
}

// Seven sources of 2^16 words (random, shifted right by `shift` bits), fixed factors and an overflow correction
// table: one target limb of a base conversion by `dot` (a kernel table's dot_const or dot_const_small).
using DotConst = void (*)(const u64* const*, const u64*, std::size_t, std::size_t, const Modulus&, u64*,
                          const std::uint8_t*, const u64*);
void dot_const7(DotConst dot, Data& d, int shift) {
    static std::map<int, std::vector<std::vector<u64>>> sources;
    auto& src = sources[shift];
    if (src.empty()) {
        std::mt19937_64 rng(3 + static_cast<unsigned>(shift));
        src.assign(7, std::vector<u64>(std::size_t{1} << 16));
        for (auto& v : src)
            for (auto& x : v) x = rng() >> shift;
    }
    static const std::vector<std::uint8_t> index = [] {
        std::vector<std::uint8_t> v(std::size_t{1} << 16);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(i % 8);
        return v;
    }();
    const u64* y[7];
    for (int i = 0; i < 7; ++i) y[i] = src[static_cast<std::size_t>(i)].data();
    const u64 q = d.t.q(), f[7] = {q - 1, q / 3, q / 5, q / 7, q / 11, q / 13, q / 17};
    const u64 table[8] = {0, q / 2, q / 3, q / 4, q / 5, q / 6, q / 7, q / 8};
    dot(y, f, 7, d.t.n(), d.t.modulus(), d.r.data(), index.data(), table);
}

void register_all() {
    for (SimdLevel level : simd_available()) {
        const KernelTable* k = &kernel_table(level);
        // 40: the scaling primes; 48: AVX2's double-precision limit (its special and bootstrapping primes); 50: the
        // IFMA body's (kasoku.nn's bootstrapping primes there); 60: the first and special primes of the presets
        for (int bits : {40, 48, 50, 60}) {
            for (int log_n : {12, 14, 16}) {
                add_bench("NttForward", k, bits, log_n,
                          [](const KernelTable& k, Data& d) { k.ntt_forward(d.a.data(), d.t); });
                add_bench("NttInverse", k, bits, log_n,
                          [](const KernelTable& k, Data& d) { k.ntt_inverse(d.a.data(), d.t); });
                if (log_n != 16 && (bits == 48 || bits == 50)) continue;
                add_bench("MulMod", k, bits, log_n, [](const KernelTable& k, Data& d) {
                    k.mul(d.a.data(), d.b.data(), d.t.n(), d.t.modulus(), d.r.data());
                });
                add_bench("FmaMod", k, bits, log_n, [](const KernelTable& k, Data& d) {
                    k.fma(d.a.data(), d.b.data(), d.c.data(), d.t.n(), d.t.modulus(), d.r.data());
                });
                add_bench("AddMod", k, bits, log_n, [](const KernelTable& k, Data& d) {
                    k.add(d.a.data(), d.b.data(), d.t.n(), d.t.q(), d.r.data());
                });
                // One limb of a key-switching inner product over three digits: the dot product of vectors (one
                // reduction per word) and the same as a product and two reduced multiply-adds.
                add_bench("Dot3", k, bits, log_n, [](const KernelTable& k, Data& d) {
                    const u64* x[3] = {d.a.data(), d.b.data(), d.c.data()};
                    const u64* y[3] = {d.b.data(), d.c.data(), d.a.data()};
                    k.dot(x, y, 3, d.t.n(), d.t.modulus(), d.r.data(), false);
                });
                // Eight terms: one group of a linear transform's sum of plaintext products.
                add_bench("Dot8", k, bits, log_n, [](const KernelTable& k, Data& d) {
                    const u64* x[8] = {d.a.data(), d.b.data(), d.c.data(), d.a.data(),
                                       d.b.data(), d.c.data(), d.a.data(), d.b.data()};
                    const u64* y[8] = {d.b.data(), d.c.data(), d.a.data(), d.c.data(),
                                       d.a.data(), d.b.data(), d.b.data(), d.c.data()};
                    k.dot(x, y, 8, d.t.n(), d.t.modulus(), d.r.data(), false);
                });
                add_bench("MulFma3", k, bits, log_n, [](const KernelTable& k, Data& d) {
                    k.mul(d.a.data(), d.b.data(), d.t.n(), d.t.modulus(), d.r.data());
                    k.fma(d.b.data(), d.c.data(), d.r.data(), d.t.n(), d.t.modulus(), d.r.data());
                    k.fma(d.c.data(), d.a.data(), d.r.data(), d.t.n(), d.t.modulus(), d.r.data());
                });
            }
            // One target limb of a base conversion with the overflow correction: H16's ModDown from its 7 special
            // primes (sources below 2^60 as they were; 40-bit targets take the IFMA body's own dot product), and from 7
            // sources below 2^47 (48-bit special primes, a 40-bit digit in ModUp) by the general kernel and the
            // small-source one, on the same data.
            add_bench("DotConst7", k, bits, 16, [](const KernelTable& k, Data& d) { dot_const7(k.dot_const, d, 4); });
            add_bench("DotConstS7", k, bits, 16, [](const KernelTable& k, Data& d) { dot_const7(k.dot_const, d, 17); });
            add_bench("DotConstSmallS7", k, bits, 16,
                      [](const KernelTable& k, Data& d) { dot_const7(k.dot_const_small, d, 17); });
        }
    }
}
}  // namespace

int main(int argc, char** argv) {
    register_all();
    register_f60();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
