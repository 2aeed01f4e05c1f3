// The GPU backend's NTT (in passes over shared memory) and base conversions (kernels.hpp says what a kernel is).
#pragma once
#include "gpu/kernel_params.hpp"

namespace kasoku::gpu::kern {

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

}  // namespace kasoku::gpu::kern
