// AVX-512 helpers for 64-bit modular arithmetic (included only by kernels_avx512.cpp and kernels_ifma.cpp).
//
// The same source is compiled twice: natively (with the ISA flags, into the library) and, with
// KASOKU_SIMD_EMULATE defined, against SIMDe without any ISA flag (into the tests only), so that a machine
// without AVX-512 still checks these bodies bit for bit against the scalar reference. The two builds live in
// different namespaces (native / emulated) so they can be linked into one test binary.
#pragma once
#include <cstddef>
#include <cstdint>

#ifdef KASOKU_SIMD_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define KASOKU_ISA_NS emulated
#define KASOKU_ISA_LABEL(name) name "-simde"
#else
#include <immintrin.h>
#define KASOKU_ISA_NS native
#define KASOKU_ISA_LABEL(name) name
#endif

#include "kasoku/arith/ntt.hpp"

// Internal linkage: the DQ and IFMA files are compiled with different ISA flags, and the linker must not
// merge their copies of these helpers.
namespace kasoku::arith::detail::KASOKU_ISA_NS::avx512 {
namespace {

inline __m512i load(const u64* p) { return _mm512_loadu_si512(reinterpret_cast<const void*>(p)); }
inline void store(u64* p, __m512i v) { _mm512_storeu_si512(reinterpret_cast<void*>(p), v); }
#ifdef KASOKU_SIMD_EMULATE
inline void stream(u64* p, __m512i v) { store(p, v); }  // SIMDe 0.7 has no _mm512_stream_si512
#else
inline void stream(u64* p, __m512i v) { _mm512_stream_si512(reinterpret_cast<__m512i*>(p), v); }
#endif
inline __m512i set1(u64 x) { return _mm512_set1_epi64(static_cast<long long>(x)); }

// The vector traits of detail::elementwise.
struct Lanes {
    static constexpr std::size_t lanes = 8;
    static void store(u64* p, __m512i v) { avx512::store(p, v); }
    static void stream(u64* p, __m512i v) { avx512::stream(p, v); }
    static void fence() { _mm_sfence(); }
};

// x >= bound ? x - bound : x (unsigned): if x < bound, x - bound wraps above x and min keeps x.
inline __m512i sub_if_ge(__m512i x, __m512i bound) { return _mm512_min_epu64(x, _mm512_sub_epi64(x, bound)); }

// Eight byte indices widened to 64-bit lanes, and a gather of table[idx]; SIMDe 0.7 has neither, so the emulated
// build does them lane by lane.
#ifdef KASOKU_SIMD_EMULATE
inline __m512i load_index8(const std::uint8_t* index) {
    alignas(64) u64 v[8];
    for (int i = 0; i < 8; ++i) v[i] = index[i];
    return load(v);
}
inline __m512i gather64(__m512i idx, const u64* table) {
    alignas(64) u64 v[8];
    store(v, idx);
    for (auto& x : v) x = table[x];
    return load(v);
}
#else
inline __m512i load_index8(const std::uint8_t* index) {
    return _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(index)));
}
inline __m512i gather64(__m512i idx, const u64* table) { return _mm512_i64gather_epi64(idx, table, 8); }
#endif

// table[index[c..c+8)] for a table of `size` words: one permute while the table fits a register, else a gather.
struct TableLookup {
    const u64* table;
    bool in_register;
    __m512i reg = _mm512_setzero_si512();
    TableLookup(const u64* t, std::size_t size) : table(t), in_register(t && size <= 8) {
        if (!in_register) return;
        alignas(64) u64 buf[8] = {};
        for (std::size_t i = 0; i < size; ++i) buf[i] = t[i];
        reg = load(buf);
    }
    __m512i operator()(const std::uint8_t* index) const {
        const __m512i idx = load_index8(index);
        return in_register ? _mm512_permutexvar_epi64(idx, reg) : gather64(idx, table);
    }
};

