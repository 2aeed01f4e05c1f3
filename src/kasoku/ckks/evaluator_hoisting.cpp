// Hoisted key switching and lazy ModDown (Inoue 2022 Alg. 3.2.1); the trace-type functions built on them are in
// evaluator_trace.cpp.
//
// Galois keys switch s -> s(X^{g^-1}) (KeyGenerator::galois_key). For the ModUp digits D_j of c1,
// u = sum_j D_j * key_j then satisfies u_b + u_a s(X^{g^-1}) ~ P c1 s, and applying X -> X^g afterwards gives
// psi_g(u_b) + psi_g(u_a) s ~ P psi_g(c1) s(X^g): the key switch of the rotated ciphertext. The digits of c1
// are therefore computed once for any number of automorphisms, and the automorphism permutes two
// polynomials instead of the dnum digits.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "checks_internal.hpp"
#include "count_internal.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/support/error.hpp"
#include "sampling_internal.hpp"

namespace kasoku::ckks {

using std::uint64_t;
using u64 = std::uint64_t;
using rns::RnsPoly;

// ---------------------------------------------------------------- decomposition and lazy key switching

std::vector<RnsPoly> Evaluator::mod_up_digits(const Ciphertext& a, Exec exec) const {
    const Count count(*this, {.decompose = 1});
    check(a, "operand");
    detail::check_relinearised(a, "key switching");
    return ctx_->keyswitcher().mod_up(a.polys[1], ctx_->exec(exec));
}

Decomposition Evaluator::decompose(const Ciphertext& a, Exec exec) const {
    Decomposition d;
    d.digits = mod_up_digits(a, exec);
    d.input = a;
    return d;
}

Decomposition Evaluator::decompose(Ciphertext&& a, Exec exec) const {
    Decomposition d;
    d.digits = mod_up_digits(a, exec);
    d.input = std::move(a);
    return d;
}

namespace {
void check_decomposition(const Context& ctx, const Decomposition& d) {
    detail::check_ciphertext(ctx, d.input, "decomposed ciphertext");
    if (d.input.size() != 2 || d.digits.size() != ctx.rns().digits_at(d.input.polys[1].num_q()))
        throw ParameterError("the decomposition does not match its ciphertext; make it with Evaluator::decompose");
}

// The lazy result of a hoisted key switch of d's input, with the input's metadata.
LazyCiphertext lazy_of(const Decomposition& d, rns::LazyPolys&& x) {
    LazyCiphertext out;
    static_cast<rns::LazyPolys&>(out) = std::move(x);
    detail::stamp(out, d.input, d.input.scale);
    return out;
}
}  // namespace

LazyCiphertext Evaluator::inner_product_lazy(const Decomposition& d, u64 galois_elt, Exec exec) const {
    const Count count(*this, {.rot = 1});
    check_decomposition(*ctx_, d);
    ctx_->check_galois_element(galois_elt, "inner_product_lazy", false);
    const auto key = galois_key(galois_elt, d.input.key_id, d.input.level());
    exec = ctx_->exec(exec);
    return lazy_of(d, ctx_->keyswitcher().inner_product(d.digits, {{key.get(), galois_elt}}, d.input.polys[0], exec));
}

void Evaluator::add_lazy_inplace(LazyCiphertext& acc, const LazyCiphertext& x, Exec exec) const {
    const Count count(*this, {.add = 1});
    if (acc.context_uid != ctx_->uid() || x.context_uid != ctx_->uid())
        throw ParameterError("lazy ciphertext of another context");
    if (acc.key_id != x.key_id) throw ParameterError("the lazy ciphertexts were encrypted under different keys");
    if (acc.level() != x.level() || !detail::same_scale(acc.scale, x.scale) || acc.c0.empty() != x.c0.empty())
        throw ParameterError(
            "lazy ciphertexts at different levels or scales cannot be added; they must come from one decomposition");
    if (acc.b.num_p() != x.b.num_p())
        throw ParameterError("lazy ciphertexts over " + std::to_string(acc.b.num_p()) + " and " +
                             std::to_string(x.b.num_p()) +
                             " special primes cannot be added (keys made for different levels: "
                             "KeyGenerator::galois_key); bring each down with mod_down and add those");
    ctx_->keyswitcher().add(acc, x, ctx_->exec(exec));
}

LazyCiphertext Evaluator::multiply_plain_sum_lazy(const std::vector<const LazyCiphertext*>& xs,
                                                  const std::vector<const Plaintext*>& pts, Exec exec) const {
    const Count count(*this, {.add = xs.empty() ? 0 : xs.size() - 1, .cmult = xs.size()});
    if (xs.empty() || xs.size() != pts.size())
        throw ParameterError("multiply_plain_sum_lazy: give as many plaintexts as lazy ciphertexts (at least one)");
    for (std::size_t i = 0; i < xs.size(); ++i)
        if (!xs[i] || !pts[i]) throw ParameterError("multiply_plain_sum_lazy: term " + std::to_string(i) + " is null");
    const LazyCiphertext& x0 = *xs[0];
    const std::size_t np = x0.b.num_p();  // the keys' special primes: the plaintexts' first np are read
    for (std::size_t i = 0; i < xs.size(); ++i) {
        if (xs[i]->context_uid != ctx_->uid()) throw ParameterError("lazy ciphertext of another context");
        detail::check_plain(*ctx_, *pts[i]);
        if (xs[i]->level() != x0.level() || xs[i]->key_id != x0.key_id || !detail::same_scale(xs[i]->scale, x0.scale) ||
            xs[i]->c0.empty() != x0.c0.empty() || xs[i]->b.num_p() != np)
            throw ParameterError(
                "multiply_plain_sum_lazy: the lazy ciphertexts differ in level, key, scale or special primes (keys "
                "made for different levels)");
        if (pts[i]->level() != x0.level() || pts[i]->poly.num_p() < np ||
            !detail::same_scale(pts[i]->scale, pts[0]->scale))
            throw ParameterError(
                "multiply_plain_sum_lazy: the plaintexts must have one scale and be encoded with encode_extended "
                "at the lazy ciphertexts' level " +
                std::to_string(x0.level()));
    }
    const double scale = x0.scale * pts[0]->scale;
    if (std::log2(scale) + 2.0 > ctx_->log_modulus(x0.level()))
        throw ScaleError("multiply_plain_sum_lazy: the scale no longer fits the modulus at level " +
                         std::to_string(x0.level()));
    std::vector<const rns::LazyPolys*> terms(xs.begin(), xs.end());
    std::vector<const RnsPoly*> polys;
    polys.reserve(pts.size());
    for (const Plaintext* pt : pts) polys.push_back(&pt->poly);
    LazyCiphertext acc;
    static_cast<rns::LazyPolys&>(acc) = ctx_->keyswitcher().sum_of_products(terms, polys, ctx_->exec(exec));
    detail::stamp(acc, x0, scale);
    return acc;
}

std::vector<std::vector<LazyCiphertext>> Evaluator::inner_product_sums_lazy(
    const Decomposition& d, const std::vector<u64>& galois_elts,
    const std::vector<std::vector<std::pair<std::size_t, const Plaintext*>>>& groups, Exec exec) const {
    const char* op = "inner_product_sums_lazy";
    std::size_t terms = 0;
    for (const auto& g : groups) terms += g.size();
    std::vector<bool> used(galois_elts.size(), false);
    for (const auto& g : groups)
        for (const auto& [i, pt] : g)
            if (i < used.size()) used[i] = true;
    const Count count(*this, {.add = terms - std::min(terms, groups.size()),
                              .cmult = terms,
                              .rot = static_cast<std::size_t>(std::count(used.begin(), used.end(), true))});
    if (groups.empty()) throw ParameterError(std::string(op) + ": no group of terms");
    check_decomposition(*ctx_, d);
    const int level = d.input.level();
    const Plaintext* first = nullptr;
    for (const auto& g : groups) {
        if (g.empty()) throw ParameterError(std::string(op) + ": every group needs at least one term");
        for (const auto& [i, pt] : g) {
            if (i >= galois_elts.size() || !pt)
                throw ParameterError(std::string(op) + ": a term's index is past the " +
                                     std::to_string(galois_elts.size()) + " Galois elements, or its plaintext is null");
            detail::check_plain(*ctx_, *pt);
            if (!first) first = pt;
            if (pt->level() != level || pt->poly.num_p() == 0 || !detail::same_scale(pt->scale, first->scale))
                throw ParameterError(std::string(op) +
                                     ": the plaintexts must have one scale and be encoded with encode_extended at the "
                                     "decomposed ciphertext's level " +
                                     std::to_string(level));
        }
    }
    const double scale = d.input.scale * first->scale;
    if (std::log2(scale) + 2.0 > ctx_->log_modulus(level))
        throw ScaleError(std::string(op) + ": the scale no longer fits the modulus at level " + std::to_string(level));
    // The keys, checked before any work, and their classes by special primes.
    std::vector<std::shared_ptr<const rns::GadgetKey>> keys(galois_elts.size());
    std::map<std::size_t, std::vector<std::size_t>> by_p;  // special primes -> the Galois elements' indices
    for (std::size_t i = 0; i < galois_elts.size(); ++i) {
        if (!used[i]) continue;
        ctx_->check_galois_element(galois_elts[i], op, false);
        keys[i] = galois_key(galois_elts[i], d.input.key_id, level);
        by_p[keys[i]->b_parts()[0].num_p()].push_back(i);
    }
    for (const auto& g : groups)
        for (const auto& [i, pt] : g)
            if (pt->poly.num_p() < keys[i]->b_parts()[0].num_p())
                throw ParameterError(std::string(op) +
                                     ": a plaintext has fewer special limbs than its key; encode it "
                                     "with encode_extended");
    exec = ctx_->exec(exec);
    std::vector<std::vector<LazyCiphertext>> out(groups.size());
    for (const auto& [np, members] : by_p) {
        std::vector<rns::KeyTerm> kt;
        std::vector<std::size_t> index(galois_elts.size(), 0);
        for (std::size_t i : members) {
            index[i] = kt.size();
            kt.push_back({keys[i].get(), galois_elts[i]});
        }
        std::vector<std::vector<rns::ProductTerm>> parts;
        std::vector<std::size_t> owner;  // the group of each part
        for (std::size_t j = 0; j < groups.size(); ++j) {
            std::vector<rns::ProductTerm> part;
            for (const auto& [i, pt] : groups[j])
                if (keys[i]->b_parts()[0].num_p() == np) part.push_back({index[i], &pt->poly});
            if (part.empty()) continue;
            parts.push_back(std::move(part));
            owner.push_back(j);
        }
        auto sums = ctx_->keyswitcher().inner_product_sums(d.digits, kt, d.input.polys[0], parts, exec);
        for (std::size_t k = 0; k < sums.size(); ++k) {
            LazyCiphertext x = lazy_of(d, std::move(sums[k]));
            x.scale = scale;
            out[owner[k]].push_back(std::move(x));
        }
    }
    return out;
}

Ciphertext Evaluator::mod_down_rescale(LazyCiphertext&& x, const Ciphertext* addend, Exec exec) const {
    const Count count(*this, {.add = addend ? 1u : 0u, .mod_down = 1, .rescale = 1});
    if (x.context_uid != ctx_->uid()) throw ParameterError("lazy ciphertext of another context");
    if (x.level() == 0) throw LevelError("mod_down_rescale at level 0: no level left to rescale");
    if (addend) {
        check(*addend, "addend");
        if (addend->size() != 2 || addend->level() != x.level() || addend->key_id != x.key_id ||
            !detail::same_scale(addend->scale, x.scale))
            throw ParameterError(
                "mod_down_rescale: the addend must be a size-2 ciphertext at the lazy ciphertext's level and scale");
    }
    exec = ctx_->exec(exec);
    Ciphertext out;
    out.polys.resize(2);
    detail::stamp(out, x, x.scale / static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(x.level()))));
    ctx_->keyswitcher().mod_down_rescale(std::move(x), addend ? &addend->polys[0] : nullptr,
                                         addend ? &addend->polys[1] : nullptr, out.polys[0], out.polys[1], exec);
    return out;
}

