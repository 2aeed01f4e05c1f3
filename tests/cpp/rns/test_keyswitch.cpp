// Key switching (rns::KeySwitcher and the backend's key-switching primitives): the fused and split paths bit for bit
// against each other and against per-coefficient references.
#include <gtest/gtest.h>

#include <random>

#include "kasoku/rns/backend.hpp"
#include "kasoku/rns/keyswitch.hpp"
#include "kasoku/support/error.hpp"
#include "rns_fixture.hpp"

using namespace kasoku;
using namespace kasoku::rns;
using namespace kasoku::rns::test;

// The inner product is written once: the fused key switch, the hoisted inner product and a per-coefficient reference
// agree bit for bit, and the permuted sum form equals the automorphisms of the separate products.
TEST(KeySwitch, FusedHoistedAndReferenceInnerProductsAgree) {
    for (std::size_t alpha : {1u, 2u, 3u}) {
        Fixture f(5, 3, alpha);
        std::mt19937_64 rng(16 + alpha);
        const KeySwitcher ks(*f.be);
        const GadgetKey k1 = f.random_key(rng), k2 = f.random_key(rng);
        for (std::size_t nq : {5u, 3u, 1u}) {
            const RnsPoly d = f.random(nq, 0, rng, true), c0 = f.random(nq, 0, rng, true);
            const std::vector<RnsPoly> digits = f.be->mod_up(d, 2);
            const LazyPolys fused = ks.key_switch(d, k1, 2), hoisted = ks.inner_product(digits, k1, 1);
            ASSERT_EQ(fused.b, hoisted.b) << "alpha " << alpha << " nq " << nq;
            ASSERT_EQ(fused.a, hoisted.a);
            // reference: sum_j digit_j * key_j, coefficient by coefficient
            std::vector<Limbs> hd;
            for (const auto& x : digits) hd.push_back(f.host(x));
            const Limbs hb = f.host(hoisted.b);
            for (std::size_t t = 0; t < nq + 3; ++t) {
                const std::size_t kl = t < nq ? t : f.ring->q_count() + (t - nq);
                const arith::Modulus& m = f.ring->modulus(kl);
                std::vector<Limbs> key;
                for (const auto& kb : k1.b) key.push_back(f.host(kb));
                for (std::size_t c = 0; c < f.n; ++c) {
                    u64 s = 0;
                    for (std::size_t j = 0; j < digits.size(); ++j)
                        s = arith::add_mod(s, arith::mul_mod(hd[j][t][c], key[j][kl][c], m), m.value);
                    ASSERT_EQ(hb[t][c], s) << "t=" << t << " c=" << c;
                }
            }
            // sum form with automorphisms (and identity) vs the separate products permuted and added
            const std::vector<u64> gs = {5, 2 * 64 - 1};
            const LazyPolys sum = ks.inner_product(digits, {{&k1, gs[0]}, {&k2, gs[1]}, {&k1, 1}}, c0, 2);
            RnsPoly eb, ea, ec, t;
            const LazyPolys p2 = ks.inner_product(digits, k2, 1);
            f.be->automorphism(hoisted.b, gs[0], eb, 1);
            f.be->automorphism(p2.b, gs[1], t, 1);
            f.be->add(eb, t, eb, 1);
            f.be->add(eb, hoisted.b, eb, 1);
            f.be->automorphism(hoisted.a, gs[0], ea, 1);
            f.be->automorphism(p2.a, gs[1], t, 1);
            f.be->add(ea, t, ea, 1);
            f.be->add(ea, hoisted.a, ea, 1);
            f.be->automorphism(c0, gs[0], ec, 1);
            f.be->automorphism(c0, gs[1], t, 1);
            f.be->add(ec, t, ec, 1);
            f.be->add(ec, c0, ec, 1);
            ASSERT_EQ(sum.b, eb);
            ASSERT_EQ(sum.a, ea);
            ASSERT_EQ(sum.c0, ec);
        }
    }
}

