// The GPU backend's kernels of the canonical embedding (kernels.hpp says what a kernel is): encoding and decoding on
// the device, with rns::SlotFft's butterflies and order, so that they give the CPU's bits. The values are split into
// real and imaginary arrays of doubles (in device words); a transform of p points is FftTile's block of stages (up to
// 2048 points in shared memory) and a launch of FftStage for each larger stage (4 at N = 2^16).
#pragma once
#include <cmath>
#include <cstring>

#include "gpu/kernel_params.hpp"
#include "kasoku/rns/rns_context.hpp"
#include "kasoku/rns/slots.hpp"

namespace kasoku::gpu::kern {

// One stage of the special FFT on the p points at re, im: the stage of `len` points (inverse: rns::SlotFft::inverse's
// stage, else forward's), twiddles from entry len / 2 of the stage's tables.
struct FftItem {
    double* re;
    double* im;
    u32 p, len;
};
struct FftShared {
    const double* wr;  // the stage twiddles' real and imaginary parts (SlotFft::twiddles or twiddles_inverse)
    const double* wi;
    u32 inverse;
};
struct FftStage {
    using Shared = FftShared;
    using Item = FftItem;
    static constexpr const char* kName = "fft_stage";
    static KASOKU_HD std::size_t words(const Shared&, const Item& it) { return it.p / 2; }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t b) {
        const std::size_t lenh = it.len / 2, j = b % lenh, x = (b / lenh) * it.len + j, y = x + lenh;
        if (s.inverse) rns::slots::inverse_pair(it.re[x], it.im[x], it.re[y], it.im[y], s.wr[lenh + j], s.wi[lenh + j]);
        else rns::slots::forward_pair(it.re[x], it.im[x], it.re[y], it.im[y], s.wr[lenh + j], s.wi[lenh + j]);
    }
    // the points in and out, and the stage's twiddles once
    static KASOKU_HD void cost(const Shared&, const Item& it, std::size_t& bytes, std::size_t&) {
        bytes += 64 * static_cast<std::size_t>(it.p / 2) + 16 * static_cast<std::size_t>(it.len / 2);
    }
};

// The stages of up to kFftTile points, a tile of that many points a block in shared memory (re, then im): an inverse
// transform's last stages (tile points down to 2), a forward one's first (2 up to tile points); the larger stages are
// FftStage launches.
inline constexpr u32 kFftTile = 2048;
KASOKU_HD inline double as_double(u64 w) {
#if defined(__CUDA_ARCH__)
    return __longlong_as_double(static_cast<long long>(w));
#else
    double d;
    std::memcpy(&d, &w, sizeof d);
    return d;
#endif
}
KASOKU_HD inline u64 as_word(double d) {
#if defined(__CUDA_ARCH__)
    return static_cast<u64>(__double_as_longlong(d));
#else
    u64 w;
    std::memcpy(&w, &d, sizeof w);
    return w;
#endif
}
struct FtItem {
    double* re;
    double* im;
    u32 p, pad;
};
struct FtShared {
    const double* wr;
    const double* wi;
    u32 inverse, tile;  // tile: the points of a block, min(p, kFftTile), a power of two
};
struct FftTile {
    using Shared = FtShared;
    using Item = FtItem;
    static constexpr const char* kName = "fft_tile";
    static constexpr u32 kThreads = 256;
    static constexpr u32 kSmemWords = 2 * kFftTile;
    static KASOKU_HD u32 stages(const Shared& s) {
        u32 k = 0;
        while ((2u << k) <= s.tile) ++k;
        return k;
    }
    static KASOKU_HD std::size_t blocks(const Shared& s, const Item& it) { return it.p / s.tile; }
    static KASOKU_HD u32 phases(const Shared& s) { return stages(s) + 2; }  // load, the stages, store
    static KASOKU_HD void phase(const Shared& s, const Item& it, std::size_t block, u32 thread, u32 ph, u64* tile) {
        const std::size_t base = block * s.tile;
        const u32 k = stages(s);
        if (ph == 0) {
            for (u32 w = thread; w < s.tile; w += kThreads) {
                tile[w] = as_word(it.re[base + w]);
                tile[s.tile + w] = as_word(it.im[base + w]);
            }
            return;
        }
        if (ph == k + 1) {
            for (u32 w = thread; w < s.tile; w += kThreads) {
                it.re[base + w] = as_double(tile[w]);
                it.im[base + w] = as_double(tile[s.tile + w]);
            }
            return;
        }
        const u32 len = s.inverse ? s.tile >> (ph - 1) : 2u << (ph - 1), lenh = len / 2;
        for (u32 b = thread; b < s.tile / 2; b += kThreads) {
            const u32 j = b % lenh, x = (b / lenh) * len + j, y = x + lenh;
            double xr = as_double(tile[x]), xi = as_double(tile[s.tile + x]);
            double yr = as_double(tile[y]), yi = as_double(tile[s.tile + y]);
            if (s.inverse) rns::slots::inverse_pair(xr, xi, yr, yi, s.wr[lenh + j], s.wi[lenh + j]);
            else rns::slots::forward_pair(xr, xi, yr, yi, s.wr[lenh + j], s.wi[lenh + j]);
            tile[x] = as_word(xr), tile[s.tile + x] = as_word(xi);
            tile[y] = as_word(yr), tile[s.tile + y] = as_word(yi);
        }
    }
    // the points in and out, and the stages' twiddles once a launch
    static KASOKU_HD std::size_t launch_table_bytes(const Shared& s) { return 16 * static_cast<std::size_t>(s.tile); }
    static KASOKU_HD void cost(const Shared&, const Item& it, std::size_t& bytes, std::size_t&) {
        bytes += 32 * static_cast<std::size_t>(it.p);
    }
};