Ciphertext Evaluator::mod_down(const LazyCiphertext& x, Exec exec) const {
    const Count count(*this, {.mod_down = 1});
    if (x.context_uid != ctx_->uid()) throw ParameterError("lazy ciphertext of another context");
    Ciphertext like;
    detail::stamp(like, x, x.scale);
    return finish(like, x, nullptr, nullptr, 1, ctx_->exec(exec));
}

Ciphertext Evaluator::mod_down(LazyCiphertext&& x, Exec exec) const {
    return mod_down(static_cast<const LazyCiphertext&>(x), exec);
}

// ---------------------------------------------------------------- hoisted rotations

// The Galois keys of elts, all checked before any is expanded (expand = false: only checked).
std::vector<std::shared_ptr<const rns::GadgetKey>> detail::galois_keys(const Evaluator& ev,
                                                                       const std::vector<u64>& elts,
                                                                       std::uint64_t key_id, int level, bool expand) {
    const EvaluationKeys* ek = ev.keys();
    for (u64 galois_elt : elts) {
        if (!ek || !ek->galois.count(galois_elt))
            throw MissingKeyError("no Galois key for element " + std::to_string(galois_elt) +
                                  "; generate it with ctx.keygen(galois_elements=[" + std::to_string(galois_elt) +
                                  ", ...])");
        const SwitchKey& k = *ek->galois.at(galois_elt);
        if (k.key_id != key_id) throw ParameterError("the Galois key belongs to another secret key than the operand");
        const int serves = k.b.empty() ? -1 : static_cast<int>(k.b[0].num_q()) - 1;
        if (level > serves)
            throw LevelError("the Galois key of element " + std::to_string(galois_elt) + " serves levels up to " +
                             std::to_string(serves) + " (made so by keygen's galois_levels); the operand is at level " +
                             std::to_string(level) + ": drop_level it first, or make the key for level " +
                             std::to_string(level));
    }
    std::vector<std::shared_ptr<const rns::GadgetKey>> keys;
    if (expand)
        for (u64 galois_elt : elts) keys.push_back(detail::gadget_key(ev.context(), ek->galois.at(galois_elt)));
    return keys;
}

