// Where the time of one key switch goes: each step of a rotation and of a relinearisation, timed through the
// backend seam (rns::KeySwitcher, rns::Backend), beside its floor: the same kernel calls on the same primes with none
// of the glue (scaling, copies, allocation), and the bytes of key every inner product must read at the measured
// streaming bandwidth.
//   build/cpp/bench/bench_keyswitch [--params H16] [--reps 7] [--threads 1] [--json out.jsonl]
// Prints one JSON line per step (median, min, max over the repetitions; every repetition runs every step once, in
// turn) and a markdown table. The steps of a rotation and a multiplication run on --threads threads (default 1), the
// floors on one; the kernel body is the one KASOKU_SIMD selects. Run it with --threads 1 and 2 (..16) to see which
// step stops scaling. With T > 1 it also times the ceilings: a floor's kernels on every thread at once, each on data of
// its own, beside the same on one thread, and prints the speed-up the machine allows for NTTs of the parameters' size
// (their limbs and tables from L3 or memory), NTTs whose limb and tables stay in a core's L2, modular products in
// registers, and streaming reads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kasoku/arith/kernels.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/simd.hpp"
#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/rns/keyswitch.hpp"
#include "kasoku/support/aligned.hpp"
#include "kasoku/support/threads.hpp"

#include "bench_stats.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using arith::u64;
using kasoku::bench::median;

namespace {

struct Step {
    std::string group, name, what;
    std::function<void()> setup, run;  // setup is not timed
    std::vector<double> ms;
};

// Kernel-only work on the primes of one H16 step: limbs of N random residues per prime, each kernel called on them.
struct Limbs {
    std::vector<arith::NttTables> ntt;
    std::vector<AlignedWords> x, y, z;
    Limbs(const rns::RnsContext& R, const std::vector<std::size_t>& primes) {
        std::mt19937_64 rng(7);
        const std::size_t n = R.n();
        for (std::size_t idx : primes) {
            ntt.emplace_back(R.prime(idx), n);
            for (auto* v : {&x, &y, &z}) {
                v->emplace_back(n);
                for (auto& w : v->back()) w = rng() % R.prime(idx);
            }
        }
    }
    std::size_t size() const { return ntt.size(); }
};

// XOR of every word of the limbs, a 64-byte line at a time: the bytes of the key, read once as an inner product must.
u64 stream_read(const std::vector<const u64*>& limbs, std::size_t n) {
    u64 acc = 0;
    for (const u64* p : limbs)
        for (std::size_t i = 0; i < n; i += 8)
            acc ^= p[i] ^ p[i + 1] ^ p[i + 2] ^ p[i + 3] ^ p[i + 4] ^ p[i + 5] ^ p[i + 6] ^ p[i + 7];
    return acc;
}

// 2^22 modular products (Shoup) in eight independent chains that stay in registers: the cores' arithmetic alone.
u64 register_chain(u64 q, u64 seed) {
    const u64 w = 0x123456789ULL % q, wp = arith::shoup(w, q);
    u64 x[8];
    for (int k = 0; k < 8; ++k) x[k] = (seed + k) % q;
    for (int r = 0; r < (1 << 19); ++r)
        for (int k = 0; k < 8; ++k) x[k] = arith::mul_shoup(x[k], w, wp, q);
    u64 acc = 0;
    for (int k = 0; k < 8; ++k) acc ^= x[k];
    return acc;
}

}  // namespace