// x - table[index] mod t, for x and the table's entries below t: a borrow wraps d above d + t.
inline __m512i sub_table_mod(__m512i x, const std::uint8_t* index, const TableLookup& lookup, __m512i t) {
    const __m512i d = _mm512_sub_epi64(x, lookup(index));
    return _mm512_min_epu64(d, _mm512_add_epi64(d, t));
}

// ---- AVX-512F/DQ: 64x64-bit products from four 32x32 -> 64 partial products (no 64-bit high multiply) ----

inline void mul_full(__m512i a, __m512i b, __m512i& hi, __m512i& lo) {
    const __m512i mask = set1(0xffffffffULL);
    const __m512i a_h = _mm512_srli_epi64(a, 32), b_h = _mm512_srli_epi64(b, 32);
    const __m512i ll = _mm512_mul_epu32(a, b);
    const __m512i lh = _mm512_mul_epu32(a, b_h);
    const __m512i hl = _mm512_mul_epu32(a_h, b);
    const __m512i hh = _mm512_mul_epu32(a_h, b_h);
    __m512i mid = _mm512_add_epi64(_mm512_srli_epi64(ll, 32), _mm512_and_si512(lh, mask));
    mid = _mm512_add_epi64(mid, _mm512_and_si512(hl, mask));
    hi = _mm512_add_epi64(hh, _mm512_srli_epi64(lh, 32));
    hi = _mm512_add_epi64(hi, _mm512_srli_epi64(hl, 32));
    hi = _mm512_add_epi64(hi, _mm512_srli_epi64(mid, 32));
    lo = _mm512_mullo_epi64(a, b);
}

// The high words only; the compiler drops mul_full's unused low product.
inline __m512i mul_hi(__m512i a, __m512i b) {
    __m512i hi, lo;
    mul_full(a, b, hi, lo);
    return hi;
}

// Shoup: w * x mod q in [0, 2q) for a constant w with wp = floor(w 2^64 / q), any x < 2^64.
struct ShoupDq {
    static constexpr bool kFusedStages = false;  // its products bound the NTT: radix 4 measured 3 % slower (Zen 4)
    // Each twiddle read from its table: computing it from its factor (1 + hi64(wp q)) takes an emulated 64-bit high
    // product here, and made the NTT of 2^16 points at 60 bits 8 % slower (Zen 5), where IFMA's is one instruction.
    static constexpr bool kRootFromShoup = false;
    __m512i q;
    explicit ShoupDq(u64 qv) : q(set1(qv)) {}
    static __m512i prep(__m512i wp) { return wp; }
    __m512i mul_lazy(__m512i x, __m512i w, __m512i wp) const {
        return _mm512_sub_epi64(_mm512_mullo_epi64(x, w), _mm512_mullo_epi64(mul_hi(x, wp), q));
    }
};

// Barrett reduction of a 128-bit (hi, lo) < 2^(2 bits) for a q of `bits` bits, mu = floor(2^(2 bits) / q).
struct BarrettDq {
    __m512i q, mu;
    __m128i s_lo_x, s_hi_x, s_lo_p, s_hi_p;  // x >> (b-1) = hi << (65-b) | lo >> (b-1); p >> (b+1) likewise
    BarrettDq(u64 qv, int bits) {
        const unsigned __int128 m = (static_cast<unsigned __int128>(1) << (2 * bits)) / qv;
        q = set1(qv);
        mu = set1(static_cast<u64>(m));
        s_lo_x = _mm_cvtsi32_si128(bits - 1);
        s_hi_x = _mm_cvtsi32_si128(65 - bits);
        s_lo_p = _mm_cvtsi32_si128(bits + 1);
        s_hi_p = _mm_cvtsi32_si128(63 - bits);
    }
    // (hi, lo) mod q up to two multiples of q: [0, 3q).
    __m512i reduce_lazy(__m512i hi, __m512i lo) const {
        const __m512i x1 = _mm512_or_si512(_mm512_sll_epi64(hi, s_hi_x), _mm512_srl_epi64(lo, s_lo_x));
        __m512i ph, pl;
        mul_full(x1, mu, ph, pl);
        const __m512i qhat = _mm512_or_si512(_mm512_sll_epi64(ph, s_hi_p), _mm512_srl_epi64(pl, s_lo_p));
        return _mm512_sub_epi64(lo, _mm512_mullo_epi64(qhat, q));
    }
    __m512i reduce(__m512i hi, __m512i lo) const { return sub_if_ge(sub_if_ge(reduce_lazy(hi, lo), q), q); }
};