std::vector<Ciphertext> Evaluator::apply_galois_hoisted(const Ciphertext& a, const std::vector<u64>& elts,
                                                        Exec exec) const {
    const Count count(*this, {.rot = elts.size(), .decompose = 1, .mod_down = elts.size()});
    check(a, "operand");
    exec = ctx_->exec(exec);
    for (u64 galois_elt : elts) ctx_->check_galois_element(galois_elt, "apply_galois_hoisted");
    std::vector<u64> switched;
    for (u64 galois_elt : elts)
        if (galois_elt != 1) switched.push_back(galois_elt);
    detail::galois_keys(*this, switched, a.key_id, a.level(),
                        false);  // all keys checked before any work, each expanded at its use
    if (switched.empty()) return std::vector<Ciphertext>(elts.size(), a);
    const std::vector<RnsPoly> digits = mod_up_digits(a, exec);  // a stays where it is: no decomposition's copy
    const auto& ks = ctx_->keyswitcher();
    std::vector<Ciphertext> out;
    for (u64 galois_elt : elts) {
        if (galois_elt == 1) {
            out.push_back(a);
            continue;
        }
        // As in apply_galois: inner products, ModDown, then the automorphism on the two polynomials over Q_l.
        const auto key = galois_key(galois_elt, a.key_id, a.level());
        out.push_back(finish(a, ks.inner_product(digits, *key, exec), &a.polys[0], nullptr, galois_elt, exec));
    }
    return out;
}

