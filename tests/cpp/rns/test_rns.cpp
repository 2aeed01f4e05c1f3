// RNS layer: the CPU backend against big-integer references (GMP) for base conversion, rescale, ModDown and
// ModUp, against coefficient definitions for automorphisms, and against simple per-coefficient references for the
// fused pipelines (plaintext sums, Horner). Key switching: test_keyswitch.cpp.
#include <gmpxx.h>
#include <gtest/gtest.h>

#include <random>

#include "kasoku/arith/primes.hpp"
#include "kasoku/rns/backend.hpp"
#include "kasoku/rns/base_conv.hpp"
#include "kasoku/rns/keyswitch.hpp"
#include "kasoku/support/aligned.hpp"
#include "kasoku/support/error.hpp"
#include "rns_fixture.hpp"

using namespace kasoku;
using namespace kasoku::rns;
using namespace kasoku::rns::test;

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
            else {
                gmp_randclass r(gmp_randinit_default);
                r.seed(c);
                v = r.get_z_range(Q);
            }
            for (std::size_t i = 0; i < s; ++i) x[i][c] = mod_u64(v, src_p[i]);
        }
        std::vector<const u64*> xp;
        std::vector<u64*> yp;
        for (std::size_t i = 0; i < s; ++i) {
            xp.push_back(x[i].data());
            yp.push_back(y[i].data());
        }
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

TEST(RnsPoly, StorageIsOwnedAndCopied) {
    Fixture f;
    std::mt19937_64 rng(2);
    RnsPoly a = f.random(4, 2, rng), b = a;
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.memory(), f.be->memory());
    const Limbs h = f.host(a);
    b.truncate(2, 1);  // keeps q-limbs 0, 1 and the first special limb
    const Limbs t = f.host(b);
    ASSERT_EQ(t.size(), 3u);
    EXPECT_EQ(t[0], h[0]);
    EXPECT_EQ(t[1], h[1]);
    EXPECT_EQ(t[2], h[4]);
    EXPECT_EQ(f.host(a), h);  // the copy was deep
    RnsPoly moved = std::move(a);
    EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_EQ(f.host(moved), h);
    moved.zero();
    EXPECT_EQ(f.host(moved)[3], std::vector<u64>(f.n, 0));
    EXPECT_THROW(moved.truncate(5), InternalError);
}

// Backend::copy against RnsPoly's own copy and truncate (the reference), on 1, 2 and 3 threads.
TEST(Backend, CopyTakesTheLeadingLimbsAndTheSpecialOnes) {
    Fixture f;
    std::mt19937_64 rng(3);
    const RnsPoly a = f.random(5, 2, rng, true);
    for (int T : {1, 2, 3})
        for (std::size_t nq : {5u, 3u, 1u, 0u}) {
            RnsPoly want = a, got;
            if (nq < 5) want.truncate(nq, 2);
            f.be->copy(a, got, T, nq == 5 ? Backend::npos : nq);
            ASSERT_EQ(got, want) << T << " threads, " << nq << " q-limbs";
            EXPECT_TRUE(got.ntt_form());
        }
    RnsPoly out = f.random(2, 0, rng, false);  // reshaped, as every output
    f.be->copy(a, out, 2, 4);
    EXPECT_EQ(out.num_q(), 4u);
    EXPECT_EQ(out.num_p(), 2u);
    EXPECT_THROW(f.be->copy(a, out, 2, 6), InternalError);  // more limbs than a has
    RnsPoly self = a;
    EXPECT_THROW(f.be->copy(self, self, 2), InternalError);
    EXPECT_THROW(f.be->copy(RnsPoly(), out, 2), InternalError);
}