// ---- AVX-512-IFMA: 52x52-bit products in two instructions, for q < 2^50 (so that 4q < 2^52) ----

inline constexpr int kIfmaMaxBits = 50;

#ifdef KASOKU_SIMD_EMULATE
// SIMDe 0.7 has no IFMA: lane-wise reference of vpmadd52luq / vpmadd52huq.
inline __m512i madd52(__m512i a, __m512i b, __m512i c, bool high) {
    alignas(64) u64 va[8], vb[8], vc[8];
    store(va, a);
    store(vb, b);
    store(vc, c);
    constexpr u64 m52 = (1ULL << 52) - 1;
    for (int i = 0; i < 8; ++i) {
        const unsigned __int128 p = static_cast<unsigned __int128>(vb[i] & m52) * (vc[i] & m52);
        va[i] += high ? static_cast<u64>(p >> 52) : static_cast<u64>(p) & m52;
    }
    return load(va);
}
inline __m512i madd52lo(__m512i a, __m512i b, __m512i c) { return madd52(a, b, c, false); }
inline __m512i madd52hi(__m512i a, __m512i b, __m512i c) { return madd52(a, b, c, true); }
#else
inline __m512i madd52lo(__m512i a, __m512i b, __m512i c) { return _mm512_madd52lo_epu64(a, b, c); }
inline __m512i madd52hi(__m512i a, __m512i b, __m512i c) { return _mm512_madd52hi_epu64(a, b, c); }
#endif

inline __m512i mask52() { return set1((1ULL << 52) - 1); }

// Shoup with 52-bit constants: wp52 = floor(w 2^52 / q) = wp >> 12 (for x < 2^52):
// w x - floor(x wp52 / 2^52) q lies in [0, 2q), so it is exact modulo 2^52.
struct ShoupIfma {
    static constexpr bool kFusedStages = true;  // radix 4: 5-10 % faster NTT of 2^16 points (Zen 4)
    // The NTT reads only the Shoup factors of its twiddles and computes each twiddle from its factor (root below), and
    // its small-gap stages take their twiddles as products (split_small_stage): a sixth of the tables' bytes per
    // transform, which at 2^16 points (1 MB of twiddles beside 512 KB of data, 21-28 primes a key switch) come from L3
    // or memory.
    static constexpr bool kRootFromShoup = true;
    __m512i neg_q;  // 2^52 - q: adding lo52(h * neg_q) subtracts h q modulo 2^52
    __m512i q, one;
    explicit ShoupIfma(u64 qv) : neg_q(set1((1ULL << 52) - qv)), q(set1(qv)), one(set1(1)) {}
    static __m512i prep(__m512i wp) { return _mm512_srli_epi64(wp, 12); }
    // w from its prepared factor wp52 = floor(w 2^52 / q), for 0 < w < q < 2^50: w 2^52 / q = wp52 + e with 0 < e < 1
    // (e = 0 would need q | w 2^52), so wp52 q / 2^52 = w - e q / 2^52 with 0 < e q / 2^52 < 1 / 4, whose floor is
    // w - 1: w = 1 + hi52(wp52 q), one multiply-add.
    __m512i root(__m512i wp52) const { return madd52hi(one, wp52, q); }
    __m512i mul_lazy(__m512i x, __m512i w, __m512i wp52) const {
        const __m512i zero = _mm512_setzero_si512();
        const __m512i h = madd52hi(zero, x, wp52);
        return _mm512_and_si512(madd52lo(madd52lo(zero, x, w), h, neg_q), mask52());
    }
};

