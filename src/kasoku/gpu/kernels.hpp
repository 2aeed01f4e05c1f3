// The GPU backend's kernels (Takao et al., issue "GPU kernels shaped for an H100"), each a struct K of:
//   K::Shared  what every item of a launch shares (the ring's tables, per-call constants);
//   K::Item    one unit of work (a run of limbs of one polynomial, one digit, one inner product ...);
//   K::word(s, item, w)  for word w < K::words(s, item) of an item (item kernels), or
//   K::phase(s, item, block, thread, p, smem) for the blocks and phases of a block kernel (the NTT), whose phases are
//   separated by a barrier and share `smem` (K::kSmemWords words);
//   K::cost(s, item)     the bytes it reads and writes and its 64-bit multiplications (counters.hpp).
// A launch runs one kernel over a list of items, so that the limbs of several polynomials, or the same step of every
// operation of a batch, go in one launch. kernels.cu runs them on a CUDA device (items on the grid's y axis, words or
// blocks on x, the Params as a __grid_constant__ argument); launch_host.cpp runs the very same functions as CPU loops,
// block by block, phase by phase, thread by thread, with the same shared-memory layout (the emulated backend, the
// tests). Everything is computed with arith's modular arithmetic in the CPU backend's order, so the results are the
// CPU backend's bits (tests/cpp/gpu). Nothing here allocates, checks or throws.
#pragma once
#include <cstddef>
#include <cstdint>

#include "gpu/bodies.hpp"
#include "kasoku/arith/modarith.hpp"

