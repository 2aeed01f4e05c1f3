#include "kasoku/algo/linear_transform.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>

#include "kasoku/ckks/encoder.hpp"
#include "kasoku/support/error.hpp"
#include "offsets_internal.hpp"

namespace kasoku::algo {

using ckks::Ciphertext;
using ckks::LazyCiphertext;

namespace {
using detail::floor_mod;
std::int64_t signed_offset(std::int64_t r, std::size_t slots) {
    return detail::signed_offset(r, static_cast<std::int64_t>(slots));
}
}  // namespace

BsgsPlan plan_bsgs(const std::vector<std::int64_t>& offsets, std::size_t baby) {
    BsgsPlan p;
    std::int64_t unit = 0;
    for (auto r : offsets) unit = std::gcd(unit, r < 0 ? -r : r);
    p.unit = unit == 0 ? 1 : unit;
    std::vector<std::int64_t> u;
    u.reserve(offsets.size());
    for (auto r : offsets) u.push_back(r / p.unit);
    // x = n1 * j + i with 0 <= i < n1 (n1 = 0: i = x, j = 0)
    auto baby_giant = [](std::int64_t x, std::int64_t n1) {
        const std::int64_t i = n1 == 0 ? x : floor_mod(x, n1);
        return std::pair<std::int64_t, std::int64_t>{i, n1 == 0 ? 0 : (x - i) / n1};
    };
    auto split = [&](std::int64_t n1, std::set<std::int64_t>& bs, std::set<std::int64_t>& gs) {
        bs.clear();
        gs.clear();
        for (auto x : u) {
            const auto [i, j] = baby_giant(x, n1);
            bs.insert(i);
            gs.insert(j);
        }
    };
    auto cost = [](const std::set<std::int64_t>& bs, const std::set<std::int64_t>& gs) {
        return static_cast<double>(bs.size() - bs.count(0)) + 3.0 * static_cast<double>(gs.size() - gs.count(0));
    };
    std::set<std::int64_t> bs, gs;
    std::int64_t best = 0;
    if (baby > 0) {
        best = static_cast<std::int64_t>(baby);
    } else if (!u.empty()) {
        split(0, bs, gs);
        double best_cost = cost(bs, gs);
        const std::int64_t span = *std::max_element(u.begin(), u.end()) - *std::min_element(u.begin(), u.end()) + 1;
        for (std::int64_t n1 = 1; n1 <= span; ++n1) {
            split(n1, bs, gs);
            const double c = cost(bs, gs);
            if (c < best_cost) best_cost = c, best = n1;
        }
    }
    p.n1 = static_cast<std::size_t>(best);
    split(best, bs, gs);
    for (auto i : bs) p.babies.push_back(i * p.unit);
    for (auto j : gs) p.giants.push_back(j * best * p.unit);
    for (auto x : u) {
        const auto [i, j] = baby_giant(x, best);
        p.split.emplace_back(static_cast<std::size_t>(std::distance(bs.begin(), bs.find(i))),
                             static_cast<std::size_t>(std::distance(gs.begin(), gs.find(j))));
    }
    return p;
}

ProductBasis LinearTransform::cheaper_basis(const ckks::Context& ctx, const BsgsPlan& plan, std::size_t diagonals,
                                            int level) {
    constexpr double kNtt = 12.0;  // an NTT of a limb, in limb products
    const double k = static_cast<double>(ctx.rns().p_count()), q = static_cast<double>(level) + 1.0;
    double babies = 0;
    for (auto s : plan.babies) babies += ctx.galois_element(s) != 1;
    const double extended = static_cast<double>(diagonals) * k * (2.0 + kNtt);
    const double down = babies * 2.0 * kNtt * (k + q);
    return down < extended ? ProductBasis::level : ProductBasis::extended;
}

BsgsPlan LinearTransform::plan_for(const std::vector<std::int64_t>& offsets, std::size_t slots, std::size_t baby) {
    std::set<std::int64_t> s;
    for (auto r : offsets) s.insert(signed_offset(r, slots));
    return plan_bsgs({s.begin(), s.end()}, baby);
}

std::map<std::int64_t, cvec> LinearTransform::matrix_diagonals(const std::complex<double>* m, std::size_t dim,
                                                               std::size_t slots) {
    if (dim == 0 || dim > slots)
        throw ParameterError("the matrix must be dim x dim with 1 <= dim <= slots = " + std::to_string(slots) +
                             ", got dim = " + std::to_string(dim));
    std::map<std::int64_t, cvec> diags;
    for (std::size_t s = 0; s < dim; ++s)
        for (std::size_t t = 0; t < dim; ++t) {
            const std::complex<double> v = m[s * dim + t];
            if (v == std::complex<double>(0.0)) continue;
            auto& d = diags[signed_offset(static_cast<std::int64_t>(t) - static_cast<std::int64_t>(s), slots)];
            if (d.empty()) d.assign(slots, 0.0);
            d[s] = v;
        }
    return diags;
}

LinearTransform LinearTransform::from_matrix(ckks::ContextPtr ctx, const std::complex<double>* m, std::size_t dim,
                                             int level, std::size_t baby, Exec exec) {
    const std::size_t slots = ctx->slots();
    return LinearTransform(std::move(ctx), matrix_diagonals(m, dim, slots), level, baby, exec);
}

LinearTransform::LinearTransform(ckks::ContextPtr ctx, std::map<std::int64_t, cvec> diagonals, int level,
                                 std::size_t baby, Exec exec, bool at_use, ProductBasis products)
    : ctx_(std::move(ctx)), level_(level), at_use_(at_use) {
    if (level < 1 || level > ctx_->max_level())
        throw LevelError("a linear transform consumes one level: its level must be in 1.." +
                         std::to_string(ctx_->max_level()) + ", got " + std::to_string(level));
    const std::size_t slots = ctx_->slots();
    // Merge offsets equal mod slots, drop zero diagonals (a full diagonal moved, not copied).
    for (const auto& [r, v] : diagonals)
        if (v.size() > slots)
            throw ParameterError("diagonal " + std::to_string(r) + " has " + std::to_string(v.size()) +
                                 " values, but there are " + std::to_string(slots) + " slots");
    std::map<std::int64_t, cvec> diags;
    for (auto it = diagonals.begin(); it != diagonals.end(); it = diagonals.erase(it)) {
        cvec& v = it->second;
        if (std::all_of(v.begin(), v.end(), [](auto x) { return x == std::complex<double>(0.0); })) continue;
        const std::int64_t r = signed_offset(it->first, slots);
        if (v.size() == slots && !diags.count(r)) {
            diags.emplace(r, std::move(v));
            continue;
        }
        auto& d = diags[r];
        if (d.empty()) d.assign(slots, 0.0);
        for (std::size_t s = 0; s < v.size(); ++s) d[s] += v[s];
    }
    if (diags.empty()) throw ParameterError("the linear transform has no nonzero diagonal");
    count_ = diags.size();
    std::vector<std::int64_t> offsets;
    offsets.reserve(diags.size());
    for (const auto& kv : diags) offsets.push_back(kv.first);
    plan_ = plan_for(offsets, slots, baby);
    products_ = products != ProductBasis::automatic ? products : cheaper_basis(*ctx_, plan_, diags.size(), level);
    const bool extended = products_ == ProductBasis::extended;
    // Diagonals are encoded so that the rescale by q_level lands on the canonical scale of level - 1.
    const double q = static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(level)));
    scale_ = ctx_->scale_at(level - 1) * q / ctx_->scale_at(level);
    ckks::Encoder enc(ctx_);
    exec = ctx_->exec(exec);
    terms_.resize(plan_.giants.size());
    std::size_t k = 0;
    for (auto it = diags.begin(); it != diags.end(); it = diags.erase(it)) {  // each released once made a term
        const cvec& v = it->second;
        const auto [bi, gi] = plan_.split[k++];
        const std::int64_t giant = plan_.giants[gi];
        cvec rotated(slots);  // Rot_{-giant}(diag)[s] = diag[(s - giant) mod slots]
        for (std::size_t s = 0; s < slots; ++s)
            rotated[s] = v[static_cast<std::size_t>(
                floor_mod(static_cast<std::int64_t>(s) - giant, static_cast<std::int64_t>(slots)))];
        if (at_use_) {  // one period of the values (most of bootstrapping's FFT factors repeat)
            const std::size_t p = enc.period(rotated);
            Term t{bi, {}, std::vector<double>(p), {}};
            for (std::size_t s = 0; s < p; ++s) t.re[s] = rotated[s].real();
            if (std::any_of(rotated.begin(), rotated.begin() + static_cast<std::ptrdiff_t>(p),
                            [](auto x) { return x.imag() != 0.0; })) {
                t.im.resize(p);
                for (std::size_t s = 0; s < p; ++s) t.im[s] = rotated[s].imag();
            }
            bytes_ += (t.re.size() + t.im.size()) * sizeof(double);
            terms_[gi].push_back(std::move(t));
            continue;
        }
        // A diagonal of period p < slots (most of bootstrapping's FFT factors) is kept in 2p words per limb.
        ckks::Plaintext pt = enc.encode_compact(rotated, scale_, level, extended, exec);
        bytes_ += pt.poly.words() * sizeof(std::uint64_t);
        terms_[gi].push_back(Term{bi, std::move(pt), {}, {}});
    }
}

