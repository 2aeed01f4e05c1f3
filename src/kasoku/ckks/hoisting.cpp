// Hoisted key switching, lazy ModDown and trace-type functions (seed 000 Alg. 3.2.1 and 3.2.2).
//
// Galois keys switch s -> s(X^{g^-1}) (KeyGenerator::galois_key). For the ModUp digits D_j of c1,
// u = sum_j D_j * key_j then satisfies u_b + u_a s(X^{g^-1}) ~ P c1 s, and applying X -> X^g afterwards gives
// psi_g(u_b) + psi_g(u_a) s ~ P psi_g(c1) s(X^g): the key switch of the rotated ciphertext. The digits of c1
// are therefore computed once for any number of automorphisms, and the automorphism permutes two
// polynomials instead of the dnum digits.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "checks_internal.hpp"
#include "kasoku/arith/kernels.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/random.hpp"
#include "kasoku/support/threads.hpp"

namespace kasoku::ckks {

using arith::u64;
using rns::RnsPoly;

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
        if (m >= 24) throw ParameterError("trace: a group of " + std::to_string(m) + " steps needs 2^" + std::to_string(m) +
                                          " - 1 keys; use a larger h");
        std::vector<u64> g((std::size_t{1} << m) - 1);
        for (std::size_t mask = 1; mask < (std::size_t{1} << m); ++mask) {
            u64 e = 1;
            for (std::size_t b = 0; b < m; ++b)
                if (mask >> b & 1) e = e * automorphisms[first + b] % two_n;
            if (e == 1)
                throw ParameterError("trace: a product of the automorphisms is the identity; the doubling steps must be "
                                     "independent (e.g. rotations by 1, 2, ..., 2^(M-1) with M <= log2(slots), conjugation)");
            g[mask - 1] = e;
        }
        groups.push_back(std::move(g));
        first += m;
    }
    return groups;
}

std::vector<u64> rotation_doubling_steps(std::size_t M, u64 two_n) {
    std::vector<u64> out;
    u64 g = 5 % two_n;
    for (std::size_t i = 0; i < M; ++i) {
        out.push_back(g);
        g = g * g % two_n;  // 5^(2^(i+1))
    }
    return out;
}

std::vector<u64> trace_doubling_steps(std::size_t M, u64 two_n) {
    const std::size_t log_n = static_cast<std::size_t>(__builtin_ctzll(two_n)) - 1;
    if (M > log_n)
        throw ParameterError("trace: M = " + std::to_string(M) + " doubling steps exceed log2(n) = " + std::to_string(log_n) +
                             " (rotations by 2^i, i < log2(slots), then conjugation)");
    std::vector<u64> steps = rotation_doubling_steps(std::min(M, log_n - 1), two_n);
    if (M == log_n) steps.push_back(two_n - 1);
    return steps;
}