namespace kasoku::gpu::kern {

using arith::Modulus;
using arith::u128;
using arith::u64;
using u32 = std::uint32_t;

// A launch's arguments: what its items share, and its items (at most Cap), passed by value. Three sizes, so that a
// single operation's launch carries a few hundred bytes and a batch's up to kParamBytes (CUDA's kernel argument space
// is 32,764 bytes on sm_70 and later since CUDA 12.1).
inline constexpr std::size_t kParamBytes = 30 * 1024;
template <class K, int Cap>
struct Params {
    typename K::Shared s;
    u32 count;
    typename K::Item items[Cap];
};
template <class K>
inline constexpr int kLargeCap = static_cast<int>((kParamBytes - sizeof(typename K::Shared) - 8) /
                                                  sizeof(typename K::Item));
inline constexpr int kSmallCap = 4, kMediumCap = 24;

// The ring's tables in device memory (gpu_backend.cpp uploads them once), by prime index: q_0.., then p_0...
struct Ring {
    const u64* q;
    const Modulus* m;
    const u64* fw;  // forward roots and their Shoup constants, n per prime (arith's bit-reversed order)
    const u64* fwp;
    const u64* iw;  // inverse roots
    const u64* iwp;
    const u64* ninv;  // n^-1 and its Shoup constant per prime
    const u64* ninvp;
    u32 n, log_n;
    u32 first_special;  // prime index of p_0 (the number of q-primes)
};

// What the items of a kernel share when it is the ring's tables alone.
struct RingOnly {
    Ring r;
};

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

// ---------------------------------------------------------------- the NTT in passes over shared memory

// The negacyclic NTT of arith (radix 2, roots in bit-reversed order, the scalar body's lazy ranges) of each limb in
// one (n <= 4096) or two passes: stages [0, split) and [split, log n) in forward numbering (stage s has 2^s butterfly
// blocks of gap n / 2^(s+1)). The stages of a pass touch the words whose indices differ in the bits [log n - s1,
// log n - s0) only: "groups" of 2^(s1 - s0) words, columns of stride n / 2^s1 in the first pass, contiguous chunks in
// the second. A block loads G groups into shared memory (one tile, coalesced: consecutive columns, or consecutive
// chunks), runs its stages there with a barrier between stages, and stores the tile. Inverse transforms run the
// stages in the opposite order (the chunk pass first). Between passes the words keep the lazy ranges of the stage-by-
// stage transform, so every butterfly sees the inputs it sees there: the same bits.
inline constexpr u32 kNttThreads = 256;
inline constexpr u32 kNttTile = 4096;  // words of shared memory per block (32 KB)

inline constexpr u32 kLogNttTile = 12;
static_assert(kNttTile == 1u << kLogNttTile);
// Every count of a pass is a power of two: the kernel indexes with shifts and masks (a division by a value known only
// at run time is a loop of tens of instructions on the device; the NTT is bound by its instructions).
struct NttPass {
    u32 s0, s1;  // stages [s0, s1)
    u32 groups;  // per block (G)
    u32 log_groups;
};
KASOKU_HD inline NttPass ntt_pass(u32 log_n, bool forward, int pass, int passes) {
    if (passes == 1) return {0, log_n, 1, 0};
    const u32 split = log_n / 2;
    const bool columns = (pass == 0) == forward;  // forward: columns first; inverse: chunks first
    return columns ? NttPass{0, split, kNttTile >> split, kLogNttTile - split}
                   : NttPass{split, log_n, kNttTile >> (log_n - split), kLogNttTile - (log_n - split)};
}
KASOKU_HD inline int ntt_passes(u32 log_n) { return log_n <= 12 ? 1 : 2; }

// The limb index of tile word w of block b of a pass (the tile is the identity of the global order within a block).
KASOKU_HD inline std::size_t ntt_index(u32 log_n, const NttPass& p, std::size_t b, u32 w) {
    const u32 k = p.s1 - p.s0;
    if (p.s1 < log_n)  // columns: tile word w = t G + g holds x = t n/2^s1 + (b G + g)
        return (static_cast<std::size_t>(w >> p.log_groups) << (log_n - p.s1)) + (b << p.log_groups) +
               (w & (p.groups - 1));
    return (b << (p.log_groups + k)) + w;  // chunks: contiguous
}

// Butterfly u < 2^(s1 - s0) G / 2 of stage s_idx of a pass, on the tile of block b of a limb of prime `prime`; the
// two tile words it wrote.
struct TilePair {
    u32 i0, i1;
};
template <bool Forward>
KASOKU_HD inline TilePair ntt_butterfly(const Ring& r, const NttPass& p, u32 s_idx, u32 prime, std::size_t b, u32 u,
                                        u64* tile) {
    const u32 k = p.s1 - p.s0, log_h = p.s1 - s_idx - 1, h = 1u << log_h;  // butterfly gap in group units
    const bool columns = p.s1 < r.log_n;
    const u32 g = columns ? u & (p.groups - 1) : u >> (k - 1);
    const u32 tb = columns ? u >> p.log_groups : u & ((1u << (k - 1)) - 1);
    const u32 t = ((tb >> log_h) << (log_h + 1)) + (tb & (h - 1));
    const u32 i0 = columns ? (t << p.log_groups) + g : (g << k) + t, i1 = columns ? i0 + (h << p.log_groups) : i0 + h;
    const std::size_t x = ntt_index(r.log_n, p, b, i0);
    const std::size_t tw = (std::size_t{1} << s_idx) + (x >> (r.log_n - s_idx)),
                      at = static_cast<std::size_t>(prime) * r.n + tw;
    if (Forward) body::ntt_forward_pair(tile[i0], tile[i1], r.fw[at], r.fwp[at], r.q[prime]);
    else body::ntt_inverse_pair(tile[i0], tile[i1], r.iw[at], r.iwp[at], r.q[prime]);
    return {i0, i1};
}

// The end of a forward transform: a word of its lazy range [0, 4q) to [0, q).
KASOKU_HD inline u64 ntt_forward_final(u64 v, u64 q) {
    if (v >= 2 * q) v -= 2 * q;
    if (v >= q) v -= q;
    return v;
}
// The exact division of ModDown and rescaling on a word: (x - t) inv (Shoup), t the correction as the forward
// transform leaves it (the CPU backend's divide_exact).
KASOKU_HD inline u64 divide_word(u64 x, u64 t, u64 inv, u64 invp, u64 q) {
    return arith::mul_shoup(arith::sub_mod(x, ntt_forward_final(t, q), q), inv, invp, q);
}

// The prime of limb t of a polynomial over Q_l * P (nq q-limbs, then the special ones).
KASOKU_HD inline u32 limb_prime(const Ring& r, u32 nq, u32 t) { return t < nq ? t : r.first_special + (t - nq); }

// One limb run: src -> dst (the same words for an in-place transform; each pass reads its input and writes its
// output). On the last pass of a forward transform, with a != null: the exact-division epilogue of ModDown and
// rescaling, dst[l][perm_inv ? perm_inv[x] : x] = (a[l][x] - t) * inv[l] (+ add[l][x]) for the transformed t (the CPU
// backend's divide_exact). On the last pass of an inverse transform: times sc[l] (Shoup scp[l]) instead of n^-1 when
// sc is given (n^-1 times the next step's constant, folded).
struct NtItem {
    const u64* src;
    u64* dst;
    const u64* a;
    const u64* add;
    const u64* inv;
    const u64* invp;
    const u32* perm_inv;
    const u64* sc;
    const u64* scp;
    u32 prime, limbs;
};
struct NtShared {
    Ring r;
    u32 pass, passes;
};

template <bool Forward>
struct Ntt {
    using Shared = NtShared;
    using Item = NtItem;
    static constexpr const char* kName = Forward ? "ntt_forward" : "ntt_inverse";
    static constexpr u32 kThreads = kNttThreads;
    static constexpr u32 kSmemWords = kNttTile;

