// The RNS ring: primes q_0..q_L and special primes p_0..p_{k-1}, their NTT tables, and the
// base-conversion constants of rescale, ModUp (per key-switching digit) and ModDown.
// Immutable after construction; every method is safe to call from several threads at once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/rns/base_conv.hpp"
#include "kasoku/rns/rns_poly.hpp"

namespace kasoku::rns {

using arith::u64;

// v mod q for a small signed v (|v| < q).
inline u64 signed_residue(std::int64_t v, u64 q) { return v >= 0 ? static_cast<u64>(v) : q - static_cast<u64>(-v); }

class RnsContext {
public:
    // alpha: primes per key-switching digit (dnum = ceil(|q| / alpha)).
    RnsContext(std::size_t n, std::vector<u64> q, std::vector<u64> p, std::size_t alpha);

    std::size_t n() const { return n_; }
    int log_n() const { return log_n_; }
    std::size_t q_count() const { return q_.size(); }   // L + 1
    std::size_t p_count() const { return p_.size(); }   // k
    std::size_t alpha() const { return alpha_; }
    std::size_t dnum() const { return (q_.size() + alpha_ - 1) / alpha_; }
    // Number of digits a polynomial with num_q q-limbs splits into.
    std::size_t digits_at(std::size_t num_q) const { return (num_q + alpha_ - 1) / alpha_; }

    // Index into the combined prime list [q_0..q_L, p_0..p_{k-1}] of limb `i` of a polynomial with num_q q-limbs.
    std::size_t prime_index(std::size_t limb, std::size_t num_q) const {
        return limb < num_q ? limb : q_.size() + (limb - num_q);
    }
    const arith::Modulus& modulus(std::size_t idx) const { return mods_[idx]; }
    u64 prime(std::size_t idx) const { return mods_[idx].value; }
    const arith::NttTables& ntt_tables(std::size_t idx) const { return *ntt_[idx]; }
    const std::vector<u64>& q_primes() const { return q_; }
    const std::vector<u64>& p_primes() const { return p_; }

    // --- transforms and element-wise operations (shapes must match) ---
    void to_ntt(RnsPoly& a, int threads) const;
    void from_ntt(RnsPoly& a, int threads) const;
    void add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, int threads) const;
    void sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, int threads) const;
    void negate(const RnsPoly& a, RnsPoly& out, int threads) const;
    void mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, int threads) const;  // NTT form
    // out = a * b + c (NTT form), one reduction.
    void fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, int threads) const;
    // out = a * c_i limb-wise with c_i < prime i (residues of one integer constant).
    void mul_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, int threads) const;
    // out = a + c_i limb-wise (adds a constant polynomial when a is in NTT form).
    void add_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, int threads) const;

    // Residues of a small signed integer vector (|x| < 2^127 per coefficient is handled by the caller) into
    // coefficient-form limbs.
    void set_signed(const std::int64_t* coeffs, RnsPoly& out, int threads) const;

    // x_i += d_i * P mod q_i on the q-limbs of x (Q_l * P basis); d over Q_l. Lifts d into the extended basis as d * P.
    void add_times_p(const RnsPoly& d, RnsPoly& x, int threads) const;

    // --- RNS scaling ---
    // a (NTT form, num_q = l+1, num_p = 0) -> round(a / q_l) at num_q = l.
    void rescale(RnsPoly& a, int threads) const;
    // a (NTT form, num_q = l+1, num_p = 1: the first special prime) -> round(a / p_0) at num_q = l+1. Encryption
    // runs in Q * p_0 and ends with this, so that fresh noise is divided by p_0 (SEAL does the same with all of P).
    // With `addend` (n small signed coefficients, |e| < every prime) the result is round((a + e) / p_0).
    void divide_round_by_p0(RnsPoly& a, int threads, const std::int64_t* addend = nullptr) const;
    // a (NTT form, num_q = l+1, num_p = k) -> round(a / P) at num_q = l+1, num_p = 0 (exact conversion).
    void mod_down(RnsPoly& a, int threads) const;
    // out = psi_g(round(a / P) + addend) at num_q = l+1: ModDown, an optional addend over Q_l and the automorphism
    // in one pass, limb by limb while each limb is in cache (the end of every rotation; the key switches to
    // s(X^{g^-1}) so that the automorphism can come last). g = 1: no automorphism. out may be a.
    void mod_down_galois(const RnsPoly& a, const RnsPoly* addend, u64 galois_elt, RnsPoly& out, int threads) const;
    // a (NTT form, num_q = l+1, num_p = k) -> round(a / (P q_l)) at num_q = l, num_p = 0: ModDown and
    // rescale fused into one base conversion (saves one round of NTTs).
    void mod_down_rescale(RnsPoly& a, int threads) const;

    // Hybrid key-switching decomposition: the digits of d (NTT form, num_q = l+1), kept in coefficient form
    // and pre-scaled for base conversion, from which any limb of ModUp(digit j) can be produced.
    struct Decomposed {
        std::size_t num_q = 0;
        const RnsPoly* ntt = nullptr;  // d itself (NTT form, must outlive this): ModUp limbs inside the digit
        RnsPoly scaled;  // y_i = [d]_{q_i} (Q_j/q_i)^-1 mod q_i, coefficient form
    };
    Decomposed decompose(const RnsPoly& d, int threads) const;
    // Limb `limb` (of the Q_l * P basis, num_q = l+1, num_p = k) of ModUp(digit j), NTT form, into out[0..n).
    void mod_up_limb(const Decomposed& dec, std::size_t digit, std::size_t limb, u64* out) const;
    bool limb_in_digit(std::size_t limb, std::size_t num_q, std::size_t digit) const {
        return limb < num_q && limb / alpha_ == digit;
    }

    // --- automorphisms (evaluation form) ---
    // Permutation perm with (psi_g(a))[k] = a[perm[k]] in NTT (bit-reversed) order, for odd g < 2n.
    std::shared_ptr<const std::vector<std::uint32_t>> automorphism_permutation(u64 galois_elt) const;
    void automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, int threads) const;

