// An operation's speed-up on T threads, measured in pairs: the operation on one thread, then on T, `reps` times in one
// process, so that a machine whose speed drifts (a VM) moves both sides of each pair alike. The first pair faults in
// fresh pages; leave it out of the medians.
//   build/cpp/bench/bench_thread_pairs [--op bootstrap|rotate|multiply] [--params BOOT16] [--threads 2] [--reps 4]
//                                      [--compact] [--copies] [--granularity]
// --op: a bootstrap (default), or a rotation by one slot / a multiplication of two ciphertexts with relinearisation and
// rescale at the top level (give --params H16); those are timed over --iters runs each (default 20).
// --compact: compact Galois keys (for the bootstrap, for the levels each is used at, as ctx.keygen(bootstrapping=True)
// makes them; their a-parts drawn from a seed inside each inner product; the relinearisation key stays whole);
// default: whole keys.
// --copies: each pair also runs the one-thread operation in T processes at once (forked after the keys, which they
// share copy-on-write, as threads share them; each runs it once before, untimed): the machine's ceiling for T copies of the work that need no barrier and
// share no temporaries. T x (one alone) / (the slowest copy) is the throughput T cores give that work; a speed-up on T
// threads below T but at or above it is lost to the memory system, not to the team.
// Prints one line per measurement, then the medians over pairs 2..reps, and those as a JSON line.
// --granularity: the operation on one thread, then on {T} with a RegionRecorder (support/region_recorder.hpp: each
// parallel region's jobs run one after another on this thread and timed, laid out as on T threads), in pairs for T = 2, 4, 8, ..
// up to --threads, --reps pairs each (one operation a side: --iters is not used), after one recorded run per T left out
// (on a VM the first touch of memory a layout allocates anew can take milliseconds a 2 MiB page, and lands in
// whichever job touches it): the time on T threads if the threads ran as fast as one alone and met at no cost (each
// region's jobs spread over T as the team spreads them), and the speed-up that leaves (the median of the pairs'
// ratios), the ceiling from the split of the work into jobs alone; then, for the largest T, the loops (call sites) by
// the time they lose to it (span - work / T). One JSON line per T.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kasoku/algo/bootstrap.hpp"
#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/support/threads.hpp"
#include "support/region_recorder.hpp"

#include "bench_stats.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using kasoku::bench::median;