    static KASOKU_HD NttPass pass_of(const Shared& s) {
        return ntt_pass(s.r.log_n, Forward, static_cast<int>(s.pass), static_cast<int>(s.passes));
    }
    // Blocks of an item: limbs x (groups per limb / groups per block).
    static KASOKU_HD std::size_t blocks(const Shared& s, const Item& it) {
        const NttPass p = pass_of(s);
        return static_cast<std::size_t>(it.limbs) * ((s.r.n >> (p.s1 - p.s0)) / p.groups);
    }
    static KASOKU_HD u32 phases(const Shared& s) {
        const NttPass p = pass_of(s);
        return p.s1 - p.s0 + 2;  // load, the stages, store
    }
    static KASOKU_HD void phase(const Shared& s, const Item& it, std::size_t block, u32 thread, u32 ph, u64* tile) {
        const NttPass p = pass_of(s);
        const u32 k = p.s1 - p.s0, W = p.groups << k;
        const u32 log_per_limb = s.r.log_n - k - p.log_groups;  // blocks per limb: n / 2^k / G
        const std::size_t l = block >> log_per_limb, b = block & ((std::size_t{1} << log_per_limb) - 1);
        const u32 prime = it.prime + static_cast<u32>(l);
        const u64 q = s.r.q[prime];
        const std::size_t base = l * s.r.n;
        const bool last = s.pass + 1 == s.passes;
        if (ph == 0) {  // load
            for (u32 w = thread; w < W; w += kThreads) tile[w] = it.src[base + ntt_index(s.r.log_n, p, b, w)];
            return;
        }
        if (ph == k + 1) {  // store
            for (u32 w = thread; w < W; w += kThreads) {
                const std::size_t x = ntt_index(s.r.log_n, p, b, w);
                u64 v = tile[w];
                if (!last) {
                    it.dst[base + x] = v;
                } else if (Forward) {
                    if (!it.a) {
                        it.dst[base + x] = ntt_forward_final(v, q);
                    } else {
                        u64 r = divide_word(it.a[base + x], v, it.inv[l], it.invp[l], q);
                        if (it.add) r = arith::add_mod(r, it.add[base + x], q);
                        it.dst[base + (it.perm_inv ? it.perm_inv[x] : x)] = r;
                    }
                } else {
                    it.dst[base + x] = it.sc ? arith::mul_shoup(v, it.sc[l], it.scp[l], q)
                                             : arith::mul_shoup(v, s.r.ninv[prime], s.r.ninvp[prime], q);
                }
            }
            return;
        }
        // stage ph - 1 of the pass, in the transform's order
        const u32 s_idx = Forward ? p.s0 + ph - 1 : p.s1 - ph;
        for (u32 u = thread; u < W / 2; u += kThreads) ntt_butterfly<Forward>(s.r, p, s_idx, prime, b, u, tile);
    }
    // The roots (and Shoup constants) of this pass's stages, read once per prime of a launch (limbs of one prime share
    // them through the cache).
    static KASOKU_HD std::size_t table_bytes(const Shared& s) {
        const NttPass p = pass_of(s);
        return 16 * ((std::size_t{1} << p.s1) - (std::size_t{1} << p.s0));
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        const NttPass p = pass_of(s);
        const std::size_t w = static_cast<std::size_t>(it.limbs) * s.r.n, k = p.s1 - p.s0;
        const bool last = s.pass + 1 == s.passes;
        bytes += 16 * w;  // each word in and out (the roots: table_bytes)
        if (last && Forward && it.a) bytes += 8 * w * (it.add ? 2 : 1) + (it.perm_inv ? 4 * s.r.n : 0);
        mults += w / 2 * k * 2 + (last && (!Forward || it.a) ? 2 * w : 0);
    }
};

// ---------------------------------------------------------------- base conversions

// ModUp of one digit (approximate conversion, rns::BaseConverter): y holds its s scaled source limbs in coefficient
// form; for coefficient c, each thread reads the s source words once and writes every target limb of the digit's
// extension over Q_l * P (dst: nq + np limbs; the digit's own limbs [begin, begin + s) are copied from `own`, d in NTT
// form). f: the digit converter's factors, f[prime * s + i] for the target of prime index `prime`.
struct CuItem {
    const u64* y;
    const u64* own;
    u64* dst;
    const u64* f;
    u32 s, begin;
};
struct CuShared {
    Ring r;
    u32 nq, np;
};
inline constexpr u32 kMaxCached = 16;  // source words kept in registers (more: read again per target)

// sum_i y_i f[i] mod m over s source words of coefficient c (the first `cached` in registers), reduced every 32
// products as rns::BaseConverter's scalar body.
KASOKU_HD inline u64 convert_sum(const u64* cache, u32 cached, const u64* y, std::size_t n, std::size_t c, u32 s,
                                 const u64* f, const Modulus& m) {
    u64 r = 0;
    for (u32 i0 = 0; i0 < s; i0 += 32) {
        u128 acc = 0;
        for (u32 i = i0; i < s && i < i0 + 32; ++i)
            acc += static_cast<u128>(i < cached ? cache[i] : y[i * n + c]) * f[i];
        r = arith::add_mod(r, arith::reduce_128(acc, m), m.value);
    }
    return r;
}

struct ConvertUp {
    using Shared = CuShared;
    using Item = CuItem;
    static constexpr const char* kName = "convert_up";
    static KASOKU_HD std::size_t words(const Shared& s, const Item&) { return s.r.n; }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t c) {
        const std::size_t n = s.r.n;
        u64 y[kMaxCached];
        const u32 cached = it.s < kMaxCached ? it.s : kMaxCached;
        for (u32 i = 0; i < cached; ++i) y[i] = it.y[i * n + c];
        for (u32 i = 0; i < it.s; ++i) it.dst[(it.begin + i) * n + c] = it.own[i * n + c];
        for (u32 t = 0; t < s.nq + s.np; ++t) {
            if (t >= it.begin && t < it.begin + it.s) continue;
            const u32 prime = limb_prime(s.r, s.nq, t);
            it.dst[t * n + c] =
                convert_sum(y, cached, it.y, n, c, it.s, it.f + static_cast<std::size_t>(prime) * it.s, s.r.m[prime]);
        }
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        const std::size_t n = s.r.n, targets = s.nq + s.np - it.s;
        bytes += 8 * n * (it.s + it.s + targets + it.s);  // sources, own limbs in and out, targets
        mults += n * targets * (it.s + 3 * ((it.s + 31) / 32));
    }
};