TEST(Backend, ShapeMismatchesAreInternalErrors) {
    Fixture f;
    std::mt19937_64 rng(9);
    RnsPoly a = f.random(3, 0, rng, true), b = f.random(2, 0, rng, true), out;
    EXPECT_THROW(f.be->add(a, b, out, 1), InternalError);
    EXPECT_THROW(f.be->mul(a, f.random(3, 0, rng, false), out, 1), InternalError);
    EXPECT_THROW(f.be->rescale(b = f.random(1, 0, rng, true), 1), InternalError);
    RnsPoly out2;
    EXPECT_THROW(f.be->mod_down(a, a, nullptr, nullptr, 1, out, out2, 1), InternalError);  // no special limbs
    EXPECT_THROW(f.be->add(RnsPoly(), a, out, 1), InternalError);
    // an empty or foreign output is reshaped, not an error
    f.be->add(a, a, out, 1);
    EXPECT_EQ(out.num_q(), 3u);
}

TEST(Backend, ElementWiseAndSignedInputsMatchScalarReferences) {
    Fixture f;
    std::mt19937_64 rng(10);
    const std::size_t nq = 4, np = 2;
    RnsPoly a = f.random(nq, np, rng, true), b = f.random(nq, np, rng, true), c = f.random(nq, np, rng, true);
    RnsPoly sum, diff, neg, prod, fma;
    f.be->add(a, b, sum, 2);
    f.be->sub(a, b, diff, 2);
    f.be->negate(a, neg, 2);
    f.be->mul(a, b, prod, 2);
    f.be->fma(a, b, c, fma, 2);
    std::vector<u64> res(f.ring->q_count() + f.ring->p_count());
    for (auto& x : res) x = rng();
    RnsPoly mc, ac;
    f.be->mul_constant(a, res, mc, 2);
    f.be->add_constant(a, res, ac, 2);
    const Limbs ha = f.host(a), hb = f.host(b), hc = f.host(c);
    const Limbs hs = f.host(sum), hd = f.host(diff), hn = f.host(neg), hp = f.host(prod), hf = f.host(fma),
                hm = f.host(mc), hac = f.host(ac);
    for (std::size_t i = 0; i < nq + np; ++i) {
        const std::size_t idx = f.ring->prime_index(i, nq);
        const arith::Modulus& m = f.ring->modulus(idx);
        const u64 q = m.value, w = res[idx] % q;
        for (std::size_t k = 0; k < f.n; ++k) {
            ASSERT_EQ(hs[i][k], arith::add_mod(ha[i][k], hb[i][k], q));
            ASSERT_EQ(hd[i][k], arith::sub_mod(ha[i][k], hb[i][k], q));
            ASSERT_EQ(hn[i][k], arith::neg_mod(ha[i][k], q));
            ASSERT_EQ(hp[i][k], arith::mul_mod(ha[i][k], hb[i][k], m));
            ASSERT_EQ(hf[i][k], arith::add_mod(arith::mul_mod(ha[i][k], hb[i][k], m), hc[i][k], q));
            ASSERT_EQ(hm[i][k], arith::mul_mod(ha[i][k], w, m));
            ASSERT_EQ(hac[i][k], arith::add_mod(ha[i][k], w, q));
        }
    }
    // linear combination on the first 3 q-limbs of terms with 4 q-limbs (and special ones) and 3 q-limbs
    {
        const RnsPoly d = f.random(3, 0, rng, true);
        std::vector<std::vector<u64>> cs(3, std::vector<u64>(res.size()));
        for (std::size_t idx = 0; idx < res.size(); ++idx) {
            cs[0][idx] = f.ring->prime(idx) - 1;  // the largest residue
            cs[1][idx] = rng() % f.ring->prime(idx);
            cs[2][idx] = rng() % f.ring->prime(idx);
        }
        RnsPoly lc;
        f.be->linear_combination({&a, &b, &d}, cs, 3, lc, 2);
        ASSERT_EQ(lc.num_q(), 3u);
        ASSERT_EQ(lc.num_p(), 0u);
        const Limbs hdd = f.host(d), hl = f.host(lc);
        for (std::size_t i = 0; i < 3; ++i) {
            const arith::Modulus& m = f.ring->modulus(i);
            for (std::size_t k = 0; k < f.n; ++k) {
                u64 want = arith::mul_mod(ha[i][k], cs[0][i], m);
                want = arith::add_mod(want, arith::mul_mod(hb[i][k], cs[1][i], m), m.value);
                want = arith::add_mod(want, arith::mul_mod(hdd[i][k], cs[2][i], m), m.value);
                ASSERT_EQ(hl[i][k], want);
            }
        }
        EXPECT_THROW(f.be->linear_combination({&a, &d}, cs, 4, lc, 2), InternalError);    // d has 3 q-limbs
        EXPECT_THROW(f.be->linear_combination({&a}, cs, 3, lc, 2), InternalError);        // one constant per term
        EXPECT_THROW(f.be->linear_combination({&lc}, {cs[0]}, 3, lc, 2), InternalError);  // out is a term
    }
    // signed coefficients, 64- and 128-bit, in coefficient form and transformed
    std::vector<std::int64_t> small(f.n);
    std::vector<__int128> wide(f.n);
    for (std::size_t k = 0; k < f.n; ++k) {
        small[k] = static_cast<std::int64_t>(rng() % 41) - 20;
        wide[k] = (static_cast<__int128>(static_cast<std::int64_t>(rng())) << 50) + static_cast<__int128>(rng() % 1000);
    }
    RnsPoly s = f.be->poly(nq, np, false), w = f.be->poly(nq, 0, false), sn = f.be->poly(nq, np, true);
    f.be->from_signed(small.data(), s, 2);
    f.be->from_signed(wide.data(), w, 2);
    f.be->from_signed(small.data(), sn, 2);
    const Limbs hsm = f.host(s), hw = f.host(w);
    for (std::size_t i = 0; i < nq + np; ++i)
        for (std::size_t k = 0; k < f.n; ++k) {
            ASSERT_EQ(hsm[i][k], signed_residue(small[k], f.prime(i, nq)));
            if (i < nq) ASSERT_EQ(hw[i][k], arith::reduce_signed(wide[k], f.ring->modulus(i)));
        }
    f.be->to_ntt(s, 1);
    EXPECT_EQ(s, sn);
}