// Barrett for products P = hi 2^52 + lo < 2^(2 bits), bits <= 50, mu = floor(2^(2 bits) / q) < 2^51.
struct BarrettIfma {
    __m512i q, neg_q, mu;
    __m128i s_hi_x, s_lo_x, s_hi_p, s_lo_p;  // P >> (b-1) = hi << (53-b) | lo >> (b-1); x1 mu >> (b+1) likewise
    BarrettIfma(u64 qv, int bits) {
        q = set1(qv);
        neg_q = set1((1ULL << 52) - qv);
        mu = set1(static_cast<u64>((static_cast<unsigned __int128>(1) << (2 * bits)) / qv));
        s_hi_x = _mm_cvtsi32_si128(53 - bits);
        s_lo_x = _mm_cvtsi32_si128(bits - 1);
        s_hi_p = _mm_cvtsi32_si128(51 - bits);
        s_lo_p = _mm_cvtsi32_si128(bits + 1);
    }
    // P - qhat q in [0, 3q).
    __m512i reduce_lazy(__m512i hi, __m512i lo) const {
        const __m512i zero = _mm512_setzero_si512();
        const __m512i x1 = _mm512_or_si512(_mm512_sll_epi64(hi, s_hi_x), _mm512_srl_epi64(lo, s_lo_x));
        const __m512i ph = madd52hi(zero, x1, mu), pl = madd52lo(zero, x1, mu);
        const __m512i qhat = _mm512_or_si512(_mm512_sll_epi64(ph, s_hi_p), _mm512_srl_epi64(pl, s_lo_p));
        return _mm512_and_si512(madd52lo(lo, qhat, neg_q), mask52());
    }
    __m512i reduce(__m512i hi, __m512i lo) const { return sub_if_ge(sub_if_ge(reduce_lazy(hi, lo), q), q); }
};

// ---- NTT bodies for n >= 16, shared by DQ and IFMA (the Shoup policy differs) ----

// The three last forward stages (first three inverse ones) work on 16 words in two registers: X gathers the
// x halves of the butterflies, Y the y halves; lane k of X belongs to block k / gap.
template <std::size_t Gap>
struct SmallStage {
    __m512i gather_x, gather_y, scatter_0, scatter_1, twiddle;
    SmallStage() {
        alignas(64) u64 gx[8], gy[8], s0[8], s1[8], tw[8];
        for (u64 k = 0; k < 8; ++k) {
            gx[k] = (k / Gap) * 2 * Gap + k % Gap;
            gy[k] = gx[k] + Gap;
            tw[k] = k / Gap;
        }
        for (u64 e = 0; e < 16; ++e) {
            const u64 b = e / (2 * Gap), r = e % (2 * Gap);
            const u64 src = r < Gap ? b * Gap + r : 8 + b * Gap + r - Gap;
            (e < 8 ? s0[e] : s1[e - 8]) = src;
        }
        gather_x = load(gx);
        gather_y = load(gy);
        scatter_0 = load(s0);
        scatter_1 = load(s1);
        twiddle = load(tw);
    }
    void split(const u64* p, __m512i& x, __m512i& y) const {
        const __m512i v0 = load(p), v1 = load(p + 8);
        x = _mm512_permutex2var_epi64(v0, gather_x, v1);
        y = _mm512_permutex2var_epi64(v0, gather_y, v1);
    }
    void join(u64* p, __m512i x, __m512i y) const {
        store(p, _mm512_permutex2var_epi64(x, scatter_0, y));
        store(p + 8, _mm512_permutex2var_epi64(x, scatter_1, y));
    }
    // Twiddles of the 8 / Gap blocks starting at table entry `first`.
    __m512i twiddles(const u64* first) const { return _mm512_permutexvar_epi64(twiddle, load(first)); }
};