// The exact conversion of ModDown and rescaling (rns::BaseConverter with its overflow correction): for coefficient c,
// the s scaled source words are read once, their overflow count v computed in double precision in the CPU's order
// (kernels.cu is compiled without FMA contraction), and each of the `keep` target q-limbs written (coefficient form):
// sum_i y_i f[t s + i] - v Q mod q_t (qv[t (s + 1) + v]).
struct CdItem {
    const u64* y;
    u64* dst;
    const u64* f;
    const u64* qv;
    const double* inv_q;
    u32 s, keep;
};
struct ConvertDown {
    using Shared = RingOnly;
    using Item = CdItem;
    static constexpr const char* kName = "convert_down";
    static KASOKU_HD std::size_t words(const Shared& s, const Item&) { return s.r.n; }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t c) {
        const std::size_t n = s.r.n;
        const std::uint8_t v = body::overflow_count(it.y, it.s, n, it.inv_q, c);
        u64 y[kMaxCached];
        const u32 cached = it.s < kMaxCached ? it.s : kMaxCached;
        for (u32 i = 0; i < cached; ++i) y[i] = it.y[i * n + c];
        for (u32 t = 0; t < it.keep; ++t) {
            const Modulus& m = s.r.m[t];
            const u64 r = convert_sum(y, cached, it.y, n, c, it.s, it.f + static_cast<std::size_t>(t) * it.s, m);
            it.dst[t * n + c] = arith::sub_mod(r, it.qv[static_cast<std::size_t>(t) * (it.s + 1) + v], m.value);
        }
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        bytes += 8 * s.r.n * (it.s + it.keep);
        mults += s.r.n * it.keep * (it.s + 3 * ((it.s + 31) / 32));
    }
};

// ---------------------------------------------------------------- base conversions fused with their transforms

// A conversion between the two passes of its transforms: its sources arrive after the inverse transform's chunk pass
// and leave, converted, before the forward transform's chunk pass, so that the inverse's column pass, the conversion
// and the forward's column pass make one pass over memory. A block holds one column tile of kFuseTile words of every
// source limb (G = kFuseTile / 2^split columns, the column pass of ntt_pass on a smaller tile), runs the inverse
// stages on them and scales them, then converts into up to kFuseTiles - s target tiles at a time, runs the forward
// stages on those and stores them. The words are the separate kernels' (Ntt, ConvertUp, ConvertDown): the same bits.
inline constexpr u32 kFuseTile = 512;
inline constexpr u32 kLogFuseTile = 9;
inline constexpr u32 kFuseTiles = 12;  // 48 KB of shared memory a block: the static limit
static_assert(kFuseTile == 1u << kLogFuseTile);

KASOKU_HD inline NttPass fused_columns(u32 log_n) {
    const u32 split = log_n / 2;
    return {0, split, kFuseTile >> split, kLogFuseTile - split};
}
// Whether a conversion from s sources fuses: a two-pass transform whose columns fit a tile, and the sources with one
// target in shared memory.
KASOKU_HD inline bool conversion_fuses(u32 log_n, u32 s) {
    return ntt_passes(log_n) == 2 && log_n / 2 <= kLogFuseTile && s + 1 <= kFuseTiles;
}
// Rounds of targets a block converts, kFuseTiles - s at a time.
KASOKU_HD inline u32 fused_rounds(u32 s, u32 targets) { return (targets + (kFuseTiles - s) - 1) / (kFuseTiles - s); }