// The CPU backend shares work over its threads by limbs, pieces of limbs (when the limbs do not share evenly) and the
// halves of a pair: the same bits on 1, 2 and 3 threads, for odd and even limb counts (n = 64: pieces of 32, or of
// 24, 24 and 16 words).
TEST(Backend, EveryThreadCountGivesTheSameBits) {
    Fixture f(6, 3, 3);
    std::mt19937_64 rng(12);
    const KeySwitcher ks(*f.be);
    const GadgetKey key = f.random_key(rng);
    for (std::size_t nq : {3u, 4u, 5u}) {
        const RnsPoly a = f.random(nq, 0, rng, true), b = f.random(nq, 0, rng, true), c = f.random(nq, 0, rng, true),
                      e = f.random(nq, 0, rng, true), wide = f.random(nq, 3, rng, true),
                      wide2 = f.random(nq, 3, rng, true);
        std::vector<u64> res(f.ring->q_count() + f.ring->p_count());
        for (auto& x : res) x = rng();
        std::vector<std::vector<u64>> cs(2, std::vector<u64>(res.size()));
        for (auto& v : cs)
            for (std::size_t idx = 0; idx < v.size(); ++idx) v[idx] = rng() % f.ring->prime(idx);
        // every result of `threads` threads, in order
        const auto run = [&](int T) {
            std::vector<RnsPoly> out(19);
            f.be->add(a, b, out[0], T);
            f.be->sub(a, b, out[1], T);
            f.be->negate(a, out[2], T);
            f.be->mul(a, b, out[3], T);
            f.be->fma(a, b, c, out[4], T);
            f.be->mul_constant(a, res, out[5], T);
            f.be->add_constant(a, res, out[6], T);
            f.be->tensor(a, b, c, e, out[7], out[8], out[9], T);
            f.be->linear_combination({&a, &b}, cs, nq, out[10], T);
            out[11] = f.be->poly(nq, 0, true);
            f.be->horner({&a, &b, &c}, e, out[11], T);
            std::vector<RnsPoly> pair = {a, b};
            f.be->rescale(pair, T);  // both at once
            out[12] = pair[0];
            out[13] = pair[1];
            f.be->mod_down(wide, wide2, &a, &b, 5, out[14], out[15], T);
            RnsPoly w0 = wide, w1 = wide2;
            f.be->mod_down_rescale(w0, w1, &a, nullptr, T);
            out[16] = w0;
            out[17] = w1;
            out[18] = a;
            f.be->rescale(out[18], T);
            const std::vector<RnsPoly> digits = f.be->mod_up(a, T);
            for (const RnsPoly& d : digits) out.push_back(d);
            RnsPoly ib, ia, ic;  // the hoisted inner product, its limbs handed out one at a time
            f.be->inner_product(digits, {{&key, 5}, {&key, 1}}, ib, ia, &c, &ic, T);
            for (RnsPoly* x : {&ib, &ia, &ic}) out.push_back(*x);
            RnsPoly k0, k1, r0, r1, s0, s1, w0b = f.be->poly(nq, 3, true), w1b = f.be->poly(nq, 3, true);
            f.be->key_switch_mod_down(a, key, &b, &c, 5, false, k0, k1, T);
            f.be->key_switch_mod_down(a, key, &b, &c, 1, true, r0, r1, T);
            f.be->key_switch_sum_mod_down(a, {{&key, 5}, {&key, 1}}, c, s0, s1, T);
            f.be->key_switch(a, key, w0b, w1b, T);
            for (RnsPoly* x : {&k0, &k1, &r0, &r1, &s0, &s1, &w0b, &w1b}) out.push_back(*x);
            return out;
        };
        const std::vector<RnsPoly> one = run(1);
        ASSERT_EQ(one[12], one[18]) << "a rescaled alone and in a pair";
        for (int T : {2, 3}) {
            const std::vector<RnsPoly> many = run(T);
            ASSERT_EQ(many.size(), one.size());
            for (std::size_t i = 0; i < one.size(); ++i)
                ASSERT_EQ(many[i], one[i]) << "nq " << nq << ", " << T << " threads, result " << i;
        }
    }
}