// Forward CT butterfly on [0, 4q) inputs, outputs in [0, 4q).
template <class Shoup>
inline void ct_butterfly(const Shoup& sh, __m512i& x, __m512i& y, __m512i w, __m512i wp, __m512i v2q) {
    const __m512i u = sub_if_ge(x, v2q);
    const __m512i v = sh.mul_lazy(y, w, wp);
    x = _mm512_add_epi64(u, v);
    y = _mm512_add_epi64(_mm512_sub_epi64(u, v), v2q);
}

// Inverse GS butterfly on [0, 2q) inputs, outputs in [0, 2q).
template <class Shoup>
inline void gs_butterfly(const Shoup& sh, __m512i& x, __m512i& y, __m512i w, __m512i wp, __m512i v2q) {
    const __m512i u = x, v = y;
    x = sub_if_ge(_mm512_add_epi64(u, v), v2q);
    y = sh.mul_lazy(_mm512_add_epi64(_mm512_sub_epi64(u, v), v2q), w, wp);
}

// A stage's twiddles and their prepared Shoup factors, `get` loading a vector from a table (w, then wp): both
// tables read, or the factors only where the policy computes the twiddle from its factor.
template <class Shoup, class Get>
inline void twiddles(const Shoup& sh, const u64* w, const u64* wp, Get get, __m512i& vw, __m512i& vwp) {
    vwp = Shoup::prep(get(wp));
    if constexpr (Shoup::kRootFromShoup) vw = sh.root(vwp);
    else vw = get(w);
}

// The butterflies of one 16-word group of a small-gap stage, with twiddle vw; with Lane, the product also by the lane
// factor `lane` (forward before the butterfly, inverse after it: either way the product lies in [0, 2q) as the
// butterfly's own, with the residue of the product by vw * lane). The last forward stage also reduces to [0, q).
template <class Shoup, std::size_t Gap, bool Forward, bool FinalReduce, bool Lane>
inline void small_group(u64* p, const SmallStage<Gap>& st, const Shoup& sh, __m512i vw, __m512i vwp, __m512i lane,
                        __m512i lane_p, __m512i vq, __m512i v2q) {
    __m512i x, y;
    st.split(p, x, y);
    if constexpr (Forward) {
        if constexpr (Lane) y = sh.mul_lazy(y, lane, lane_p);
        ct_butterfly(sh, x, y, vw, vwp, v2q);
        if constexpr (FinalReduce) {
            x = sub_if_ge(sub_if_ge(x, v2q), vq);
            y = sub_if_ge(sub_if_ge(y, v2q), vq);
        }
    } else {
        gs_butterfly(sh, x, y, vw, vwp, v2q);
        if constexpr (Lane) y = sh.mul_lazy(y, lane, lane_p);
    }
    st.join(p, x, y);
}

// One of the three small-gap stages, its twiddles read from the table.
template <class Shoup, std::size_t Gap, bool Forward, bool FinalReduce = false>
inline void small_stage(u64* a, std::size_t m, const u64* w, const u64* wp, const Shoup& sh, __m512i vq, __m512i v2q) {
    static const SmallStage<Gap> st;
    constexpr std::size_t blocks = 8 / Gap;
    for (std::size_t i = 0; i < m; i += blocks) {
        __m512i vw, vwp;
        twiddles(
            sh, w, wp, [&](const u64* t) { return st.twiddles(t + m + i); }, vw, vwp);
        small_group<Shoup, Gap, Forward, FinalReduce, false>(a + 2 * Gap * i, st, sh, vw, vwp, vw, vwp, vq, v2q);
    }
}