std::vector<u64> trace_galois_elements(const Parameters& params, std::size_t M, std::size_t h) {
    const u64 two_n = 2 * params.n();
    std::vector<u64> out;
    for (auto& g : trace_group_elements(trace_doubling_steps(M, two_n), h, two_n)) out.insert(out.end(), g.begin(), g.end());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

double trace_cost(const KeySwitchCosts& c, std::size_t M, std::size_t h) {
    double t = 0;
    for (std::size_t m : trace_group_sizes(M, h))
        t += c.decompose_ms + static_cast<double>((std::size_t{1} << m) - 1) * c.inner_product_ms + c.mod_down_ms + c.add_ms;
    return t;
}

std::size_t best_trace_h(const KeySwitchCosts& c, std::size_t M) {
    std::size_t best = M;
    for (std::size_t h = M; h >= 1; --h)
        if (trace_cost(c, M, h) < trace_cost(c, M, best)) best = h;
    return best;
}

// ---------------------------------------------------------------- split key switching

Decomposition Evaluator::decompose(const Ciphertext& a, int threads) const {
    check(a, "operand");
    if (a.size() != 2) throw ParameterError("key switching expects a relinearised (size 2) ciphertext; call relinearize first");
    threads = ctx_->threads_or_default(threads);
    const auto& r = ctx_->rns();
    const std::size_t nq = a.polys[1].num_q(), np = r.p_count(), n = ctx_->n();
    Decomposition d;
    d.input = a;
    const auto dec = r.decompose(d.input.polys[1], threads);
    const std::size_t digits = r.digits_at(nq);
    d.digits.reserve(digits);
    for (std::size_t j = 0; j < digits; ++j) d.digits.emplace_back(n, nq, np, true);
    parallel_for(threads, digits * (nq + np), [&](std::size_t i) {
        const std::size_t j = i / (nq + np), t = i % (nq + np);
        r.mod_up_limb(dec, j, t, d.digits[j].limb(t));
    });
    return d;
}

LazyCiphertext Evaluator::lazy_like_level(std::size_t nq) const {
    const auto& r = ctx_->rns();
    LazyCiphertext out;
    out.c0 = RnsPoly(ctx_->n(), nq, 0, true);
    out.b = RnsPoly(ctx_->n(), nq, r.p_count(), true);
    out.a = RnsPoly(ctx_->n(), nq, r.p_count(), true);
    return out;
}

LazyCiphertext Evaluator::lazy_like(const Decomposition& d) const {
    LazyCiphertext out = lazy_like_level(d.input.polys[0].num_q());
    out.scale = d.input.scale;
    out.context_uid = d.input.context_uid;
    out.key_id = d.input.key_id;
    return out;
}

void Evaluator::hoisted_sum(const Decomposition& d, const std::vector<u64>& elts, const std::vector<const SwitchKey*>& keys,
                            LazyCiphertext& out, int threads, bool permute) const {
    const auto& r = ctx_->rns();
    const std::size_t nq = d.input.polys[0].num_q(), np = r.p_count(), n = ctx_->n(), L1 = r.q_count();
    const std::size_t digits = d.digits.size();
    std::vector<std::shared_ptr<const std::vector<std::uint32_t>>> perms;
    if (permute)
        for (u64 g : elts) perms.push_back(r.automorphism_permutation(g));
    // Loop over limbs (parallel) and, inside, over automorphisms: the two loops of Alg. 3.2.1.
    parallel_for(threads, nq + np, [&](std::size_t t) {
        const std::size_t kl = t < nq ? t : L1 + (t - nq);  // limb of the key (over Q_L * P)
        const arith::Modulus& m = r.modulus(kl);
        // acc (+)= <digits, key> on limb t; whole limbs: long sequential streams over digits and keys prefetch best
        auto inner = [&](const std::vector<rns::RnsPoly>& key, u64* acc, bool first) {
            if (first) arith::mul_mod(d.digits[0].limb(t), key[0].limb(kl), n, m, acc);
            else arith::fma_mod(d.digits[0].limb(t), key[0].limb(kl), acc, n, m, acc);
            for (std::size_t j = 1; j < digits; ++j) arith::fma_mod(d.digits[j].limb(t), key[j].limb(kl), acc, n, m, acc);
        };
        if (!permute) {
            for (std::size_t e = 0; e < keys.size(); ++e) {
                inner(keys[e]->b, out.b.limb(t), e == 0);
                inner(keys[e]->a, out.a.limb(t), e == 0);
            }
            return;
        }
        // Sum form: out.{b,a} = sum_e psi_e(<d, key_e>), out.c0 = sum_e psi_e(c0); each product limb is permuted
        // while still in cache. (Done in blocks, which an automorphism maps onto blocks, the products would stay
        // in L1, but the short streams prefetch worse: sum_slots was ~14% slower at H16.)
        const u64 q = m.value;
        AlignedWords tmp(n);
        const u64* c0 = t < nq ? d.input.polys[0].limb(t) : nullptr;
        // dst (+)= src[p]: the first key writes, the others add (branch-free, values < q < 2^63)
        auto permute_into = [&](u64* dst, const u64* src, const std::uint32_t* p, bool first) {
            if (first) {
                for (std::size_t k = 0; k < n; ++k) dst[k] = src[p[k]];
                return;
            }
            for (std::size_t k = 0; k < n; ++k) {
                const u64 v = dst[k] + src[p[k]];
                dst[k] = v - (q & (0 - static_cast<u64>(v >= q)));
            }
        };
        for (std::size_t e = 0; e < keys.size(); ++e) {
            const std::uint32_t* p = perms[e]->data();
            inner(keys[e]->b, tmp.data(), true);
            permute_into(out.b.limb(t), tmp.data(), p, e == 0);
            inner(keys[e]->a, tmp.data(), true);
            permute_into(out.a.limb(t), tmp.data(), p, e == 0);
            if (c0) permute_into(out.c0.limb(t), c0, p, e == 0);
        }
    });
}

namespace {
void check_decomposition(const Context& ctx, const Decomposition& d) {
    detail::check_ciphertext(ctx, d.input, "decomposed ciphertext");
    if (d.digits.size() != ctx.rns().digits_at(d.input.polys[1].num_q()))
        throw ParameterError("the decomposition does not match its ciphertext; make it with Evaluator::decompose");
}
}  // namespace

LazyCiphertext Evaluator::inner_product_lazy(const Decomposition& d, u64 g, int threads) const {
    check_decomposition(*ctx_, d);
    const SwitchKey& key = galois_key(g, "this automorphism; generate it with ctx.keygen(galois_elements=[...])");
    if (key.key_id != d.input.key_id) throw ParameterError("the Galois key belongs to another secret key than the operand");
    LazyCiphertext out = lazy_like(d);
    hoisted_sum(d, {g}, {&key}, out, ctx_->threads_or_default(threads));
    return out;
}

void Evaluator::add_lazy_inplace(LazyCiphertext& acc, const LazyCiphertext& x, int threads) const {
    if (acc.context_uid != ctx_->uid() || x.context_uid != ctx_->uid())
        throw ParameterError("lazy ciphertext of another context");
    if (acc.key_id != x.key_id) throw ParameterError("the lazy ciphertexts were encrypted under different keys");
    if (acc.level() != x.level() || acc.scale != x.scale)
        throw ParameterError("lazy ciphertexts at different levels or scales cannot be added; they must come from one decomposition");
    threads = ctx_->threads_or_default(threads);
    const auto& r = ctx_->rns();
    r.add(acc.c0, x.c0, acc.c0, threads);
    r.add(acc.b, x.b, acc.b, threads);
    r.add(acc.a, x.a, acc.a, threads);
}

LazyCiphertext Evaluator::multiply_plain_sum_lazy(const std::vector<const LazyCiphertext*>& xs,
                                                  const std::vector<const Plaintext*>& pts, int threads) const {
    if (xs.empty() || xs.size() != pts.size())
        throw ParameterError("multiply_plain_sum_lazy: give as many plaintexts as lazy ciphertexts (at least one)");
    const auto& r = ctx_->rns();
    const LazyCiphertext& x0 = *xs[0];
    const std::size_t n = ctx_->n(), nq = x0.c0.num_q(), np = r.p_count();
    for (std::size_t i = 0; i < xs.size(); ++i) {
        if (xs[i]->context_uid != ctx_->uid()) throw ParameterError("lazy ciphertext of another context");
        detail::check_plain(*ctx_, *pts[i]);
        if (xs[i]->level() != x0.level() || xs[i]->key_id != x0.key_id || !detail::same_scale(xs[i]->scale, x0.scale))
            throw ParameterError("multiply_plain_sum_lazy: the lazy ciphertexts differ in level, key or scale");
        if (pts[i]->level() != x0.level() || pts[i]->poly.num_p() != np || !detail::same_scale(pts[i]->scale, pts[0]->scale))
            throw ParameterError("multiply_plain_sum_lazy: the plaintexts must have one scale and be encoded with encode_extended "
                                 "at the lazy ciphertexts' level " + std::to_string(x0.level()));
    }
    const double scale = x0.scale * pts[0]->scale;
    if (std::log2(scale) + 2.0 > ctx_->log_modulus(x0.level()))
        throw ScaleError("multiply_plain_sum_lazy: the scale no longer fits the modulus at level " + std::to_string(x0.level()));
    threads = ctx_->threads_or_default(threads);
    LazyCiphertext acc = lazy_like_level(nq);
    acc.scale = scale;
    acc.context_uid = x0.context_uid;
    acc.key_id = x0.key_id;
    parallel_for(threads, 3 * (nq + np), [&](std::size_t job) {
        const std::size_t part = job / (nq + np), t = job % (nq + np);  // part 0: c0, 1: b, 2: a
        if (part == 0 && t >= nq) return;
        const arith::Modulus& m = r.modulus(r.prime_index(t, nq));
        auto src = [&](const LazyCiphertext& x) -> const u64* { return (part == 0 ? x.c0 : part == 1 ? x.b : x.a).limb(t); };
        u64* dst = (part == 0 ? acc.c0 : part == 1 ? acc.b : acc.a).limb(t);
        arith::mul_mod(src(*xs[0]), pts[0]->poly.limb(t), n, m, dst);
        for (std::size_t i = 1; i < xs.size(); ++i) arith::fma_mod(src(*xs[i]), pts[i]->poly.limb(t), dst, n, m, dst);
    });
    return acc;
}

Ciphertext Evaluator::mod_down_rescale(LazyCiphertext&& x, const Ciphertext* addend, int threads) const {
    if (x.context_uid != ctx_->uid()) throw ParameterError("lazy ciphertext of another context");
    if (x.level() == 0) throw LevelError("mod_down_rescale at level 0: no level left to rescale");
    if (addend) {
        check(*addend, "addend");
        if (addend->size() != 2 || addend->level() != x.level() || addend->key_id != x.key_id ||
            !detail::same_scale(addend->scale, x.scale))
            throw ParameterError("mod_down_rescale: the addend must be a size-2 ciphertext at the lazy ciphertext's level and scale");
    }
    threads = ctx_->threads_or_default(threads);
    const auto& r = ctx_->rns();
    RnsPoly b = std::move(x.b), a = std::move(x.a);
    r.add_times_p(x.c0, b, threads);
    if (addend) {
        r.add_times_p(addend->polys[0], b, threads);
        r.add_times_p(addend->polys[1], a, threads);
    }
    r.mod_down_rescale(b, threads);
    r.mod_down_rescale(a, threads);
    Ciphertext out;
    out.polys = {std::move(b), std::move(a)};
    out.scale = x.scale / static_cast<double>(r.prime(static_cast<std::size_t>(x.level())));
    out.context_uid = x.context_uid;
    out.key_id = x.key_id;
    return out;
}

Ciphertext Evaluator::mod_down(const LazyCiphertext& x, int threads) const {
    LazyCiphertext copy = x;
    return mod_down(std::move(copy), threads);
}

Ciphertext Evaluator::mod_down(LazyCiphertext&& x, int threads) const {
    if (x.context_uid != ctx_->uid()) throw ParameterError("lazy ciphertext of another context");
    threads = ctx_->threads_or_default(threads);
    const auto& r = ctx_->rns();
    Ciphertext out;
    RnsPoly b = std::move(x.b), a = std::move(x.a);
    r.mod_down(b, threads);
    r.mod_down(a, threads);
    r.add(x.c0, b, b, threads);
    out.polys = {std::move(b), std::move(a)};
    out.scale = x.scale;
    out.context_uid = x.context_uid;
    out.key_id = x.key_id;
    return out;
}

// ---------------------------------------------------------------- hoisted rotations

namespace {
std::vector<const SwitchKey*> keys_for(const Evaluator& ev, const std::vector<u64>& elts, std::uint64_t key_id) {
    std::vector<const SwitchKey*> keys;
    const EvaluationKeys* ek = ev.keys();
    for (u64 g : elts) {
        if (!ek || !ek->galois.count(g))
            throw MissingKeyError("no Galois key for element " + std::to_string(g) +
                                  "; generate it with ctx.keygen(galois_elements=[" + std::to_string(g) + ", ...])");
        const SwitchKey* key = ek->galois.at(g).get();
        if (key->key_id != key_id) throw ParameterError("the Galois key belongs to another secret key than the operand");
        keys.push_back(key);
    }
    return keys;
}
}  // namespace

std::vector<Ciphertext> Evaluator::apply_galois_hoisted(const Ciphertext& a, const std::vector<u64>& elts, int threads) const {
    check(a, "operand");
    threads = ctx_->threads_or_default(threads);
    for (u64 g : elts)
        if (g % 2 == 0 || g >= 2 * ctx_->n()) throw ParameterError("Galois element " + std::to_string(g) + " must be odd and below 2n");
    std::vector<u64> switched;
    for (u64 g : elts)
        if (g != 1) switched.push_back(g);
    const auto keys = keys_for(*this, switched, a.key_id);  // all keys checked before any work
    std::vector<Ciphertext> out;
    if (switched.empty()) return std::vector<Ciphertext>(elts.size(), a);
    const Decomposition d = decompose(a, threads);
    const auto& r = ctx_->rns();
    std::size_t next = 0;
    for (u64 g : elts) {
        if (g == 1) {
            out.push_back(a);
            continue;
        }
        // As in apply_galois: inner products, ModDown, then the automorphism on the two polynomials over Q_l.
        LazyCiphertext lazy;
        lazy.b = RnsPoly(ctx_->n(), d.digits[0].num_q(), r.p_count(), true);
        lazy.a = RnsPoly(ctx_->n(), d.digits[0].num_q(), r.p_count(), true);
        hoisted_sum(d, {g}, {keys[next++]}, lazy, threads, /*permute=*/false);
        out.push_back(finish_galois(a, g, lazy.b, lazy.a, threads));
    }
    return out;
}

std::vector<Ciphertext> Evaluator::rotate_hoisted(const Ciphertext& a, const std::vector<std::int64_t>& steps, bool conjugate,
                                                  int threads) const {
    std::vector<u64> elts;
    for (std::int64_t s : steps) elts.push_back(ctx_->galois_element(s));
    if (conjugate) elts.push_back(ctx_->conjugation_element());
    return apply_galois_hoisted(a, elts, threads);
}

Ciphertext Evaluator::apply_galois_sum_hoisted(const Ciphertext& a, const std::vector<u64>& elts, int threads) const {
    check(a, "operand");
    if (elts.empty()) throw ParameterError("apply_galois_sum_hoisted needs at least one automorphism");
    for (u64 g : elts)
        if (g % 2 == 0 || g >= 2 * ctx_->n() || g == 1)
            throw ParameterError("Galois element " + std::to_string(g) + " must be odd, not 1 and below 2n");
    threads = ctx_->threads_or_default(threads);
    const auto keys = keys_for(*this, elts, a.key_id);
    const Decomposition d = decompose(a, threads);
    LazyCiphertext lazy = lazy_like(d);
    hoisted_sum(d, elts, keys, lazy, threads);
    return mod_down(std::move(lazy), threads);
}

// ---------------------------------------------------------------- trace-type functions

namespace {
bool has_keys(const EvaluationKeys* keys, const std::vector<std::vector<u64>>& groups) {
    if (!keys) return false;
    for (auto& g : groups)
        for (u64 e : g)
            if (!keys->galois.count(e)) return false;
    return true;
}
}  // namespace

int Evaluator::choose_trace_h(const std::vector<u64>& automorphisms, int level, int threads) const {
    const std::size_t M = automorphisms.size();
    if (M == 0) return 0;
    const KeySwitchCosts c = keyswitch_costs(level, threads);
    int best = 0;
    for (std::size_t h = 1; h <= M; ++h) {
        std::vector<std::vector<u64>> groups;
        try {
            groups = trace_group_elements(automorphisms, h, 2 * ctx_->n());
        } catch (const ParameterError&) {
            continue;  // groups too large to enumerate
        }
        if (!has_keys(keys_.get(), groups)) continue;
        if (best == 0 || trace_cost(c, M, h) < trace_cost(c, M, static_cast<std::size_t>(best))) best = static_cast<int>(h);
    }
    return best;
}

Ciphertext Evaluator::trace(const Ciphertext& a, const std::vector<u64>& automorphisms, int h, int threads) const {
    check(a, "operand");
    const std::size_t M = automorphisms.size();
    if (M == 0) return a;
    for (u64 g : automorphisms)
        if (g % 2 == 0 || g >= 2 * ctx_->n() || g == 1)
            throw ParameterError("trace: Galois element " + std::to_string(g) + " must be odd, not 1 and below 2n");
    threads = ctx_->threads_or_default(threads);
    if (h < 0 || h > static_cast<int>(M))
        throw ParameterError("trace: h must be between 1 and M = " + std::to_string(M) + " (or 0 to choose), got " + std::to_string(h));
    if (h == 0) {
        h = choose_trace_h(automorphisms, a.level(), threads);
        if (h == 0) {
            // Name a key of the smallest key set (repeated doubling) that is missing.
            for (u64 g : automorphisms)
                if (!keys_ || !keys_->galois.count(g))
                    throw MissingKeyError("trace: no h has all its Galois keys; element " + std::to_string(g) +
                                          " (needed by every h) is missing; generate the keys with "
                                          "ctx.keygen(galois_elements=ks.trace_galois_elements(params, M, h))");
            throw MissingKeyError("trace: no h has all its Galois keys; generate them with "
                                  "ctx.keygen(galois_elements=ks.trace_galois_elements(params, M, h))");
        }
    }
    const auto groups = trace_group_elements(automorphisms, static_cast<std::size_t>(h), 2 * ctx_->n());
    for (auto& g : groups) keys_for(*this, g, a.key_id);  // every key present before any work
    Ciphertext c = a;
    for (auto& g : groups) {
        Ciphertext s = apply_galois_sum_hoisted(c, g, threads);
        ctx_->rns().add(c.polys[0], s.polys[0], c.polys[0], threads);
        ctx_->rns().add(c.polys[1], s.polys[1], c.polys[1], threads);
    }
    return c;
}

Ciphertext Evaluator::sum_slots(const Ciphertext& a, std::size_t count, int h, int threads) const {
    const std::size_t slots = ctx_->slots();
    if (count == 0) count = slots;
    if (count > slots || (count & (count - 1)) != 0)
        throw ParameterError("sum_slots: count must be a power of two up to slots = " + std::to_string(slots) + ", got " +
                             std::to_string(count));
    const std::size_t M = static_cast<std::size_t>(__builtin_ctzll(count));
    return trace(a, rotation_doubling_steps(M, 2 * ctx_->n()), h, threads);
}

// ---------------------------------------------------------------- cost model

KeySwitchCosts Evaluator::keyswitch_costs(int level, int threads) const {
    if (level < 0 || level > ctx_->max_level()) throw LevelError("keyswitch_costs: no level " + std::to_string(level));
    threads = ctx_->threads_or_default(threads);
    static std::mutex mu;
    static std::map<std::tuple<std::uint64_t, int, int>, KeySwitchCosts> cache;
    const auto id = std::make_tuple(ctx_->uid(), level, threads);
    {
        std::lock_guard<std::mutex> lock(mu);
        auto it = cache.find(id);
        if (it != cache.end()) return it->second;
    }
    // Time the real code paths on random data of the right shapes (a random "key" costs what a real one does).
    const auto& r = ctx_->rns();
    const std::size_t nq = static_cast<std::size_t>(level) + 1, n = ctx_->n();
    Prng prng;
    auto random_poly = [&](std::size_t q, std::size_t p) {
        RnsPoly x(n, q, p, true);
        for (std::size_t t = 0; t < x.limbs(); ++t) {
            const u64 m = r.prime(r.prime_index(t, q));
            u64* l = x.limb(t);
            for (std::size_t k = 0; k < n; ++k) l[k] = prng.next_u64() % m;
        }
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
    using clock = std::chrono::steady_clock;
    auto ms = [](clock::time_point t0) { return std::chrono::duration<double, std::milli>(clock::now() - t0).count(); };
    KeySwitchCosts c;
    c.level = level;
    c.threads = threads;
    const int reps = n >= (1u << 15) ? 2 : 3;  // the minimum: the first run also pays for cold buffers
    double best_dec = 1e300, best_ip = 1e300, best_md = 1e300, best_add = 1e300;
    for (int rep = 0; rep < reps; ++rep) {
        auto t0 = clock::now();
        const Decomposition d = decompose(ct, threads);
        best_dec = std::min(best_dec, ms(t0));
        LazyCiphertext lazy = lazy_like(d);
        t0 = clock::now();
        hoisted_sum(d, {ctx_->galois_element(1)}, {&key}, lazy, threads);
        best_ip = std::min(best_ip, ms(t0));
        t0 = clock::now();
        Ciphertext s = mod_down(std::move(lazy), threads);
        best_md = std::min(best_md, ms(t0));
        t0 = clock::now();
        r.add(ct.polys[0], s.polys[0], s.polys[0], threads);
        r.add(ct.polys[1], s.polys[1], s.polys[1], threads);
        best_add = std::min(best_add, ms(t0));
    }
    c.decompose_ms = best_dec;
    c.inner_product_ms = best_ip;
    c.mod_down_ms = best_md;
    c.add_ms = best_add;
    std::lock_guard<std::mutex> lock(mu);
    cache.emplace(id, c);
    return c;
}

}  // namespace kasoku::ckks