// The phases every fused conversion shares. Phase 0 loads (load(i, w, x): source limb i's word x into tile word w);
// phases 1..k run the inverse stages on the s source tiles, the last one times scale[i] (Shoup); then, per round, the
// targets of the round (target(j, w) computes target j's tile word w from the sources' words in shared memory), the
// forward stages on them, and their store (store(j, x, v): target j's word x).
template <class Load, class Prime, class Target, class TargetPrime, class Store>
KASOKU_HD inline void fused_conversion_phase(const Ring& r, u32 s, u32 targets, const u64* sc, const u64* scp,
                                             std::size_t b, u32 thread, u32 ph, u64* smem, Load load,
                                             Prime source_prime, Target target, TargetPrime target_prime, Store store) {
    const NttPass p = fused_columns(r.log_n);
    const u32 k = p.s1, T = kFuseTile, m = kFuseTiles - s, threads = kNttThreads;
    if (ph == 0) {
        for (u32 u = thread; u < s * T; u += threads) load(u / T, u % T, ntt_index(r.log_n, p, b, u % T));
        return;
    }
    if (ph <= k) {  // inverse stage k - ph; the last (stage 0) scales the words its butterflies wrote
        const u32 s_idx = k - ph;
        for (u32 u = thread; u < s * T / 2; u += threads) {
            const u32 i = u / (T / 2), v = u % (T / 2), prime = source_prime(i);
            u64* tile = smem + static_cast<std::size_t>(i) * T;
            const TilePair x = ntt_butterfly<false>(r, p, s_idx, prime, b, v, tile);
            if (s_idx == 0) {
                const u64 q = r.q[prime];
                tile[x.i0] = arith::mul_shoup(tile[x.i0], sc[i], scp[i], q);
                tile[x.i1] = arith::mul_shoup(tile[x.i1], sc[i], scp[i], q);
            }
        }
        return;
    }
    const u32 round = (ph - k - 1) / (k + 2), sub = (ph - k - 1) % (k + 2), first = round * m;
    const u32 count = first >= targets ? 0 : (targets - first < m ? targets - first : m);
    u64* out = smem + static_cast<std::size_t>(s) * T;
    if (sub == 0) {
        for (u32 u = thread; u < count * T; u += threads) out[u] = target(first + u / T, u % T);
    } else if (sub <= k) {
        for (u32 u = thread; u < count * T / 2; u += threads) {
            const u32 j = u / (T / 2);
            ntt_butterfly<true>(r, p, sub - 1, target_prime(first + j), b, u % (T / 2),
                                out + static_cast<std::size_t>(j) * T);
        }
    } else {
        for (u32 u = thread; u < count * T; u += threads) store(first + u / T, ntt_index(r.log_n, p, b, u % T), out[u]);
    }
}

// A block a column tile; the phases of fused_conversion_phase.
struct FusedColumns {
    static constexpr u32 kThreads = kNttThreads;
    static constexpr u32 kSmemWords = kFuseTiles * kFuseTile;
    template <class Shared, class Item>
    static KASOKU_HD std::size_t blocks(const Shared& s, const Item&) {
        return s.r.n >> kLogFuseTile;
    }
    template <class Shared>
    static KASOKU_HD u32 phases(const Shared& s) {
        const u32 k = s.r.log_n / 2;
        return 1 + k + s.rounds * (k + 2);
    }
};

// ModUp of digits (ConvertUp between the transforms): per item, the digit's s source limbs after the inverse
// transform's chunk pass (mid, primes begin..), its own limbs in NTT form (own, copied to dst unless null) and its
// extension over Q_l * P_np (dst, nq + np limbs), whose targets are left for the forward transform's chunk pass.
struct MuItem {
    const u64* mid;
    const u64* own;
    u64* dst;
    const u64* f;
    const u64* sc;  // per source limb: (Q_j / q_i)^-1 n^-1 and its Shoup constant
    const u64* scp;
    u32 s, begin;
};
struct MuShared {
    Ring r;
    u32 nq, np, rounds, pad;
};
struct ModUpColumns : FusedColumns {
    using Shared = MuShared;
    using Item = MuItem;
    static constexpr const char* kName = "mod_up_columns";
    static KASOKU_HD u32 target_limb(const Item& it, u32 j) { return j < it.begin ? j : j + it.s; }
    static KASOKU_HD void phase(const Shared& s, const Item& it, std::size_t b, u32 thread, u32 ph, u64* smem) {
        const std::size_t n = s.r.n;
        fused_conversion_phase(
            s.r, it.s, s.nq + s.np - it.s, it.sc, it.scp, b, thread, ph, smem,
            [&](u32 i, u32 w, std::size_t x) {
                smem[i * kFuseTile + w] = it.mid[i * n + x];
                if (it.own) it.dst[(it.begin + i) * n + x] = it.own[i * n + x];
            },
            [&](u32 i) { return it.begin + i; },
            [&](u32 j, u32 w) {
                const u32 prime = limb_prime(s.r, s.nq, target_limb(it, j));  // the sources read from shared memory
                return convert_sum(nullptr, 0, smem, kFuseTile, w, it.s, it.f + static_cast<std::size_t>(prime) * it.s,
                                   s.r.m[prime]);
            },
            [&](u32 j) { return limb_prime(s.r, s.nq, target_limb(it, j)); },
            [&](u32 j, std::size_t x, u64 v) { it.dst[target_limb(it, j) * n + x] = v; });
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        const std::size_t n = s.r.n, k = s.r.log_n / 2, targets = s.nq + s.np - it.s;
        bytes += 8 * n * ((it.own ? 3 : 1) * it.s + targets) + 16 * (std::size_t{1} << k) * (it.s + targets);
        mults += n * (it.s * (k + 2) + targets * (it.s + 3 * ((it.s + 31) / 32)) + targets * k);
    }
};

