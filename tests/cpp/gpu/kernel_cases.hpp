// Every kernel of src/kasoku/gpu/kernels.hpp against the CPU's arithmetic (arith's scalar kernels, rns::BaseConverter,
// the CPU backend's steps), bit for bit, written once over a "space" that holds the buffers and runs the kernels:
// HostSpace runs them as CPU loops, block by block and phase by phase over a shared-memory tile, as the emulated
// backend does (test_gpu_bodies, every machine); test_gpu_device's space runs them on a CUDA device.
// A Space has: T* put(const std::vector<T>&), std::vector<u64> get(const u64*, words), run<K>(shared, items).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/kernels.hpp"
#include "kasoku/arith/kernels.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/arith/simd.hpp"
#include "kasoku/rns/base_conv.hpp"

namespace kasoku::gpu::test {

using arith::Modulus;
using arith::u64;
using kern::u32;

// The kernels as CPU loops over host vectors.
class HostSpace {
public:
    template <class T>
    T* put(const std::vector<T>& v) {
        store_.emplace_back((v.size() * sizeof(T) + 7) / 8 + 1, 0);
        std::memcpy(store_.back().data(), v.data(), v.size() * sizeof(T));
        return reinterpret_cast<T*>(store_.back().data());
    }
    std::vector<u64> get(const u64* p, std::size_t words) { return std::vector<u64>(p, p + words); }
    template <class K>
    void run(const typename K::Shared& s, const std::vector<typename K::Item>& items) {
        for (const auto& it : items) {
            if constexpr (requires { K::kSmemWords; }) {
                std::vector<u64> tile(K::kSmemWords);
                for (std::size_t b = 0; b < K::blocks(s, it); ++b)
                    for (u32 ph = 0; ph < K::phases(s); ++ph)
                        for (u32 t = 0; t < K::kThreads; ++t) K::phase(s, it, b, t, ph, tile.data());
            } else {
                for (std::size_t w = 0; w < K::words(s, it); ++w) K::word(s, it, w);
            }
        }
    }

private:
    std::vector<std::vector<u64>> store_;
};

// Primes of a case (q-primes, then special ones) with their transforms, and the ring's tables in a space.
struct Primes {
    std::size_t n;
    std::vector<u64> q;
    std::vector<Modulus> m;
    std::vector<std::unique_ptr<arith::NttTables>> ntt;
    std::size_t first_special;
    Primes(std::size_t n_, const std::vector<int>& bits, std::size_t special)
        : n(n_), first_special(bits.size() - special) {
        for (int b : bits) {
            q.push_back(arith::generate_ntt_primes(b, 1, n, q)[0]);
            m.emplace_back(q.back());
            ntt.push_back(std::make_unique<arith::NttTables>(q.back(), n));
        }
    }
    template <class Space>
    kern::Ring ring(Space& sp) const {
        std::vector<u64> fw, fwp, iw, iwp, ninv, ninvp;
        for (const auto& t : ntt) {
            fw.insert(fw.end(), t->root_powers(), t->root_powers() + n);
            fwp.insert(fwp.end(), t->root_shoup(), t->root_shoup() + n);
            iw.insert(iw.end(), t->inv_root_powers(), t->inv_root_powers() + n);
            iwp.insert(iwp.end(), t->inv_root_shoup(), t->inv_root_shoup() + n);
            ninv.push_back(t->n_inv());
            ninvp.push_back(t->n_inv_shoup());
        }
        kern::Ring r{};
        r.q = sp.put(q);
        r.m = sp.put(m);
        r.fw = sp.put(fw);
        r.fwp = sp.put(fwp);
        r.iw = sp.put(iw);
        r.iwp = sp.put(iwp);
        r.ninv = sp.put(ninv);
        r.ninvp = sp.put(ninvp);
        r.n = static_cast<u32>(n);
        r.log_n = static_cast<u32>(std::countr_zero(n));
        r.first_special = static_cast<u32>(first_special);
        return r;
    }
    // `limbs` limbs over primes from `first`, canonical, every 7th word q - 1 (the largest input).
    std::vector<u64> random(std::mt19937_64& rng, std::size_t first, std::size_t limbs) const {
        std::vector<u64> v(limbs * n);
        for (std::size_t w = 0; w < v.size(); ++w) v[w] = w % 7 == 0 ? q[first + w / n] - 1 : rng() % q[first + w / n];
        return v;
    }
};

inline const arith::KernelTable& scalar() { return arith::kernel_table(arith::SimdLevel::scalar); }

template <class Space>
void check_elementwise(Space& sp, std::size_t n) {
    std::mt19937_64 rng(11);
    const Primes P(n, {30, 40, 50, 60, 61}, 0);
    const std::size_t L = P.q.size(), W = L * n;
    const kern::Ring ring = P.ring(sp);
    const auto a = P.random(rng, 0, L), b = P.random(rng, 0, L), c = P.random(rng, 0, L);
    std::vector<u64> k(L), kp(L);
    for (std::size_t l = 0; l < L; ++l) kp[l] = arith::shoup(k[l] = rng() % P.q[l], P.q[l]);
    std::vector<std::uint32_t> perm(n);
    for (std::size_t x = 0; x < n; ++x) perm[x] = static_cast<std::uint32_t>((5 * x + 3) % n);
    u64 *da = sp.put(a), *db = sp.put(b), *dc = sp.put(c), *dk = sp.put(k), *dkp = sp.put(kp),
        *out = sp.put(std::vector<u64>(W));
    const std::uint32_t* dperm = sp.put(perm);
    // two runs (limbs 0-2, 3-4) as the backend makes for q- and special limbs; constants from a table or the pool
    auto items = [&](bool pool) {
        std::vector<kern::EwItem> its(2);
        for (int r = 0; r < 2; ++r) {
            const std::size_t l0 = r == 0 ? 0 : 3;
            kern::EwItem& it = its[r];
            it = {};
            it.out = out + l0 * n;
            it.a = da + l0 * n;
            it.b = db + l0 * n;
            it.c = dc + l0 * n;
            if (!pool) {
                it.k = dk + l0;
                it.kp = dkp + l0;
            }
            it.perm = dperm;
            it.prime = static_cast<u32>(l0);
            it.limbs = r == 0 ? 3 : 2;
            it.pool = static_cast<u32>(2 * l0);
        }
        return its;
    };
    kern::EwShared s{};
    s.r = ring;
    for (std::size_t l = 0; l < L; ++l) {
        s.pool[2 * l] = k[l];
        s.pool[2 * l + 1] = kp[l];
    }
    auto expect = [&](const char* what, auto ref) {
        std::vector<u64> want(W);
        for (std::size_t l = 0; l < L; ++l) ref(l, want.data() + l * n);
        ASSERT_EQ(sp.get(out, W), want) << what << " n=" << n;
    };
    auto at = [&](const std::vector<u64>& v, std::size_t l) { return v.data() + l * n; };
    sp.template run<kern::Ewise<kern::Op::add>>(s, items(false));
    expect("add", [&](std::size_t l, u64* o) { scalar().add(at(a, l), at(b, l), n, P.q[l], o); });
    sp.template run<kern::Ewise<kern::Op::sub>>(s, items(false));
    expect("sub", [&](std::size_t l, u64* o) { scalar().sub(at(a, l), at(b, l), n, P.q[l], o); });
    sp.template run<kern::Ewise<kern::Op::neg>>(s, items(false));
    expect("negate", [&](std::size_t l, u64* o) { scalar().negate(at(a, l), n, P.q[l], o); });
    sp.template run<kern::Ewise<kern::Op::mul>>(s, items(false));
    expect("mul", [&](std::size_t l, u64* o) { scalar().mul(at(a, l), at(b, l), n, P.m[l], o); });
    sp.template run<kern::Ewise<kern::Op::fma>>(s, items(false));
    expect("fma", [&](std::size_t l, u64* o) { scalar().fma(at(a, l), at(b, l), at(c, l), n, P.m[l], o); });
    for (bool pool : {false, true}) {
        sp.template run<kern::Ewise<kern::Op::mul_const>>(s, items(pool));
        expect("mul_const", [&](std::size_t l, u64* o) { scalar().mul_scalar(at(a, l), k[l], kp[l], n, P.q[l], o); });
        sp.template run<kern::Ewise<kern::Op::add_mul_const>>(s, items(pool));
        expect("add_mul_const", [&](std::size_t l, u64* o) {
            std::vector<u64> t(n);
            scalar().mul_scalar(at(b, l), k[l], kp[l], n, P.q[l], t.data());
            scalar().add(at(a, l), t.data(), n, P.q[l], o);
        });
    }
    sp.template run<kern::Ewise<kern::Op::add_const>>(s, items(true));
    expect("add_const", [&](std::size_t l, u64* o) {
        for (std::size_t x = 0; x < n; ++x) o[x] = arith::add_mod(a[l * n + x], k[l], P.q[l]);
    });
    sp.template run<kern::Ewise<kern::Op::permute>>(s, items(false));
    expect("permute", [&](std::size_t l, u64* o) { arith::permute(at(a, l), perm.data(), n, o); });
    sp.template run<kern::Ewise<kern::Op::copy>>(s, items(false));
    expect("copy", [&](std::size_t l, u64* o) { std::copy_n(at(a, l), n, o); });
    sp.template run<kern::Ewise<kern::Op::fill>>(s, items(false));
    expect("fill", [&](std::size_t, u64* o) { std::fill_n(o, n, 0); });

    // the tensor product: d0 = a b, d1 = a c + b b, d2 = b c (a0 = a, a1 = b, b0 = b, b1 = c)
    u64 *d0 = sp.put(std::vector<u64>(W)), *d1 = sp.put(std::vector<u64>(W)), *d2 = sp.put(std::vector<u64>(W));
    kern::RingOnly ts{};
    ts.r = ring;
    sp.template run<kern::Tensor>(ts, {{d0, d1, d2, da, db, db, dc, 0, static_cast<u32>(L)}});
    std::vector<u64> w0(W), w1(W), w2(W);
    for (std::size_t l = 0; l < L; ++l) {
        scalar().mul(at(a, l), at(b, l), n, P.m[l], w0.data() + l * n);
        scalar().mul(at(a, l), at(c, l), n, P.m[l], w1.data() + l * n);
        scalar().fma(at(b, l), at(b, l), w1.data() + l * n, n, P.m[l], w1.data() + l * n);
        scalar().mul(at(b, l), at(c, l), n, P.m[l], w2.data() + l * n);
    }
    ASSERT_EQ(sp.get(d0, W), w0) << "tensor d0";
    ASSERT_EQ(sp.get(d1, W), w1) << "tensor d1";
    ASSERT_EQ(sp.get(d2, W), w2) << "tensor d2";

    // signed coefficients into two runs of limbs: 64-bit (|c| below the smallest prime) and 128-bit (up to 2^126)
    std::vector<std::int64_t> c64(n);
    std::vector<u64> c128(2 * n);
    for (std::size_t x = 0; x < n; ++x) {
        c64[x] = static_cast<std::int64_t>(rng() % (P.q[0] - 1)) - static_cast<std::int64_t>(P.q[0] / 2);
        __int128 v = static_cast<__int128>((static_cast<arith::u128>(rng() >> 2) << 64) | rng());
        if (x % 3 == 0) v = -v;
        if (x == 1) v = static_cast<__int128>(c64[0]);
        c128[2 * x] = static_cast<u64>(v);
        c128[2 * x + 1] = static_cast<u64>(static_cast<arith::u128>(v) >> 64);
    }
    for (bool wide : {false, true}) {
        kern::FsShared fs{};
        fs.r = ring;
        fs.coeffs = wide ? sp.put(c128) : reinterpret_cast<const u64*>(sp.put(c64));
        fs.wide = wide;
        sp.template run<kern::FromSigned>(fs, {{out, 0, 3}, {out + 3 * n, 3, 2}});
        expect(wide ? "from_signed 128" : "from_signed 64", [&](std::size_t l, u64* o) {
            for (std::size_t x = 0; x < n; ++x) {
                const auto v = static_cast<__int128>((static_cast<arith::u128>(c128[2 * x + 1]) << 64) | c128[2 * x]);
                o[x] = wide ? arith::reduce_signed(v, P.m[l]) : arith::signed_residue(c64[x], P.q[l]);
            }
        });
    }
    {  // centered: residues mod q_0 on the device, read in (-q_0/2, q_0/2] (ModRaise), the edges included
        std::vector<u64> r0(n);
        for (std::size_t x = 0; x < n; ++x) r0[x] = rng() % P.q[0];
        r0[0] = 0, r0[1] = P.q[0] / 2, r0[2] = P.q[0] / 2 + 1, r0[3] = P.q[0] - 1;
        kern::FsShared fs{};
        fs.r = ring;
        fs.coeffs = sp.put(r0);
        fs.centered = 1;
        sp.template run<kern::FromSigned>(fs, {{out, 0, 3}, {out + 3 * n, 3, 2}});
        expect("from_signed centered", [&](std::size_t l, u64* o) {
            for (std::size_t x = 0; x < n; ++x) {
                const __int128 v = static_cast<__int128>(r0[x]) - (r0[x] > P.q[0] / 2 ? P.q[0] : 0);
                o[x] = arith::reduce_signed(v, P.m[l]);
            }
        });
    }
}

// The NTT in one or two passes (n <= 4096, or larger), out of place and in place, against arith's transform; the
// inverse with a folded factor; the forward with the exact-division epilogue (addend, permutation).
template <class Space>
void check_ntt(Space& sp, std::size_t n) {
    std::mt19937_64 rng(12);
    const Primes P(n, {30, 40, 50, 60, 61}, 2);
    const std::size_t L = P.q.size(), W = L * n;
    const kern::Ring ring = P.ring(sp);
    const auto x = P.random(rng, 0, L);
    std::vector<u64> fwd = x;
    for (std::size_t l = 0; l < L; ++l) arith::ntt_forward(fwd.data() + l * n, *P.ntt[l]);
    u64* src = sp.put(x);
    u64* dst = sp.put(std::vector<u64>(W));
    // it.src -> it.dst in one or two passes; between them the words live at `mid` (it.dst unless given)
    auto transform = [&](bool forward, const kern::NtItem& it, u64* mid = nullptr) {
        const int passes = kern::ntt_passes(ring.log_n);
        for (int p = 0; p < passes; ++p) {
            kern::NtShared s{};
            s.r = ring;
            s.pass = static_cast<u32>(p);
            s.passes = static_cast<u32>(passes);
            kern::NtItem i = it;
            if (p > 0) i.src = mid ? mid : it.dst;
            if (p + 1 < passes) i.dst = mid ? mid : it.dst;
            if (forward) sp.template run<kern::Ntt<true>>(s, {i});
            else sp.template run<kern::Ntt<false>>(s, {i});
        }
    };
    kern::NtItem it{};
    it.src = src;
    it.dst = dst;
    it.limbs = static_cast<u32>(L);
    transform(true, it);
    ASSERT_EQ(sp.get(dst, W), fwd) << "NTT, n=" << n;
    ASSERT_EQ(sp.get(src, W), x) << "NTT read its input only";
    it.src = dst;
    transform(false, it);  // in place
    ASSERT_EQ(sp.get(dst, W), x) << "INTT, n=" << n;

    // inverse with n^-1 times f_l folded: the CPU's inverse, then times f_l
    std::vector<u64> f(L), fp(L), nf(L), nfp(L);
    for (std::size_t l = 0; l < L; ++l) {
        f[l] = rng() % P.q[l];
        fp[l] = arith::shoup(f[l], P.q[l]);
        nf[l] = arith::mul_mod(f[l], P.ntt[l]->n_inv(), P.m[l]);
        nfp[l] = arith::shoup(nf[l], P.q[l]);
    }
    std::vector<u64> want = fwd;
    for (std::size_t l = 0; l < L; ++l) {
        arith::ntt_inverse(want.data() + l * n, *P.ntt[l]);
        scalar().mul_scalar(want.data() + l * n, f[l], fp[l], n, P.q[l], want.data() + l * n);
    }
    it = {};
    it.src = sp.put(fwd);
    it.dst = dst;
    it.limbs = static_cast<u32>(L);
    it.sc = sp.put(nf);
    it.scp = sp.put(nfp);
    transform(false, it);
    ASSERT_EQ(sp.get(dst, W), want) << "INTT with a factor, n=" << n;

    // forward + exact division: out[perm_inv[x]] = (a - NTT(t)) inv + add, on the first 3 limbs
    const std::size_t K = 3;
    const auto t = P.random(rng, 0, K), a = P.random(rng, 0, K), add = P.random(rng, 0, K);
    std::vector<u64> inv(K), invp(K);
    for (std::size_t l = 0; l < K; ++l) invp[l] = arith::shoup(inv[l] = rng() % P.q[l], P.q[l]);
    std::vector<std::uint32_t> perm(n), perm_inv(n);
    for (std::size_t k = 0; k < n; ++k) perm[k] = static_cast<std::uint32_t>((3 * k + 1) % n);
    for (std::size_t k = 0; k < n; ++k) perm_inv[perm[k]] = static_cast<std::uint32_t>(k);
    want.assign(K * n, 0);
    for (std::size_t l = 0; l < K; ++l) {
        std::vector<u64> tl(t.begin() + l * n, t.begin() + (l + 1) * n), r(n);
        arith::ntt_forward(tl.data(), *P.ntt[l]);
        for (std::size_t k = 0; k < n; ++k)
            r[k] =
                arith::add_mod(arith::mul_shoup(arith::sub_mod(a[l * n + k], tl[k], P.q[l]), inv[l], invp[l], P.q[l]),
                               add[l * n + k], P.q[l]);
        arith::permute(r.data(), perm.data(), n, want.data() + l * n);
    }
    it = {};
    it.src = sp.put(t);
    it.dst = sp.put(std::vector<u64>(K * n));
    u64* mid = const_cast<u64*>(it.src);
    it.a = sp.put(a);
    it.add = sp.put(add);
    it.inv = sp.put(inv);
    it.invp = sp.put(invp);
    it.perm_inv = sp.put(perm_inv);
    it.limbs = static_cast<u32>(K);
    transform(true, it, mid);  // the passes before the last work in place on t, the last writes the result
    ASSERT_EQ(sp.get(it.dst, K * n), want) << "NTT with the exact division and a permutation, n=" << n;
}

// ModUp's conversion of one digit and ModDown's exact conversion against rns::BaseConverter.
template <class Space>
void check_conversions(Space& sp, std::size_t n) {
    std::mt19937_64 rng(13);
    // q0..q5, p0, p1: digit [2, 4) extended to every prime; the special primes converted exactly to the q-primes
    const Primes P(n, {60, 40, 40, 40, 40, 50, 61, 60}, 2);
    const std::size_t nq = 6, np = 2, all = nq + np, begin = 2, s = 2;
    const kern::Ring ring = P.ring(sp);
    std::vector<Modulus> src(P.m.begin() + begin, P.m.begin() + begin + s);
    const rns::BaseConverter up(src, P.m);
    auto y = P.random(rng, begin, s);  // scaled sources (any residues)
    const auto own = P.random(rng, begin, s);
    std::vector<const u64*> yp = {y.data(), y.data() + n};
    std::vector<u64> want(all * n);
    for (std::size_t t = 0; t < all; ++t) {
        if (t >= begin && t < begin + s) std::copy_n(own.data() + (t - begin) * n, n, want.data() + t * n);
        else up.convert_to(t, yp.data(), n, want.data() + t * n);
    }
    u64* dst = sp.put(std::vector<u64>(all * n));
    kern::CuShared cs{};
    cs.r = ring;
    cs.nq = static_cast<u32>(nq);
    cs.np = static_cast<u32>(np);
    sp.template run<kern::ConvertUp>(
        cs, {{sp.put(y), sp.put(own), dst, sp.put(up.factors()), static_cast<u32>(s), static_cast<u32>(begin)}});
    ASSERT_EQ(sp.get(dst, all * n), want) << "ModUp conversion, n=" << n;

    std::vector<Modulus> special(P.m.begin() + nq, P.m.end()), qs(P.m.begin(), P.m.begin() + nq);
    const rns::BaseConverter down(special, qs);
    auto z = P.random(rng, nq, np);
    std::vector<const u64*> zp = {z.data(), z.data() + n};
    std::vector<std::uint8_t> v(n);
    down.overflow_count(zp.data(), n, v.data());
    want.assign(nq * n, 0);
    for (std::size_t t = 0; t < nq; ++t) down.convert_to(t, zp.data(), n, want.data() + t * n, v.data());
    u64* out = sp.put(std::vector<u64>(nq * n));
    kern::RingOnly ds{};
    ds.r = ring;
    sp.template run<kern::ConvertDown>(
        ds, {{sp.put(z), out, sp.put(down.factors()), sp.put(down.q_multiples()), sp.put(down.inverse_primes()),
              static_cast<u32>(np), static_cast<u32>(nq)}});
    ASSERT_EQ(sp.get(out, nq * n), want) << "exact conversion, n=" << n;
}

// Inner products (two terms, one permuted; c0; accumulation), rounding by the last limb, sums of products and the
// linear combination against scalar references.
template <class Space>
void check_products(Space& sp, std::size_t n) {
    std::mt19937_64 rng(14);
    const Primes P(n, {40, 40, 40, 60, 61}, 2);  // q0..q2, p0, p1; keys over every prime
    const std::size_t nq = 3, np = 2, L = nq + np, D = 3;
    const kern::Ring ring = P.ring(sp);
    // The operands over q0, q1, p0, p1 (limb q2 dropped): the keys' special limbs then sit one limb further on.
    const std::size_t oq = 2, W = (oq + np) * n;
    auto operand = [&] {
        auto v = P.random(rng, 0, L);
        v.erase(v.begin() + static_cast<std::ptrdiff_t>(oq * n), v.begin() + static_cast<std::ptrdiff_t>(nq * n));
        return v;
    };
    std::vector<std::vector<u64>> d, kb, ka;
    for (std::size_t j = 0; j < D; ++j) d.push_back(operand());
    for (std::size_t j = 0; j < 2 * D; ++j) {
        kb.push_back(P.random(rng, 0, L));
        ka.push_back(P.random(rng, 0, L));
    }
    const auto c0 = P.random(rng, 0, oq), old_b = operand(), old_a = operand(), old_c = P.random(rng, 0, oq);
    std::vector<std::uint32_t> perm(n);
    for (std::size_t k = 0; k < n; ++k) perm[k] = static_cast<std::uint32_t>((7 * k + 2) % n);
    for (bool accumulate : {false, true}) {
        kern::DtShared s{};
        s.r = ring;
        s.nq = static_cast<u32>(oq);
        s.np = static_cast<u32>(np);
        s.digits = static_cast<u32>(D);
        s.terms = 2;
        s.key_nq[0] = s.key_nq[1] = static_cast<u32>(nq);
        s.accumulate = accumulate;
        s.with_c0 = 1;
        s.perm[1] = sp.put(perm);
        kern::DtItem it{};
        for (std::size_t j = 0; j < D; ++j) {
            it.d[j] = sp.put(d[j]);
            for (std::size_t e = 0; e < 2; ++e) {
                s.kb[e][j] = sp.put(kb[e * D + j]);
                s.ka[e][j] = sp.put(ka[e * D + j]);
            }
        }
        it.b = sp.put(old_b);
        it.a = sp.put(old_a);
        it.c0 = sp.put(c0);
        it.c0_out = sp.put(old_c);
        sp.template run<kern::Dot>(s, {it});
        std::vector<u64> wb(W), wa(W), wc(oq * n);
        for (std::size_t w = 0; w < W; ++w) {
            const std::size_t t = w / n, k = w % n, prime = t < oq ? t : nq + (t - oq);  // also the key's limb
            const Modulus& m = P.m[prime];
            u64 rb = accumulate ? old_b[w] : 0, ra = accumulate ? old_a[w] : 0,
                rc = accumulate && t < oq ? old_c[w] : 0;
            for (std::size_t e = 0; e < 2; ++e) {
                const std::size_t kk = e == 1 ? perm[k] : k, x = t * n + kk, y = prime * n + kk;
                for (std::size_t j = 0; j < D; ++j) {
                    rb = arith::add_mod(rb, arith::mul_mod(d[j][x], kb[e * D + j][y], m), m.value);
                    ra = arith::add_mod(ra, arith::mul_mod(d[j][x], ka[e * D + j][y], m), m.value);
                }
                if (t < oq) rc = arith::add_mod(rc, c0[x], m.value);
            }
            wb[w] = rb;
            wa[w] = ra;
            if (t < oq) wc[w] = rc;
        }
        ASSERT_EQ(sp.get(it.b, W), wb) << "inner product b, accumulate=" << accumulate;
        ASSERT_EQ(sp.get(it.a, W), wa) << "inner product a, accumulate=" << accumulate;
        ASSERT_EQ(sp.get(it.c0_out, oq * n), wc) << "inner product c0, accumulate=" << accumulate;
    }

    // rounding division by the last limb's prime r (here p1), with and without an addend: the correction limbs
    const u64 r = P.q.back();
    const auto last = P.random(rng, L - 1, 1);
    std::vector<std::int64_t> e(n);
    for (auto& x : e) x = static_cast<std::int64_t>(rng() % 41) - 20;
    std::vector<u64> half(nq);
    for (std::size_t l = 0; l < nq; ++l) half[l] = (r >> 1) % P.q[l];
    for (bool with_addend : {false, true}) {
        std::vector<u64> want(nq * n);
        for (std::size_t c = 0; c < n; ++c) {
            u64 v = last[c];
            if (with_addend) v = arith::add_mod(v, arith::signed_residue(e[c], r), r);
            v = arith::add_mod(v, r >> 1, r);
            for (std::size_t l = 0; l < nq; ++l) {
                u64 t = arith::sub_mod(arith::reduce_64(v, P.m[l]), half[l], P.q[l]);
                if (with_addend) t = arith::sub_mod(t, arith::signed_residue(e[c], P.q[l]), P.q[l]);
                want[l * n + c] = t;
            }
        }
        u64* out = sp.put(std::vector<u64>(nq * n));
        kern::RingOnly rs{};
        rs.r = ring;
        sp.template run<kern::RoundLast>(
            rs, {{sp.put(last), with_addend ? sp.put(e) : nullptr, out, sp.put(half), r, static_cast<u32>(nq), 0}});
        ASSERT_EQ(sp.get(out, nq * n), want) << "rounding correction, addend=" << with_addend;
    }

    // sums of products over 3 terms (accumulating; the last plaintext a subring one of n / 8 words per limb, its
    // words repeated in blocks of 8: to_subring's output) and a linear combination of 3 terms, on the q-limbs
    const std::size_t T = 3, QW = nq * n;
    std::vector<std::vector<u64>> xs, ys;
    for (std::size_t i = 0; i < T; ++i) {
        xs.push_back(P.random(rng, 0, nq));
        ys.push_back(P.random(rng, 0, nq));
    }
    for (std::size_t w = 0; w < QW; ++w) ys[T - 1][w] = ys[T - 1][w & ~std::size_t{7}];
    u64* sub = sp.put(std::vector<u64>(QW / 8));
    kern::SubShared subs{};
    subs.r = ring;
    subs.shift = 3;
    sp.template run<kern::Subring>(subs, {{sub, sp.put(ys[T - 1]), static_cast<u32>(nq), 0}});
    {
        std::vector<u64> want(QW / 8);
        for (std::size_t w = 0; w < QW / 8; ++w) want[w] = ys[T - 1][8 * w];
        ASSERT_EQ(sp.get(sub, QW / 8), want) << "to_subring";
    }
    const auto acc = P.random(rng, 0, nq);
    kern::SpShared ss{};
    ss.r = ring;
    ss.terms = static_cast<u32>(T);
    ss.accumulate = 1;
    ss.yshift[T - 1] = 3;
    kern::SpItem si{};
    si.out = sp.put(acc);
    for (std::size_t i = 0; i < T; ++i) {
        si.x[i] = sp.put(xs[i]);
        si.y[i] = i == T - 1 ? sub : sp.put(ys[i]);
    }
    si.limbs = static_cast<u32>(nq);
    sp.template run<kern::SumProducts>(ss, {si});
    std::vector<u64> want = acc;
    for (std::size_t l = 0; l < nq; ++l)
        for (std::size_t i = 0; i < T; ++i)
            scalar().fma(xs[i].data() + l * n, ys[i].data() + l * n, want.data() + l * n, n, P.m[l],
                         want.data() + l * n);
    ASSERT_EQ(sp.get(si.out, QW), want) << "sum of products";

    kern::LcShared ls{};
    ls.r = ring;
    ls.terms = static_cast<u32>(T);
    for (std::size_t i = 0; i < T; ++i) {
        ls.x[i] = si.x[i];
        for (std::size_t l = 0; l < nq; ++l) ls.f[i * nq + l] = rng() % P.q[l];
    }
    u64* lout = sp.put(std::vector<u64>(QW));
    sp.template run<kern::LinearCombination>(ls, {{lout, static_cast<u32>(nq), 0}});
    for (std::size_t l = 0; l < nq; ++l) {
        std::vector<const u64*> src;
        std::vector<u64> f;
        for (std::size_t i = 0; i < T; ++i) {
            src.push_back(xs[i].data() + l * n);
            f.push_back(ls.f[i * nq + l]);
        }
        scalar().dot_const(src.data(), f.data(), T, n, P.m[l], want.data() + l * n, nullptr, nullptr);
    }
    ASSERT_EQ(sp.get(lout, QW), want) << "linear combination";
}

}  // namespace kasoku::gpu::test
