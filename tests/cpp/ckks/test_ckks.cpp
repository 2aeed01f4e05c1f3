// Homomorphic operations vs plaintext references, with precision bounds in bits.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/support/error.hpp"
#include "test_env.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using test::cvec;

namespace {
using test::Env;
using test::precision_bits;
using test::Shape;

// dnum = 3 digits of one prime (T12), one digit of three primes, two digits of two primes, and alpha = 2 below
// k = 3 special primes; one or two threads.
std::vector<Shape> shapes() {
    return {{"T12_dnum3_k1_2threads", Parameters::named("T12"), 2},
            {"dnum1_k3_1thread", test::research_params(12, 60, 40, 2, 60, 3), 1},
            {"dnum2_k2_2threads", test::research_params(11, 60, 40, 3, 60, 2), 2},
            {"dnum2_alpha2_k3_1thread", test::with_dnum(test::research_params(11, 60, 40, 3, 60, 3), 2), 1}};
}

class CkksShapes : public ::testing::TestWithParam<Shape> {
protected:
    // One environment per shape, made on first use.
    static Env& env() {
        static std::map<std::string, std::unique_ptr<Env>> envs;
        const Shape& s = GetParam();
        auto& e = envs[s.name];
        if (!e)
            e = std::make_unique<Env>(s.params, std::vector<std::int64_t>{1, -2, 5}, std::vector<std::uint64_t>{}, 42,
                                      s.threads);
        return *e;
    }
};
INSTANTIATE_TEST_SUITE_P(Shapes, CkksShapes, ::testing::ValuesIn(shapes()),
                         [](const ::testing::TestParamInfo<Shape>& i) { return i.param.name; });

}  // namespace

TEST_P(CkksShapes, ShapeIsAsNamed) {
    const Parameters& p = env().ctx->params();
    const std::string name = GetParam().name;
    EXPECT_EQ(p.digits() == 1, name.find("dnum1") != std::string::npos);
    EXPECT_EQ(env().ctx->rns().dnum(), static_cast<std::size_t>(p.digits()));
    EXPECT_EQ(env().ctx->threads(), GetParam().threads);
}

TEST_P(CkksShapes, EncoderRoundTrip) {
    Env& e = env();
    auto v = e.random(true);
    auto pt = e.enc.encode(v, e.ctx->default_scale(), 2);
    rns::RnsPoly m = pt.poly;
    e.ctx->backend().from_ntt(m, 1);
    auto back = e.enc.decode(m, 3, pt.scale);
    EXPECT_GT(precision_bits(back, v), 30);
}

// Values of period p encode into the subring of X^(n / 2p) (zero coefficients elsewhere, NTT words constant on blocks
// of n / 2p), decode to themselves, and a product with the plaintext kept in its subring is the full one's.
TEST_P(CkksShapes, PeriodicValuesEncodeIntoTheirSubring) {
    Env& e = env();
    const std::size_t slots = e.ctx->slots(), n = e.ctx->n();
    const auto v = e.random(true);
    for (std::size_t p : {std::size_t{1}, std::size_t{2}, std::size_t{8}, slots / 2, slots}) {
        cvec periodic(slots);
        for (std::size_t s = 0; s < slots; ++s) periodic[s] = v[s % p];
        EXPECT_EQ(e.enc.period(periodic), p);
        const auto pt = e.enc.encode_extended(periodic, e.ctx->default_scale(), 2);
        rns::RnsPoly coeff = pt.poly;
        e.ctx->backend().from_ntt(coeff, 1);
        EXPECT_GT(precision_bits(e.enc.decode(coeff, 3, pt.scale), periodic), 30) << "period " << p;
        const std::size_t block = n / (2 * p);
        e.ctx->backend().download(pt.poly, [&](const std::uint64_t* const* limbs) {
            for (std::size_t i = 0; i < pt.poly.limbs(); ++i)
                for (std::size_t w = 0; w < n; ++w) ASSERT_EQ(limbs[i][w], limbs[i][w - w % block]) << "period " << p;
        });
        e.ctx->backend().download(coeff, [&](const std::uint64_t* const* limbs) {
            for (std::size_t c = 0; c < n; ++c)
                if (c % block) ASSERT_EQ(limbs[0][c], 0u) << "period " << p << " coefficient " << c;
        });
        Plaintext sub = pt;
        e.ctx->backend().to_subring(pt.poly, 2 * p, sub.poly, 1);
        const Plaintext compact = e.enc.encode_compact(periodic, e.ctx->default_scale(), 2, true);
        EXPECT_EQ(compact.poly, p < slots ? sub.poly : pt.poly) << "period " << p;
        EXPECT_EQ(compact.scale, pt.scale);
        const Ciphertext ct = e.ev.drop_level(e.encrypt(v), 2);
        Ciphertext want, got;
        e.ev.multiply_plain_accumulate(ct, e.enc.encode(periodic, e.ctx->default_scale(), 2), want);
        e.ev.multiply_plain_accumulate(ct, sub, got);
        EXPECT_EQ(got.polys, want.polys) << "period " << p;
    }
    // zero padding counts: 3 values in a ring of more slots have the full period
    EXPECT_EQ(e.enc.period(cvec{1.0, 2.0, 3.0}), slots);
    EXPECT_EQ(e.enc.period(cvec{}), 1u);
}

