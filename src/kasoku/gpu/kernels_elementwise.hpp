// The GPU backend's element-wise kernels (kernels.hpp says what a kernel is): runs of limbs, the tensor product, signed
// coefficients in, subring polynomials, the rounding division by the last limb's prime, sums of products and linear
// combinations.
#pragma once
#include "gpu/kernel_params.hpp"
#include "kasoku/rns/sampling.hpp"

namespace kasoku::gpu::kern {

// ---------------------------------------------------------------- element-wise over runs of limbs

enum class Op : u32 {
    add,            // a + b
    sub,            // a - b
    neg,            // -a
    mul,            // a * b
    fma,            // a * b + c (one reduction)
    mul_const,      // a * k_l (Shoup)
    add_const,      // a + k_l
    add_mul_const,  // a + b * k_l (Shoup): x + P d of key switching
    copy,           // a
    fill,           // 0
    permute,        // a[l][perm[k]] (an automorphism in NTT form)
};

// `limbs` limbs of n words at out (a, b, c alike), over the primes from `prime` on. Constants per limb: from the
// device tables k, kp (offset to the item's first limb) or, when k is null, from the launch's pool at `pool`.
struct EwItem {
    u64* out;
    const u64* a;
    const u64* b;
    const u64* c;
    const u64* k;
    const u64* kp;
    const u32* perm;
    u32 prime, limbs, pool, pad;
};
struct EwShared {
    Ring r;
    u64 pool[128];  // per-call constants: (value, Shoup) pairs
};

template <Op op>
struct Ewise {
    using Shared = EwShared;
    using Item = EwItem;
    static constexpr const char* kName = op == Op::add             ? "add"
                                         : op == Op::sub           ? "sub"
                                         : op == Op::neg           ? "negate"
                                         : op == Op::mul           ? "mul"
                                         : op == Op::fma           ? "fma"
                                         : op == Op::mul_const     ? "mul_const"
                                         : op == Op::add_const     ? "add_const"
                                         : op == Op::add_mul_const ? "add_mul_const"
                                         : op == Op::copy          ? "copy"
                                         : op == Op::fill          ? "fill"
                                                                   : "permute";
    static KASOKU_HD std::size_t words(const Shared& s, const Item& it) {
        return static_cast<std::size_t>(it.limbs) * s.r.n;
    }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t w) {
        const std::size_t l = w / s.r.n;
        if constexpr (op == Op::copy) {
            it.out[w] = it.a[w];
            return;
        } else if constexpr (op == Op::fill) {
            it.out[w] = 0;
            return;
        } else if constexpr (op == Op::permute) {
            it.out[w] = it.a[l * s.r.n + it.perm[w % s.r.n]];
            return;
        }
        const u32 p = it.prime + static_cast<u32>(l);
        const u64 q = s.r.q[p];
        if constexpr (op == Op::add) it.out[w] = arith::add_mod(it.a[w], it.b[w], q);
        else if constexpr (op == Op::sub) it.out[w] = arith::sub_mod(it.a[w], it.b[w], q);
        else if constexpr (op == Op::neg) it.out[w] = arith::neg_mod(it.a[w], q);
        else if constexpr (op == Op::mul) it.out[w] = arith::mul_mod(it.a[w], it.b[w], s.r.m[p]);
        else if constexpr (op == Op::fma)
            it.out[w] = arith::reduce_128(static_cast<u128>(it.a[w]) * it.b[w] + it.c[w], s.r.m[p]);
        else {
            const u64 k = it.k ? it.k[l] : s.pool[it.pool + 2 * l], kp = it.k ? it.kp[l] : s.pool[it.pool + 2 * l + 1];
            if constexpr (op == Op::mul_const) it.out[w] = arith::mul_shoup(it.a[w], k, kp, q);
            else if constexpr (op == Op::add_const) it.out[w] = arith::add_mod(it.a[w], k, q);
            else it.out[w] = arith::add_mod(it.a[w], arith::mul_shoup(it.b[w], k, kp, q), q);
        }
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        const std::size_t w = words(s, it);
        constexpr std::size_t operands = op == Op::fill  ? 0
                                         : op == Op::fma ? 3
                                         : (op == Op::add || op == Op::sub || op == Op::mul || op == Op::add_mul_const)
                                             ? 2
                                             : 1;
        bytes += 8 * w * (operands + 1) + (op == Op::permute ? 4 * s.r.n : 0);
        mults += op == Op::mul                                      ? 3 * w
                 : op == Op::fma                                    ? 4 * w
                 : (op == Op::mul_const || op == Op::add_mul_const) ? 2 * w
                                                                    : 0;
    }
};