TEST(Rns, RescaleIsRoundedDivision) {
    Fixture f;
    std::mt19937_64 rng(4);
    const std::size_t nq = 5;
    RnsPoly a = f.random(nq, 0, rng), orig = a;
    f.be->to_ntt(a, 2);
    f.be->rescale(a, 2);
    ASSERT_EQ(a.num_q(), nq - 1);
    f.be->from_ntt(a, 1);
    const Limbs h = f.host(a);
    for (std::size_t c = 0; c < f.n; ++c) {
        mpz_class Q;
        mpz_class x = f.crt(orig, 0, nq, c, &Q);
        if (x > Q / 2) x -= Q;  // centered
        mpz_class ql = to_mpz(f.ring->prime(nq - 1));
        mpz_class expect;  // round(x / q_l)
        mpz_class twice = 2 * x + ql;
        mpz_fdiv_q(expect.get_mpz_t(), twice.get_mpz_t(), mpz_class(2 * ql).get_mpz_t());
        for (std::size_t i = 0; i < nq - 1; ++i)
            ASSERT_EQ(h[i][c], mod_u64(expect, f.ring->prime(i))) << "c=" << c << " i=" << i;
    }
}

// With an addend e over Q_l: mod_down gives round(x / P) + e, mod_down_rescale round((x + P e) / (P q_l)) (the CPU
// backend adds P e to limb l alone and e q_l^-1 to the kept limbs).
TEST(Rns, ModDownDividesByP) {
    Fixture f;
    std::mt19937_64 rng(5);
    const std::size_t nq = 4, np = 3;
    for (bool fused : {false, true})
        for (bool added : {false, true}) {
            RnsPoly a = f.random(nq, np, rng), orig = a, e = f.random(nq, 0, rng), e_coeffs = e;
            f.be->to_ntt(a, 2);
            f.be->to_ntt(e, 1);
            RnsPoly other = a;  // the pair's second polynomial
            const RnsPoly* add = added ? &e : nullptr;
            if (fused) f.be->mod_down_rescale(a, other, add, add, 2);
            else f.be->mod_down(a, other, add, add, 1, a, other, 2);
            const std::size_t out_q = fused ? nq - 1 : nq;
            ASSERT_EQ(a.num_q(), out_q);
            ASSERT_EQ(a.num_p(), 0u);
            f.be->from_ntt(a, 1);
            const Limbs h = f.host(a);
            mpz_class P = 1;
            for (u64 p : f.ring->p_primes()) P *= to_mpz(p);
            if (fused) P *= to_mpz(f.ring->prime(nq - 1));
            const Limbs he = f.host(e_coeffs);
            for (std::size_t c = 0; c < f.n; ++c) {
                mpz_class QP;
                mpz_class x = f.crt(orig, 0, nq + np, c, &QP);
                mpz_class ev = f.crt(e_coeffs, 0, nq, c);
                if (added && fused) x += P / to_mpz(f.ring->prime(nq - 1)) * ev;  // x + P e
                // exact conversion: the result is round(x / P)
                mpz_class expect, twice = 2 * x + P;
                mpz_fdiv_q(expect.get_mpz_t(), twice.get_mpz_t(), mpz_class(2 * P).get_mpz_t());
                for (std::size_t i = 0; i < out_q; ++i) {
                    const u64 qi = f.ring->prime(i), want = mod_u64(expect, qi);
                    ASSERT_EQ(h[i][c], added && !fused ? (want + he[i][c]) % qi : want)
                        << "fused=" << fused << " added=" << added << " c=" << c << " i=" << i;
                }
            }
        }
}