TEST_P(CkksShapes, EncryptDecrypt) {
    Env& e = env();
    auto v = e.random(true);
    EXPECT_GT(precision_bits(e.decrypt(e.encrypt(v)), v), 22);
    auto sym = e.encryptor.encrypt_symmetric(e.enc.encode(v, e.ctx->default_scale(), 1), e.sk);
    EXPECT_GT(precision_bits(e.decrypt(sym), v), 22);
}

TEST_P(CkksShapes, AddSubNegate) {
    Env& e = env();
    auto a = e.random(), b = e.random();
    auto ca = e.encrypt(a), cb = e.encrypt(b);
    cvec s(a.size()), d(a.size()), n(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        s[i] = a[i] + b[i];
        d[i] = a[i] - b[i];
        n[i] = -a[i];
    }
    EXPECT_GT(precision_bits(e.decrypt(e.ev.add(ca, cb)), s), 22);
    EXPECT_GT(precision_bits(e.decrypt(e.ev.sub(ca, cb)), d), 22);
    EXPECT_GT(precision_bits(e.decrypt(e.ev.negate(ca)), n), 22);
}

TEST_P(CkksShapes, MultiplyRelinRescale) {
    Env& e = env();
    auto a = e.random(true), b = e.random(true), c = e.random();
    auto ca = e.encrypt(a), cb = e.encrypt(b), cc = e.encrypt(c);
    cvec ab(a.size()), abc(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        ab[i] = a[i] * b[i];
        abc[i] = ab[i] * c[i];
    }
    const int top = e.ctx->max_level();
    auto cab = e.ev.multiply(ca, cb);
    EXPECT_EQ(cab.level(), top - 1);
    EXPECT_GT(precision_bits(e.decrypt(cab), ab), 20);
    // different levels are aligned; the second multiply goes one level further down
    auto cabc = e.ev.multiply(cab, cc);
    EXPECT_EQ(cabc.level(), top - 2);
    EXPECT_GT(precision_bits(e.decrypt(cabc), abc), 18);
    // without rescale, then relinearize/rescale explicitly
    auto raw = e.ev.multiply(ca, cb, false);
    EXPECT_EQ(raw.level(), top);
    EXPECT_GT(precision_bits(e.decrypt(raw), ab), 20);
    EXPECT_GT(precision_bits(e.decrypt(e.ev.rescale(raw)), ab), 20);
}

TEST_P(CkksShapes, PlainAndScalar) {
    Env& e = env();
    auto a = e.random(true), p = e.random(true);
    auto ca = e.encrypt(a);
    cvec sum(a.size()), prod(a.size()), sc(a.size()), sp(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        sum[i] = a[i] + p[i];
        prod[i] = a[i] * p[i];
        sc[i] = a[i] * 2.5;
        sp[i] = a[i] + std::complex<double>(0.5, -1.0);
    }
    EXPECT_GT(precision_bits(e.decrypt(e.ev.add_plain(ca, p)), sum), 22);
    EXPECT_GT(precision_bits(e.decrypt(e.ev.multiply_plain(ca, p)), prod), 20);
    auto cs = e.ev.multiply_scalar(ca, 2.5);
    EXPECT_DOUBLE_EQ(cs.scale, e.ctx->scale_at(ca.level() - 1));  // lands on the canonical scale
    EXPECT_GT(precision_bits(e.decrypt(cs), sc), 20);
    EXPECT_GT(precision_bits(e.decrypt(e.ev.add_scalar(ca, {0.5, -1.0})), sp), 22);
    // A complex constant (Re c + Im c X^(n/2), nothing encoded): the constant vector's product, on the same scale.
    const std::complex<double> c(0.75, -1.25);
    cvec cc(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) cc[i] = a[i] * c;
    const auto cz = e.ev.multiply_scalar(ca, c);
    EXPECT_DOUBLE_EQ(cz.scale, e.ctx->scale_at(ca.level() - 1));
    EXPECT_GT(precision_bits(e.decrypt(cz), cc), 20);
    EXPECT_GT(precision_bits(e.decrypt(cz), e.decrypt(e.ev.multiply_plain(ca, cvec(a.size(), c)))), 30);
}