int main(int argc, char** argv) {
    std::string params_name = "H16", json;
    int reps = 7, T = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--params" && i + 1 < argc) params_name = argv[++i];
        else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--json" && i + 1 < argc) json = argv[++i];
        else if (a == "--threads" && i + 1 < argc) T = std::max(1, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: %s [--params H16] [--reps 7] [--threads 1] [--json out.jsonl]\n", argv[0]);
            return 2;
        }
    }
    const Parameters params = Parameters::named(params_name);
    const ContextPtr ctx = Context::create(params, T);
    const rns::Backend& be = ctx->backend();
    const rns::KeySwitcher& ks = ctx->keyswitcher();
    const rns::RnsContext& R = be.ring();
    const std::size_t n = R.n(), nq = R.q_count(), np = R.p_count(), digits = R.digits_at(nq), alpha = R.alpha();
    std::fprintf(stderr, "[bench_keyswitch] %s: N = %zu, %zu q-primes, %zu special, %zu digits; keys ...\n",
                 params_name.c_str(), n, nq, np, digits);

    KeyGenerator kg(ctx);
    const SecretKey sk = kg.secret_key();
    const PublicKey pk = kg.public_key(sk);
    const auto ek = std::make_shared<const EvaluationKeys>(kg.evaluation_keys(sk, true, {1}, false));
    const Evaluator ev(ctx, ek);
    Encoder enc(ctx);
    std::vector<std::complex<double>> v(ctx->slots());
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& z : v) z = {u(rng), u(rng)};
    const Ciphertext ct = Encryptor(ctx).encrypt(enc.encode(v, ctx->default_scale(), ctx->max_level()), pk);
    const std::uint64_t g = ctx->galois_element(1);
    const SwitchKey& gkey = *ek->galois.at(g);
    const SwitchKey& rkey = *ek->relin;

    // Operands kept between steps (each step's input is made in its untimed setup).
    rns::RnsPoly work, out0, out1;
    std::vector<rns::RnsPoly> mod_up;
    rns::LazyPolys lazy;
    Ciphertext res;

    // Floors: the kernels alone on the primes each step uses.
    std::vector<std::size_t> q_idx(nq), p_idx(np), modup_targets;
    std::vector<bool> modup_small;  // the conversion's sources all small (as BaseConverter decides)
    const auto small_sources = [&](std::size_t first, std::size_t last) {
        for (std::size_t i = first; i < last; ++i)
            if (!arith::small_source(R.prime(i))) return false;
        return true;
    };
    for (std::size_t i = 0; i < nq; ++i) q_idx[i] = i;
    for (std::size_t j = 0; j < np; ++j) p_idx[j] = nq + j;
    for (std::size_t d = 0; d < digits; ++d)
        for (std::size_t t = 0; t < nq + np; ++t)
            if (t < d * alpha || t >= std::min(nq, (d + 1) * alpha)) {
                modup_targets.push_back(t);
                modup_small.push_back(small_sources(d * alpha, std::min(nq, (d + 1) * alpha)));
            }
    const bool moddown_small = small_sources(nq, nq + np);
    Limbs lq(R, q_idx), lp(R, p_idx), lup(R, modup_targets);
    const std::size_t s = alpha;  // sources of a ModUp conversion (a full digit) and of ModDown (np)
    std::vector<const u64*> src7(std::max(s, np));
    for (std::size_t i = 0; i < src7.size(); ++i) src7[i] = lp.x[i % np].data();
    const std::vector<u64> f(64, 12345);
    std::vector<std::uint8_t> overflow(n, 1);
    std::vector<u64> table(np + 1, 3);
    std::vector<const u64*> key_limbs;
    for (const auto* half : {&gkey.b, &gkey.a})
        for (const rns::RnsPoly& k : *half)
            for (std::size_t l = 0; l < k.limbs(); ++l) key_limbs.push_back(rns::PolyAccess::data(k) + l * n);
    const double key_mb = key_limbs.size() * n * 8 / 1e6;
    volatile u64 sink = 0;

    std::vector<Step> steps;
    auto add = [&](std::string group, std::string name, std::string what, std::function<void()> setup,
                   std::function<void()> run) {
        steps.push_back({std::move(group), std::move(name), std::move(what), std::move(setup), std::move(run), {}});
    };
    // ---- one rotation: ModUp (INTT, conversion, NTT) -> inner product with the key -> ModDown with the automorphism
    add(
        "rotate", "total", "ev.rotate(ct, 1)", [] {}, [&] { res = ev.rotate(ct, 1); });
    add(
        "rotate", "decompose: INTT", "backend.from_ntt(c1)", [&] { work = ct.polys[1]; },
        [&] { be.from_ntt(work, T); });
    add(
        "rotate", "ModUp (INTT, scale, conversion, NTT)", "backend.mod_up(c1)", [&] { mod_up.clear(); },
        [&] { mod_up = be.mod_up(ct.polys[1], T); });
    add(
        "rotate", "inner product with the key", "keyswitcher.inner_product(digits, key)",
        [&] {
            if (mod_up.empty()) mod_up = be.mod_up(ct.polys[1], T);
        },
        [&] { lazy = ks.inner_product(mod_up, gkey, T); });
    add(
        "rotate", "ModUp + inner product, fused", "keyswitcher.key_switch(c1, key)", [] {},
        [&] { lazy = ks.key_switch(ct.polys[1], gkey, T); });
    add(
        "rotate", "ModDown + c0 + automorphism", "keyswitcher.mod_down(x, c0, g)",
        [&] { lazy = ks.key_switch(ct.polys[1], gkey, T); },
        [&] { ks.mod_down(lazy, &ct.polys[0], nullptr, g, out0, out1, T); });
    add(
        "rotate", "ModDown + c0 (no automorphism)", "keyswitcher.mod_down(x, c0, 1)",
        [&] { lazy = ks.key_switch(ct.polys[1], gkey, T); },
        [&] { ks.mod_down(lazy, &ct.polys[0], nullptr, 1, out0, out1, T); });
    add(
        "rotate", "automorphism alone (2 polys)", "backend.automorphism x2", [] {},
        [&] {
            be.automorphism(ct.polys[0], g, out0, T);
            be.automorphism(ct.polys[1], g, out1, T);
        });
    // ---- one relinearisation inside MulRelinRescale: tensor -> key switch of d2 -> ModDown fused with the rescale
    add(
        "multiply", "total", "ev.multiply(ct, ct)", [] {}, [&] { res = ev.multiply(ct, ct); });
    add(
        "multiply", "tensor (3 mul + 1 fma)", "backend.mul/fma", [] {},
        [&] {
            be.mul(ct.polys[0], ct.polys[0], out0, T);
            be.mul(ct.polys[0], ct.polys[1], out1, T);
            be.fma(ct.polys[1], ct.polys[0], out1, out1, T);
            be.mul(ct.polys[1], ct.polys[1], work, T);
        });
    add(
        "multiply", "ModUp + inner product, fused", "keyswitcher.key_switch(d2, relin key)", [] {},
        [&] { lazy = ks.key_switch(ct.polys[1], rkey, T); });
    add(
        "multiply", "ModDown + rescale, fused", "keyswitcher.mod_down_rescale(x, d0, d1)",
        [&] { lazy = ks.key_switch(ct.polys[1], rkey, T); },
        [&] { ks.mod_down_rescale(std::move(lazy), &ct.polys[0], &ct.polys[1], out0, out1, T); });
    // ---- floors: kernel calls alone
    add(
        "floor", "INTT x" + std::to_string(nq), "q-primes", [] {},
        [&] {
            for (std::size_t i = 0; i < lq.size(); ++i) arith::ntt_inverse(lq.x[i].data(), lq.ntt[i]);
        });
    add(
        "floor", "dot product (" + std::to_string(s) + " sources) x" + std::to_string(lup.size()), "ModUp conversion",
        [] {},
        [&] {
            for (std::size_t i = 0; i < lup.size(); ++i)
                arith::dot_const_mod(src7.data(), f.data(), s, n, lup.ntt[i].modulus(), lup.y[i].data(), nullptr,
                                     nullptr, modup_small[i]);
        });
    add(
        "floor", "NTT x" + std::to_string(lup.size()), "ModUp targets", [] {},
        [&] {
            for (std::size_t i = 0; i < lup.size(); ++i) arith::ntt_forward(lup.x[i].data(), lup.ntt[i]);
        });
    add(
        "floor", "dot of " + std::to_string(digits) + " x" + std::to_string(2 * (nq + np)),
        "inner product arithmetic, operands in L1", [] {},
        [&] {
            const std::size_t kBlock = std::min<std::size_t>(2048, n / 8);  // the inner product's words, on L1 blocks
            for (std::size_t h = 0; h < 2; ++h)
                for (std::size_t t = 0; t < nq + np; ++t) {
                    const arith::Modulus& m = t < nq ? lq.ntt[t].modulus() : lp.ntt[t - nq].modulus();
                    u64* x = t < nq ? lq.y[t].data() : lp.y[t - nq].data();
                    std::vector<const u64*> a(digits), b(digits);
                    for (std::size_t j = 0; j < digits; ++j) {
                        a[j] = x + (j % 4) * kBlock;
                        b[j] = x + ((j + 1) % 4) * kBlock;
                    }
                    for (std::size_t c = 0; c < n; c += kBlock)
                        arith::dot_mod(a.data(), b.data(), digits, std::min(kBlock, n - c), m, x + 4 * kBlock);
                }
        });
    add(
        "floor", "key read", "stream-read " + std::to_string(static_cast<int>(key_mb)) + " MB of key", [] {},
        [&] { sink = sink + stream_read(key_limbs, n); });
    add(
        "floor", "INTT x" + std::to_string(2 * np), "ModDown sources (special primes)", [] {},
        [&] {
            for (int r = 0; r < 2; ++r)
                for (std::size_t i = 0; i < lp.size(); ++i) arith::ntt_inverse(lp.x[i].data(), lp.ntt[i]);
        });
    add(
        "floor", "dot product (" + std::to_string(np) + " sources) x" + std::to_string(2 * nq),
        "ModDown conversion, exact", [] {},
        [&] {
            for (int r = 0; r < 2; ++r)
                for (std::size_t i = 0; i < lq.size(); ++i)
                    arith::dot_const_mod(src7.data(), f.data(), np, n, lq.ntt[i].modulus(), lq.y[i].data(),
                                         overflow.data(), table.data(), moddown_small);
        });
    add(
        "floor", "NTT x" + std::to_string(2 * nq), "ModDown targets", [] {},
        [&] {
            for (int r = 0; r < 2; ++r)
                for (std::size_t i = 0; i < lq.size(); ++i) arith::ntt_forward(lq.x[i].data(), lq.ntt[i]);
        });
    add(
        "floor", "sub, mul by P^-1, add x" + std::to_string(2 * nq), "ModDown combine", [] {},
        [&] {
            for (int r = 0; r < 2; ++r)
                for (std::size_t i = 0; i < lq.size(); ++i) {
                    const u64 q = lq.ntt[i].q();
                    arith::sub_mod(lq.x[i].data(), lq.y[i].data(), n, q, lq.z[i].data());
                    arith::mul_scalar_mod(lq.z[i].data(), 3, arith::shoup(3, q), n, q, lq.z[i].data());
                    arith::add_mod(lq.z[i].data(), lq.x[i].data(), n, q, lq.z[i].data());
                }
        });

    // ---- ceilings: T threads at once, each running a floor's kernels on limbs of its own. Against the same kernels
    // on one thread, T x (one thread's time) / (this time) is the speed-up this machine allows that kind of work
    // (T on a machine whose cores share nothing; less where they share a core's units, memory bandwidth or a clock).
    std::vector<Limbs> own;  // outlive the steps' lambdas
    std::vector<std::vector<const u64*>> own_key(T);
    std::vector<AlignedWords> key_copy;
    const auto each = [&](const std::function<void(int)>& body) {
        parallel_for(T, static_cast<std::size_t>(T), [&](std::size_t i) { body(static_cast<int>(i)); });
    };
    struct SmallLimb {
        arith::NttTables ntt;
        AlignedWords x;
    };
    std::vector<SmallLimb> small;
    const auto ntt_in_l2 = [](SmallLimb& l) {
        for (int r = 0; r < 512; ++r) arith::ntt_forward(l.x.data(), l.ntt);
    };
    if (T > 1) {
        const u64 q1 = R.prime(std::min<std::size_t>(1, nq - 1));  // a scaling prime, as most of the NTTs above
        for (int i = 0; i < T; ++i) {
            small.push_back({arith::NttTables(q1, 4096), AlignedWords(4096)});
            for (std::size_t k = 0; k < 4096; ++k) small.back().x[k] = (k * 2654435761u + i) % q1;
        }
        for (int i = 0; i < T; ++i) own.emplace_back(R, q_idx);
        for (int i = 0; i < T; ++i)
            for (const u64* k : key_limbs) {  // a copy of the key per thread: T x the bytes streamed
                key_copy.emplace_back(k, k + n);
                own_key[i].push_back(key_copy.back().data());
            }
        add(
            "ceiling", "NTT x" + std::to_string(nq) + " per thread", "one thread's floor, on every thread", [] {},
            [&] {
                each([&](int i) {
                    for (std::size_t l = 0; l < nq; ++l) arith::ntt_forward(own[i].x[l].data(), own[i].ntt[l]);
                });
            });
        add(
            "ceiling", "NTT x" + std::to_string(nq) + " on one thread", "the same kernels, one thread", [] {},
            [&] {
                for (std::size_t l = 0; l < nq; ++l) arith::ntt_forward(own[0].x[l].data(), own[0].ntt[l]);
            });
        // The same NTTs on a limb of 4096 words (32 KB, its tables 64 KB): in each core's L2, no shared cache or memory
        // between the threads, so what is left of their ceiling is the cores' clock and the host's other guests.
        add(
            "ceiling", "NTT in L2 per thread", "512 NTTs of 4096 words, on every thread", [] {},
            [&] { each([&](int i) { ntt_in_l2(small[i]); }); });
        add(
            "ceiling", "NTT in L2 on one thread", "the same NTTs, one thread", [] {}, [&] { ntt_in_l2(small[0]); });
        // Modular products in registers: no memory at all.
        add(
            "ceiling", "arithmetic per thread", "2^22 Shoup products in registers, on every thread", [] {},
            [&] {
                std::vector<u64> acc(T);
                each([&](int i) { acc[i] = register_chain(R.prime(0), i + 2); });
                for (u64 a : acc) sink = sink + a;
            });
        add(
            "ceiling", "arithmetic on one thread", "the same products, one thread", [] {},
            [&] { sink = sink + register_chain(R.prime(0), 2); });
        add(
            "ceiling", "key read per thread", "one thread's key read, on every thread", [] {},
            [&] {
                std::vector<u64> acc(T);
                each([&](int i) { acc[i] = stream_read(own_key[i], n); });
                for (u64 a : acc) sink = sink + a;
            });
        add(
            "ceiling", "key read on one thread", "the same read, one thread", [] {},
            [&] { sink = sink + stream_read(own_key[0], n); });
    }

    std::fprintf(stderr, "[bench_keyswitch] simd %s, %d repetitions of %zu steps\n", arith::active_kernels().name, reps,
                 steps.size());
    for (int r = 0; r < reps; ++r) {
        for (Step& st : steps) {
            st.setup();
            const auto t0 = std::chrono::steady_clock::now();
            st.run();
            const auto t1 = std::chrono::steady_clock::now();
            st.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        std::fprintf(stderr, "[bench_keyswitch] repetition %d/%d\n", r + 1, reps);
    }

    std::ofstream out;
    if (!json.empty()) out.open(json, std::ios::app);
    for (const Step& st : steps) {
        char line[512];
        std::snprintf(line, sizeof line,
                      "{\"op\": \"%s/%s\", \"what\": \"%s\", \"params\": \"%s\", \"threads\": %d, \"simd\": \"%s\", "
                      "\"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"reps\": %d}",
                      st.group.c_str(), st.name.c_str(), st.what.c_str(), params_name.c_str(),
                      st.group == "floor" || st.name.find("one thread") != std::string::npos ? 1 : T,
                      arith::active_kernels().name, median(st.ms), *std::min_element(st.ms.begin(), st.ms.end()),
                      *std::max_element(st.ms.begin(), st.ms.end()), reps);
        std::puts(line);
        if (out) out << line << "\n";
    }
    std::printf("\n| step | median ms | call |\n| --- | ---: | --- |\n");
    for (const Step& st : steps)
        std::printf("| %s: %s | %.2f | %s |\n", st.group.c_str(), st.name.c_str(), median(st.ms), st.what.c_str());
    const auto ms_of = [&](const std::string& name) {  // a step's median by name
        for (const Step& st : steps)
            if (st.name == name) return median(st.ms);
        return 0.0;
    };
    std::printf("\nstreaming read: %.1f GB/s (%.0f MB of key)\n", key_mb / ms_of("key read"), key_mb);
    if (T > 1) {
        const std::string ntt = "NTT x" + std::to_string(nq);
        std::printf(
            "speed-up this machine allows on %d threads: NTTs %.2fx, NTTs in L2 %.2fx, arithmetic in registers %.2fx, "
            "key read %.2fx\n",
            T, T * ms_of(ntt + " on one thread") / ms_of(ntt + " per thread"),
            T * ms_of("NTT in L2 on one thread") / ms_of("NTT in L2 per thread"),
            T * ms_of("arithmetic on one thread") / ms_of("arithmetic per thread"),
            T * ms_of("key read on one thread") / ms_of("key read per thread"));
    }
    return static_cast<int>(sink & 0);
}
