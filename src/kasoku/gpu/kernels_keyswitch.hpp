// The GPU backend's key-switching kernels (kernels.hpp says what a kernel is): the base conversions fused between
// their transforms' passes, the inner products with the keys, and the key switch between the passes (KeySwitchRows).
#pragma once
#include "gpu/kernels_ntt.hpp"

namespace kasoku::gpu::kern {

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

}  // namespace kasoku::gpu::kern