// The exact conversion of ModDown and rescaling (ConvertDown between the transforms): per item (a polynomial), its s
// source limbs after the inverse transform's chunk pass (mid; primes src_prime) and the `keep` corrections, left for
// the forward transform's chunk pass and its division epilogue (dst).
struct MdItem {
    const u64* mid;
    u64* dst;
};
struct MdShared {
    Ring r;
    const u64* f;
    const u64* qv;
    const double* inv_q;
    const u64* sc;  // per source: (R / r_i)^-1 n^-1 and its Shoup constant
    const u64* scp;
    u32 s, keep, rounds, pad;
    u32 src_prime[kFuseTiles];
};
struct ModDownColumns : FusedColumns {
    using Shared = MdShared;
    using Item = MdItem;
    static constexpr const char* kName = "mod_down_columns";
    static KASOKU_HD void phase(const Shared& s, const Item& it, std::size_t b, u32 thread, u32 ph, u64* smem) {
        const std::size_t n = s.r.n;
        fused_conversion_phase(
            s.r, s.s, s.keep, s.sc, s.scp, b, thread, ph, smem,
            [&](u32 i, u32 w, std::size_t x) { smem[i * kFuseTile + w] = it.mid[i * n + x]; },
            [&](u32 i) { return s.src_prime[i]; },
            [&](u32 t, u32 w) {
                const std::uint8_t v = body::overflow_count(smem, s.s, kFuseTile, s.inv_q, w);
                const Modulus& m = s.r.m[t];
                const u64 r =
                    convert_sum(nullptr, 0, smem, kFuseTile, w, s.s, s.f + static_cast<std::size_t>(t) * s.s, m);
                return arith::sub_mod(r, s.qv[static_cast<std::size_t>(t) * (s.s + 1) + v], m.value);
            },
            [&](u32 t) { return t; }, [&](u32 t, std::size_t x, u64 v) { it.dst[t * n + x] = v; });
    }
    static KASOKU_HD void cost(const Shared& s, const Item&, std::size_t& bytes, std::size_t& mults) {
        const std::size_t n = s.r.n, k = s.r.log_n / 2;
        bytes += 8 * n * (s.s + s.keep) + 16 * (std::size_t{1} << k) * (s.s + s.keep);
        mults += n * (s.s * (k + 2) + s.keep * (s.s + 3 * ((s.s + 31) / 32)) + s.keep * k);
    }
};

// ---------------------------------------------------------------- key-switching inner products

// For every word (t, k) of Q_l * P, both halves at once: b = sum_e sum_j d_j[t][k_e] kb_ej[t'][k_e], a likewise, with
// k_e = perm_e[k] (the automorphism of term e; identity when null) and t' = the key's limb of the same prime (keys
// span Q_m * P_k, m + 1 = key_nq_e >= nq, the special limbs after their q-limbs; the outputs span Q_l * P_k, np = k);
// on the q-limbs also c0_out = sum_e c0[t][k_e]. Digits and terms beyond one launch's share are
// accumulated by further launches (accumulate: add to the outputs).
inline constexpr u32 kDotDigits = 8, kDotTerms = 8;
struct DtItem {
    const u64* d[kDotDigits];
    u64* b;
    u64* a;
    const u64* c0;
    u64* c0_out;
};
struct DtShared {
    Ring r;
    u32 nq, np, digits, terms, accumulate, with_c0;
    const u64* kb[kDotTerms][kDotDigits];
    const u64* ka[kDotTerms][kDotDigits];
    const u32* perm[kDotTerms];
    u32 key_nq[kDotTerms];
};
struct Dot {
    using Shared = DtShared;
    using Item = DtItem;
    static constexpr const char* kName = "dot";
    static KASOKU_HD std::size_t words(const Shared& s, const Item&) {
        return static_cast<std::size_t>(s.nq + s.np) * s.r.n;
    }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t w) {
        const std::size_t n = s.r.n, t = w / n, k = w % n;
        const std::size_t kt = limb_prime(s.r, s.nq, static_cast<u32>(t));
        const Modulus& m = s.r.m[kt];
        u64 rb = s.accumulate ? it.b[w] : 0, ra = s.accumulate ? it.a[w] : 0;
        u64 rc = 0;
        for (u32 e = 0; e < s.terms; ++e) {
            const std::size_t ke = s.perm[e] ? s.perm[e][k] : k, dw = t * n + ke;
            const std::size_t kw = (t < s.nq ? t : s.key_nq[e] + (t - s.nq)) * n + ke;
            u128 sb = 0, sa = 0;
            for (u32 j = 0; j < s.digits; ++j) {  // at most 8 products below 2^122 each: no overflow
                const u64 dj = it.d[j][dw];
                sb += static_cast<u128>(dj) * s.kb[e][j][kw];
                sa += static_cast<u128>(dj) * s.ka[e][j][kw];
            }
            rb = arith::add_mod(rb, arith::reduce_128(sb, m), m.value);
            ra = arith::add_mod(ra, arith::reduce_128(sa, m), m.value);
            if (s.with_c0 && t < s.nq) rc = arith::add_mod(rc, it.c0[dw], m.value);
        }
        it.b[w] = rb;
        it.a[w] = ra;
        if (s.with_c0 && t < s.nq) it.c0_out[w] = s.accumulate ? arith::add_mod(it.c0_out[w], rc, m.value) : rc;
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        const std::size_t w = words(s, it);
        bytes += 8 * w * (s.terms * s.digits * 3 + 2 * (s.accumulate ? 2 : 1)) +
                 (s.with_c0 ? 16 * s.nq * s.r.n * s.terms : 0);
        mults += w * s.terms * 2 * (s.digits + 3);
        (void)it;
    }
};

