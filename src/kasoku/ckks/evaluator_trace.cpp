// Trace-type functions (Inoue 2022 Alg. 3.2.2): sums of automorphisms by repeated doubling in groups of h, their plans
// and Galois elements, and the measured key-switching costs that choose h (kept per context).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <string>

#include "checks_internal.hpp"
#include "count_internal.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/ckks/trace.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/random.hpp"
#include "sampling_internal.hpp"

namespace kasoku::ckks {

using u64 = std::uint64_t;

// ---------------------------------------------------------------- trace plans

std::vector<std::size_t> trace_group_sizes(std::size_t M, std::size_t h) {
    if (M == 0) return {};
    if (h < 1 || h > M)
        throw ParameterError("trace: h must be between 1 and M = " + std::to_string(M) + ", got " + std::to_string(h));
    std::vector<std::size_t> sizes(h, M / h);
    for (std::size_t i = 0; i < M % h; ++i) ++sizes[i];
    return sizes;
}

std::vector<std::vector<u64>> trace_group_elements(const std::vector<u64>& automorphisms, std::size_t h, u64 two_n) {
    std::vector<std::vector<u64>> groups;
    std::size_t first = 0;
    for (std::size_t m : trace_group_sizes(automorphisms.size(), h)) {
        if (m >= 24)
            throw ParameterError("trace: a group of " + std::to_string(m) + " steps needs 2^" + std::to_string(m) +
                                 " - 1 keys; use a larger h");
        std::vector<u64> elts((std::size_t{1} << m) - 1);
        for (std::size_t mask = 1; mask < (std::size_t{1} << m); ++mask) {
            u64 galois_elt = 1;
            for (std::size_t b = 0; b < m; ++b)
                if (mask >> b & 1) galois_elt = galois_elt * automorphisms[first + b] % two_n;
            if (galois_elt == 1)
                throw ParameterError(
                    "trace: a product of the automorphisms is the identity; the doubling steps must be "
                    "independent (e.g. rotations by 1, 2, ..., 2^(M-1) with M <= log2(slots), conjugation)");
            elts[mask - 1] = galois_elt;
        }
        groups.push_back(std::move(elts));
        first += m;
    }
    return groups;
}

std::vector<u64> rotation_doubling_steps(std::size_t M, u64 two_n) {
    std::vector<u64> out;
    u64 galois_elt = 5 % two_n;
    for (std::size_t i = 0; i < M; ++i) {
        out.push_back(galois_elt);
        galois_elt = galois_elt * galois_elt % two_n;  // 5^(2^(i+1))
    }
    return out;
}

std::vector<u64> trace_doubling_steps(std::size_t M, u64 two_n) {
    const std::size_t log_n = static_cast<std::size_t>(__builtin_ctzll(two_n)) - 1;
    if (M > log_n)
        throw ParameterError("trace: M = " + std::to_string(M) + " doubling steps exceed log2(n) = " +
                             std::to_string(log_n) + " (rotations by 2^i, i < log2(slots), then conjugation)");
    std::vector<u64> steps = rotation_doubling_steps(std::min(M, log_n - 1), two_n);
    if (M == log_n) steps.push_back(two_n - 1);
    return steps;
}

std::vector<u64> trace_galois_elements(const Parameters& params, std::size_t M, std::size_t h) {
    const u64 two_n = 2 * params.n();
    std::vector<u64> out;
    for (auto& galois_elts : trace_group_elements(trace_doubling_steps(M, two_n), h, two_n))
        out.insert(out.end(), galois_elts.begin(), galois_elts.end());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

double trace_cost(const KeySwitchCosts& c, std::size_t M, std::size_t h) {
    double t = 0;
    for (std::size_t m : trace_group_sizes(M, h))
        t += c.decompose_ms + static_cast<double>((std::size_t{1} << m) - 1) * c.inner_product_ms + c.mod_down_ms +
             c.add_ms;
    return t;
}

std::size_t best_trace_h(const KeySwitchCosts& c, std::size_t M) {
    std::size_t best = M;
    for (std::size_t h = M; h >= 1; --h)
        if (trace_cost(c, M, h) < trace_cost(c, M, best)) best = h;
    return best;
}

// ---------------------------------------------------------------- trace-type functions

namespace {
bool has_keys(const EvaluationKeys* keys, const std::vector<std::vector<u64>>& groups) {
    if (!keys) return false;
    for (auto& elts : groups)
        for (u64 galois_elt : elts)
            if (!keys->galois.count(galois_elt)) return false;
    return true;
}
}  // namespace

int Evaluator::choose_trace_h(const std::vector<u64>& automorphisms, int level, Exec exec) const {
    const std::size_t M = automorphisms.size();
    if (M == 0) return 0;
    const KeySwitchCosts c = keyswitch_costs(level, exec);
    int best = 0;
    for (std::size_t h = 1; h <= M; ++h) {
        std::vector<std::vector<u64>> groups;
        try {
            groups = trace_group_elements(automorphisms, h, 2 * ctx_->n());
        } catch (const ParameterError&) {
            continue;  // groups too large to enumerate
        }
        if (!has_keys(keys_.get(), groups)) continue;
        if (best == 0 || trace_cost(c, M, h) < trace_cost(c, M, static_cast<std::size_t>(best)))
            best = static_cast<int>(h);
    }
    return best;
}

Ciphertext Evaluator::trace(const Ciphertext& a, const std::vector<u64>& automorphisms, int h, Exec exec) const {
    check(a, "operand");
    const std::size_t M = automorphisms.size();
    if (M == 0) return a;
    for (u64 galois_elt : automorphisms) ctx_->check_galois_element(galois_elt, "trace", false);
    exec = ctx_->exec(exec);
    if (h < 0 || h > static_cast<int>(M))
        throw ParameterError("trace: h must be between 1 and M = " + std::to_string(M) + " (or 0 to choose), got " +
                             std::to_string(h));
    if (h == 0) {
        h = choose_trace_h(automorphisms, a.level(), exec);
        if (h == 0) {
            // Name a key of the smallest key set (repeated doubling) that is missing.
            for (u64 galois_elt : automorphisms)
                if (!keys_ || !keys_->galois.count(galois_elt))
                    throw MissingKeyError("trace: no h has all its Galois keys; element " + std::to_string(galois_elt) +
                                          " (needed by every h) is missing; generate the keys with "
                                          "ctx.keygen(galois_elements=ks.trace_galois_elements(params, M, h))");
            throw MissingKeyError(
                "trace: no h has all its Galois keys; generate them with "
                "ctx.keygen(galois_elements=ks.trace_galois_elements(params, M, h))");
        }
    }
    const auto groups = trace_group_elements(automorphisms, static_cast<std::size_t>(h), 2 * ctx_->n());
    for (auto& elts : groups) detail::galois_keys(*this, elts, a.key_id, a.level(), false);  // every key present first
    Ciphertext c = a;
    for (auto& elts : groups) {
        Ciphertext s = apply_galois_sum_hoisted(c, elts, exec);
        const Count added(*this, {.add = 1});
        ctx_->backend().add(c.polys[0], s.polys[0], c.polys[0], exec);
        ctx_->backend().add(c.polys[1], s.polys[1], c.polys[1], exec);
    }
    return c;
}

Ciphertext Evaluator::sum_slots(const Ciphertext& a, std::size_t count, int h, Exec exec) const {
    const std::size_t slots = ctx_->slots();
    if (count == 0) count = slots;
    if (count > slots || (count & (count - 1)) != 0)
        throw ParameterError("sum_slots: count must be a power of two up to slots = " + std::to_string(slots) +
                             ", got " + std::to_string(count));
    const std::size_t M = static_cast<std::size_t>(__builtin_ctzll(count));
    return trace(a, rotation_doubling_steps(M, 2 * ctx_->n()), h, exec);
}

// ---------------------------------------------------------------- cost model

namespace {
// The key-switching costs measured for a context, by (level, threads): they describe its parameters on this machine,
// so every evaluator of the context shares them, kept by the context for its life (Context::shared). Thread-safe.
struct TunedCosts final : Context::Shared {
    mutable std::mutex mu;
    mutable std::map<std::pair<int, int>, KeySwitchCosts> costs;
};
std::shared_ptr<const TunedCosts> tuned(const Context& ctx) {
    const auto kept = std::dynamic_pointer_cast<const TunedCosts>(ctx.shared(
        "ckks.keyswitch_costs", [] { return std::make_shared<const TunedCosts>(); }, true));
    if (!kept) throw InternalError("keyswitch_costs: the context keeps something else under ckks.keyswitch_costs");
    return kept;
}
}  // namespace

std::optional<KeySwitchCosts> Evaluator::kept_keyswitch_costs(int level, int threads) const {
    const auto t = tuned(*ctx_);
    const std::lock_guard<std::mutex> lock(t->mu);
    const auto c = t->costs.find({level, threads});
    if (c == t->costs.end()) return std::nullopt;
    return c->second;
}

KeySwitchCosts Evaluator::keyswitch_costs(int level, Exec exec) const {
    if (level < 0 || level > ctx_->max_level()) throw LevelError("keyswitch_costs: no level " + std::to_string(level));
    exec = ctx_->exec(exec);
    if (const auto kept = kept_keyswitch_costs(level, exec.threads)) return *kept;
    // Time the real code paths on random data of the right shapes (a random "key" costs what a real one does).
    const auto& r = ctx_->rns();
    const auto& be = ctx_->backend();
    const std::size_t nq = static_cast<std::size_t>(level) + 1, n = ctx_->n();
    Prng prng;
    auto random_poly = [&](std::size_t q, std::size_t p) {
        rns::RnsPoly x = be.poly(q, p, true);
        be.upload(x, [&](std::size_t t, u64* dst) {
            const u64 m = r.prime(r.prime_index(t, q));
            for (std::size_t k = 0; k < n; ++k) dst[k] = prng.next_u64() % m;
        });
        return x;
    };
    Ciphertext ct;
    ct.polys = {random_poly(nq, 0), random_poly(nq, 0)};
    ct.scale = ctx_->scale_at(level);
    ct.context_uid = ctx_->uid();
    SwitchKey key;
    for (std::size_t j = 0; j < r.dnum(); ++j) {
        key.b.push_back(random_poly(r.q_count(), r.p_count()));
        key.a.push_back(random_poly(r.q_count(), r.p_count()));
    }
    const auto& ks = ctx_->keyswitcher();
    const u64 galois_elt = ctx_->galois_element(1);
    using clock = std::chrono::steady_clock;
    auto ms = [](clock::time_point t0) { return std::chrono::duration<double, std::milli>(clock::now() - t0).count(); };
    KeySwitchCosts c;
    c.level = level;
    c.threads = exec.threads;
    const int reps = n >= (1u << 15) ? 2 : 3;  // the minimum: the first run also pays for cold buffers
    double best_dec = 1e300, best_ip = 1e300, best_md = 1e300, best_add = 1e300;
    for (int rep = 0; rep < reps; ++rep) {
        auto t0 = clock::now();
        const Decomposition d = decompose(ct, exec);
        best_dec = std::min(best_dec, ms(t0));
        t0 = clock::now();
        rns::LazyPolys lazy = ks.inner_product(d.digits, {{&key, galois_elt}}, d.input.polys[0], exec);
        best_ip = std::min(best_ip, ms(t0));
        t0 = clock::now();
        Ciphertext s = finish(ct, lazy, nullptr, nullptr, 1, exec);
        best_md = std::min(best_md, ms(t0));
        t0 = clock::now();
        be.add(ct.polys[0], s.polys[0], s.polys[0], exec);
        be.add(ct.polys[1], s.polys[1], s.polys[1], exec);
        best_add = std::min(best_add, ms(t0));
    }
    c.decompose_ms = best_dec;
    c.inner_product_ms = best_ip;
    c.mod_down_ms = best_md;
    c.add_ms = best_add;
    const auto t = tuned(*ctx_);
    const std::lock_guard<std::mutex> lock(t->mu);
    t->costs.emplace(std::make_pair(level, c.threads), c);
    return c;
}

}  // namespace kasoku::ckks
