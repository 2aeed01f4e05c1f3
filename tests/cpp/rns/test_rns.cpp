// RNS layer vs big-integer references (GMP): base conversion, rescale, ModDown, ModUp, automorphisms.
#include <gmpxx.h>
#include <gtest/gtest.h>

#include <random>

#include "kasoku/arith/primes.hpp"
#include "kasoku/rns/rns_context.hpp"

using namespace kasoku;
using namespace kasoku::rns;
using arith::u64;

namespace {
mpz_class to_mpz(u64 v) {
    mpz_class r;
    mpz_import(r.get_mpz_t(), 1, -1, sizeof v, 0, 0, &v);
    return r;
}
u64 mod_u64(const mpz_class& x, u64 q) {
    mpz_class r = x % to_mpz(q);
    if (r < 0) r += to_mpz(q);
    u64 v = 0;
    mpz_export(&v, nullptr, -1, sizeof v, 0, 0, r.get_mpz_t());
    return v;
}
// CRT reconstruction of coefficient c of limbs [first, first+count) of a coefficient-form poly.
mpz_class crt(const RnsPoly& a, const RnsContext& ctx, std::size_t first, std::size_t count, std::size_t c,
              mpz_class* modulus_out = nullptr) {
    mpz_class Q = 1;
    for (std::size_t i = 0; i < count; ++i) Q *= to_mpz(ctx.prime(ctx.prime_index(first + i, a.num_q())));
    mpz_class x = 0;
    for (std::size_t i = 0; i < count; ++i) {
        mpz_class qi = to_mpz(ctx.prime(ctx.prime_index(first + i, a.num_q())));
        mpz_class Qi = Q / qi, inv;
        mpz_invert(inv.get_mpz_t(), mpz_class(Qi % qi).get_mpz_t(), qi.get_mpz_t());
        x += to_mpz(a.limb(first + i)[c]) * inv % qi * Qi;
    }
    x %= Q;
    if (modulus_out) *modulus_out = Q;
    return x;
}

struct Fixture {
    std::size_t n = 64;
    RnsContext ctx;
    Fixture(std::size_t nq = 6, std::size_t np = 3, std::size_t alpha = 3)
        : ctx(64, [&] {
              auto q = arith::generate_ntt_primes(60, 1, 64);
              auto r = arith::generate_ntt_primes(40, static_cast<int>(nq - 1), 64);
              q.insert(q.end(), r.begin(), r.end());
              return q;
          }(), arith::generate_ntt_primes(61, static_cast<int>(np), 64), alpha) {}
    RnsPoly random(std::size_t nq, std::size_t np, std::mt19937_64& rng) const {
        RnsPoly a(n, nq, np, false);
        for (std::size_t i = 0; i < a.limbs(); ++i)
            for (std::size_t c = 0; c < n; ++c) a.limb(i)[c] = rng() % ctx.prime(ctx.prime_index(i, nq));
        return a;
    }
};
}  // namespace

TEST(BaseConv, MatchesCrtUpToMultipleOfQ) {
    std::mt19937_64 rng(3);
    for (std::size_t s : {1, 2, 3, 5, 8}) {
        auto src_p = arith::generate_ntt_primes(59, static_cast<int>(s), 64);
        auto dst_p = arith::generate_ntt_primes(45, 4, 64);
        std::vector<arith::Modulus> src, dst;
        for (u64 p : src_p) src.emplace_back(p);
        for (u64 p : dst_p) dst.emplace_back(p);
        BaseConverter conv(src, dst);
        mpz_class Q = 1;
        for (u64 p : src_p) Q *= to_mpz(p);
        const std::size_t n = 32;
        std::vector<std::vector<u64>> x(s, std::vector<u64>(n)), y = x;
        for (std::size_t c = 0; c < n; ++c) {
            mpz_class v;
            if (c == 0) v = 0;
            else if (c == 1) v = Q - 1;  // worst case
            else { gmp_randclass r(gmp_randinit_default); r.seed(c); v = r.get_z_range(Q); }
            for (std::size_t i = 0; i < s; ++i) x[i][c] = mod_u64(v, src_p[i]);
        }
        std::vector<const u64*> xp;
        std::vector<u64*> yp;
        for (std::size_t i = 0; i < s; ++i) { xp.push_back(x[i].data()); yp.push_back(y[i].data()); }
        conv.scale_source(xp.data(), n, yp.data());
        for (std::size_t t = 0; t < dst.size(); ++t) {
            std::vector<u64> out(n);
            conv.convert_to(t, yp.data(), n, out.data());
            for (std::size_t c = 0; c < n; ++c) {
                mpz_class v = 0;
                for (std::size_t i = 0; i < s; ++i) {
                    // exact CRT of the residues
                    mpz_class qi = to_mpz(src_p[i]), Qi = Q / qi, inv;
                    mpz_invert(inv.get_mpz_t(), mpz_class(Qi % qi).get_mpz_t(), qi.get_mpz_t());
                    v += to_mpz(x[i][c]) * inv % qi * Qi;
                }
                v %= Q;
                bool ok = false;
                for (std::size_t e = 0; e < s && !ok; ++e) ok = out[c] == mod_u64(v + e * Q, dst_p[t]);
                ASSERT_TRUE(ok) << "s=" << s << " t=" << t << " c=" << c;
            }
        }
    }
}