// The tensor product of two ciphertexts, a run of limbs of each part: d0 = a0 b0, d1 = a0 b1 + a1 b0 (one reduction
// of a1 b0 + [a0 b1], as the CPU backend's fma), d2 = a1 b1, each operand word read once.
struct TnItem {
    u64* d0;
    u64* d1;
    u64* d2;
    const u64* a0;
    const u64* a1;
    const u64* b0;
    const u64* b1;
    u32 prime, limbs;
};
struct Tensor {
    using Shared = RingOnly;
    using Item = TnItem;
    static constexpr const char* kName = "tensor";
    static KASOKU_HD std::size_t words(const Shared& s, const Item& it) {
        return static_cast<std::size_t>(it.limbs) * s.r.n;
    }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t w) {
        const Modulus& m = s.r.m[it.prime + w / s.r.n];
        const u64 a0 = it.a0[w], a1 = it.a1[w], b0 = it.b0[w], b1 = it.b1[w];
        it.d0[w] = arith::mul_mod(a0, b0, m);
        it.d1[w] = arith::reduce_128(static_cast<u128>(a1) * b0 + arith::mul_mod(a0, b1, m), m);
        it.d2[w] = arith::mul_mod(a1, b1, m);
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        bytes += 56 * words(s, it);
        mults += 10 * words(s, it);
    }
};

// ---------------------------------------------------------------- signed integer coefficients

// The residues of n signed coefficients (64-bit words, or 128-bit as (low, high) word pairs when `wide`) in a run of
// limbs: out[l][c] = coeffs[c] mod q_(prime + l), coefficient form (the CPU backend's from_signed: ModRaise,
// encapsulation, encryption). The coefficients are uploaded once and read by every limb. `centered`: the coefficients
// are residues mod q_0 on the device (a limb in coefficient form), read as their centered values in
// (-q_0 / 2, q_0 / 2] (Backend::raise_q0: ModRaise without a trip through the host).
struct FsItem {
    u64* out;
    u32 prime, limbs;
};
struct FsShared {
    Ring r;
    const u64* coeffs;
    u32 wide, centered;
};
struct FromSigned {
    using Shared = FsShared;
    using Item = FsItem;
    static constexpr const char* kName = "from_signed";
    static KASOKU_HD std::size_t words(const Shared& s, const Item& it) {
        return static_cast<std::size_t>(it.limbs) * s.r.n;
    }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t w) {
        const std::size_t c = w % s.r.n;
        const Modulus& m = s.r.m[it.prime + w / s.r.n];
        if (s.centered) {
            const u64 v = s.coeffs[c], q0 = s.r.m[0].value;
            it.out[w] =
                arith::reduce_signed(static_cast<__int128>(v) - (v > q0 / 2 ? static_cast<__int128>(q0) : 0), m);
        } else if (s.wide) {
            const auto v = static_cast<__int128>((static_cast<u128>(s.coeffs[2 * c + 1]) << 64) | s.coeffs[2 * c]);
            it.out[w] = arith::reduce_signed(v, m);
        } else {
            it.out[w] = arith::signed_residue(static_cast<std::int64_t>(s.coeffs[c]), m.value);
        }
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        const std::size_t w = words(s, it);
        bytes += 8 * w + 8 * s.r.n * (s.wide ? 2 : 1);  // the coefficients once (the cache serves the other limbs)
        mults += s.wide || s.centered ? 4 * w : 0;
    }
};

// ---------------------------------------------------------------- small polynomials drawn from a seed

// The draw of rns/sampling.hpp, one ChaCha20 block of the stream per index b (its per_block coefficients from
// b * per_block on): their residues over a run of limbs (coefficient form), or, for limbs = 0, the signed coefficients
// themselves, one word each (RoundLast's addend).
struct SmItem {
    u64* out;
    u32 prime, limbs;
};
struct SmShared {
    Ring r;
    rns::draw::Key key;
    u32 kind;
    u64 cdf[rns::kGaussianBound];
};
struct Sample {
    using Shared = SmShared;
    using Item = SmItem;
    static constexpr const char* kName = "sample";
    static KASOKU_HD rns::SmallDraw::Kind kind(const Shared& s) { return static_cast<rns::SmallDraw::Kind>(s.kind); }
    static KASOKU_HD std::size_t words(const Shared& s, const Item&) { return s.r.n / rns::draw::per_block(kind(s)); }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t b) {
        u32 block[16];
        rns::draw::chacha20_block(s.key, static_cast<u32>(b), block);
        std::int64_t c[8];
        rns::draw::coefficients(kind(s), block, s.cdf, c);
        const std::size_t per = rns::draw::per_block(kind(s)), first = b * per;
        if (it.limbs == 0) {
            for (std::size_t j = 0; j < per; ++j) it.out[first + j] = static_cast<u64>(c[j]);
            return;
        }
        for (u32 l = 0; l < it.limbs; ++l) {
            const u64 q = s.r.q[it.prime + l];
            for (std::size_t j = 0; j < per; ++j) it.out[l * s.r.n + first + j] = arith::signed_residue(c[j], q);
        }
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t&) {
        bytes += 8 * s.r.n * (it.limbs ? it.limbs : 1);
    }
};

// ---------------------------------------------------------------- subring polynomials