TEST_P(CkksShapes, RotateAndConjugate) {
    Env& e = env();
    auto a = e.random(true);
    auto ca = e.encrypt(a);
    const std::size_t n = a.size();
    for (std::int64_t step : {1, -2, 5}) {
        cvec want(n);
        for (std::size_t i = 0; i < n; ++i)
            want[i] = a[(i + n + static_cast<std::size_t>(step % static_cast<std::int64_t>(n) + n)) % n];
        EXPECT_GT(precision_bits(e.decrypt(e.ev.rotate(ca, step)), want), 20) << "step " << step;
    }
    cvec conj(n);
    for (std::size_t i = 0; i < n; ++i) conj[i] = std::conj(a[i]);
    EXPECT_GT(precision_bits(e.decrypt(e.ev.conjugate(ca)), conj), 20);
    EXPECT_THROW(e.ev.rotate(ca, 3), MissingKeyError);
}

TEST_P(CkksShapes, Errors) {
    Env& e = env();
    auto a = e.random();
    auto ca = e.encrypt(a);
    auto low = e.ev.drop_level(ca, 0);
    EXPECT_THROW(e.ev.multiply(low, low), LevelError);
    EXPECT_THROW(e.ev.multiply(low, low, false), ScaleError);
    EXPECT_THROW(e.ev.rescale(low), LevelError);
    EXPECT_THROW(e.enc.encode(cvec(e.ctx->slots() + 1), 1e6, 2), ParameterError);
    EXPECT_THROW(e.enc.encode(cvec{{NAN, 0}}, 1e6, 2), ParameterError);
    const Plaintext pt = e.enc.encode(a, e.ctx->scale_at(ca.level()), ca.level());
    EXPECT_THROW(e.ev.multiply_plain_sum({&ca, nullptr}, {&pt, &pt}), ParameterError);  // a null term: refused
    Ciphertext hollow = ca;  // malformed: checked before its level is read
    hollow.polys.clear();
    EXPECT_THROW(e.dec.decrypt(hollow, e.sk), ParameterError);
    EXPECT_THROW(e.dec.decrypt(hollow, e.sk, Flooding{}), ParameterError);
    Env other(Parameters::named("T12"), {1});
    EXPECT_THROW(e.ev.add(ca, other.encrypt(a)), ParameterError);
    EXPECT_THROW(e.dec.decrypt(ca, other.sk), ParameterError);
    // another context's secret key, even when no key is asked for
    EXPECT_THROW(KeyGenerator(e.ctx).evaluation_keys(other.sk, false, {}, false), ParameterError);
    Parameters bad = Parameters::named("T13");
    bad.levels = 5;
    EXPECT_THROW(bad.validate(), ParameterError);
    bad.security.reset();
    EXPECT_NO_THROW(bad.validate());
}

#include "kasoku/ckks/serialization.hpp"

TEST_P(CkksShapes, SerializationRoundTripsAndRejections) {
    Env& e = env();
    auto a = e.random(true);
    auto ct = e.encrypt(a);
    Bytes b = serialize(*e.ctx, ct);
    auto back = deserialize_ciphertext(*e.ctx, b.data(), b.size());
    EXPECT_EQ(back.polys[0], ct.polys[0]);
    EXPECT_GT(precision_bits(e.decrypt(back), a), 22);
    // every single-byte corruption in a sample of positions is detected
    for (std::size_t pos :
         {std::size_t{0}, std::size_t{5}, std::size_t{9}, std::size_t{30}, b.size() / 2, b.size() - 1}) {
        Bytes c = b;
        c[pos] ^= 0x40;
        EXPECT_THROW(deserialize_ciphertext(*e.ctx, c.data(), c.size()), SerializationError) << pos;
    }
    Bytes cut(b.begin(), b.end() - 7);
    EXPECT_THROW(deserialize_ciphertext(*e.ctx, cut.data(), cut.size()), SerializationError);
    // other parameters, other kind
    auto t13 = Context::create(Parameters::named("T13"), 1);
    EXPECT_THROW(deserialize_ciphertext(*t13, b.data(), b.size()), SerializationError);
    EXPECT_THROW(deserialize_public_key(*e.ctx, b.data(), b.size()), SerializationError);
    // keys
    Bytes pkb = serialize(*e.ctx, e.pk), skb = serialize(*e.ctx, e.sk), ekb = serialize(*e.ctx, *e.ek);
    auto pk2 = deserialize_public_key(*e.ctx, pkb.data(), pkb.size());
    auto sk2 = deserialize_secret_key(*e.ctx, skb.data(), skb.size());
    auto ek2 = std::make_shared<const EvaluationKeys>(deserialize_evaluation_keys(*e.ctx, ekb.data(), ekb.size()));
    EXPECT_EQ(ek2->galois.size(), e.ek->galois.size());
    Encryptor enc2(e.ctx);
    auto ct2 = enc2.encrypt(e.enc.encode(a, e.ctx->default_scale(), 2), pk2);
    Evaluator ev2(e.ctx, ek2);
    cvec want(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) want[i] = a[(i + 1) % a.size()] * a[(i + 1) % a.size()];
    auto r = ev2.rotate(ev2.multiply(ct2, ct2), 1);
    EXPECT_GT(precision_bits(e.dec.decrypt(r, sk2), want), 18);
    Bytes pb = serialize(Parameters::named("H16"));
    EXPECT_EQ(deserialize_parameters(pb.data(), pb.size()).levels, 20);
}