// Encoding's end: the inverse transform's points (before its bit reversal) times 1 / p, times the scale, rounded half to
// even, as residues over a run of limbs of `words` words each (coefficient form): coefficient stride k is point k's
// real part, stride (k + p) its imaginary part, the others 0.
struct RsItem {
    u64* out;
    u32 prime, limbs;
};
struct RsShared {
    Ring r;
    const double* re;
    const double* im;
    double inv_p, scale;
    u32 p, log_p, stride, words;  // words per limb: 2 p stride
};
struct RoundSlots {
    using Shared = RsShared;
    using Item = RsItem;
    static constexpr const char* kName = "round_slots";
    static KASOKU_HD std::size_t words(const Shared& s, const Item& it) {
        return static_cast<std::size_t>(it.limbs) * s.words;
    }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t w) {
        const std::size_t c = w % s.words;
        const u64 q = s.r.q[it.prime + w / s.words];
        if (c % s.stride) {
            it.out[w] = 0;
            return;
        }
        const std::size_t k = c / s.stride;
        const u32 at = rns::slots::bit_reverse(static_cast<u32>(k % s.p), s.log_p);
        const double x = (k < s.p ? s.re[at] : s.im[at]) * s.inv_p;
#if defined(__CUDA_ARCH__)
        const double v = rint(x * s.scale);
#else
        const double v = std::nearbyint(x * s.scale);
#endif
        it.out[w] = rns::slots::residue_of_integral(v, q);
    }
    static KASOKU_HD void cost(const Shared& s, const Item& it, std::size_t& bytes, std::size_t& mults) {
        bytes += 8 * words(s, it) + 16 * static_cast<std::size_t>(s.p);
        mults += words(s, it) / s.stride;
    }
};

// Decoding's start: coefficient c of the first t limbs at a (n words each) composed into its centered integer, as a
// double over the scale, at the forward transform's bit-reversed place: re for c < n/2, im for the others.
struct CsItem {
    const u64* a;
    double* re;
    double* im;
};
struct CsShared {
    Ring r;
    const u64* Q;  // rns::RnsContext::crt_table(t)
    const u64* half;
    const u64* qhat;
    const u64* qhat_inv;
    const u64* qhat_inv_shoup;
    double inv_scale;
    u32 t, log_slots;
};
struct ComposeSlots {
    using Shared = CsShared;
    using Item = CsItem;
    static constexpr const char* kName = "compose_slots";
    static KASOKU_HD std::size_t words(const Shared& s, const Item&) { return s.r.n; }
    static KASOKU_HD void word(const Shared& s, const Item& it, std::size_t c) {
        u64 r[rns::crt::kMaxWords], x[rns::crt::kMaxWords], tmp[rns::crt::kMaxWords];
        for (u32 i = 0; i < s.t; ++i) r[i] = it.a[i * static_cast<std::size_t>(s.r.n) + c];
        const bool negative =
            rns::crt::centered(r, s.t, s.r.q, s.Q, s.half, s.qhat, s.qhat_inv, s.qhat_inv_shoup, x, tmp);
        const double v = rns::crt::to_double(x, s.t + 1, negative) * s.inv_scale;
        const std::size_t slots = s.r.n / 2;
        const u32 at = rns::slots::bit_reverse(static_cast<u32>(c % slots), s.log_slots);
        // (an if, not a store through `c < slots ? re : im`: GCC 12 at -O1 with -fsanitize=address,undefined stored
        // the second half's values nowhere)
        if (c < slots) it.re[at] = v;
        else it.im[at] = v;
    }
    static KASOKU_HD void cost(const Shared& s, const Item&, std::size_t& bytes, std::size_t& mults) {
        bytes += 8 * static_cast<std::size_t>(s.r.n) * (s.t + 1);
        mults += static_cast<std::size_t>(s.r.n) * s.t * (s.t + 2);
    }
};

}  // namespace kasoku::gpu::kern