TEST(Rns, RescaleIsRoundedDivision) {
    Fixture f;
    std::mt19937_64 rng(4);
    const std::size_t nq = 5;
    RnsPoly a = f.random(nq, 0, rng), orig = a;
    f.ctx.to_ntt(a, 2);
    f.ctx.rescale(a, 2);
    ASSERT_EQ(a.num_q(), nq - 1);
    f.ctx.from_ntt(a, 1);
    for (std::size_t c = 0; c < f.n; ++c) {
        mpz_class Q;
        mpz_class x = crt(orig, f.ctx, 0, nq, c, &Q);
        if (x > Q / 2) x -= Q;  // centered
        mpz_class ql = to_mpz(f.ctx.prime(nq - 1));
        mpz_class expect;  // round(x / q_l)
        mpz_class twice = 2 * x + ql;
        mpz_fdiv_q(expect.get_mpz_t(), twice.get_mpz_t(), mpz_class(2 * ql).get_mpz_t());
        for (std::size_t i = 0; i < nq - 1; ++i)
            ASSERT_EQ(a.limb(i)[c], mod_u64(expect, f.ctx.prime(i))) << "c=" << c << " i=" << i;
    }
}

TEST(Rns, ModDownDividesByP) {
    Fixture f;
    std::mt19937_64 rng(5);
    const std::size_t nq = 4, np = 3;
    for (bool fused : {false, true}) {
        RnsPoly a = f.random(nq, np, rng), orig = a;
        f.ctx.to_ntt(a, 2);
        if (fused) f.ctx.mod_down_rescale(a, 2);
        else f.ctx.mod_down(a, 2);
        const std::size_t out_q = fused ? nq - 1 : nq;
        ASSERT_EQ(a.num_q(), out_q);
        ASSERT_EQ(a.num_p(), 0u);
        f.ctx.from_ntt(a, 1);
        mpz_class P = 1;
        for (u64 p : f.ctx.p_primes()) P *= to_mpz(p);
        if (fused) P *= to_mpz(f.ctx.prime(nq - 1));
        for (std::size_t c = 0; c < f.n; ++c) {
            mpz_class QP;
            mpz_class x = crt(orig, f.ctx, 0, nq + np, c, &QP);
            // exact conversion: the result is round(x / P)
            mpz_class expect, twice = 2 * x + P;
            mpz_fdiv_q(expect.get_mpz_t(), twice.get_mpz_t(), mpz_class(2 * P).get_mpz_t());
            for (std::size_t i = 0; i < out_q; ++i)
                ASSERT_EQ(a.limb(i)[c], mod_u64(expect, f.ctx.prime(i))) << "fused=" << fused << " c=" << c << " i=" << i;
        }
    }
}

TEST(Rns, ModUpExtendsEachDigit) {
    Fixture f(7, 3, 3);  // digits {0,1,2}, {3,4,5}, {6}
    std::mt19937_64 rng(6);
    for (std::size_t nq : {7u, 5u, 2u}) {
        RnsPoly d = f.random(nq, 0, rng), coeff = d;
        f.ctx.to_ntt(d, 1);
        auto dec = f.ctx.decompose(d, 2);
        const std::size_t np = f.ctx.p_count();
        for (std::size_t j = 0; j < f.ctx.digits_at(nq); ++j) {
            const std::size_t begin = j * 3, m = std::min<std::size_t>(3, nq - begin);
            mpz_class Qj = 1;
            for (std::size_t i = 0; i < m; ++i) Qj *= to_mpz(f.ctx.prime(begin + i));
            for (std::size_t limb = 0; limb < nq + np; ++limb) {
                std::vector<u64> out(f.n);
                f.ctx.mod_up_limb(dec, j, limb, out.data());
                const std::size_t idx = f.ctx.prime_index(limb, nq);
                arith::ntt_inverse(out.data(), f.ctx.ntt_tables(idx));
                for (std::size_t c = 0; c < f.n; ++c) {
                    mpz_class x = crt(coeff, f.ctx, begin, m, c);
                    bool ok = false;
                    for (std::size_t e = 0; e < m && !ok; ++e) ok = out[c] == mod_u64(x + e * Qj, f.ctx.prime(idx));
                    ASSERT_TRUE(ok) << "nq=" << nq << " digit=" << j << " limb=" << limb << " c=" << c;
                }
            }
        }
    }
}