// A small-gap stage with its twiddles as products (NttTables::split_stage): the twiddle of block (8/Gap) c + j is that
// of block (8/Gap) c times j's lane factor, so the lane factors stay in a register and the stage reads one Shoup
// constant per 16 words (n/16 for the stage), computing its twiddle from it, instead of 8/Gap twiddles.
template <class Shoup, std::size_t Gap, bool Forward, bool FinalReduce = false>
inline void split_small_stage(u64* a, const NttTables& t, const Shoup& sh, __m512i vq, __m512i v2q) {
    static_assert(Shoup::kRootFromShoup, "the split tables hold the block twiddles' Shoup constants only");
    static const SmallStage<Gap> st;
    const NttTables::SplitStage f = t.split_stage(Gap, !Forward);
    __m512i lane, lane_p;
    twiddles(
        sh, f.lane, f.lane_shoup, [&](const u64* table) { return st.twiddles(table); }, lane, lane_p);
    for (std::size_t c = 0; c < t.n() / 16; ++c) {
        const __m512i vwp = Shoup::prep(set1(f.block_shoup[c]));
        small_group<Shoup, Gap, Forward, FinalReduce, true>(a + 16 * c, st, sh, sh.root(vwp), vwp, lane, lane_p, vq,
                                                            v2q);
    }
}

// One stage with gap >= 8: m blocks, each with one twiddle broadcast over its whole x and y halves.
template <class Shoup, bool Forward>
inline void wide_stage(u64* a, std::size_t m, std::size_t gap, const u64* w, const u64* wp, const Shoup& sh,
                       __m512i v2q) {
    for (std::size_t i = 0; i < m; ++i) {
        __m512i vw, vwp;
        twiddles(
            sh, w, wp, [&](const u64* t) { return set1(t[m + i]); }, vw, vwp);
        u64* x = a + 2 * i * gap;
        u64* y = x + gap;
        for (std::size_t j = 0; j < gap; j += 8) {
            __m512i u = load(x + j), v = load(y + j);
            if constexpr (Forward) ct_butterfly(sh, u, v, vw, vwp, v2q);
            else gs_butterfly(sh, u, v, vw, vwp, v2q);
            store(x + j, u);
            store(y + j, v);
        }
    }
}

// Two consecutive wide stages in one pass over memory (radix 4): the forward stages (m, gap) and (2m, gap / 2), or the
// inverse stages (m, gap) and (m / 2, 2 gap), each quadruple of words loaded once, the butterflies those of the two
// radix-2 stages on the same words in the same order (the same results), with half the loads and stores.
inline void load4(const u64* p, std::size_t s, __m512i* x) {
    for (int k = 0; k < 4; ++k) x[k] = load(p + k * s);
}
inline void store4(u64* p, std::size_t s, const __m512i* x) {
    for (int k = 0; k < 4; ++k) store(p + k * s, x[k]);
}
template <class Shoup, bool Forward>
inline void wide_stage_pair(u64* a, std::size_t m, std::size_t gap, const u64* w, const u64* wp, const Shoup& sh,
                            __m512i v2q) {
    // Forward: block i of stage (m, gap) and blocks 2i, 2i + 1 of (2m, gap / 2), quadruples of stride gap / 2 (>= 8).
    // Inverse: blocks 2k, 2k + 1 of stage (m, gap) and block k of (m / 2, 2 gap), quadruples of stride gap (m >= 2).
    const std::size_t blocks = Forward ? m : m / 2, stride = Forward ? gap / 2 : gap;
    for (std::size_t i = 0; i < blocks; ++i) {
        const std::size_t first = Forward ? m + i : m / 2 + i, second = Forward ? 2 * m + 2 * i : m + 2 * i;
        __m512i w0, wp0, w1, wp1, w2, wp2;
        twiddles(
            sh, w, wp, [&](const u64* t) { return set1(t[first]); }, w0, wp0);
        twiddles(
            sh, w, wp, [&](const u64* t) { return set1(t[second]); }, w1, wp1);
        twiddles(
            sh, w, wp, [&](const u64* t) { return set1(t[second + 1]); }, w2, wp2);
        u64* p = a + 4 * i * stride;
        for (std::size_t j = 0; j < stride; j += 8) {
            __m512i x[4];
            load4(p + j, stride, x);
            if constexpr (Forward) {
                ct_butterfly(sh, x[0], x[2], w0, wp0, v2q);
                ct_butterfly(sh, x[1], x[3], w0, wp0, v2q);
                ct_butterfly(sh, x[0], x[1], w1, wp1, v2q);
                ct_butterfly(sh, x[2], x[3], w2, wp2, v2q);
            } else {
                gs_butterfly(sh, x[0], x[1], w1, wp1, v2q);
                gs_butterfly(sh, x[2], x[3], w2, wp2, v2q);
                gs_butterfly(sh, x[0], x[2], w0, wp0, v2q);
                gs_butterfly(sh, x[1], x[3], w0, wp0, v2q);
            }
            store4(p + j, stride, x);
        }
    }
}