private:
    // out = round(a / R) (+ addend, then permuted by perm) on the first `keep` q-limbs, R = the product of the
    // primes of src_limbs; out may be a.
    void divide_exact(const RnsPoly& a, const std::vector<std::size_t>& src_limbs, const BaseConverter& conv, const u64* inv,
                      const u64* inv_shoup, std::size_t keep, RnsPoly& out, int threads, const RnsPoly* addend = nullptr,
                      const std::uint32_t* perm = nullptr) const;
    void divide_round_by_last(RnsPoly& a, std::size_t keep, const u64* inv, const u64* inv_shoup, const u64* half_mod,
                              int threads, const std::int64_t* addend = nullptr) const;
    const BaseConverter& digit_converter(std::size_t digit, std::size_t num_q) const {
        return digit_conv_[digit * alpha_ + (std::min(num_q - digit * alpha_, alpha_) - 1)];
    }

    std::size_t n_;
    int log_n_;
    std::vector<u64> q_, p_;
    std::size_t alpha_;
    std::vector<arith::Modulus> mods_;
    std::vector<std::unique_ptr<arith::NttTables>> ntt_;
    // rescale: q_l^-1 mod q_i, Shoup; (q_l >> 1) mod q_i
    std::vector<std::vector<u64>> rescale_inv_, rescale_inv_shoup_, rescale_half_;
    // ModUp: converter from the first m primes of digit j to every prime, index j * alpha + (m - 1)
    std::vector<BaseConverter> digit_conv_;
    // ModDown: P -> all q; P^-1 mod q_i
    BaseConverter p_to_q_;
    std::vector<u64> p_inv_, p_inv_shoup_, p_mod_q_, p_mod_q_shoup_, p0_inv_, p0_inv_shoup_, p0_half_;
    // Fused ModDown + rescale at level l: (P, q_l) -> q_0..q_{l-1}; (P q_l)^-1 mod q_i
    std::vector<BaseConverter> pq_to_q_;
    std::vector<std::vector<u64>> pq_inv_, pq_inv_shoup_;
    // exponent table: NTT slot k evaluates at psi^{exp_[k]}; pos_[e] = k for odd e
    std::vector<std::uint32_t> exp_, pos_;
    mutable std::mutex perm_mutex_;
    mutable std::unordered_map<u64, std::shared_ptr<const std::vector<std::uint32_t>>> perm_cache_;
};

}  // namespace kasoku::rns