// ---------------------------------------------------------------- key switching between the transforms' passes

// The inner product of a key switch between ModUp and ModDown (Backend::key_switch_mod_down), on chunks of kRowTile
// words of a limb t of Q_l * P_np: each digit's limb (the digit's own limb from d in NTT form, else ModUp's target
// after its forward column pass, finished here by the forward chunk pass) times the key's, summed over the digits;
// with a rescale, plus P add on every q-limb (x + P d of ModDown-rescale). Two launches:
//   sources: ModDown's sources (the special limbs, and q_l with a rescale) run the inverse transform's chunk pass and
//            go to ModDownColumns' scratch (y_b, y_a: source i at limb i, q_l as source np);
//   finish:  the q-limbs that stay take ModDownColumns' corrections through the forward chunk pass and leave as
//            out = psi((x - t) inv + add) (Ntt's division epilogue), so that (b, a) never goes to memory on them.
// The same words as Ntt, Dot, add_mul_const and Ntt's epilogue: every sum is reduced to [0, q) (each digit's product
// reduced and added), so the bits are those of the separate kernels.
inline constexpr u32 kRowTile = 1024;  // four tiles (a digit, b, a, a correction): 32 KB
inline constexpr u32 kLogRowTile = 10;
static_assert(kRowTile == 1u << kLogRowTile);
KASOKU_HD inline NttPass fused_rows(u32 log_n) {
    const u32 split = log_n / 2, k = log_n - split;
    return {split, log_n, kRowTile >> k, kLogRowTile - k};
}
KASOKU_HD inline bool rows_fuse(u32 log_n) { return ntt_passes(log_n) == 2 && log_n - log_n / 2 <= kLogRowTile; }