// The baby steps and their plaintext sums in one call give the bits of each inner product alone and each group's
// sum of products: more terms than a batch of the CPU's pass, terms in several groups and in none, automorphisms and
// the identity, subring and full plaintexts, every level, 1 and 2 threads.
TEST(KeySwitch, InnerProductSumsAreTheSeparateProductsSummed) {
    for (std::size_t alpha : {1u, 3u}) {
        Fixture f(5, 3, alpha);
        std::mt19937_64 rng(40 + alpha);
        const KeySwitcher ks(*f.be);
        const GadgetKey k1 = f.random_key(rng), k2 = f.random_key(rng);
        const std::vector<KeyTerm> terms = {{&k1, 5}, {&k2, 2 * 64 - 1}, {&k1, 1}, {&k2, 25},
                                            {&k1, 3}, {&k2, 125},        {&k1, 7}};
        for (std::size_t nq : {5u, 2u}) {
            const RnsPoly d = f.random(nq, 0, rng, true), c0 = f.random(nq, 0, rng, true);
            const std::vector<RnsPoly> digits = f.be->mod_up(d, 2);
            std::vector<RnsPoly> plains;
            for (int i = 0; i < 8; ++i) {
                RnsPoly y = f.random(nq, 3, rng, true);
                if (i % 3 == 1) {  // a subring plaintext (16 words a limb)
                    RnsPoly sub;
                    f.be->to_subring(y, 16, sub, 1);
                    y = std::move(sub);
                }
                plains.push_back(std::move(y));
            }
            // term 6 is in no group; term 0 in three
            const std::vector<std::vector<ProductTerm>> groups = {
                {{0, &plains[0]}, {1, &plains[1]}, {2, &plains[2]}, {3, &plains[3]}, {4, &plains[4]}, {5, &plains[5]}},
                {{5, &plains[6]}},
                {{0, &plains[7]}, {4, &plains[1]}, {0, &plains[2]}}};
            std::vector<LazyPolys> want;
            for (const auto& g : groups) {
                std::vector<LazyPolys> products;
                for (const ProductTerm& e : g) products.push_back(ks.inner_product(digits, {terms[e.term]}, c0, 1));
                std::vector<const LazyPolys*> xs;
                std::vector<const RnsPoly*> ys;
                for (std::size_t i = 0; i < g.size(); ++i) xs.push_back(&products[i]), ys.push_back(g[i].plain);
                want.push_back(ks.sum_of_products(xs, ys, 1));
            }
            for (int threads : {1, 2}) {
                const std::vector<LazyPolys> got = ks.inner_product_sums(digits, terms, c0, groups, threads);
                ASSERT_EQ(got.size(), groups.size());
                for (std::size_t j = 0; j < groups.size(); ++j) {
                    EXPECT_EQ(got[j].c0, want[j].c0) << "alpha " << alpha << " nq " << nq << " group " << j;
                    EXPECT_EQ(got[j].b, want[j].b) << "alpha " << alpha << " nq " << nq << " group " << j;
                    EXPECT_EQ(got[j].a, want[j].a) << "alpha " << alpha << " nq " << nq << " group " << j;
                }
            }
            // refused: no group, an empty group, an index past the terms, a plaintext of another level, an output
            // that is an input
            EXPECT_THROW(ks.inner_product_sums(digits, terms, c0, {}, 1), InternalError);
            EXPECT_THROW(ks.inner_product_sums(digits, terms, c0, {{}}, 1), InternalError);
            EXPECT_THROW(ks.inner_product_sums(digits, terms, c0, {{{7, &plains[0]}}}, 1), InternalError);
            const RnsPoly other = f.random(nq == 5 ? 2 : 5, 3, rng, true);
            EXPECT_THROW(ks.inner_product_sums(digits, terms, c0, {{{0, &other}}}, 1), InternalError);
            RnsPoly b, a;
            RnsPoly c0_copy = c0;
            EXPECT_THROW(f.be->inner_product_sums(digits, terms, c0_copy, {{{0, &plains[0]}}}, {{&c0_copy, &b, &a}}, 1),
                         InternalError);
        }
    }
}