// for_circuit: every set it picks holds the depth, the slots and the 128-bit bound; it refuses only what N = 2^16 cannot hold.
// Bounds the code relies on are parameter errors, not crashes: a key-switching digit's primes (ModUp's fixed array)
// and the special primes (the overflow counts of exact conversions).
TEST(Parameters, DigitAndSpecialPrimeBoundsAreErrors) {
    Parameters p = test::research_params(10, 60, 30, 50, 60, 65);  // 65 special primes
    EXPECT_THROW(p.validate(), ParameterError);
    EXPECT_THROW(Context::create(p, 1), ParameterError);
    p.special_primes = 64;
    p.dnum = 1;  // alpha = 51 primes in one digit, within the bound
    EXPECT_NO_THROW(p.validate());
    p.special_primes = 0;  // invalid, but describe() says so instead of dividing by zero
    EXPECT_NE(p.describe().find("dnum=none"), std::string::npos);
    EXPECT_THROW(p.validate(), ParameterError);
    EXPECT_THROW(rns::RnsContext(1024, {(1ull << 40) + 1}, {}, rns::kMaxDigitPrimes + 1), ParameterError);
}

// Special primes narrower than the bootstrapping primes: dnum = 0 takes digits that P covers in bits (with alpha = k
// one digit of three 55-bit primes passes P's 150 bits, and a rotation at the top came out as noise), a dnum whose
// digits P does not cover is an error, and a rotation at the top keeps its precision.
TEST(Parameters, DigitsAreNoWiderThanTheSpecialPrimes) {
    Parameters p = test::research_params(10, 60, 40, 3, 50, 3);
    p.boot_levels = 6;
    p.boot_bits = 55;
    EXPECT_EQ(p.alpha(), 2);  // alpha 3: a digit of 165 bits
    EXPECT_LE(p.max_digit_bits(p.alpha()), p.special_bits_total());
    Parameters wide = p;
    wide.dnum = 4;  // alpha 3
    EXPECT_THROW(wide.validate(), ParameterError);
    test::Env e(p, {1});
    const auto a = e.random(true);
    const int top = e.ctx->max_level();
    const Ciphertext c = e.encryptor.encrypt(e.enc.encode(a, e.ctx->default_scale(), top), e.pk);
    cvec want(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) want[i] = a[(i + 1) % a.size()];
    EXPECT_GT(precision_bits(e.decrypt(e.ev.rotate(c, 1)), want), 26);
}

