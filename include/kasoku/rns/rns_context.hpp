// The RNS ring: the degree n, the ciphertext primes q_0..q_L and the special primes p_0..p_{k-1}, the split of the
// q-primes into key-switching digits, and the automorphism permutations. It describes the ring and holds no
// backend state: the tables a backend computes with (NTT roots, base-conversion constants) belong to the backend
// (backend.hpp). Immutable after construction; every method may be called from several threads at once.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/rns/slots.hpp"

namespace kasoku::rns {

using arith::u64;

using arith::signed_residue;  // v mod q for a small signed v (|v| < q)

// The most primes of a key-switching digit and the most special primes: a digit's source limbs and a conversion's
// overflow counts are read into fixed arrays (ModUp, the exact conversions of ModDown).
inline constexpr std::size_t kMaxDigitPrimes = 64;

class RnsContext {
public:
    // alpha: primes per key-switching digit (dnum = ceil(|q| / alpha)).
    // @throws ParameterError for no q-prime, alpha = 0, fewer special primes than alpha (when there are any), alpha or
    //     the special primes above kMaxDigitPrimes, repeated primes, or an n and q_0 that arith::NttTables refuses (n
    //     not a power of two >= 2, q_0 not a prime = 1 mod 2n below 2^kMaxModulusBits)
    RnsContext(std::size_t n, std::vector<u64> q, std::vector<u64> p, std::size_t alpha);

    std::size_t n() const { return n_; }
    int log_n() const { return log_n_; }
    std::size_t q_count() const { return q_.size(); }  // L + 1
    std::size_t p_count() const { return p_.size(); }  // k
    std::size_t alpha() const { return alpha_; }
    std::size_t dnum() const { return (q_.size() + alpha_ - 1) / alpha_; }
    // Number of digits a polynomial with num_q q-limbs splits into.
    std::size_t digits_at(std::size_t num_q) const { return (num_q + alpha_ - 1) / alpha_; }
    // First q-limb of digit j, and its number of limbs in a polynomial with num_q q-limbs.
    std::size_t digit_begin(std::size_t digit) const { return digit * alpha_; }
    std::size_t digit_size(std::size_t digit, std::size_t num_q) const {
        return std::min(alpha_, num_q - digit * alpha_);
    }

    // The special primes of a key that serves levels up to num_q - 1: the fewest first ones whose product is at least
    // every digit of Q_{num_q - 1} (each digit's ModUp error divided by them stays below ModDown's rounding, as with
    // all of P at the top), or all of them when no fewer are (a key for the top, or P smaller than a digit). Keys for
    // low levels then hold fewer limbs and their key switches extend to fewer primes.
    std::size_t special_for(std::size_t num_q) const;

    // Index into the combined prime list [q_0..q_L, p_0..p_{k-1}] of limb `i` of a polynomial with num_q q-limbs.
    std::size_t prime_index(std::size_t limb, std::size_t num_q) const {
        return limb < num_q ? limb : q_.size() + (limb - num_q);
    }
    const arith::Modulus& modulus(std::size_t idx) const { return mods_[idx]; }
    u64 prime(std::size_t idx) const { return mods_[idx].value; }
    const std::vector<u64>& q_primes() const { return q_; }
    const std::vector<u64>& p_primes() const { return p_; }

    // The residues of the integer v (|v| < 2^127) modulo every prime, indexed like the prime list.
    std::vector<u64> signed_residues(__int128 v) const;
    // Exact CRT of the first t q-limbs (host pointers to n residues each): out[c] = the centered integer
    // (|x| <= q_0...q_{t-1} / 2) with those residues, as a double. Decoding reads messages this way.
    // @throws InternalError for t outside 1..L + 1
    void compose_centered(const u64* const* limbs, std::size_t t, double* out) const;
    // The same centered integers (they must be below q_0...q_{t-1} / 2) lifted exactly to the first `to` q-primes:
    // out[i][c] = x_c mod q_i, for i < to (host pointers to n words each). An exact ModRaise from Q_{t-1} to Q_{to-1}.
    // @throws InternalError for t outside 1..L + 1 or to above L + 1
    void lift_centered(const u64* const* limbs, std::size_t t, std::size_t to, u64* const* out) const;

    // The canonical embedding's special FFT and its tables (made on first use).
    const SlotFft& slot_fft() const;