TEST(Rns, ModUpExtendsEachDigit) {
    Fixture f(7, 3, 3);  // digits {0,1,2}, {3,4,5}, {6}
    std::mt19937_64 rng(6);
    for (std::size_t nq : {7u, 5u, 2u}) {
        RnsPoly d = f.random(nq, 0, rng), coeff = d;
        f.be->to_ntt(d, 1);
        std::vector<RnsPoly> digits = f.be->mod_up(d, 2);
        const std::size_t np = f.ring->p_count();
        ASSERT_EQ(digits.size(), f.ring->digits_at(nq));
        for (std::size_t j = 0; j < digits.size(); ++j) {
            const std::size_t begin = j * 3, m = std::min<std::size_t>(3, nq - begin);
            mpz_class Qj = 1;
            for (std::size_t i = 0; i < m; ++i) Qj *= to_mpz(f.ring->prime(begin + i));
            ASSERT_EQ(digits[j].num_q(), nq);
            ASSERT_EQ(digits[j].num_p(), np);
            RnsPoly dj = digits[j];
            f.be->from_ntt(dj, 1);
            const Limbs h = f.host(dj);
            for (std::size_t limb = 0; limb < nq + np; ++limb) {
                const u64 q = f.prime(limb, nq);
                for (std::size_t c = 0; c < f.n; ++c) {
                    mpz_class x = f.crt(coeff, begin, m, c);
                    bool ok = false;
                    for (std::size_t e = 0; e < m && !ok; ++e) ok = h[limb][c] == mod_u64(x + e * Qj, q);
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
    const Limbs ha = f.host(a);
    for (u64 g : {u64{5}, u64{25}, u64{2 * 64 - 1}, u64{3}}) {
        // coefficient form: X^i -> X^{g i mod 2n}, with X^n = -1
        Limbs expect(2, std::vector<u64>(f.n, 0));
        for (std::size_t l = 0; l < 2; ++l) {
            const u64 q = f.ring->prime(l);
            for (std::size_t i = 0; i < f.n; ++i) {
                std::size_t e = (g * i) % (2 * f.n);
                u64 v = ha[l][i];
                if (e >= f.n) expect[l][e - f.n] = (q - v) % q;
                else expect[l][e] = v;
            }
        }
        RnsPoly an = a, out;
        f.be->to_ntt(an, 1);
        f.be->automorphism(an, g, out, 2);
        f.be->from_ntt(out, 1);
        ASSERT_EQ(f.host(out), expect) << "g=" << g;
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
            f.be->to_ntt(a, 1);
            f.be->to_ntt(c0, 1);
            RnsPoly expect, got;
            RnsPoly unused;
            f.be->mod_down(a, a, nullptr, nullptr, 1, expect, unused, 1);
            if (with_addend) f.be->add(expect, c0, expect, 1);
            if (g != 1) {
                RnsPoly permuted;
                f.be->automorphism(expect, g, permuted, 1);
                expect = permuted;
            }
            f.be->mod_down(a, a, with_addend ? &c0 : nullptr, nullptr, g, got, unused, 2);
            ASSERT_EQ(got, expect) << "g=" << g << " addend=" << with_addend;
        }
    }
}

TEST(Rns, DivideRoundByFirstSpecialPrimeWithAddend) {
    Fixture f;
    std::mt19937_64 rng(8);
    const std::size_t nq = 4;
    RnsPoly a = f.random(nq, 1, rng), orig = a;
    rns::SmallDraw draw;
    draw.seed[0] = 8;
    std::vector<std::int64_t> e(f.n);
    rns::draw_small(draw, f.n, e.data());  // what the backend draws: a Gaussian
    f.be->to_ntt(a, 1);
    f.be->divide_round_by_p0(a, &draw, 2);
    ASSERT_EQ(a.num_q(), nq);
    ASSERT_EQ(a.num_p(), 0u);
    f.be->from_ntt(a, 1);
    const Limbs h = f.host(a);
    const mpz_class p0 = to_mpz(f.ring->p_primes()[0]);
    for (std::size_t c = 0; c < f.n; ++c) {
        mpz_class QP;
        mpz_class x = f.crt(orig, 0, nq + 1, c, &QP) + e[c];  // exact integer a + e
        mpz_class expect, twice = 2 * x + p0;                 // round((a + e) / p_0)
        mpz_fdiv_q(expect.get_mpz_t(), twice.get_mpz_t(), mpz_class(2 * p0).get_mpz_t());
        for (std::size_t i = 0; i < nq; ++i)
            ASSERT_EQ(h[i][c], mod_u64(expect, f.ring->prime(i))) << "c=" << c << " i=" << i;
    }
}

TEST(Rns, AddTimesPOnALimbRange) {
    Fixture f;
    std::mt19937_64 rng(14);
    const std::size_t nq = 5;
    RnsPoly d = f.random(nq, 3, rng, true), x = f.random(nq, 3, rng, true);
    const Limbs hd = f.host(d), hx = f.host(x);
    f.be->add_times_p(d, x, 1, 1, 2);  // q-limbs 1 and 2 only
    const Limbs got = f.host(x);
    for (std::size_t i = 0; i < nq + 3; ++i) {
        const arith::Modulus& m = f.ring->modulus(f.ring->prime_index(i, nq));
        u64 p_mod = 1;
        for (u64 p : f.ring->p_primes()) p_mod = arith::mul_mod(p_mod, p % m.value, m);
        for (std::size_t c = 0; c < f.n; ++c) {
            const u64 want =
                (i == 1 || i == 2) ? arith::add_mod(hx[i][c], arith::mul_mod(hd[i][c], p_mod, m), m.value) : hx[i][c];
            ASSERT_EQ(got[i][c], want) << "limb " << i;
        }
    }
}

// A polynomial of the subring Z[X^f] has NTT words that repeat in blocks of f; to_subring keeps one word per block,
// and a plaintext sum reads it as the whole polynomial.
TEST(Backend, SubringPolynomialsAreKeptInOneWordPerBlock) {
    Fixture f;
    std::mt19937_64 rng(16);
    const std::size_t nq = 3, np = 2, fold = 4, n_sub = f.n / fold;
    std::vector<std::int64_t> coeff(f.n, 0);
    for (std::size_t c = 0; c < f.n; c += fold) coeff[c] = static_cast<std::int64_t>(rng() % 2001) - 1000;
    RnsPoly full = f.be->poly(nq, np, true);
    f.be->from_signed(coeff.data(), full, 1);
    const Limbs h = f.host(full);
    for (std::size_t i = 0; i < nq + np; ++i)
        for (std::size_t w = 0; w < f.n; ++w) ASSERT_EQ(h[i][w], h[i][w - w % fold]) << "limb " << i << " word " << w;
    RnsPoly sub;
    f.be->to_subring(full, n_sub, sub, 1);
    EXPECT_EQ(sub.n(), n_sub);
    EXPECT_EQ(sub.num_q(), nq);
    EXPECT_EQ(sub.num_p(), np);
    EXPECT_TRUE(sub.ntt_form());
    // the same words from the n_sub coefficients alone (a transform of n_sub points), in 128-bit form
    std::vector<__int128> wide(n_sub);
    for (std::size_t j = 0; j < n_sub; ++j) wide[j] = coeff[j * fold];
    for (int threads : {1, 2}) {
        RnsPoly direct(f.be->memory(), n_sub, nq, np, true);
        f.be->from_signed_subring(wide.data(), direct, threads);
        EXPECT_EQ(direct, sub);
    }
    // as the plaintext of a sum, alone and beside a full one, accumulating or not, on 1 and 2 threads
    RnsPoly x0 = f.random(nq, np, rng, true), x1 = f.random(nq, np, rng, true), y1 = f.random(nq, np, rng, true);
    for (int threads : {1, 2})
        for (bool acc : {false, true}) {
            RnsPoly want = x1, got = x1;
            f.be->sum_of_products({{&x0}, {&x1}}, {&full, &y1}, {&want}, acc, threads);
            f.be->sum_of_products({{&x0}, {&x1}}, {&sub, &y1}, {&got}, acc, threads);
            EXPECT_EQ(f.host(got), f.host(want)) << "accumulate " << acc;
        }
    // sizes that are not powers of two, coefficient form, the input as output
    RnsPoly bad;
    EXPECT_THROW(f.be->to_subring(full, 3 * n_sub / 4, bad, 1), InternalError);
    EXPECT_THROW(f.be->to_subring(full, 2 * f.n, bad, 1), InternalError);
    EXPECT_THROW(f.be->to_subring(f.random(nq, np, rng, false), n_sub, bad, 1), InternalError);
    EXPECT_THROW(f.be->to_subring(full, n_sub, full, 1), InternalError);
}

// A subring polynomial from its coefficients, through the SIMD transform with the subring's tables from 16 points and
// the scalar one below: the words to_subring keeps of the whole polynomial (the seam's reference), at every size, for
// coefficients of one word and of two.
TEST(Backend, SubringEncodingGivesTheFullRingsWords) {
    Fixture f;
    std::mt19937_64 rng(17);
    const std::size_t nq = 3, np = 2;
    for (std::size_t n_sub = 2; n_sub <= f.n; n_sub *= 2) {
        std::vector<__int128> coeff(n_sub), spread(f.n, 0);
        for (std::size_t j = 0; j < n_sub; ++j) {
            coeff[j] = static_cast<__int128>(rng() % 2001) - 1000;
            if (j % 3 == 0) coeff[j] *= static_cast<__int128>(rng() >> 1) << 8;  // beyond 64 bits
            spread[j * (f.n / n_sub)] = coeff[j];
        }
        RnsPoly full = f.be->poly(nq, np, true), want;
        f.be->from_signed(spread.data(), full, 1);
        f.be->to_subring(full, n_sub, want, 1);
        for (int threads : {1, 2}) {
            RnsPoly got(f.be->memory(), n_sub, nq, np, true);
            f.be->from_signed_subring(coeff.data(), got, threads);
            EXPECT_EQ(got, want) << "n_sub " << n_sub << ", threads " << threads;
        }
    }
}

// Plaintext sums and the decryption phase against per-coefficient references.
TEST(Backend, SumOfProductsAndHornerMatchReferences) {
    Fixture f;
    std::mt19937_64 rng(15);
    const std::size_t nq = 3, np = 3;
    std::vector<RnsPoly> c0s, bs, pts;
    for (int i = 0; i < 3; ++i) {
        c0s.push_back(f.random(nq, 0, rng, true));
        bs.push_back(f.random(nq, np, rng, true));
        pts.push_back(f.random(nq, np, rng, true));
    }
    std::vector<std::vector<const RnsPoly*>> x;
    std::vector<const RnsPoly*> y;
    for (int i = 0; i < 3; ++i) {
        x.push_back({&c0s[i], &bs[i]});
        y.push_back(&pts[i]);
    }
    RnsPoly out0, out1;
    f.be->sum_of_products(x, y, {&out0, &out1}, false, 2);
    RnsPoly acc0 = out0, acc1 = out1;
    f.be->sum_of_products(x, y, {&acc0, &acc1}, true, 2);  // twice the sum
    ASSERT_EQ(out0.num_p(), 0u);
    ASSERT_EQ(out1.num_p(), np);
    const Limbs h0 = f.host(out0), h1 = f.host(out1), a0 = f.host(acc0), a1 = f.host(acc1);
    std::vector<Limbs> hc, hb, hp;
    for (int i = 0; i < 3; ++i) {
        hc.push_back(f.host(c0s[i]));
        hb.push_back(f.host(bs[i]));
        hp.push_back(f.host(pts[i]));
    }
    for (std::size_t t = 0; t < nq + np; ++t) {
        const arith::Modulus& m = f.ring->modulus(f.ring->prime_index(t, nq));
        for (std::size_t c = 0; c < f.n; ++c) {
            u64 s0 = 0, s1 = 0;
            for (int i = 0; i < 3; ++i) {
                if (t < nq) s0 = arith::add_mod(s0, arith::mul_mod(hc[i][t][c], hp[i][t][c], m), m.value);
                s1 = arith::add_mod(s1, arith::mul_mod(hb[i][t][c], hp[i][t][c], m), m.value);
            }
            if (t < nq) {
                ASSERT_EQ(h0[t][c], s0);
                ASSERT_EQ(a0[t][c], arith::add_mod(s0, s0, m.value));
            }
            ASSERT_EQ(h1[t][c], s1);
            ASSERT_EQ(a1[t][c], arith::add_mod(s1, s1, m.value));
        }
    }
    // horner on the first two limbs: c0 + s (c1 + s c2)
    RnsPoly s = f.random(nq, np, rng, true), ph = f.be->poly(2, 0, true);
    f.be->horner({&c0s[0], &c0s[1], &c0s[2]}, s, ph, 2);
    const Limbs hph = f.host(ph), hs = f.host(s);
    for (std::size_t t = 0; t < 2; ++t) {
        const arith::Modulus& m = f.ring->modulus(t);
        for (std::size_t c = 0; c < f.n; ++c) {
            u64 v = arith::add_mod(hc[1][t][c], arith::mul_mod(hs[t][c], hc[2][t][c], m), m.value);
            v = arith::add_mod(hc[0][t][c], arith::mul_mod(hs[t][c], v, m), m.value);
            ASSERT_EQ(hph[t][c], v);
        }
    }
}

// The per-thread block pool (support/memory.cpp): a block of whole huge pages serves any request within its span once
// freed (a polynomial a few limbs larger or smaller, a level apart), so that a bootstrap's levels reuse each other's
// memory instead of faulting in fresh pages. Skipped exactly where the pool is bypassed (asan_or_tsan: AddressSanitizer
// or ThreadSanitizer); every other build, the release build and UndefinedBehaviorSanitizer's alone among them, runs it.
TEST(BlockPool, ReusesAFreedBlockForRequestsWithinItsSpan) {
    if (kasoku::detail::asan_or_tsan())
        GTEST_SKIP() << "this build has AddressSanitizer or ThreadSanitizer, under which the block pool is bypassed "
                        "(every block goes back to the allocator at once, support/memory.cpp), so there is no pooled "
                        "block to reuse; the release build runs this test";
    const std::size_t mib = std::size_t{1} << 20;
    void* a = kasoku::detail::pool_allocate(9 * mib / 2);  // 4.5 MiB: a span of 6 MiB
    kasoku::detail::pool_free(a, 9 * mib / 2);
    void* b = kasoku::detail::pool_allocate(5 * mib);  // within the same span
    EXPECT_EQ(a, b);
    kasoku::detail::pool_free(b, 5 * mib);
    void* c = kasoku::detail::pool_allocate(7 * mib);  // past it: another block
    EXPECT_NE(c, b);
    kasoku::detail::pool_free(c, 7 * mib);
}
