#include "kasoku/rns/rns_context.hpp"

#include <algorithm>
#include <string>

#include "kasoku/arith/kernels.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/threads.hpp"

namespace kasoku::rns {

using arith::Modulus;

RnsContext::RnsContext(std::size_t n, std::vector<u64> q, std::vector<u64> p, std::size_t alpha)
    : n_(n), q_(std::move(q)), p_(std::move(p)), alpha_(alpha) {
    if (q_.empty()) throw ParameterError("an RNS context needs at least one ciphertext prime");
    if (alpha_ == 0) throw ParameterError("alpha (primes per key-switching digit) must be >= 1");
    if (!p_.empty() && alpha_ > p_.size())
        throw ParameterError("hybrid key switching needs at least alpha = " + std::to_string(alpha_) +
                             " special primes, got " + std::to_string(p_.size()));
    log_n_ = __builtin_ctzll(n_);
    std::vector<u64> all = q_;
    all.insert(all.end(), p_.begin(), p_.end());
    for (std::size_t i = 0; i < all.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (all[i] == all[j]) throw ParameterError("RNS primes must be distinct");
    for (u64 v : all) {
        mods_.emplace_back(v);
        ntt_.push_back(std::make_unique<arith::NttTables>(v, n_));
    }
    const std::size_t L = q_.size() - 1;
    // rescale constants, per level l >= 1
    rescale_inv_.resize(L + 1); rescale_inv_shoup_.resize(L + 1); rescale_half_.resize(L + 1);
    for (std::size_t l = 1; l <= L; ++l) {
        for (std::size_t i = 0; i < l; ++i) {
            u64 inv = arith::inv_mod(q_[l] % q_[i], mods_[i]);
            rescale_inv_[l].push_back(inv);
            rescale_inv_shoup_[l].push_back(arith::shoup(inv, q_[i]));
            rescale_half_[l].push_back((q_[l] >> 1) % q_[i]);
        }
    }
    // ModUp converters: first m primes of digit j -> every prime
    const std::size_t digits = dnum();
    digit_conv_.resize(digits * alpha_);
    for (std::size_t j = 0; j < digits; ++j) {
        const std::size_t begin = j * alpha_, full = std::min(alpha_, q_.size() - begin);
        for (std::size_t m = 1; m <= full; ++m) {
            std::vector<Modulus> src(mods_.begin() + begin, mods_.begin() + begin + m);
            digit_conv_[j * alpha_ + m - 1] = BaseConverter(src, mods_);
        }
    }
    if (!p_.empty()) {
        std::vector<Modulus> pm(mods_.begin() + q_.size(), mods_.end());
        std::vector<Modulus> qm(mods_.begin(), mods_.begin() + q_.size());
        p_to_q_ = BaseConverter(pm, qm);
        for (std::size_t i = 0; i <= L; ++i) {
            u64 pi = 1;
            for (u64 pj : p_) pi = arith::mul_mod(pi, pj % q_[i], mods_[i]);
            p_mod_q_.push_back(pi);
            p_mod_q_shoup_.push_back(arith::shoup(pi, q_[i]));
            p_inv_.push_back(arith::inv_mod(pi, mods_[i]));
            p_inv_shoup_.push_back(arith::shoup(p_inv_.back(), q_[i]));
        }
        for (std::size_t i = 0; i <= L; ++i) {
            p0_inv_.push_back(arith::inv_mod(p_[0] % q_[i], mods_[i]));
            p0_inv_shoup_.push_back(arith::shoup(p0_inv_.back(), q_[i]));
            p0_half_.push_back((p_[0] >> 1) % q_[i]);
        }
        pq_to_q_.resize(L + 1); pq_inv_.resize(L + 1); pq_inv_shoup_.resize(L + 1);
        for (std::size_t l = 1; l <= L; ++l) {
            std::vector<Modulus> src = pm;
            src.push_back(mods_[l]);
            pq_to_q_[l] = BaseConverter(src, std::vector<Modulus>(mods_.begin(), mods_.begin() + l));
            for (std::size_t i = 0; i < l; ++i) {
                u64 v = arith::mul_mod(p_inv_[i], rescale_inv_[l][i], mods_[i]);
                pq_inv_[l].push_back(v);
                pq_inv_shoup_[l].push_back(arith::shoup(v, q_[i]));
            }
        }
    }
    // NTT slot k evaluates at psi^{exp_[k]}: read it off the transform of X with the first prime.
    {
        const arith::NttTables& t = *ntt_[0];
        std::vector<u64> x(n_, 0);
        x[1] = 1;
        arith::ntt_forward(x.data(), t);
        std::unordered_map<u64, std::uint32_t> log;
        log.reserve(2 * n_);
        u64 pw = 1;
        for (std::uint32_t e = 0; e < 2 * n_; ++e) {
            log.emplace(pw, e);
            pw = arith::mul_mod(pw, t.psi(), t.modulus());
        }
        exp_.resize(n_);
        pos_.assign(2 * n_, 0);
        for (std::size_t k = 0; k < n_; ++k) {
            exp_[k] = log.at(x[k]);
            pos_[exp_[k]] = static_cast<std::uint32_t>(k);
        }
    }
}

namespace {
void check_same_shape(const RnsPoly& a, const RnsPoly& b) {
    if (a.n() != b.n() || a.num_q() != b.num_q() || a.num_p() != b.num_p() || a.ntt_form() != b.ntt_form())
        throw ParameterError("internal: RNS polynomials of different shapes");
}
void shape_like(const RnsPoly& a, RnsPoly& out) {
    if (&a == &out) return;
    if (out.n() != a.n() || out.num_q() != a.num_q() || out.num_p() != a.num_p())
        out = RnsPoly(a.n(), a.num_q(), a.num_p(), a.ntt_form());
    out.set_ntt_form(a.ntt_form());
}
}  // namespace

void RnsContext::to_ntt(RnsPoly& a, int threads) const {
    if (a.ntt_form()) return;
    parallel_for(threads, a.limbs(), [&](std::size_t i) { arith::ntt_forward(a.limb(i), *ntt_[prime_index(i, a.num_q())]); });
    a.set_ntt_form(true);
}

void RnsContext::from_ntt(RnsPoly& a, int threads) const {
    if (!a.ntt_form()) return;
    parallel_for(threads, a.limbs(), [&](std::size_t i) { arith::ntt_inverse(a.limb(i), *ntt_[prime_index(i, a.num_q())]); });
    a.set_ntt_form(false);
}

void RnsContext::add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, int threads) const {
    check_same_shape(a, b);
    shape_like(a, out);
    parallel_for(threads, a.limbs(), [&](std::size_t i) {
        arith::add_mod(a.limb(i), b.limb(i), n_, prime(prime_index(i, a.num_q())), out.limb(i));
    });
}

void RnsContext::sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, int threads) const {
    check_same_shape(a, b);
    shape_like(a, out);
    parallel_for(threads, a.limbs(), [&](std::size_t i) {
        arith::sub_mod(a.limb(i), b.limb(i), n_, prime(prime_index(i, a.num_q())), out.limb(i));
    });
}