template <class Shoup>
void ntt_forward_body(u64* a, const NttTables& t) {
    const std::size_t n = t.n();
    const u64* w = t.root_powers();
    const u64* wp = t.root_shoup();
    const Shoup sh(t.q());
    const __m512i vq = set1(t.q()), v2q = set1(2 * t.q());
    std::size_t m = 1, gap = n >> 1;
    if constexpr (Shoup::kFusedStages)
        for (; gap >= 16; m <<= 2, gap >>= 2) wide_stage_pair<Shoup, true>(a, m, gap, w, wp, sh, v2q);
    for (; gap >= 8; m <<= 1, gap >>= 1) wide_stage<Shoup, true>(a, m, gap, w, wp, sh, v2q);
    if constexpr (Shoup::kRootFromShoup) {  // the twiddles as products: n/16 factors a stage read, not n/8 .. n/2
        split_small_stage<Shoup, 4, true>(a, t, sh, vq, v2q);
        split_small_stage<Shoup, 2, true>(a, t, sh, vq, v2q);
        split_small_stage<Shoup, 1, true, true>(a, t, sh, vq, v2q);
    } else {
        small_stage<Shoup, 4, true>(a, m, w, wp, sh, vq, v2q);
        small_stage<Shoup, 2, true>(a, 2 * m, w, wp, sh, vq, v2q);
        small_stage<Shoup, 1, true, true>(a, 4 * m, w, wp, sh, vq, v2q);
    }
}

// Inverse transform without the final scaling by n^-1 (outputs in [0, 2q)).
template <class Shoup>
void ntt_inverse_body(u64* a, const NttTables& t) {
    const std::size_t n = t.n();
    const u64* w = t.inv_root_powers();
    const u64* wp = t.inv_root_shoup();
    const Shoup sh(t.q());
    const __m512i vq = set1(t.q()), v2q = set1(2 * t.q());
    std::size_t m = n >> 1;
    if constexpr (Shoup::kRootFromShoup) {
        split_small_stage<Shoup, 1, false>(a, t, sh, vq, v2q);
        split_small_stage<Shoup, 2, false>(a, t, sh, vq, v2q);
        split_small_stage<Shoup, 4, false>(a, t, sh, vq, v2q);
    } else {
        small_stage<Shoup, 1, false>(a, m, w, wp, sh, vq, v2q);
        small_stage<Shoup, 2, false>(a, m >> 1, w, wp, sh, vq, v2q);
        small_stage<Shoup, 4, false>(a, m >> 2, w, wp, sh, vq, v2q);
    }
    m >>= 3;
    std::size_t gap = 8;
    if constexpr (Shoup::kFusedStages)
        for (; m >= 2; m >>= 2, gap <<= 2) wide_stage_pair<Shoup, false>(a, m, gap, w, wp, sh, v2q);
    for (; m >= 1; m >>= 1, gap <<= 1) wide_stage<Shoup, false>(a, m, gap, w, wp, sh, v2q);
}

}  // namespace
}  // namespace kasoku::arith::detail::KASOKU_ISA_NS::avx512
