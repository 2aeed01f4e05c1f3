// Multiparty CKKS: collective keys (CKG, RKG, GKG) that evaluate as single-party keys do, collective decryption with
// smudging noise, public-key switching to a receiver, t-out-of-N thresholds, and the checks that bind each share to
// its context, session, party, protocol and object.
#include "kasoku/mp/multiparty.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>

#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/support/error.hpp"
#include "test_env.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using kasoku::ckks::test::cvec;
using kasoku::ckks::test::precision_bits;
using kasoku::ckks::test::research_params;

namespace {

// N = 2^10, 55-bit scale (the smudged decryption needs room), 2 levels, two digits.
ContextPtr make_context() {
    Parameters p = research_params(10, 60, 55, 2, 60, 2);
    p.dnum = 2;
    return Context::create(p, 2);
}

cvec random_values(std::size_t n, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    cvec v(n);
    for (auto& x : v) x = {u(rng), 0.0};
    return v;
}

struct Parties {
    ContextPtr ctx;
    mp::Session session;
    std::vector<std::unique_ptr<mp::Party>> parties;
    PublicKey pk;
    Parties(ContextPtr c, std::uint32_t n, std::uint32_t t = 0)
        : ctx(std::move(c)), session(mp::Session::random(n, t)) {
        for (std::uint32_t i = 1; i <= n; ++i) parties.push_back(std::make_unique<mp::Party>(ctx, session, i));
        std::vector<mp::Share> shares;
        for (auto& p : parties) shares.push_back(p->public_key_share());
        pk = mp::aggregate_public_key(ctx, session, mp::pointers_to(shares));
    }
    std::shared_ptr<const EvaluationKeys> evaluation_keys(const std::vector<std::uint64_t>& galois) {
        std::vector<mp::Share> r1, r2;
        for (auto& p : parties) r1.push_back(p->relin_round1());
        const mp::Share sum = mp::aggregate_relin_round1(ctx, session, mp::pointers_to(r1));
        for (auto& p : parties) r2.push_back(p->relin_round2(sum));
        std::vector<std::pair<std::uint64_t, SwitchKey>> gk;
        for (std::uint64_t g : galois) {
            std::vector<mp::Share> gs;
            for (auto& p : parties) gs.push_back(p->galois_key_share(g));
            gk.emplace_back(g, mp::aggregate_galois_key(ctx, session, g, mp::pointers_to(gs)));
        }
        return std::make_shared<const EvaluationKeys>(mp::evaluation_keys(
            ctx, session, mp::aggregate_relin_key(ctx, session, sum, mp::pointers_to(r2)), std::move(gk)));
    }
    Ciphertext encrypt(const cvec& v) const {
        return Encryptor(ctx).encrypt(Encoder(ctx).encode(v, ctx->default_scale(), ctx->user_level()), pk);
    }
    cvec decrypt(const Ciphertext& ct, const std::vector<std::uint32_t>& group = {}) const {
        std::vector<mp::Share> shares;
        for (auto& p : parties)
            if (group.empty() || std::count(group.begin(), group.end(), p->id()))
                shares.push_back(p->decryption_share(ct, {}, group));
        return mp::decrypt(ctx, session, ct, mp::pointers_to(shares));
    }
};

template <class F>
void expect_parameter_error(F&& f, const std::string& part) {
    try {
        f();
        ADD_FAILURE() << "no ParameterError (expected one mentioning \"" << part << "\")";
    } catch (const ParameterError& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

}  // namespace

TEST(Multiparty, CollectiveKeysEvaluateAndDecryptTogether) {
    Parties ps(make_context(), 3);
    const ContextPtr& ctx = ps.ctx;
    const std::uint64_t g1 = ctx->galois_element(1);
    Evaluator ev(ctx, ps.evaluation_keys({g1}));
    const cvec x = random_values(ctx->slots(), 1), y = random_values(ctx->slots(), 2);
    const Ciphertext a = ps.encrypt(x), b = ps.encrypt(y);
    EXPECT_EQ(a.key_id, ps.session.key_id());
    cvec prod(x.size()), rot(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        prod[i] = x[i] * y[i];
        rot[i] = x[(i + 1) % x.size()];
    }
    // The smudging leaves about log2(scale / (sigma sqrt(3 n))) bits (a slot's standard deviation; the worst of 512
    // slots is 2-3 bits below); the ciphertexts' own noise is far smaller.
    const double left = mp::decryption_precision_bits(*ctx, ps.session, {}, a.scale, 3);
    EXPECT_GT(left, 12.0);
    for (const auto& [ct, want] :
         {std::pair{a, x}, std::pair{ev.multiply(a, b), prod}, std::pair{ev.rotate(a, 1), rot}}) {
        const double bits = precision_bits(ps.decrypt(ct), want);
        EXPECT_GT(bits, left - 4.0);
        EXPECT_LT(bits, left + 1.0);  // the flooding is there: without it these would be 30+ bits
    }
    // Without smudging (statistical_security = 0 and a tiny bound) the same decryption keeps the ciphertext's bits.
    std::vector<mp::Share> plain;
    const mp::Smudging none{.statistical_security = 0, .queries = 1, .noise_bound = 1.0};
    for (auto& p : ps.parties) plain.push_back(p->decryption_share(a, none));
    EXPECT_GT(precision_bits(mp::decrypt(ctx, ps.session, a, mp::pointers_to(plain)), x), 30.0);
}

TEST(Multiparty, PublicKeySwitchingHandsAResultToOneReceiver) {
    Parties ps(make_context(), 3);
    const ContextPtr& ctx = ps.ctx;
    KeyGenerator kg(ctx);
    const SecretKey receiver = kg.secret_key();
    const PublicKey receiver_pk = kg.public_key(receiver);
    const cvec x = random_values(ctx->slots(), 3);
    const Ciphertext a = ps.encrypt(x);
    std::vector<mp::Share> shares;
    for (auto& p : ps.parties) shares.push_back(p->key_switch_share(a, receiver_pk));
    const Ciphertext mine = mp::key_switch(ctx, ps.session, a, receiver_pk, mp::pointers_to(shares));
    EXPECT_EQ(mine.key_id, receiver.key_id());
    const double left = mp::decryption_precision_bits(*ctx, ps.session, {}, a.scale, 3);
    EXPECT_GT(precision_bits(Decryptor(ctx).decrypt(mine, receiver), x), left - 4.0);
    // Shares for another receiver do not combine for this one.
    const PublicKey other = kg.public_key(kg.secret_key());
    expect_parameter_error([&] { mp::key_switch(ctx, ps.session, a, other, mp::pointers_to(shares)); },
                           "another ciphertext or receiver");
}

TEST(Multiparty, AnyTOfNDecryptAndFewerCannot) {
    Parties ps(make_context(), 4, 2);
    // Each party deals Shamir shares of its secret, one to each party.
    std::vector<std::vector<mp::Share>> to(4);
    for (auto& p : ps.parties)
        for (mp::Share& s : p->shamir_shares()) to[s.tag - 1].push_back(std::move(s));
    for (auto& p : ps.parties) p->receive_shamir_shares(mp::pointers_to(to[p->id() - 1]));
    const cvec x = random_values(ps.ctx->slots(), 4);
    const Ciphertext a = ps.encrypt(x);
    for (const std::vector<std::uint32_t>& group : {std::vector<std::uint32_t>{1, 3}, {2, 4}, {1, 2, 4}})
        EXPECT_GT(precision_bits(ps.decrypt(a, group), x),
                  mp::decryption_precision_bits(*ps.ctx, ps.session, {}, a.scale, group.size()) - 4.0);
    // All N with their additive shares still works.
    EXPECT_GT(precision_bits(ps.decrypt(a), x), mp::decryption_precision_bits(*ps.ctx, ps.session, {}, a.scale, 4) - 4);
    // One party is below the threshold; a share made for one group does not serve another.
    expect_parameter_error([&] { ps.parties[0]->decryption_share(a, {}, {1}); }, "below the threshold");
    std::vector<mp::Share> mixed{ps.parties[0]->decryption_share(a, {}, {1, 2}),
                                 ps.parties[2]->decryption_share(a, {}, {1, 3})};
    expect_parameter_error([&] { mp::decrypt(ps.ctx, ps.session, a, mp::pointers_to(mixed)); }, "another group");
    // One party's share of a group of two does not decrypt alone.
    std::vector<mp::Share> lone{ps.parties[0]->decryption_share(a, {}, {1, 2})};
    expect_parameter_error([&] { mp::decrypt(ps.ctx, ps.session, a, mp::pointers_to(lone)); }, "another group");
}

TEST(Multiparty, SharesAreBoundToTheirContextSessionPartyAndRound) {
    Parties ps(make_context(), 3);
    const ContextPtr& ctx = ps.ctx;
    std::vector<mp::Share> pks;
    for (auto& p : ps.parties) pks.push_back(p->public_key_share());
    // A party twice, a party missing, a share of another protocol, of another session, of another context.
    expect_parameter_error(
        [&] {
            mp::aggregate_public_key(ctx, ps.session, {&pks[0], &pks[0], &pks[1]});
        },
        "party 1 sent two shares");
    expect_parameter_error(
        [&] {
            mp::aggregate_public_key(ctx, ps.session, {&pks[0], &pks[1]});
        },
        "every one of the 3");
    auto wrong = pks;
    wrong[2] = ps.parties[2]->galois_key_share(ctx->galois_element(1));
    expect_parameter_error([&] { mp::aggregate_public_key(ctx, ps.session, mp::pointers_to(wrong)); },
                           "not of public-key generation");
    const mp::Session other = mp::Session::random(3);
    expect_parameter_error([&] { mp::aggregate_public_key(ctx, other, mp::pointers_to(pks)); }, "another session");
    const ContextPtr ctx2 = Context::create(research_params(10, 60, 40, 2, 60, 2), 1);
    mp::Party foreign(ctx2, ps.session, 3);
    wrong = pks;
    wrong[2] = foreign.public_key_share();
    expect_parameter_error([&] { mp::aggregate_public_key(ctx, ps.session, mp::pointers_to(wrong)); },
                           "other parameters");
    // Galois shares of another element; round 2 before round 1, or fed one party's round 1.
    std::vector<mp::Share> gs;
    for (auto& p : ps.parties) gs.push_back(p->galois_key_share(ctx->galois_element(1)));
    expect_parameter_error(
        [&] { mp::aggregate_galois_key(ctx, ps.session, ctx->galois_element(2), mp::pointers_to(gs)); },
        "another Galois element");
    const mp::Share r1 = ps.parties[0]->relin_round1();
    expect_parameter_error([&] { ps.parties[1]->relin_round2(r1); }, "has not run relin_round1");
    expect_parameter_error([&] { ps.parties[0]->relin_round2(r1); }, "the sum of every party's round 1");
    // Shares that every party tampered with alike (a share is another party's input): no polynomial, one too few,
    // limbs dropped. Each is refused before it is read as a key.
    auto emptied = pks;
    for (auto& s : emptied) s.polys.clear();
    expect_parameter_error([&] { mp::aggregate_public_key(ctx, ps.session, mp::pointers_to(emptied)); },
                           "has 0 polynomials, not the 1");
    std::vector<mp::Share> r1s, gs1;
    for (auto& p : ps.parties) {
        r1s.push_back(p->relin_round1());
        gs1.push_back(p->galois_key_share(ctx->galois_element(1)));
    }
    for (auto& s : r1s) s.polys.pop_back();
    expect_parameter_error([&] { mp::aggregate_relin_round1(ctx, ps.session, mp::pointers_to(r1s)); },
                           "polynomials, not the");
    for (auto& s : gs1) s.polys[0].truncate(s.polys[0].num_q() - 1, s.polys[0].num_p());
    expect_parameter_error(
        [&] { mp::aggregate_galois_key(ctx, ps.session, ctx->galois_element(1), mp::pointers_to(gs1)); },
        "wrong shape");
    // Party ids, sessions and groups out of range.
    expect_parameter_error([&] { mp::Party(ctx, ps.session, 4); }, "must be in 1..3");
    expect_parameter_error([&] { mp::Session::random(1); }, "at least 2 parties");
    expect_parameter_error([&] { mp::Session::random(3, 4); }, "threshold t");
    const Ciphertext a = ps.encrypt(random_values(ctx->slots(), 5));
    expect_parameter_error([&] { ps.parties[0]->decryption_share(a, {}, {1, 2}); }, "needs a threshold session");
    // A ciphertext of another key, and one whose scale the smudging would drown.
    Ciphertext foreign_ct = a;
    foreign_ct.key_id ^= 1;
    expect_parameter_error([&] { ps.parties[0]->decryption_share(foreign_ct); }, "collective key");
    Ciphertext small = a;
    small.scale = std::ldexp(1.0, 30);
    expect_parameter_error([&] { ps.parties[0]->decryption_share(small); }, "drown");
    const auto receiver = KeyGenerator(ctx).secret_key();
    const PublicKey to = KeyGenerator(ctx).public_key(receiver);
    expect_parameter_error([&] { ps.parties[0]->key_switch_share(small, to); }, "key_switch_share: the smudging");
    expect_parameter_error([&] { ps.parties[0]->refresh_share(small); }, "refresh_share: the smudging");
}

TEST(Multiparty, SharesTravelAsCheckedBytes) {
    Parties ps(make_context(), 3);
    const ContextPtr& ctx = ps.ctx;
    mp::Party& p = *ps.parties[1];
    const Ciphertext a = ps.encrypt(random_values(ctx->slots(), 6));
    const std::vector<mp::Share> shares{p.public_key_share(), p.relin_round1(),
                                        p.galois_key_share(ctx->galois_element(1)), p.decryption_share(a)};
    for (const mp::Share& s : shares)
        for (Compression z : {Compression::none, Compression::zstd}) {
            const Bytes b = mp::to_bytes(*ctx, s, z);
            const mp::Share back = mp::share_from_bytes(*ctx, b.data(), b.size());
            EXPECT_EQ(back.fingerprint, s.fingerprint);
            EXPECT_EQ(back.session, s.session);
            EXPECT_EQ(back.party, s.party);
            EXPECT_EQ(back.protocol, s.protocol);
            EXPECT_EQ(back.tag, s.tag);
            ASSERT_EQ(back.polys.size(), s.polys.size());
            for (std::size_t k = 0; k < s.polys.size(); ++k) EXPECT_EQ(back.polys[k], s.polys[k]);
        }
    // Collective decryption from shares that went through bytes.
    std::vector<mp::Share> dec;
    for (auto& q : ps.parties) {
        const Bytes b = mp::to_bytes(*ctx, q->decryption_share(a));
        dec.push_back(mp::share_from_bytes(*ctx, b.data(), b.size()));
    }
    EXPECT_GT(precision_bits(mp::decrypt(ctx, ps.session, a, mp::pointers_to(dec)), random_values(ctx->slots(), 6)),
              mp::decryption_precision_bits(*ctx, ps.session, {}, a.scale, 3) - 4.0);
    // Damaged bytes, another kind of object, other parameters.
    Bytes b = mp::to_bytes(*ctx, shares[0]);
    b[b.size() / 2] ^= 1;
    EXPECT_THROW(mp::share_from_bytes(*ctx, b.data(), b.size()), SerializationError);
    const Bytes ct_bytes = serialize(*ctx, a);
    EXPECT_THROW(mp::share_from_bytes(*ctx, ct_bytes.data(), ct_bytes.size()), SerializationError);
    const ContextPtr ctx2 = Context::create(research_params(10, 60, 40, 2, 60, 2), 1);
    const Bytes good = mp::to_bytes(*ctx, shares[0]);
    EXPECT_THROW(mp::share_from_bytes(*ctx2, good.data(), good.size()), SerializationError);
}

TEST(Multiparty, RefreshBringsACiphertextBackToTheTopInOneRound) {
    Parties ps(make_context(), 3, 2);
    const ContextPtr& ctx = ps.ctx;
    Evaluator ev(ctx, ps.evaluation_keys({}));
    const cvec x = random_values(ctx->slots(), 7);
    const Ciphertext a = ps.encrypt(x);
    const Ciphertext sq = ev.multiply(a, a);  // level 1: 115 bits of modulus, room for the masks
    ASSERT_EQ(sq.level(), ctx->max_level() - 1);
    std::vector<mp::Share> shares;
    for (auto& p : ps.parties) shares.push_back(p->refresh_share(sq));
    const Ciphertext fresh = mp::refresh(ctx, ps.session, sq, mp::pointers_to(shares));
    EXPECT_EQ(fresh.level(), ctx->max_level());
    EXPECT_EQ(fresh.key_id, ps.session.key_id());
    cvec x2(x.size()), x3(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        x2[i] = x[i] * x[i];
        x3[i] = x2[i] * x[i];
    }
    const double left = mp::decryption_precision_bits(*ctx, ps.session, {}, sq.scale, 3);
    EXPECT_GT(precision_bits(ps.decrypt(fresh), x2), left - 4.0);
    // The refreshed ciphertext computes on: a product that the level-1 one had no level left for after one more.
    EXPECT_GT(precision_bits(ps.decrypt(ev.multiply(ev.multiply(fresh, a), fresh)),
                             [&] {
                                 cvec x5(x.size());
                                 for (std::size_t i = 0; i < x.size(); ++i) x5[i] = x3[i] * x2[i];
                                 return x5;
                             }()),
              left - 6.0);
    // At level 0 the modulus (60 bits) has no room for masks that hide the values: refused, saying why.
    const Ciphertext low = ev.multiply(sq, a);
    ASSERT_EQ(low.level(), 0);
    expect_parameter_error([&] { ps.parties[0]->refresh_share(low); }, "leaves the mask");
    // A group of t = 2 refreshes too.
    std::vector<std::vector<mp::Share>> to(3);
    for (auto& p : ps.parties)
        for (mp::Share& s : p->shamir_shares()) to[s.tag - 1].push_back(std::move(s));
    for (auto& p : ps.parties) p->receive_shamir_shares(mp::pointers_to(to[p->id() - 1]));
    std::vector<mp::Share> group{ps.parties[0]->refresh_share(sq, {}, 1.0, {1, 3}),
                                 ps.parties[2]->refresh_share(sq, {}, 1.0, {1, 3})};
    const Ciphertext by_two = mp::refresh(ctx, ps.session, sq, mp::pointers_to(group));
    EXPECT_GT(precision_bits(ps.decrypt(by_two), x2), left - 4.0);
}

TEST(Multiparty, EveryThresholdFromTwoToTenParties) {
    // N = 2..10 parties, t = 2..N: a random group of t decrypts within the smudging's precision; the shares of t - 1
    // of its members, summed as the decryption sums them, give garbage (errors of the values' size). t = 1 would be
    // one party holding the collective secret: Session refuses it (a threshold is 2..N, or 0 for N of N).
    const ContextPtr ctx = make_context();
    const cvec x = random_values(ctx->slots(), 8);
    std::mt19937_64 rng(9);
    for (std::uint32_t n = 2; n <= 10; ++n)
        for (std::uint32_t t = 2; t <= n; ++t) {
            Parties ps(ctx, n, t);
            std::vector<std::vector<mp::Share>> to(n);
            for (auto& p : ps.parties)
                for (mp::Share& s : p->shamir_shares()) to[s.tag - 1].push_back(std::move(s));
            for (auto& p : ps.parties) p->receive_shamir_shares(mp::pointers_to(to[p->id() - 1]));
            std::vector<std::uint32_t> ids(n);
            std::iota(ids.begin(), ids.end(), 1u);
            std::shuffle(ids.begin(), ids.end(), rng);
            std::vector<std::uint32_t> group(ids.begin(), ids.begin() + t);
            std::sort(group.begin(), group.end());
            const Ciphertext a = ps.encrypt(x);
            const double bound = mp::decryption_precision_bits(*ctx, ps.session, {}, a.scale, t);
            EXPECT_GT(precision_bits(ps.decrypt(a, group), x), bound - 4.0) << n << " parties, t = " << t;
            // t - 1 members' shares of that group, summed with c_0 as mp::decrypt sums a whole group's.
            const auto& be = ctx->backend();
            rns::RnsPoly m = a.polys[0];
            for (std::size_t k = 0; k + 1 < group.size(); ++k) {
                const mp::Share s = ps.parties[group[k] - 1]->decryption_share(a, {}, group);
                be.add(m, s.polys[0], m, {});
            }
            be.from_ntt(m, {});
            const cvec partial = Encoder(ctx).decode(m, m.num_q(), a.scale);
            double err = 0;
            for (std::size_t i = 0; i < x.size(); ++i) err = std::max(err, std::abs(partial[i] - x[i]));
            EXPECT_GT(err, 1.0) << n << " parties, t - 1 = " << t - 1 << " shares: the values came back";
        }
    expect_parameter_error([] { mp::Session::random(3, 1); }, "threshold");
}