TEST(ParametersForCircuit, SecureSmallestAndAsAsked) {
    for (int depth : {0, 1, 2, 5, 8, 12, 20, 25, 30})
        for (int bits : {8, 12, 20, 28})
            for (std::uint64_t slots : {std::uint64_t{0}, std::uint64_t{3000}}) {
                Parameters p;
                try {
                    p = Parameters::for_circuit(depth, bits, slots);
                } catch (const ParameterError&) {
                    // only when even N = 2^16 cannot hold it
                    const Parameters loose = Parameters::for_circuit(depth, bits, slots, std::nullopt);
                    EXPECT_GT(loose.log_qp_bits(), Parameters::max_log_qp_128(16)) << depth << " " << bits;
                    continue;
                }
                EXPECT_NO_THROW(p.validate());
                EXPECT_EQ(p.levels, depth);
                EXPECT_EQ(p.security, 128);
                EXPECT_LE(p.log_qp_bits(), Parameters::max_log_qp_128(p.log_n));
                EXPECT_GE(p.slots(), slots);
                EXPECT_FALSE(p.rationale.empty());
            }
    try {
        Parameters::for_circuit(40, 20);
        FAIL() << "depth 40 at 128-bit security should not fit";
    } catch (const ParameterError& e) {
        EXPECT_NE(std::string(e.what()).find("bootstrapping"), std::string::npos) << e.what();
    }
    EXPECT_THROW(Parameters::for_circuit(-1), ParameterError);
    EXPECT_THROW(Parameters::for_circuit(4, 50), ParameterError);
    EXPECT_THROW(Parameters::for_circuit(4, 20, std::uint64_t{1} << 17), ParameterError);
    EXPECT_EQ(Parameters::for_circuit(4, 20, 5000).slots(), std::uint64_t{8192});
    // results known to stay small (integer_bits) need a smaller q_0; a 48-bit special prime lets N = 2^13 hold five
    // 27-bit levels (a 60-bit one would not)
    const Parameters small = Parameters::for_circuit(5, 8, 2048, 128, 0, 8);
    EXPECT_EQ(small.log_n, 13);
    EXPECT_EQ(small.first_bits, small.scale_bits + 8);
    EXPECT_EQ(small.special_bits, 48);
    EXPECT_GE(small.special_bits * small.special_primes, small.first_bits);  // above every digit's modulus
    EXPECT_LE(small.log_qp_bits(), Parameters::max_log_qp_128(13));
    EXPECT_EQ(Parameters::for_circuit(5, 8, 2048).first_bits, Parameters::for_circuit(5, 8, 2048).scale_bits + 20);
    EXPECT_THROW(Parameters::for_circuit(5, 8, 0, 128, 0, 0), ParameterError);
}

// The canonical scales follow scale(l - 1) = scale(l)^2 / q_l. Twelve 28-bit primes at N = 2^14 sit up to 2^-6 bits
// below 2^28: from 2^28 at the top the doubling drifts level 0 tens of bits up; the context starts the chain just
// below 2^28 instead, and every level stays within a bit of it.
TEST(Parameters, DeepChainsOfSmallPrimesKeepTheirScales) {
    const Parameters p = Parameters::for_circuit(12, 8, 0, 128, 0, 5);
    ASSERT_EQ(p.levels, 12);
    ASSERT_LE(p.scale_bits, 30);
    auto ctx = Context::create(p, 1);
    for (int l = 0; l <= ctx->user_level(); ++l)
        EXPECT_NEAR(std::log2(ctx->scale_at(l)), p.scale_bits, 1.0) << "level " << l;
    EXPECT_EQ(ctx->default_scale(), ctx->scale_at(ctx->user_level()));
}

// What a context keeps for the layers above (Context::shared): the same object under a key while something holds it,
// made once; weakly kept by default, for the context's life with keep; a failed make keeps nothing; keys and
// contexts apart.
TEST(Context, SharedKeepsWhatTheLayersAboveDeriveFromIt) {
    struct Derived final : Context::Shared {
        explicit Derived(int v) : value(v) {}
        int value;
    };
    const auto ctx = Context::create(Parameters::named("T12"), 1);
    int made = 0;
    const auto make = [&] { return std::make_shared<const Derived>(++made); };
    auto a = ctx->shared("a", make);
    EXPECT_EQ(ctx->shared("a", make), a);  // held: the same object, made once
    EXPECT_EQ(made, 1);
    EXPECT_EQ(std::dynamic_pointer_cast<const Derived>(a)->value, 1);
    EXPECT_NE(ctx->shared("b", make), a);  // another key
    a.reset();                             // nothing holds "a" or "b" any more: made again
    EXPECT_EQ(std::dynamic_pointer_cast<const Derived>(ctx->shared("a", make))->value, 3);
    ctx->shared("kept", make, true);  // kept for the context's life
    EXPECT_EQ(std::dynamic_pointer_cast<const Derived>(ctx->shared("kept", make))->value, 4);
    EXPECT_THROW(ctx->shared("fails", [&]() -> std::shared_ptr<const Context::Shared> { throw ParameterError("no"); }),
                 ParameterError);
    EXPECT_EQ(std::dynamic_pointer_cast<const Derived>(ctx->shared("fails", make))->value, 5);
    const auto other = Context::create(Parameters::named("T12"), 1);
    EXPECT_EQ(std::dynamic_pointer_cast<const Derived>(other->shared("kept", make))->value, 6);  // its own
}