TEST(Rns, AutomorphismMatchesCoefficientDefinition) {
    Fixture f(2, 1, 1);
    std::mt19937_64 rng(7);
    RnsPoly a = f.random(2, 0, rng);
    for (u64 g : {u64{5}, u64{25}, u64{2 * 64 - 1}, u64{3}}) {
        // coefficient form: X^i -> X^{g i mod 2n}, with X^n = -1
        RnsPoly expect(f.n, 2, 0, false);
        expect.zero();
        for (std::size_t l = 0; l < 2; ++l) {
            const u64 q = f.ctx.prime(l);
            for (std::size_t i = 0; i < f.n; ++i) {
                std::size_t e = (g * i) % (2 * f.n);
                u64 v = a.limb(l)[i];
                if (e >= f.n) expect.limb(l)[e - f.n] = (q - v) % q;
                else expect.limb(l)[e] = v;
            }
        }
        RnsPoly an = a, out;
        f.ctx.to_ntt(an, 1);
        f.ctx.automorphism(an, g, out, 2);
        f.ctx.from_ntt(out, 1);
        ASSERT_EQ(out, expect) << "g=" << g;
    }
}

// The end of every rotation: ModDown, an addend and the automorphism in one pass, bit for bit as three steps.
TEST(Rns, ModDownGaloisEqualsModDownAddAutomorphism) {
    Fixture f;
    std::mt19937_64 rng(13);
    const std::size_t nq = 4;
    for (u64 g : {u64{1}, u64{5}, u64{2 * 64 - 1}}) {
        for (bool with_addend : {false, true}) {
            RnsPoly a = f.random(nq, 3, rng), c0 = f.random(nq, 0, rng);
            f.ctx.to_ntt(a, 1);
            f.ctx.to_ntt(c0, 1);
            RnsPoly expect = a, got;
            f.ctx.mod_down(expect, 1);
            if (with_addend) f.ctx.add(expect, c0, expect, 1);
            if (g != 1) {
                RnsPoly permuted;
                f.ctx.automorphism(expect, g, permuted, 1);
                expect = permuted;
            }
            f.ctx.mod_down_galois(a, with_addend ? &c0 : nullptr, g, got, 2);
            ASSERT_EQ(got, expect) << "g=" << g << " addend=" << with_addend;
        }
    }
}

TEST(Rns, DivideRoundByFirstSpecialPrimeWithAddend) {
    Fixture f;
    std::mt19937_64 rng(8);
    const std::size_t nq = 4;
    RnsPoly a = f.random(nq, 1, rng), orig = a;
    std::vector<std::int64_t> e(f.n);
    for (auto& x : e) x = static_cast<std::int64_t>(rng() % 41) - 20;
    e[0] = -20;
    e[1] = 20;
    f.ctx.to_ntt(a, 1);
    f.ctx.divide_round_by_p0(a, 2, e.data());
    ASSERT_EQ(a.num_q(), nq);
    ASSERT_EQ(a.num_p(), 0u);
    f.ctx.from_ntt(a, 1);
    const mpz_class p0 = to_mpz(f.ctx.p_primes()[0]);
    for (std::size_t c = 0; c < f.n; ++c) {
        mpz_class QP;
        mpz_class x = crt(orig, f.ctx, 0, nq + 1, c, &QP) + e[c];  // exact integer a + e
        mpz_class expect, twice = 2 * x + p0;                          // round((a + e) / p_0)
        mpz_fdiv_q(expect.get_mpz_t(), twice.get_mpz_t(), mpz_class(2 * p0).get_mpz_t());
        for (std::size_t i = 0; i < nq; ++i) ASSERT_EQ(a.limb(i)[c], mod_u64(expect, f.ctx.prime(i))) << "c=" << c << " i=" << i;
    }
}
