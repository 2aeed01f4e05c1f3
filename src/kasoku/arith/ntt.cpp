#include "kasoku/arith/ntt.hpp"

#include <string>

#include "kasoku/arith/primes.hpp"
#include "kasoku/arith/simd.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::arith {

namespace {
std::size_t bit_reverse(std::size_t x, int bits) {
    std::size_t r = 0;
    for (int i = 0; i < bits; ++i) r |= ((x >> i) & 1) << (bits - 1 - i);
    return r;
}
}  // namespace

NttTables::NttTables(u64 q, std::size_t n) : NttTables(q, n, 0) {}

NttTables NttTables::subring(std::size_t m) const {
    if (m < 2 || m > n_ || (m & (m - 1)) != 0)
        throw ParameterError("NttTables::subring: a power of two from 2 to " + std::to_string(n_) + ", got " +
                             std::to_string(m));
    return NttTables(mod_.value, m, pow_mod(psi_, n_ / m, mod_));
}

NttTables::NttTables(u64 q, std::size_t n, u64 psi) : n_(n), mod_(q) {
    if (n < 2 || (n & (n - 1)) != 0)
        throw ParameterError("NTT size must be a power of two >= 2, got " + std::to_string(n));
    if (mod_.bits > kMaxModulusBits)
        throw ParameterError("NTT modulus must be below 2^" + std::to_string(kMaxModulusBits));
    if ((q - 1) % (2 * n) != 0 || !is_prime(q)) throw ParameterError("NTT modulus must be a prime = 1 mod 2n");
    log_n_ = __builtin_ctzll(n);
    psi_ = psi != 0 ? psi : primitive_root_2n(q, n);
    const u64 psi_inv = inv_mod(psi_, mod_);
    roots_.assign(n, 0);
    roots_shoup_.assign(n, 0);
    inv_roots_.assign(n, 0);
    inv_roots_shoup_.assign(n, 0);
    u64 p = 1, pi = 1;
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t k = bit_reverse(i, log_n_);
        roots_[k] = p;
        inv_roots_[k] = pi;
        p = mul_mod(p, psi_, mod_);
        pi = mul_mod(pi, psi_inv, mod_);
    }
    for (std::size_t k = 0; k < n; ++k) {
        roots_shoup_[k] = shoup(roots_[k], q);
        inv_roots_shoup_[k] = shoup(inv_roots_[k], q);
    }
    n_inv_ = inv_mod(n % q, mod_);
    n_inv_shoup_ = shoup(n_inv_, q);
    if (n >= 16) {
        // The lane factors are the quotients of a stage's first twiddles by its first (Ntt.SmallStagesSplit checks
        // every product).
        for (int dir = 0; dir < 2; ++dir)
            for (int s = 0; s < 3; ++s) {
                const AlignedWords &r = dir == 0 ? roots_ : inv_roots_,
                                   &rp = dir == 0 ? roots_shoup_ : inv_roots_shoup_;
                const std::size_t gap = std::size_t{1} << s, m = n / (2 * gap), per = 8 / gap;
                AlignedWords* out = split_[dir][s];
                out[0].assign(n / 16, 0);
                out[1].assign(8, 0);
                out[2].assign(8, 0);
                const u64 first_inv = inv_mod(r[m], mod_);
                for (std::size_t j = 0; j < per; ++j) {
                    out[1][j] = mul_mod(r[m + j], first_inv, mod_);
                    out[2][j] = shoup(out[1][j], q);
                }
                for (std::size_t c = 0; c < n / 16; ++c) out[0][c] = rp[m + per * c];  // the block twiddles' own
            }
    }
}

NttTables::SplitStage NttTables::split_stage(std::size_t gap, bool inverse) const {
    if ((gap != 1 && gap != 2 && gap != 4) || n_ < 16)
        throw ParameterError("NttTables::split_stage: gap 1, 2 or 4 of a transform of at least 16 points, got gap " +
                             std::to_string(gap) + " at n = " + std::to_string(n_));
    const AlignedWords* s = split_[inverse ? 1 : 0][gap == 1 ? 0 : gap == 2 ? 1 : 2];
    return {s[0].data(), s[1].data(), s[2].data()};
}

void ntt_forward(u64* a, const NttTables& t) { active_kernels().ntt_forward(a, t); }
void ntt_inverse(u64* a, const NttTables& t) { active_kernels().ntt_inverse(a, t); }

void ntt_forward_prefix(u64* a, std::size_t m, const NttTables& t) {
    const u64 q = t.q();
    const u64* w = t.root_powers();
    const u64* wp = t.root_shoup();
    for (std::size_t blocks = 1, gap = m / 2; blocks < m; blocks *= 2, gap /= 2)
        for (std::size_t b = 0; b < blocks; ++b) {
            u64* x = a + 2 * b * gap;
            for (std::size_t j = 0; j < gap; ++j) {
                const u64 u = x[j], v = mul_shoup(x[j + gap], w[blocks + b], wp[blocks + b], q);
                x[j] = add_mod(u, v, q);
                x[j + gap] = sub_mod(u, v, q);
            }
        }
}

}  // namespace kasoku::arith