void RnsContext::negate(const RnsPoly& a, RnsPoly& out, int threads) const {
    shape_like(a, out);
    parallel_for(threads, a.limbs(), [&](std::size_t i) {
        arith::negate_mod(a.limb(i), n_, prime(prime_index(i, a.num_q())), out.limb(i));
    });
}

void RnsContext::mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, int threads) const {
    check_same_shape(a, b);
    shape_like(a, out);
    parallel_for(threads, a.limbs(), [&](std::size_t i) {
        arith::mul_mod(a.limb(i), b.limb(i), n_, mods_[prime_index(i, a.num_q())], out.limb(i));
    });
}

void RnsContext::fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, int threads) const {
    check_same_shape(a, b);
    check_same_shape(a, c);
    shape_like(a, out);
    parallel_for(threads, a.limbs(), [&](std::size_t i) {
        arith::fma_mod(a.limb(i), b.limb(i), c.limb(i), n_, mods_[prime_index(i, a.num_q())], out.limb(i));
    });
}

void RnsContext::mul_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, int threads) const {
    shape_like(a, out);
    parallel_for(threads, a.limbs(), [&](std::size_t i) {
        const std::size_t idx = prime_index(i, a.num_q());
        const u64 q = prime(idx), w = residues[idx] % q;
        arith::mul_scalar_mod(a.limb(i), w, arith::shoup(w, q), n_, q, out.limb(i));
    });
}