struct KsItem {
    const u64* d;                // the switched polynomial (NTT form, q-limbs): the digits' own limbs
    const u64* mid[kDotDigits];  // ModUp's digits (nq + np limbs) after the forward column pass, own limbs unused
    const u64* pre_b;            // with a rescale: the addends (q-limbs) taken times P (null: none)
    const u64* pre_a;
    u64* y_b;  // sources: ModDown's sources after the inverse chunk pass
    u64* y_a;
    const u64* t_b;  // finish: ModDownColumns' corrections (keep limbs) after the forward column pass
    const u64* t_a;
    const u64* add_b;  // finish: added after the division (null: none)
    const u64* add_a;
    u64* out_b;  // finish: the result (keep limbs)
    u64* out_a;
};
struct KsShared {
    Ring r;
    u32 nq, np, digits, alpha, key_nq, rescale, finish, keep;  // rescale: q_l is a source
    const u64* kb[kDotDigits];
    const u64* ka[kDotDigits];
    const u64* pk;  // P mod q_i and its Shoup constant (rescale)
    const u64* pkp;
    const u64* inv;  // finish: the division's constants per q-limb, and the automorphism's inverse (or null)
    const u64* invp;
    const u32* perm_inv;
};
struct KeySwitchRows {
    using Shared = KsShared;
    using Item = KsItem;
    static constexpr const char* kName = "key_switch_rows";
    static constexpr u32 kThreads = kNttThreads;
    static constexpr u32 kSmemWords = 4 * kRowTile;
    static KASOKU_HD u32 limbs(const Shared& s) { return s.finish ? s.keep : s.np + s.rescale; }
    static KASOKU_HD std::size_t blocks(const Shared& s, const Item&) {
        return static_cast<std::size_t>(limbs(s)) * (s.r.n >> kLogRowTile);
    }
    static KASOKU_HD u32 stages(const Shared& s) { return s.r.log_n - s.r.log_n / 2; }
    // per digit: load, stages, product; then the product by P; then the inverse stages and the store (sources), or
    // the corrections' load, stages and the division (finish)
    static KASOKU_HD u32 phases(const Shared& s) {
        const u32 k = stages(s);
        return s.digits * (k + 2) + 1 + (s.finish ? k + 2 : k + 1);
    }
    static KASOKU_HD void phase(const Shared& s, const Item& it, std::size_t block, u32 thread, u32 ph, u64* smem) {
        const NttPass p = fused_rows(s.r.log_n);
        const u32 k = p.s1 - p.s0, log_chunks = s.r.log_n - kLogRowTile, i = static_cast<u32>(block >> log_chunks);
        const u32 t = s.finish ? i : i < s.np ? s.nq + i : s.nq - 1;  // limb of Q_l * P_np
        const std::size_t c = block & ((std::size_t{1} << log_chunks) - 1), n = s.r.n;
        const std::size_t at = t * n + (c << kLogRowTile);  // the chunk's words are contiguous
        const u32 prime = limb_prime(s.r, s.nq, t);
        const Modulus& m = s.r.m[prime];
        const u64 q = m.value;
        u64 *tile = smem, *tb = smem + kRowTile, *ta = smem + 2 * kRowTile, *tc = smem + 3 * kRowTile;
        if (ph < s.digits * (k + 2)) {
            const u32 j = ph / (k + 2), sub = ph % (k + 2);
            const bool own = t < s.nq && t / s.alpha == j;
            if (sub == 0) {
                for (u32 w = thread; w < kRowTile; w += kThreads) tile[w] = own ? it.d[at + w] : it.mid[j][at + w];
            } else if (sub <= k) {
                if (!own)
                    for (u32 u = thread; u < kRowTile / 2; u += kThreads)
                        ntt_butterfly<true>(s.r, p, p.s0 + sub - 1, prime, c, u, tile);
            } else {
                const std::size_t kw = (t < s.nq ? t : s.key_nq + (t - s.nq)) * n + (c << kLogRowTile);
                for (u32 w = thread; w < kRowTile; w += kThreads) {
                    const u64 v = own ? tile[w] : ntt_forward_final(tile[w], q);
                    const u64 pb = arith::mul_mod(v, s.kb[j][kw + w], m), pa = arith::mul_mod(v, s.ka[j][kw + w], m);
                    tb[w] = j == 0 ? pb : arith::add_mod(tb[w], pb, q);
                    ta[w] = j == 0 ? pa : arith::add_mod(ta[w], pa, q);
                }
            }
            return;
        }
        const u32 r = ph - s.digits * (k + 2);
        if (r == 0) {  // x + P add on the q-limbs (rescale)
            if (t < s.nq)
                for (u32 w = thread; w < kRowTile; w += kThreads) {
                    if (it.pre_b)
                        tb[w] = arith::add_mod(tb[w], arith::mul_shoup(it.pre_b[at + w], s.pk[t], s.pkp[t], q), q);
                    if (it.pre_a)
                        ta[w] = arith::add_mod(ta[w], arith::mul_shoup(it.pre_a[at + w], s.pk[t], s.pkp[t], q), q);
                }
        } else if (!s.finish && r <= k) {  // ModDown's inverse chunk pass on the sources
            for (u32 u = thread; u < kRowTile; u += kThreads)
                ntt_butterfly<false>(s.r, p, p.s1 - r, prime, c, u & (kRowTile / 2 - 1), u < kRowTile / 2 ? tb : ta);
        } else if (!s.finish) {
            const std::size_t y = static_cast<std::size_t>(i) * n + (c << kLogRowTile);
            for (u32 w = thread; w < kRowTile; w += kThreads) {
                it.y_b[y + w] = tb[w];
                it.y_a[y + w] = ta[w];
            }
        } else if (r == 1) {  // the corrections of both polynomials
            for (u32 w = thread; w < kRowTile; w += kThreads) {
                tile[w] = it.t_b[at + w];
                tc[w] = it.t_a[at + w];
            }
        } else if (r <= k + 1) {
            for (u32 u = thread; u < kRowTile; u += kThreads)
                ntt_butterfly<true>(s.r, p, p.s0 + r - 2, prime, c, u & (kRowTile / 2 - 1),
                                    u < kRowTile / 2 ? tile : tc);
        } else {  // the exact division, as Ntt's last forward pass
            for (u32 w = thread; w < kRowTile; w += kThreads) {
                const std::size_t x = (c << kLogRowTile) + w, to = t * n + (s.perm_inv ? s.perm_inv[x] : x);
                u64 rb = divide_word(tb[w], tile[w], s.inv[t], s.invp[t], q);
                u64 ra = divide_word(ta[w], tc[w], s.inv[t], s.invp[t], q);
                if (it.add_b) rb = arith::add_mod(rb, it.add_b[t * n + x], q);
                if (it.add_a) ra = arith::add_mod(ra, it.add_a[t * n + x], q);
                it.out_b[to] = rb;
                it.out_a[to] = ra;
            }
        }
    }
    // The roots of the chunk passes, once per launch: forward for every limb, inverse for the sources.
    static KASOKU_HD std::size_t launch_table_bytes(const Shared& s) {
        const std::size_t table = 16 * ((std::size_t{1} << s.r.log_n) - (std::size_t{1} << (s.r.log_n / 2)));
        return table * limbs(s) * (s.finish ? 1 : 2);
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        const std::size_t n = s.r.n, k = stages(s), L = limbs(s), q_limbs = s.finish ? L : s.rescale;
        const std::size_t own = q_limbs;  // every q-limb is one digit's own limb
        const std::size_t pre = (it.pre_b ? 1 : 0) + (it.pre_a ? 1 : 0);
        bytes += 8 * n * (L * s.digits * 3 + pre * q_limbs + 2 * L);
        mults += n * (L * s.digits * 6 + (L * s.digits - own) * k + 2 * pre * q_limbs);
        if (s.finish) {
            bytes += 8 * n * (2 * L + (it.add_b ? L : 0) + (it.add_a ? L : 0)) + (s.perm_inv ? 4 * n : 0);
            mults += n * L * (2 * k + 4);
        } else {
            mults += n * L * 2 * k;
        }
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