std::vector<Ciphertext> Evaluator::rotate_hoisted(const Ciphertext& a, const std::vector<std::int64_t>& steps,
                                                  bool conjugate, Exec exec) const {
    std::vector<u64> elts;
    elts.reserve(steps.size() + 1);
    for (std::int64_t s : steps) elts.push_back(ctx_->galois_element(s));
    if (conjugate) elts.push_back(ctx_->conjugation_element());
    return apply_galois_hoisted(a, elts, exec);
}

Ciphertext Evaluator::rotate_sum_hoisted(const Ciphertext& a, const std::vector<std::int64_t>& steps,
                                         std::vector<u64> galois_elts, bool conjugate, Exec exec) const {
    for (std::int64_t s : steps) galois_elts.push_back(ctx_->galois_element(s));
    if (conjugate) galois_elts.push_back(ctx_->conjugation_element());
    return apply_galois_sum_hoisted(a, galois_elts, exec);
}

Ciphertext Evaluator::apply_galois_sum_hoisted(const Ciphertext& a, const std::vector<u64>& elts, Exec exec) const {
    const Count count(*this,
                      {.add = elts.empty() ? 0 : elts.size() - 1, .rot = elts.size(), .decompose = 1, .mod_down = 1});
    check(a, "operand");
    if (elts.empty()) throw ParameterError("apply_galois_sum_hoisted needs at least one automorphism");
    for (u64 galois_elt : elts) ctx_->check_galois_element(galois_elt, "apply_galois_sum_hoisted", false);
    exec = ctx_->exec(exec);
    detail::check_relinearised(a, "key switching");
    const auto keys = detail::galois_keys(*this, elts, a.key_id, a.level(), true);
    // The keys grouped by their special primes (keys made for different levels: KeyGenerator::galois_key).
    std::map<std::size_t, std::vector<rns::KeyTerm>> groups;
    for (std::size_t e = 0; e < elts.size(); ++e)
        groups[keys[e]->b_parts().front().num_p()].push_back({keys[e].get(), elts[e]});
    const rns::KeySwitcher& ks = ctx_->keyswitcher();
    Ciphertext out;
    out.polys.resize(2);
    if (groups.size() == 1) {  // decompose, inner product and ModDown in one call
        ks.key_switch_sum_mod_down(a.polys[1], groups.begin()->second, a.polys[0], out.polys[0], out.polys[1], exec);
    } else {
        // One ModUp for every group; each group's inner product over its P_k (the digits' first k special limbs) and
        // its ModDown, with its elements' images of c0 added there.
        const std::vector<RnsPoly> digits = ks.mod_up(a.polys[1], exec);
        for (const auto& [np, terms] : groups) {
            RnsPoly down_b, down_a;
            ks.mod_down(ks.inner_product(digits, terms, a.polys[0], exec), nullptr, nullptr, 1, down_b, down_a, exec);
            if (out.polys[0].empty()) {
                out.polys[0] = std::move(down_b);
                out.polys[1] = std::move(down_a);
            } else {
                ctx_->backend().add(out.polys[0], down_b, out.polys[0], exec);
                ctx_->backend().add(out.polys[1], down_a, out.polys[1], exec);
            }
        }
    }
    detail::stamp(out, a, a.scale);
    return out;
}

}  // namespace kasoku::ckks