void RnsContext::add_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, int threads) const {
    shape_like(a, out);
    parallel_for(threads, a.limbs(), [&](std::size_t i) {
        const std::size_t idx = prime_index(i, a.num_q());
        const u64 q = prime(idx), c = residues[idx] % q;
        const u64* src = a.limb(i);
        u64* dst = out.limb(i);
        for (std::size_t k = 0; k < n_; ++k) dst[k] = arith::add_mod(src[k], c, q);
    });
}

void RnsContext::set_signed(const std::int64_t* coeffs, RnsPoly& out, int threads) const {
    out.set_ntt_form(false);
    parallel_for(threads, out.limbs(), [&](std::size_t i) {
        const u64 q = prime(prime_index(i, out.num_q()));
        u64* d = out.limb(i);
        for (std::size_t c = 0; c < n_; ++c) {
            std::int64_t v = coeffs[c];
            // |v| < q for every use here (ternary secrets, Gaussian errors), checked by the caller
            d[c] = signed_residue(v, q);
        }
    });
}

void RnsContext::add_times_p(const RnsPoly& d, RnsPoly& x, int threads) const {
    if (d.num_q() != x.num_q() || !d.ntt_form() || !x.ntt_form()) throw ParameterError("internal: add_times_p shapes differ");
    parallel_for(threads, d.num_q(), [&](std::size_t i) {
        AlignedWords t(n_);
        arith::mul_scalar_mod(d.limb(i), p_mod_q_[i], p_mod_q_shoup_[i], n_, q_[i], t.data());
        arith::add_mod(x.limb(i), t.data(), n_, q_[i], x.limb(i));
    });
}

void RnsContext::divide_round_by_last(RnsPoly& a, std::size_t keep, const u64* inv, const u64* inv_shoup,
                                      const u64* half_mod, int threads, const std::int64_t* addend) const {
    // round((a + addend) / r) on the first `keep` q-limbs, r = the prime of a's last limb. The small coefficient-form
    // addend joins the correction polynomial before its NTT, so it costs no transform of its own.
    const std::size_t last_limb = a.limbs() - 1, idx = prime_index(last_limb, a.num_q());
    const u64 r = prime(idx), half = r >> 1;
    AlignedWords last(a.limb(last_limb), a.limb(last_limb) + n_);
    arith::ntt_inverse(last.data(), *ntt_[idx]);
    if (addend)
        for (std::size_t c = 0; c < n_; ++c) last[c] = arith::add_mod(last[c], signed_residue(addend[c], r), r);
    for (auto& x : last) x = arith::add_mod(x, half, r);  // round instead of floor
    RnsPoly out(n_, keep, 0, true);  // written limb by limb: no copy of the kept limbs afterwards
    parallel_for(threads, keep, [&](std::size_t i) {
        u64* t = out.limb(i);
        const Modulus& mi = mods_[i];
        for (std::size_t c = 0; c < n_; ++c) t[c] = arith::sub_mod(arith::reduce_64(last[c], mi), half_mod[i], mi.value);
        if (addend)  // a + e - t = a - (t - e)
            for (std::size_t c = 0; c < n_; ++c) t[c] = arith::sub_mod(t[c], signed_residue(addend[c], mi.value), mi.value);
        arith::ntt_forward(t, *ntt_[i]);
        arith::sub_mod(a.limb(i), t, n_, mi.value, t);
        arith::mul_scalar_mod(t, inv[i], inv_shoup[i], n_, mi.value, t);
    });
    a = std::move(out);
}