namespace {

// The slowest of `copies` processes that each run `one` once, released together once each has run it once more before
// (its temporaries are then its own pages, not the parent's shared copy-on-write); -1 where one failed.
double run_copies(int copies, const std::function<double()>& one) {
    int ready[2], start[2], result[2];
    if (pipe(ready) != 0 || pipe(start) != 0 || pipe(result) != 0) return -1;
    std::fflush(stdout);
    std::vector<pid_t> kids;
    for (int c = 0; c < copies; ++c) {
        const pid_t pid = fork();
        if (pid == 0) {  // a child: warm up, say so, wait until the parent closes the start pipe, run, send the seconds
            close(start[1]);
            one();
            const char b = 1;
            bool ok = write(ready[1], &b, 1) == 1;
            close(ready[1]);  // a child that dies before this line leaves the parent an end of file, not a wait
            char e;
            while (read(start[0], &e, 1) > 0) {}
            const double s = one();
            ok = ok && write(result[1], &s, sizeof s) == static_cast<ssize_t>(sizeof s);
            _exit(ok ? 0 : 1);
        }
        if (pid < 0) break;
        kids.push_back(pid);
    }
    close(ready[1]);
    close(start[0]);
    close(result[1]);
    bool ok = kids.size() == static_cast<std::size_t>(copies);
    char b;
    for (std::size_t c = 0; c < kids.size(); ++c) ok = ok && read(ready[0], &b, 1) == 1;
    close(start[1]);  // every child starts now
    double slowest = 0, s = 0;
    for (std::size_t c = 0; c < kids.size(); ++c) {
        ok = ok && read(result[0], &s, sizeof s) == static_cast<ssize_t>(sizeof s);
        slowest = std::max(slowest, s);
    }
    close(ready[0]);
    close(result[0]);
    for (pid_t pid : kids) waitpid(pid, nullptr, 0);
    return ok ? slowest : -1;
}

// A loop's call site from its body's demangled lambda type: the function that encloses the first lambda (a helper's
// own lambda, as for_columns's, names its caller's lambda inside its template arguments, which come first), its last
// two name parts, and the lambda's number where it has one ("CpuBackend::divide_exact #3").
std::string call_site(const std::string& type) {
    const std::size_t lam = type.find("::{lambda");
    if (lam == std::string::npos) return type.substr(0, 80);
    std::string f = type.substr(0, lam);
    if (f.size() >= 6 && f.compare(f.size() - 6, 6, " const") == 0) f.resize(f.size() - 6);
    if (!f.empty() && f.back() == ')') {  // drop the parameter list
        int depth = 0;
        std::size_t i = f.size();
        while (i-- > 0) {
            if (f[i] == ')') ++depth;
            else if (f[i] == '(' && --depth == 0) break;
        }
        if (i != std::string::npos) f.resize(i);
    }
    std::size_t cut = f.rfind("::");
    if (cut != std::string::npos && cut > 0) {
        const std::size_t prev = f.rfind("::", cut - 1);
        cut = prev == std::string::npos ? 0 : prev + 2;
    } else {
        cut = 0;
    }
    f = f.substr(cut);
    if (const std::size_t sp = f.rfind(' '); sp != std::string::npos) f = f.substr(sp + 1);
    const std::size_t hash = type.find('#', lam), close = type.find('}', lam);
    if (hash != std::string::npos && close != std::string::npos && hash < close && type.compare(hash, 3, "#1}") != 0)
        f += " " + type.substr(hash, close - hash);
    return f;
}

// What the recorded run of an operation would take on T threads: its time outside the regions plus each region's jobs
// spread over its team.
double projected(const RegionRecorder& rec, double total) {
    double t = total;
    for (const auto& g : rec.regions()) t += RegionRecorder::makespan(g.how, g.threads, g.jobs) - (g.end - g.start);
    return t;
}

// --granularity (the header): `run(t)` runs the operation once on t threads.
int granularity(const std::string& op, const std::string& params, int max_threads, int reps,
                const std::function<void(int)>& run) {
    struct Site {
        double work = 0, span = 0;
        int regions = 0;
    };
    struct Recorded {
        double total, projected;
        std::map<std::string, Site> sites;
    };
    const auto seconds = [&](int t) {
        const auto t0 = std::chrono::steady_clock::now();
        run(t);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    const auto record = [&](int T) {
        RegionRecorder rec;
        run(T);
        Recorded out{rec.elapsed(), 0, {}};
        out.projected = projected(rec, out.total);
        for (const auto& g : rec.regions()) {
            Site& s = out.sites[call_site(g.site)];
            for (double j : g.jobs) s.work += j;
            s.span += RegionRecorder::makespan(g.how, g.threads, g.jobs);
            ++s.regions;
        }
        return out;
    };
    std::vector<int> ts;
    for (int t = 2; t < max_threads; t *= 2) ts.push_back(t);
    ts.push_back(max_threads);
    run(1);                            // faults the temporaries in
    for (int T : ts) (void)record(T);  // and what each layout allocates anew; left out
    // In pairs, the operation on one thread, then recorded in the layout of T, rep after rep and T after T: a machine
    // whose speed drifts (a VM) moves both sides of each ratio alike.
    std::map<int, std::vector<double>> one, recorded, proj, ratio;
    std::map<int, std::vector<std::map<std::string, Site>>> sites;
    for (int r = 0; r < reps; ++r)
        for (int T : ts) {
            const double t1 = seconds(1);
            Recorded x = record(T);
            one[T].push_back(t1);
            recorded[T].push_back(x.total);
            proj[T].push_back(x.projected);
            ratio[T].push_back(t1 / x.projected);
            sites[T].push_back(std::move(x.sites));
        }
    std::printf("%s %s, medians of %d pairs (one thread, then the T-thread layout recorded on one):\n", params.c_str(),
                op.c_str(), reps);
    for (int T : ts) {
        const double c = median(ratio[T]);
        std::printf(
            "threads %2d: one thread %.4f s, recorded %.4f s, projected %.4f s, ceiling %.2fx (%.0f %% of %d; "
            "pairs %.2f-%.2fx)\n",
            T, median(one[T]), median(recorded[T]), median(proj[T]), c, 100 * c / T, T,
            *std::min_element(ratio[T].begin(), ratio[T].end()), *std::max_element(ratio[T].begin(), ratio[T].end()));
        std::printf(
            "{\"op\": \"granularity/%s\", \"params\": \"%s\", \"threads\": %d, \"pairs\": %d, "
            "\"one_thread_s\": %.6f, \"recorded_s\": %.6f, \"projected_s\": %.6f, \"ceiling\": %.3f}\n",
            op.c_str(), params.c_str(), T, reps, median(one[T]), median(recorded[T]), median(proj[T]), c);
        std::fflush(stdout);
    }
    // the loops of the largest T's pair whose ratio is the median's (the nearest to it)
    const std::vector<double>& rt = ratio[max_threads];
    const double c = median(rt);
    std::size_t mid = 0;
    for (std::size_t r = 1; r < rt.size(); ++r)
        if (std::abs(rt[r] - c) < std::abs(rt[mid] - c)) mid = r;
    std::vector<std::pair<std::string, Site>> order(sites[max_threads][mid].begin(), sites[max_threads][mid].end());
    const double T = max_threads;
    std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
        return a.second.span - a.second.work / T > b.second.span - b.second.work / T;
    });
    std::printf("\nloops on %d threads, by the time their split loses (span - work / %d), one run:\n", max_threads,
                max_threads);
    std::printf(
        "| loop | regions | work ms | span ms | lost ms | efficiency |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (std::size_t i = 0; i < order.size() && i < 12; ++i) {
        const Site& s = order[i].second;
        std::printf("| %s | %d | %.2f | %.2f | %.2f | %.2f |\n", order[i].first.c_str(), s.regions, 1e3 * s.work,
                    1e3 * s.span, 1e3 * (s.span - s.work / T), s.span > 0 ? s.work / s.span / T : 1.0);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string params = "BOOT16", op = "bootstrap";
    int T = 2, reps = 4, iters = 20;
    bool compact = false, copies = false, grain = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--params" && i + 1 < argc) params = argv[++i];
        else if (a == "--op" && i + 1 < argc) op = argv[++i];
        else if (a == "--threads" && i + 1 < argc) T = std::max(2, std::atoi(argv[++i]));
        else if (a == "--reps" && i + 1 < argc) reps = std::max(2, std::atoi(argv[++i]));
        else if (a == "--iters" && i + 1 < argc) iters = std::max(1, std::atoi(argv[++i]));
        else if (a == "--compact") compact = true;
        else if (a == "--copies") copies = true;
        else if (a == "--granularity") grain = true;
        else {
            std::fprintf(stderr,
                         "usage: %s [--op bootstrap|rotate|multiply] [--params BOOT16] [--threads 2] [--reps 4] "
                         "[--iters 20] [--compact] [--copies] [--granularity]\n",
                         argv[0]);
            return 2;
        }
    }
    const bool boot_op = op == "bootstrap";
    if (!boot_op && op != "rotate" && op != "multiply") {
        std::fprintf(stderr, "unknown --op %s: bootstrap, rotate or multiply\n", op.c_str());
        return 2;
    }
    const ContextPtr ctx = Context::create(Parameters::named(params), T);
    std::fprintf(stderr, "[bench_thread_pairs] %s: keys%s ...\n", params.c_str(),
                 boot_op ? " and the bootstrapping plan" : "");
    std::unique_ptr<const algo::Bootstrapper> boot;
    if (boot_op) boot = std::make_unique<const algo::Bootstrapper>(ctx);
    KeyGenerator kg(ctx);
    const SecretKey sk = kg.secret_key();
    EvaluationKeys keys = boot_op ? kg.evaluation_keys(sk, true, {}, true, boot->galois_elements(), {}, {}, compact,
                                                       compact ? boot->galois_levels() : std::map<std::uint64_t, int>{})
                                  : kg.evaluation_keys(sk, true, {1}, false, {}, {}, {}, compact);
    if (boot_op && ctx->params().boot_secret_weight > 0) kg.encapsulation_keys(sk, keys);
    const Evaluator ev(ctx, std::make_shared<const EvaluationKeys>(std::move(keys)));
    std::vector<std::complex<double>> v(ctx->slots());
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& z : v) z = {u(rng), u(rng)};
    const PublicKey pk = kg.public_key(sk);
    const auto encrypt = [&] {
        return Encryptor(ctx).encrypt(Encoder(ctx).encode(v, ctx->default_scale(), boot_op ? 1 : ctx->max_level()), pk);
    };
    const Ciphertext ct = encrypt();
    // A product's second operand: another ciphertext, as a circuit's products take (one ciphertext as both operands
    // reads half the memory).
    const Ciphertext ct2 = op == "multiply" ? encrypt() : Ciphertext{};

    // One measurement on t threads: seconds per operation (with the bootstrap's stages in `stages`).
    std::string stages;
    const auto measure = [&](int t) {
        const auto t0 = std::chrono::steady_clock::now();
        if (boot_op) {
            algo::BootstrapTimes bt;
            const Ciphertext out = boot->bootstrap(ev, ct, {t}, nullptr, &bt);
            char line[160];
            std::snprintf(line, sizeof line, " raise %.3f coeff_to_slot %.3f eval_mod %.3f slot_to_coeff %.3f",
                          bt.raise, bt.coeff_to_slot, bt.eval_mod, bt.slot_to_coeff);
            stages = line;
        } else {
            for (int i = 0; i < iters; ++i) {
                const Ciphertext out = op == "rotate" ? ev.rotate(ct, 1, {t}) : ev.multiply(ct, ct2, true, {t});
            }
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return boot_op ? s : s / iters;
    };
    if (grain)
        return granularity(op, params, T, reps, [&](int t) {
            if (boot_op) {
                const Ciphertext out = boot->bootstrap(ev, ct, {t});
            } else {
                const Ciphertext out = op == "rotate" ? ev.rotate(ct, 1, {t}) : ev.multiply(ct, ct2, true, {t});
            }
        });
    const char* unit = boot_op ? "s" : "ms";
    const double scale = boot_op ? 1 : 1e3;
    std::vector<double> ratios, ceilings;
    for (int r = 0; r < reps; ++r) {
        double total[2];
        for (int side = 0; side < 2; ++side) {
            const int t = side == 0 ? 1 : T;
            total[side] = measure(t);
            std::printf("pair %d threads %d %s %.3f %s%s\n", r, t, op.c_str(), total[side] * scale, unit,
                        boot_op ? stages.c_str() : "");
            std::fflush(stdout);
        }
        if (r > 0) ratios.push_back(total[0] / total[1]);
        if (copies) {
            const double slowest = run_copies(T, [&] { return measure(1); });
            if (slowest <= 0) {
                std::fprintf(stderr, "[bench_thread_pairs] a copy could not be started or did not report\n");
                return 1;
            }
            std::printf("pair %d copies %d %s %.3f %s (the slowest of %d one-thread processes at once)\n", r, T,
                        op.c_str(), slowest * scale, unit, T);
            if (r > 0) ceilings.push_back(T * total[0] / slowest);
        }
    }
    const auto range = [](const std::vector<double>& x) {
        char s[64];
        std::snprintf(s, sizeof s, "%.2fx (%.2f-%.2f)", median(x), *std::min_element(x.begin(), x.end()),
                      *std::max_element(x.begin(), x.end()));
        return std::string(s);
    };
    std::printf("median speed-up on %d threads over %zu pairs: %s\n", T, ratios.size(), range(ratios).c_str());
    if (copies)
        std::printf("median throughput of %d one-thread copies at once over %zu pairs: %s of one alone\n", T,
                    ceilings.size(), range(ceilings).c_str());
    char ceiling[32] = "null";
    if (copies) std::snprintf(ceiling, sizeof ceiling, "%.3f", median(ceilings));
    std::printf(
        "{\"op\": \"thread_pairs/%s\", \"params\": \"%s\", \"threads\": %d, \"compact\": %s, \"pairs\": %zu, "
        "\"speedup_median\": %.3f, \"copies_throughput_median\": %s}\n",
        op.c_str(), params.c_str(), T, compact ? "true" : "false", ratios.size(), median(ratios), ceiling);
    return 0;
}