// Every 2^shift-th word of a run of limbs (Backend::to_subring): out[w] = a[w << shift] over limbs * (n >> shift)
// words.
struct SubItem {
    u64* out;
    const u64* a;
    u32 limbs, pad;
};
struct SubShared {
    Ring r;
    u32 shift, pad;
};
struct Subring {
    using Shared = SubShared;
    using Item = SubItem;
    static constexpr const char* kName = "to_subring";
    static KASOKU_HD std::size_t words(const Shared& s, const Item& it) {
        return static_cast<std::size_t>(it.limbs) * (s.r.n >> s.shift);
    }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t w) { it.out[w] = it.a[w << s.shift]; }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t&) {
        bytes += 16 * words(s, it);
    }
};

// ---------------------------------------------------------------- rounding division by the last limb's prime

// Rescaling and the division by p_0 of encryption: `last` is that limb in coefficient form; for coefficient c the
// rounded value x = last[c] (+ addend[c]) + r/2 mod r is formed once and each of the `keep` correction limbs written
// (coefficient form): t_l = (x mod q_l) - (r/2 mod q_l) (- addend[c] mod q_l) (the CPU backend's divide_round_by_last).
struct RlItem {
    const u64* last;
    const std::int64_t* addend;
    u64* t;
    const u64* half;  // (r >> 1) mod q_l per kept limb
    u64 r;
    u32 keep, pad;
};
struct RoundLast {
    using Shared = RingOnly;
    using Item = RlItem;
    static constexpr const char* kName = "round_last";
    static KASOKU_HD std::size_t words(const Shared& s, const Item&) { return s.r.n; }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t c) {
        u64 x = it.last[c];
        if (it.addend) x = arith::add_mod(x, arith::signed_residue(it.addend[c], it.r), it.r);
        x = arith::add_mod(x, it.r >> 1, it.r);
        for (u32 l = 0; l < it.keep; ++l) {
            const Modulus& m = s.r.m[l];
            u64 t = arith::sub_mod(arith::reduce_64(x, m), it.half[l], m.value);
            if (it.addend) t = arith::sub_mod(t, arith::signed_residue(it.addend[c], m.value), m.value);
            it.t[l * s.r.n + c] = t;
        }
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        bytes += 8 * s.r.n * (1 + it.keep + (it.addend ? 1 : 0));
        mults += 3 * s.r.n * it.keep;
    }
};

// ---------------------------------------------------------------- sums of products

// out (limbs x n, primes from `prime`) = sum_i x_i * y_i (+ out when accumulating), terms beyond one launch's share
// accumulated by further launches. (Plaintext sums of key switching and linear transforms.)
inline constexpr u32 kSumTerms = 16;
struct SpItem {
    u64* out;
    const u64* x[kSumTerms];
    const u64* y[kSumTerms];
    u32 prime, limbs;
};
struct SpShared {
    Ring r;
    u32 terms, accumulate;
    u32 yshift[kSumTerms];  // log2 of the blocks of a subring plaintext (0: n words per limb)
};
struct SumProducts {
    using Shared = SpShared;
    using Item = SpItem;
    static constexpr const char* kName = "sum_of_products";
    static KASOKU_HD std::size_t words(const Shared& s, const Item& it) {
        return static_cast<std::size_t>(it.limbs) * s.r.n;
    }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t w) {
        const Modulus& m = s.r.m[it.prime + w / s.r.n];
        u128 acc = s.accumulate ? it.out[w] : 0;
        for (u32 i = 0; i < s.terms; ++i)  // 16 products + 2^64: fits
            acc += static_cast<u128>(it.x[i][w]) * it.y[i][w >> s.yshift[i]];
        it.out[w] = arith::reduce_128(acc, m);
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        const std::size_t w = words(s, it);
        bytes += 8 * w * (s.terms + (s.accumulate ? 2 : 1));
        for (u32 i = 0; i < s.terms; ++i) bytes += 8 * (w >> s.yshift[i]);
        mults += w * (s.terms + 3);
    }
};

// out (q-limbs from 0) = sum_t x_t * f[t limbs + l] (+ out when accumulating): constants per term and limb in the pool
// (base conversion's dot product; linear_combination of the seam).
inline constexpr u32 kLcTerms = 32;
struct LcItem {
    u64* out;
    u32 limbs, pad;
};
struct LcShared {
    Ring r;
    u32 terms, accumulate;
    const u64* x[kLcTerms];
    u64 f[512];
};
struct LinearCombination {
    using Shared = LcShared;
    using Item = LcItem;
    static constexpr const char* kName = "linear_combination";
    static KASOKU_HD std::size_t words(const Shared& s, const Item& it) {
        return static_cast<std::size_t>(it.limbs) * s.r.n;
    }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t w) {
        const std::size_t l = w / s.r.n;
        const u64 v = body::linear_combination(s.x, s.f, s.terms, it.limbs, s.r.m, s.r.n, w);
        it.out[w] = s.accumulate ? arith::add_mod(it.out[w], v, s.r.m[l].value) : v;
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        const std::size_t w = words(s, it);
        bytes += 8 * w * (s.terms + (s.accumulate ? 2 : 1));
        mults += w * (s.terms + 3 * ((s.terms + 31) / 32));
    }
};

}  // namespace kasoku::gpu::kern