void RnsContext::rescale(RnsPoly& a, int threads) const {
    if (!a.ntt_form() || a.num_p() != 0 || a.num_q() < 2) throw LevelError("internal: rescale needs an NTT-form poly at level >= 1");
    const std::size_t l = a.num_q() - 1;
    divide_round_by_last(a, l, rescale_inv_[l].data(), rescale_inv_shoup_[l].data(), rescale_half_[l].data(), threads);
}

void RnsContext::divide_round_by_p0(RnsPoly& a, int threads, const std::int64_t* addend) const {
    if (!a.ntt_form() || a.num_p() != 1 || p_.empty()) throw ParameterError("internal: divide_round_by_p0 needs an NTT-form Q*p_0 poly");
    divide_round_by_last(a, a.num_q(), p0_inv_.data(), p0_inv_shoup_.data(), p0_half_.data(), threads, addend);
}

void RnsContext::divide_exact(const RnsPoly& a, const std::vector<std::size_t>& src_limbs, const BaseConverter& conv,
                              const u64* inv, const u64* inv_shoup, std::size_t keep, RnsPoly& out, int threads,
                              const RnsPoly* addend, const std::uint32_t* perm) const {
    // round(a / R): a - [a]_R (exact, centered conversion) is divisible by R. Each output limb is converted,
    // transformed, combined with a (and the addend) and permuted while it is in cache.
    const std::size_t s = src_limbs.size();
    RnsPoly y(n_, 0, s, false);
    parallel_for(threads, s, [&](std::size_t j) {
        const std::size_t limb = src_limbs[j];
        std::copy(a.limb(limb), a.limb(limb) + n_, y.limb(j));
        arith::ntt_inverse(y.limb(j), *ntt_[prime_index(limb, a.num_q())]);
    });
    std::vector<u64*> yp(s);
    for (std::size_t j = 0; j < s; ++j) yp[j] = y.limb(j);
    conv.scale_source(yp.data(), n_, yp.data());
    std::vector<std::uint8_t> v(n_);
    conv.overflow_count(yp.data(), n_, v.data());
    RnsPoly result(n_, keep, 0, true);  // written limb by limb: no copy of the kept limbs afterwards
    parallel_for(threads, keep, [&](std::size_t i) {
        AlignedWords scratch(perm ? n_ : 0);
        u64* t = perm ? scratch.data() : result.limb(i);
        conv.convert_to(i, yp.data(), n_, t, v.data());
        arith::ntt_forward(t, *ntt_[i]);
        arith::sub_mod(a.limb(i), t, n_, q_[i], t);
        arith::mul_scalar_mod(t, inv[i], inv_shoup[i], n_, q_[i], t);
        if (addend) arith::add_mod(t, addend->limb(i), n_, q_[i], t);
        if (perm) arith::permute(t, perm, n_, result.limb(i));
    });
    out = std::move(result);
}

void RnsContext::mod_down(RnsPoly& a, int threads) const { mod_down_galois(a, nullptr, 1, a, threads); }

void RnsContext::mod_down_galois(const RnsPoly& a, const RnsPoly* addend, u64 galois_elt, RnsPoly& out, int threads) const {
    if (!a.ntt_form() || a.num_p() != p_.size() || p_.empty()) throw ParameterError("internal: mod_down needs an NTT-form Q*P poly");
    const std::size_t nq = a.num_q();
    if (addend && (addend->num_q() != nq || addend->num_p() != 0 || !addend->ntt_form()))
        throw ParameterError("internal: mod_down_galois addend shape differs");
    const auto perm = galois_elt == 1 ? nullptr : automorphism_permutation(galois_elt);
    std::vector<std::size_t> src(p_.size());
    for (std::size_t j = 0; j < src.size(); ++j) src[j] = nq + j;  // the P limbs
    divide_exact(a, src, p_to_q_, p_inv_.data(), p_inv_shoup_.data(), nq, out, threads, addend, perm ? perm->data() : nullptr);
}

