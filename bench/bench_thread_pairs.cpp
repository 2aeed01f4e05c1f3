// A bootstrap's speed-up on T threads, measured in pairs: one bootstrap on one thread, then one on T, `reps` times in
// one process, so that a machine whose speed drifts (a VM) moves both sides of each pair alike. The first pair faults
// in fresh pages; leave it out of the medians.
//   build/cpp/bench/bench_thread_pairs [--params BOOT16] [--threads 2] [--reps 4] [--compact]
// --compact: compact Galois keys for the levels each is used at, as ctx.keygen(bootstrapping=True) makes them (their
// a-parts drawn from a seed inside each inner product); default: whole keys.
// Prints one line per bootstrap (pair, threads, total and stage seconds), then the median ratio over pairs 2..reps.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kasoku/algo/bootstrap.hpp"
#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/evaluator.hpp"

using namespace kasoku;
using namespace kasoku::ckks;

int main(int argc, char** argv) {
    std::string params = "BOOT16";
    int T = 2, reps = 4;
    bool compact = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--params" && i + 1 < argc) params = argv[++i];
        else if (a == "--threads" && i + 1 < argc) T = std::max(2, std::atoi(argv[++i]));
        else if (a == "--reps" && i + 1 < argc) reps = std::max(2, std::atoi(argv[++i]));
        else if (a == "--compact") compact = true;
        else {
            std::fprintf(stderr, "usage: %s [--params BOOT16] [--threads 2] [--reps 4] [--compact]\n", argv[0]);
            return 2;
        }
    }
    const ContextPtr ctx = Context::create(Parameters::named(params), T);
    std::fprintf(stderr, "[bench_thread_pairs] %s: keys and the bootstrapping plan ...\n", params.c_str());
    const algo::Bootstrapper boot(ctx);
    KeyGenerator kg(ctx);
    const SecretKey sk = kg.secret_key();
    EvaluationKeys keys = kg.evaluation_keys(sk, true, {}, true, boot.galois_elements(), {}, {}, compact,
                                             compact ? boot.galois_levels() : std::map<std::uint64_t, int>{});
    if (ctx->params().boot_secret_weight > 0) kg.encapsulation_keys(sk, keys);
    const Evaluator ev(ctx, std::make_shared<const EvaluationKeys>(std::move(keys)));
    std::vector<std::complex<double>> v(ctx->slots());
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& z : v) z = {u(rng), u(rng)};
    const Ciphertext ct = Encryptor(ctx).encrypt(Encoder(ctx).encode(v, ctx->default_scale(), 1), kg.public_key(sk));
    std::vector<double> ratios;
    for (int r = 0; r < reps; ++r) {
        double total[2];
        for (int side = 0; side < 2; ++side) {
            const int t = side == 0 ? 1 : T;
            algo::BootstrapTimes bt;
            const auto t0 = std::chrono::steady_clock::now();
            const Ciphertext out = boot.bootstrap(ev, ct, {t}, nullptr, &bt);
            total[side] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::printf(
                "pair %d threads %d total %.3f raise %.3f coeff_to_slot %.3f eval_mod %.3f slot_to_coeff %.3f\n", r, t,
                total[side], bt.raise, bt.coeff_to_slot, bt.eval_mod, bt.slot_to_coeff);
            std::fflush(stdout);
        }
        if (r > 0) ratios.push_back(total[0] / total[1]);
    }
    std::sort(ratios.begin(), ratios.end());
    const std::size_t k = ratios.size();
    const double med = k % 2 ? ratios[k / 2] : 0.5 * (ratios[k / 2 - 1] + ratios[k / 2]);
    std::printf("median speed-up on %d threads over %zu pairs: %.2fx (%.2f-%.2f)\n", T, k, med, ratios.front(),
                ratios.back());
    return 0;
}