// Steps 1 to 3 in one call (the CPU backend's limb-by-limb pipeline) against key_switch and mod_down / mod_down_rescale:
// the same bits, with and without addends and automorphism, at every level, with a key over a prefix of P (key_switch's
// other use), and the operand's own polynomials as outputs.
TEST(KeySwitch, SwitchModDownEqualsItsSteps) {
    for (std::size_t alpha : {1u, 2u, 3u}) {
        Fixture f(5, 3, alpha);
        std::mt19937_64 rng(30 + alpha);
        const KeySwitcher ks(*f.be);
        const GadgetKey key = f.random_key(rng);
        GadgetKey prefix;  // over Q * p_0
        for (std::size_t j = 0; j < key.b.size(); ++j) {
            prefix.b.push_back(f.random(f.ring->q_count(), 1, rng, true));
            prefix.a.push_back(f.random(f.ring->q_count(), 1, rng, true));
        }
        const u64 g = 5;
        for (std::size_t nq : {5u, 3u, 2u, 1u}) {
            const RnsPoly d = f.random(nq, 0, rng, true), c0 = f.random(nq, 0, rng, true),
                          c1 = f.random(nq, 0, rng, true);
            for (const GadgetKey* k : std::vector<const GadgetKey*>{&key, &prefix})
                for (bool rescale : {false, true}) {
                    if (rescale && (nq < 2 || k == &prefix)) continue;
                    for (int adds = 0; adds < 3; ++adds) {
                        const RnsPoly* a0 = adds > 0 ? &c0 : nullptr;
                        const RnsPoly* a1 = adds > 1 ? &c1 : nullptr;
                        const u64 ge = rescale ? 1 : (adds == 1 ? g : 1);
                        RnsPoly e0, e1, o0, o1;
                        LazyPolys x = ks.key_switch(d, *k, 1);
                        if (rescale) ks.mod_down_rescale(std::move(x), a0, a1, e0, e1, 1);
                        else ks.mod_down(x, a0, a1, ge, e0, e1, 1);
                        f.be->key_switch_mod_down(d, *k, a0, a1, ge, rescale, o0, o1, 2);
                        ASSERT_EQ(o0, e0) << "alpha " << alpha << " nq " << nq << " rescale " << rescale << " adds "
                                          << adds << " prefix " << (k == &prefix);
                        ASSERT_EQ(o1, e1);
                    }
                }
            RnsPoly o0 = c0, o1 = c1, e0, e1;  // outputs that are the addends
            ks.mod_down(ks.key_switch(d, key, 1), &c0, &c1, g, e0, e1, 1);
            f.be->key_switch_mod_down(d, key, &o0, &o1, g, false, o0, o1, 2);
            ASSERT_EQ(o0, e0);
            ASSERT_EQ(o1, e1);
        }
        RnsPoly o0, o1;
        const RnsPoly d = f.random(1, 0, rng, true);
        EXPECT_THROW(f.be->key_switch_mod_down(d, key, nullptr, nullptr, 1, true, o0, o1, 1),
                     InternalError);  // no q_l to drop
        EXPECT_THROW(f.be->key_switch_mod_down(f.random(3, 0, rng, true), key, nullptr, nullptr, g, true, o0, o1, 1),
                     InternalError);  // a rescale with an automorphism
        EXPECT_THROW(f.be->key_switch_mod_down(f.random(3, 0, rng, true), key, nullptr, nullptr, 1, false, o0, o0, 1),
                     InternalError);
    }
}