void RnsContext::mod_down_rescale(RnsPoly& a, int threads) const {
    if (!a.ntt_form() || a.num_p() != p_.size() || p_.empty() || a.num_q() < 2)
        throw ParameterError("internal: mod_down_rescale needs an NTT-form Q*P poly at level >= 1");
    const std::size_t l = a.num_q() - 1;
    std::vector<std::size_t> src(p_.size() + 1);
    for (std::size_t j = 0; j < p_.size(); ++j) src[j] = l + 1 + j;  // the P limbs, then q_l
    src.back() = l;
    divide_exact(a, src, pq_to_q_[l], pq_inv_[l].data(), pq_inv_shoup_[l].data(), l, a, threads);
}

RnsContext::Decomposed RnsContext::decompose(const RnsPoly& d, int threads) const {
    if (!d.ntt_form() || d.num_p() != 0) throw ParameterError("internal: decompose needs an NTT-form Q poly");
    Decomposed dec;
    dec.num_q = d.num_q();
    dec.ntt = &d;
    dec.scaled = d;
    from_ntt(dec.scaled, threads);
    const std::size_t digits = digits_at(d.num_q());
    parallel_for(threads, digits, [&](std::size_t j) {
        const std::size_t begin = j * alpha_, m = std::min(alpha_, d.num_q() - begin);
        std::vector<u64*> y(m);
        for (std::size_t i = 0; i < m; ++i) y[i] = dec.scaled.limb(begin + i);
        digit_converter(j, d.num_q()).scale_source(y.data(), n_, y.data());
    });
    return dec;
}

void RnsContext::mod_up_limb(const Decomposed& dec, std::size_t digit, std::size_t limb, u64* out) const {
    if (limb_in_digit(limb, dec.num_q, digit)) {
        std::copy(dec.ntt->limb(limb), dec.ntt->limb(limb) + n_, out);
        return;
    }
    const std::size_t begin = digit * alpha_, m = std::min(alpha_, dec.num_q - begin);
    const u64* y[64];
    for (std::size_t i = 0; i < m; ++i) y[i] = dec.scaled.limb(begin + i);
    const std::size_t idx = prime_index(limb, dec.num_q);
    digit_converter(digit, dec.num_q).convert_to(idx, y, n_, out);
    arith::ntt_forward(out, *ntt_[idx]);
}

std::shared_ptr<const std::vector<std::uint32_t>> RnsContext::automorphism_permutation(u64 g) const {
    if (g % 2 == 0 || g >= 2 * n_) throw ParameterError("Galois element must be odd and below 2n, got " + std::to_string(g));
    std::lock_guard<std::mutex> lock(perm_mutex_);
    auto it = perm_cache_.find(g);
    if (it != perm_cache_.end()) return it->second;
    auto perm = std::make_shared<std::vector<std::uint32_t>>(n_);
    const u64 mask = 2 * n_ - 1;
    for (std::size_t k = 0; k < n_; ++k) (*perm)[k] = pos_[(g * exp_[k]) & mask];
    perm_cache_.emplace(g, perm);
    return perm;
}

void RnsContext::automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, int threads) const {
    if (!a.ntt_form()) throw ParameterError("internal: automorphism expects NTT form");
    if (&a == &out) throw ParameterError("internal: automorphism cannot run in place");
    shape_like(a, out);
    auto perm = automorphism_permutation(galois_elt);
    const std::uint32_t* p = perm->data();
    parallel_for(threads, a.limbs(), [&](std::size_t i) { arith::permute(a.limb(i), p, n_, out.limb(i)); });
}

}  // namespace kasoku::rns