ckks::Plaintext LinearTransform::encoded(const Term& t, Exec exec) const {
    cvec v(ctx_->slots());  // the period repeated over every slot
    const std::size_t p = t.re.size();
    for (std::size_t s = 0; s < v.size(); ++s) v[s] = {t.re[s % p], t.im.empty() ? 0.0 : t.im[s % p]};
    return ckks::Encoder(ctx_).encode_compact(v, scale_, level_, products_ == ProductBasis::extended, exec);
}

std::vector<std::uint64_t> LinearTransform::galois_elements(const ckks::Context& ctx, const BsgsPlan& plan) {
    std::set<std::uint64_t> out;
    for (auto s : plan.babies)
        if (ctx.galois_element(s) != 1) out.insert(ctx.galois_element(s));
    for (auto s : plan.giants)
        if (ctx.galois_element(s) != 1) out.insert(ctx.galois_element(s));
    return {out.begin(), out.end()};
}

std::vector<std::uint64_t> LinearTransform::galois_elements() const { return galois_elements(*ctx_, plan_); }

void LinearTransform::check_level(const Ciphertext& a) const {
    if (a.level() != level_)
        throw LevelError("the linear transform was encoded for level " + std::to_string(level_) +
                         " but the ciphertext is at level " + std::to_string(a.level()) +
                         "; drop it with ev.drop_level or build the transform at its level");
}