// The sum form in one call against its three steps: the same bits, one key or several, with and without g = 1.
TEST(KeySwitch, SwitchSumModDownEqualsItsSteps) {
    for (std::size_t alpha : {1u, 2u, 3u}) {
        Fixture f(5, 3, alpha);
        std::mt19937_64 rng(40 + alpha);
        const KeySwitcher ks(*f.be);
        const GadgetKey k1 = f.random_key(rng), k2 = f.random_key(rng);
        const std::vector<std::vector<KeyTerm>> sums = {
            {{&k1, 5}}, {{&k1, 1}}, {{&k1, 5}, {&k2, 25}}, {{&k2, 1}, {&k1, 125}, {&k2, 5}}};
        for (std::size_t nq : {5u, 3u, 1u})
            for (const auto& terms : sums) {
                const RnsPoly d = f.random(nq, 0, rng, true), c0 = f.random(nq, 0, rng, true);
                RnsPoly e0, e1, o0, o1;
                ks.mod_down(ks.inner_product(f.be->mod_up(d, 1), terms, c0, 1), nullptr, nullptr, 1, e0, e1, 1);
                f.be->key_switch_sum_mod_down(d, terms, c0, o0, o1, 2);
                ASSERT_EQ(o0, e0) << "alpha " << alpha << " nq " << nq << " terms " << terms.size();
                ASSERT_EQ(o1, e1);
            }
        RnsPoly o0, o1;
        const RnsPoly d = f.random(3, 0, rng, true);
        EXPECT_THROW(f.be->key_switch_sum_mod_down(d, {}, d, o0, o1, 1), InternalError);
        EXPECT_THROW(f.be->key_switch_sum_mod_down(d, {{&k1, 5}}, f.random(2, 0, rng, true), o0, o1, 1), InternalError);
    }
}

// Step 3 variants of the key-switching unit against the backend steps they fuse.
TEST(KeySwitch, ModDownVariantsEqualTheirSteps) {
    Fixture f(5, 3, 3);
    std::mt19937_64 rng(20);
    const KeySwitcher ks(*f.be);
    const std::size_t nq = 4;
    LazyPolys x;
    x.b = f.random(nq, 3, rng, true);
    x.a = f.random(nq, 3, rng, true);
    const RnsPoly c0 = f.random(nq, 0, rng, true), c1 = f.random(nq, 0, rng, true);
    RnsPoly o0, o1, e0, e1;
    ks.mod_down(x, &c0, &c1, 5, o0, o1, 2);
    RnsPoly unused;
    f.be->mod_down(x.b, x.b, &c0, nullptr, 5, e0, unused, 1);  // each polynomial on its own
    f.be->mod_down(x.a, x.a, &c1, nullptr, 5, e1, unused, 1);
    EXPECT_EQ(o0, e0);
    EXPECT_EQ(o1, e1);
    // x.c0 and add0 together are added first
    LazyPolys y = x;
    y.c0 = c1;
    ks.mod_down(y, &c0, nullptr, 1, o0, o1, 2);
    RnsPoly both;
    f.be->add(c1, c0, both, 1);
    f.be->mod_down(x.b, x.b, &both, nullptr, 1, e0, unused, 1);
    EXPECT_EQ(o0, e0);
    // with rescale: round((b + P (c0 + add0)) / (P q_l))
    RnsPoly b2 = x.b, a2 = x.a;
    f.be->add_times_p(c1, b2, 1);
    f.be->add_times_p(c0, b2, 1);
    f.be->add_times_p(c1, a2, 1);
    RnsPoly b3 = b2, a3 = a2;
    f.be->mod_down_rescale(b2, b3, nullptr, nullptr, 1);  // each polynomial on its own
    f.be->mod_down_rescale(a2, a3, nullptr, nullptr, 1);
    ks.mod_down_rescale(std::move(y), &c0, &c1, o0, o1, 2);
    EXPECT_EQ(o0, b2);
    EXPECT_EQ(o1, a2);
    EXPECT_EQ(o0.num_q(), nq - 1);
}
