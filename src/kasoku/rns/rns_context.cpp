#include "kasoku/rns/rns_context.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "kasoku/arith/ntt.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::rns {

RnsContext::RnsContext(std::size_t n, std::vector<u64> q, std::vector<u64> p, std::size_t alpha)
    : n_(n), q_(std::move(q)), p_(std::move(p)), alpha_(alpha) {
    if (q_.empty()) throw ParameterError("an RNS context needs at least one ciphertext prime");
    if (alpha_ == 0) throw ParameterError("alpha (primes per key-switching digit) must be >= 1");
    if (alpha_ > kMaxDigitPrimes || p_.size() > kMaxDigitPrimes)
        throw ParameterError("at most " + std::to_string(kMaxDigitPrimes) + " primes per key-switching digit and " +
                             std::to_string(kMaxDigitPrimes) + " special primes, got " + std::to_string(alpha_) +
                             " and " + std::to_string(p_.size()) + "; use more digits (dnum) and fewer special primes");
    if (!p_.empty() && alpha_ > p_.size())
        throw ParameterError("hybrid key switching needs at least alpha = " + std::to_string(alpha_) +
                             " special primes, got " + std::to_string(p_.size()));
    log_n_ = __builtin_ctzll(n_);
    std::vector<u64> all = q_;
    all.insert(all.end(), p_.begin(), p_.end());
    for (std::size_t i = 0; i < all.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (all[i] == all[j]) throw ParameterError("RNS primes must be distinct");
    for (u64 v : all) mods_.emplace_back(v);
    // NTT slot k evaluates at psi^{exp_[k]}: read it off the transform of X with the first prime.
    const arith::NttTables t(q_[0], n_);
    std::vector<u64> x(n_, 0);
    if (n_ > 1) x[1] = 1;
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

std::size_t RnsContext::special_for(std::size_t num_q) const {
    num_q = std::min(num_q, q_.size());
    double digit = 0.0;  // log2 of the largest digit of Q_{num_q - 1}
    for (std::size_t j = 0; j < digits_at(num_q); ++j) {
        double bits = 0.0;
        for (std::size_t i = 0; i < digit_size(j, num_q); ++i)
            bits += std::log2(static_cast<double>(q_[digit_begin(j) + i]));
        digit = std::max(digit, bits);
    }
    double bits = 0.0;
    for (std::size_t k = 0; k < p_.size(); ++k) {
        bits += std::log2(static_cast<double>(p_[k]));
        if (bits >= digit) return k + 1;
    }
    return p_.size();
}

std::vector<u64> RnsContext::signed_residues(__int128 v) const {
    std::vector<u64> res(mods_.size());
    for (std::size_t i = 0; i < res.size(); ++i) res[i] = arith::reduce_signed(v, mods_[i]);
    return res;
}

const SlotFft& RnsContext::slot_fft() const {
    std::call_once(slot_fft_once_, [this] { slot_fft_ = std::make_unique<const SlotFft>(n_); });
    return *slot_fft_;
}

std::shared_ptr<const RnsContext::CrtTable> RnsContext::crt_table(std::size_t t) const {
    std::lock_guard<std::mutex> lock(crt_mutex_);
    auto it = crt_cache_.find(t);
    if (it != crt_cache_.end()) return it->second;
    // Q = q_0 ... q_{t-1} and Q / q_i as W-word integers, half = floor(Q / 2), and (Q / q_i)^-1 mod q_i
    const std::size_t W = t + 1;
    auto c = std::make_shared<CrtTable>();
    c->Q.assign(W, 0);
    c->half.assign(W, 0);
    c->qhat.assign(t * W, 0);
    c->qhat_inv.resize(t);
    c->qhat_inv_shoup.resize(t);
    auto mul_small = [](std::vector<u64>& x, u64 f) {
        arith::u128 carry = 0;
        for (auto& w : x) {
            arith::u128 p = static_cast<arith::u128>(w) * f + carry;
            w = static_cast<u64>(p);
            carry = p >> 64;
        }
    };
    c->Q[0] = 1;
    for (std::size_t i = 0; i < t; ++i) mul_small(c->Q, prime(i));
    for (std::size_t i = 0; i < t; ++i) {
        std::vector<u64> qhat(W, 0);
        qhat[0] = 1;
        u64 rem = 1;
        for (std::size_t j = 0; j < t; ++j)
            if (j != i) {
                mul_small(qhat, prime(j));
                rem = arith::mul_mod(rem, prime(j) % prime(i), modulus(i));
            }
        std::copy(qhat.begin(), qhat.end(), c->qhat.begin() + static_cast<std::ptrdiff_t>(i * W));
        c->qhat_inv[i] = arith::inv_mod(rem, modulus(i));
        c->qhat_inv_shoup[i] = arith::shoup(c->qhat_inv[i], prime(i));
    }
    for (std::size_t k = 0; k < W; ++k) c->half[k] = (c->Q[k] >> 1) | (k + 1 < W ? c->Q[k + 1] << 63 : 0);
    crt_cache_.emplace(t, c);
    return c;
}

template <class Visit>
void RnsContext::for_each_centered(const u64* const* limbs, std::size_t t, const char* op, Visit&& visit) const {
    if (t == 0 || t > q_.size()) throw InternalError(std::string(op) + ": between 1 and L + 1 limbs");
    // into W-word integers, centered, with the CRT constants of t limbs (computed once)
    const std::size_t W = t + 1;
    const std::shared_ptr<const CrtTable> crt = crt_table(t);
    std::vector<u64> r(t), x(W), tmp(W);
    for (std::size_t c = 0; c < n_; ++c) {
        for (std::size_t i = 0; i < t; ++i) r[i] = limbs[i][c];
        const bool negative = crt::centered(r.data(), t, q_.data(), crt->Q.data(), crt->half.data(), crt->qhat.data(),
                                            crt->qhat_inv.data(), crt->qhat_inv_shoup.data(), x.data(), tmp.data());
        visit(c, negative, x);
    }
}

void RnsContext::compose_centered(const u64* const* limbs, std::size_t t, double* out) const {
    for_each_centered(limbs, t, "compose_centered", [&](std::size_t c, bool negative, const std::vector<u64>& x) {
        out[c] = crt::to_double(x.data(), x.size(), negative);
    });
}

void RnsContext::lift_centered(const u64* const* limbs, std::size_t t, std::size_t to, u64* const* out) const {
    if (to > q_.size()) throw InternalError("lift_centered: at most L + 1 target primes");
    for_each_centered(limbs, t, "lift_centered", [&](std::size_t c, bool negative, const std::vector<u64>& x) {
        for (std::size_t i = 0; i < to; ++i) {
            arith::u128 r = 0;  // x mod q_i, from the top word
            for (std::size_t k = x.size(); k-- > 0;) r = ((r << 64) | x[k]) % prime(i);
            const u64 m = static_cast<u64>(r);
            out[i][c] = negative && m ? prime(i) - m : m;
        }
    });
}

std::shared_ptr<const std::vector<std::uint32_t>> RnsContext::automorphism_permutation(u64 galois_elt) const {
    if (galois_elt % 2 == 0 || galois_elt >= 2 * n_)
        throw ParameterError("Galois element must be odd and below 2n, got " + std::to_string(galois_elt));
    std::lock_guard<std::mutex> lock(perm_mutex_);
    auto it = perm_cache_.find(galois_elt);
    if (it != perm_cache_.end()) return it->second;
    auto perm = std::make_shared<std::vector<std::uint32_t>>(n_);
    const u64 mask = 2 * n_ - 1;
    for (std::size_t k = 0; k < n_; ++k) (*perm)[k] = pos_[(galois_elt * exp_[k]) & mask];
    perm_cache_.emplace(galois_elt, perm);
    return perm;
}

}  // namespace kasoku::rns