    // compose_centered's CRT constants for t limbs (1..L + 1), made on first use (decryption at a level reuses them;
    // a device backend uploads them): the words of crt::centered.
    struct CrtTable {
        std::vector<u64> Q, half;  // q_0 ... q_{t-1} and floor(Q / 2), t + 1 words each
        std::vector<u64> qhat;     // Q / q_i in t + 1 words, row i at i (t + 1)
        std::vector<u64> qhat_inv, qhat_inv_shoup;
    };
    std::shared_ptr<const CrtTable> crt_table(std::size_t t) const;

    // Permutation perm with (psi_g(a))[k] = a[perm[k]] in NTT (bit-reversed) order, for odd g < 2n; computed once per
    // element and cached.
    // @throws ParameterError for an even g or g >= 2n
    std::shared_ptr<const std::vector<std::uint32_t>> automorphism_permutation(u64 galois_elt) const;

private:
    std::size_t n_;
    int log_n_;
    std::vector<u64> q_, p_;
    std::size_t alpha_;
    std::vector<arith::Modulus> mods_;
    // exponent table: NTT slot k evaluates at psi^{exp_[k]}; pos_[e] = k for odd e
    std::vector<std::uint32_t> exp_, pos_;
    mutable std::mutex perm_mutex_;
    mutable std::unordered_map<u64, std::shared_ptr<const std::vector<std::uint32_t>>> perm_cache_;
    // Calls visit(c, negative, magnitude) with the centered integer of coefficient c of the first t limbs as a sign
    // and t + 1 little-endian words (compose_centered and lift_centered read it).
    template <class Visit>
    void for_each_centered(const u64* const* limbs, std::size_t t, const char* op, Visit&& visit) const;
    mutable std::once_flag slot_fft_once_;
    mutable std::unique_ptr<const SlotFft> slot_fft_;
    mutable std::mutex crt_mutex_;
    mutable std::unordered_map<std::size_t, std::shared_ptr<const CrtTable>> crt_cache_;
};

namespace crt {

// The most limbs a device composes (crt::centered's words: t + 1).
inline constexpr std::size_t kMaxWords = 12;

// The centered integer with residues r[0..t) (t limbs of primes q, the constants of RnsContext::crt_table(t); W = t + 1
// words): its magnitude into x (W words, little-endian; tmp: W words of scratch), and whether it is negative.
KASOKU_HD inline bool centered(const u64* r, std::size_t t, const u64* q, const u64* Q, const u64* half,
                               const u64* qhat, const u64* qhat_inv, const u64* qhat_inv_shoup, u64* x, u64* tmp) {
    const std::size_t W = t + 1;
    const auto geq = [W](const u64* a, const u64* b) {
        for (std::size_t k = W; k-- > 0;)
            if (a[k] != b[k]) return a[k] > b[k];
        return true;
    };
    const auto sub_in = [W](u64* a, const u64* b) {  // a -= b
        u64 borrow = 0;
        for (std::size_t k = 0; k < W; ++k) {
            const arith::u128 d = static_cast<arith::u128>(a[k]) - b[k] - borrow;
            a[k] = static_cast<u64>(d);
            borrow = static_cast<u64>(d >> 64) ? 1 : 0;
        }
    };
    for (std::size_t k = 0; k < W; ++k) x[k] = 0;
    for (std::size_t i = 0; i < t; ++i) {
        const u64 y = arith::mul_shoup(r[i], qhat_inv[i], qhat_inv_shoup[i], q[i]);
        arith::u128 carry = 0;
        for (std::size_t k = 0; k < W; ++k) {
            const arith::u128 p = static_cast<arith::u128>(qhat[i * W + k]) * y + x[k] + carry;
            x[k] = static_cast<u64>(p);
            carry = p >> 64;
        }
    }
    while (geq(x, Q)) sub_in(x, Q);
    if (!geq(x, half)) return false;
    for (std::size_t k = 0; k < W; ++k) tmp[k] = Q[k];
    sub_in(tmp, x);
    for (std::size_t k = 0; k < W; ++k) x[k] = tmp[k];
    return true;
}
// The centered integer (magnitude x of W words, and its sign) as a double, from its top word down.
KASOKU_HD inline double to_double(const u64* x, std::size_t W, bool negative) {
    double v = 0;
    for (std::size_t k = W; k-- > 0;) v = v * 18446744073709551616.0 + static_cast<double>(x[k]);
    return negative ? -v : v;
}

}  // namespace crt
}  // namespace kasoku::rns