bool LinearTransform::rotates() const {
    return std::any_of(plan_.babies.begin(), plan_.babies.end(), [&](auto s) { return ctx_->galois_element(s) != 1; });
}

Ciphertext LinearTransform::apply(const ckks::Evaluator& ev, const Ciphertext& a, Exec exec, OpCounts* counts) const {
    if (!rotates()) return run(counts ? ev.counting(*counts) : ev, a, nullptr, exec);
    check_level(a);  // before the copy
    return apply(ev, Ciphertext(a), exec, counts);
}

Ciphertext LinearTransform::apply(const ckks::Evaluator& ev, Ciphertext&& a, Exec exec, OpCounts* counts) const {
    const ckks::Evaluator cev = counts ? ev.counting(*counts) : ev;
    if (!rotates()) return run(cev, a, nullptr, exec);
    check_level(a);  // before the decomposition
    const ckks::Decomposition d = cev.decompose(std::move(a), exec);
    return run(cev, d.input, &d, exec);
}

Ciphertext LinearTransform::apply(const ckks::Evaluator& ev, const ckks::Decomposition& d, Exec exec,
                                  OpCounts* counts) const {
    return run(counts ? ev.counting(*counts) : ev, d.input, &d, exec);
}

Ciphertext LinearTransform::run(const ckks::Evaluator& ev, const Ciphertext& a, const ckks::Decomposition* d,
                                Exec exec) const {
    check_level(a);
    const bool extended = products_ == ProductBasis::extended;
    // Baby steps: hoisted inner products, left in Q_l * P_k (extended) or brought down to Q_l. Extended, the rotated
    // babies and their products in one call instead (inner_product_sums_lazy: per giant step, its sums by special
    // primes); at_use, for giant steps in batches whose diagonals, encoded together, take at most batch_bytes_ (at
    // least one giant step a batch: its diagonals take less than the babies over Q_l * P the other path holds).
    const bool fused = extended && d;
    std::vector<bool> rotated(plan_.babies.size());
    for (std::size_t i = 0; i < plan_.babies.size(); ++i) rotated[i] = ctx_->galois_element(plan_.babies[i]) != 1;
    std::vector<std::vector<LazyCiphertext>> sums(fused ? plan_.giants.size() : 0);  // each giant step's
    if (fused) {
        std::vector<std::uint64_t> galois_elts;
        for (auto s : plan_.babies) galois_elts.push_back(ctx_->galois_element(s));
        const std::size_t limbs = static_cast<std::size_t>(level_) + 1 + ctx_->rns().p_count(), n = ctx_->n();
        for (std::size_t j0 = 0; j0 < plan_.giants.size();) {
            std::size_t j1 = j0, bytes = 0;  // the batch j0..j1-1
            while (j1 < plan_.giants.size()) {
                std::size_t b = 0;
                for (const Term& t : terms_[j1])
                    if (at_use_ && rotated[t.baby]) b += limbs * std::min(n, 2 * t.re.size()) * sizeof(std::uint64_t);
                if (j1 > j0 && bytes + b > batch_bytes_) break;
                bytes += b;
                ++j1;
            }
            std::vector<std::vector<ckks::Plaintext>> now(at_use_ ? j1 - j0 : 0);  // at_use: the batch's diagonals
            std::vector<std::vector<std::pair<std::size_t, const ckks::Plaintext*>>> groups;
            std::vector<std::size_t> owner;  // the giant step of each group
            for (std::size_t j = j0; j < j1; ++j) {
                std::vector<std::pair<std::size_t, const ckks::Plaintext*>> group;
                if (at_use_) now[j - j0].reserve(terms_[j].size());  // (pointers into it are kept)
                for (const Term& t : terms_[j]) {
                    if (!rotated[t.baby]) continue;
                    if (!at_use_) {
                        group.emplace_back(t.baby, &t.pt);
                        continue;
                    }
                    now[j - j0].push_back(encoded(t, exec));
                    group.emplace_back(t.baby, &now[j - j0].back());
                }
                if (group.empty()) continue;
                groups.push_back(std::move(group));
                owner.push_back(j);
            }
            if (!groups.empty()) {
                auto made = ev.inner_product_sums_lazy(*d, galois_elts, groups, exec);
                for (std::size_t k = 0; k < made.size(); ++k) sums[owner[k]] = std::move(made[k]);
            }
            j0 = j1;
        }
    }
    std::vector<std::optional<LazyCiphertext>> lazy(plan_.babies.size());
    std::vector<std::optional<Ciphertext>> down(plan_.babies.size());
    for (std::size_t i = 0; i < plan_.babies.size() && !fused; ++i) {
        const std::uint64_t galois_elt = ctx_->galois_element(plan_.babies[i]);
        if (galois_elt == 1) continue;
        if (extended) lazy[i] = ev.inner_product_lazy(*d, galois_elt, exec);
        else down[i] = ev.mod_down(ev.inner_product_lazy(*d, galois_elt, exec), exec);
    }
    // Lazy values are summed by their special primes P_k (keys made for different levels have different k; one
    // ModDown for each k).
    using LazySums = std::map<std::size_t, LazyCiphertext>;
    auto add_lazy = [&](LazySums& sums, LazyCiphertext&& x) {
        const std::size_t np = x.b.num_p();
        if (auto it = sums.find(np); it != sums.end()) ev.add_lazy_inplace(it->second, x, exec);
        else sums.emplace(np, std::move(x));
    };
    auto add_down = [&](Ciphertext& acc, const LazyCiphertext& x) {
        Ciphertext y = ev.mod_down(x, exec);
        acc = acc.polys.empty() ? std::move(y) : ev.add(acc, y, exec);
    };
    LazySums total;    // giant rotations and the giant step 0, summed before their ModDown
    Ciphertext plain;  // products over Q_l of the giant step 0 (the input's own, extended)
    for (std::size_t j = 0; j < plan_.giants.size(); ++j) {
        // The products over Q_l (the input's own; every one over Q_l) and those in Q_l * P_k, summed in chunks of
        // kAtUseChunk terms at_use (each chunk's diagonals encoded for it alone: the same sums mod q, a chunk's memory),
        // in one sum otherwise.
        const std::vector<Term>& terms = terms_[j];
        const std::size_t chunk = at_use_ ? kAtUseChunk : terms.size();
        Ciphertext cj;
        LazySums xj;
        for (std::size_t c0 = 0; c0 < terms.size(); c0 += chunk) {
            const std::size_t c1 = std::min(terms.size(), c0 + chunk);
            std::vector<ckks::Plaintext> now;  // at_use: this chunk's diagonals
            if (at_use_) {
                now.reserve(c1 - c0);
                for (std::size_t k = c0; k < c1; ++k)  // (a rotated baby's term, fused, was encoded above)
                    now.push_back(fused && rotated[terms[k].baby] ? ckks::Plaintext{} : encoded(terms[k], exec));
            }
            std::map<std::size_t, std::pair<std::vector<const LazyCiphertext*>, std::vector<const ckks::Plaintext*>>>
                xs;  // by special primes
            std::vector<const Ciphertext*> cts;
            std::vector<const ckks::Plaintext*> cpts;
            for (std::size_t k = c0; k < c1; ++k) {
                const Term& t = terms[k];
                if (fused && rotated[t.baby]) continue;  // in sums[j]
                const ckks::Plaintext& pt = at_use_ ? now[k - c0] : t.pt;
                if (lazy[t.baby]) {
                    auto& [x, p] = xs[lazy[t.baby]->b.num_p()];
                    x.push_back(&*lazy[t.baby]);
                    p.push_back(&pt);
                } else {
                    cts.push_back(down[t.baby] ? &*down[t.baby] : &a);
                    cpts.push_back(&pt);
                }
            }
            if (!cts.empty()) {
                Ciphertext part = ev.multiply_plain_sum(cts, cpts, exec);
                cj = cj.polys.empty() ? std::move(part) : ev.add(cj, part, exec);
            }
            for (auto& [np, group] : xs) add_lazy(xj, ev.multiply_plain_sum_lazy(group.first, group.second, exec));
        }
        if (fused)
            for (LazyCiphertext& x : sums[j]) add_lazy(xj, std::move(x));
        const std::uint64_t galois_elt = ctx_->galois_element(plan_.giants[j]);
        if (galois_elt == 1) {
            for (auto& [np, x] : xj) add_lazy(total, std::move(x));
            plain = std::move(cj);
            continue;
        }
        for (const auto& [np, x] : xj) add_down(cj, x);
        add_lazy(total, ev.inner_product_lazy(ev.decompose(std::move(cj), exec), galois_elt, exec));  // cj is done with
    }
    if (total.empty()) return ev.rescale(plain, exec);
    // ModDown, the products of the giant step 0 and the rescale in one base conversion (the sums over fewer special
    // primes, if any, brought down first)
    while (total.size() > 1) {
        add_down(plain, total.begin()->second);
        total.erase(total.begin());
    }
    return ev.mod_down_rescale(std::move(total.begin()->second), plain.polys.empty() ? nullptr : &plain, exec);
}

}  // namespace kasoku::algo
