// Bootstrapping: each stage against its plaintext definition, then end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <set>

#include "bootstrap_env.hpp"
#include "kasoku/algo/bootstrap.hpp"
#include "kasoku/ckks/serialization.hpp"
#include "kasoku/support/error.hpp"
#include "test_env.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using namespace kasoku::algo;
using test::cvec;
using namespace kasoku::algo::boot_test;

namespace {
// v with its index bits reversed (log2(size) bits).
void bit_reverse(cvec& v) {
    cvec out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        std::size_t r = 0;
        for (std::size_t b = 1; b < v.size(); b <<= 1) r = (r << 1) | ((i & b) ? 1 : 0);
        out[r] = v[i];
    }
    v = std::move(out);
}

cvec apply_diagonals(const std::map<std::int64_t, cvec>& d, const cvec& in) {
    const std::size_t n = in.size();
    cvec out(n);
    for (const auto& [r, diag] : d)
        for (std::size_t s = 0; s < n; ++s) out[s] += diag[s] * in[(s + static_cast<std::size_t>(r)) % n];
    return out;
}

}  // namespace

TEST(DftFactors, MergedStagesAreTheEncodersSpecialFft) {
    auto ctx = Context::create(test::research_params(10, 60, 40, 2, 60, 1), 1);
    Encoder enc(ctx);
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(-1, 1);
    cvec v(ctx->slots());
    for (auto& x : v) x = {u(rng), u(rng)};
    for (int groups : {1, 2, 3, 9}) {
        // inverse: fft_special_inv without its bit reversal (times 0.5 spread over the groups)
        cvec want = v;
        enc.fft_special_inv(want);
        bit_reverse(want);
        cvec got = v;
        const auto inv = dft_factors(*ctx, true, groups, 0.5);
        ASSERT_EQ(inv.size(), static_cast<std::size_t>(groups));
        for (const auto& d : inv) got = apply_diagonals(d, got);
        for (auto& x : want) x *= 0.5;
        EXPECT_LT(max_abs_error(got, want), 1e-12) << groups << " groups";
        // forward: fft_special of the bit-reversed input
        cvec fwd_want = v;
        enc.fft_special(fwd_want);
        cvec fwd = v;
        bit_reverse(fwd);
        for (const auto& d : dft_factors(*ctx, false, groups)) fwd = apply_diagonals(d, fwd);
        EXPECT_LT(max_abs_error(fwd, fwd_want), 1e-9) << groups << " groups";
    }
    // A merged group of g stages has at most 2^(g+1) - 1 diagonals.
    for (const auto& d : dft_factors(*ctx, true, 3)) EXPECT_LE(d.size(), 15u);
    EXPECT_THROW(dft_factors(*ctx, true, 0), ParameterError);
    EXPECT_THROW(dft_factors(*ctx, false, 10), ParameterError);
}

TEST(ModRaise, SameResiduesModQ0AndAnIntegerMultipleOfQ0Above) {
    auto& e = boot_env().env;
    const cvec z = e.random(true);
    const Ciphertext ct = e.ev.drop_level(e.encrypt(z), 0);
    const Ciphertext raised = mod_raise(e.ev, ct);
    ASSERT_EQ(raised.level(), e.ctx->max_level());
    EXPECT_EQ(raised.scale, ct.scale);
    // Back on q_0 it is the same ciphertext.
    const Ciphertext back = e.ev.drop_level(raised, 0);
    for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(back.polys[i] == ct.polys[i]) << "part " << i;
    // Above q_0 it decrypts to t + q_0 I: I's coefficients are integers, as small as the sparse secret makes them.
    cvec diff = e.decrypt(raised);
    const cvec base = e.decrypt(ct);
    for (std::size_t i = 0; i < diff.size(); ++i) diff[i] -= base[i];
    e.enc.fft_special_inv(diff);
    const double unit = static_cast<double>(e.ctx->rns().prime(0)) / ct.scale;
    double off = 0, largest = 0;
    for (const auto& w : diff)
        for (double c : {w.real() / unit, w.imag() / unit}) {
            off = std::max(off, std::abs(c - std::nearbyint(c)));
            largest = std::max(largest, std::abs(c));
        }
    EXPECT_LT(off, 1e-6);
    EXPECT_GE(largest, 1.0);  // q_0 I is there (the secret is not zero)
    EXPECT_LE(largest, boot_env().boot.k_bound());
    EXPECT_EQ(Bootstrapper::galois_elements(*e.ctx, boot_env().boot.config()), boot_env().boot.galois_elements());
    EXPECT_THROW(mod_raise(e.ev, e.encrypt(z)), LevelError);
    EXPECT_THROW(mod_raise(e.ev, ct, e.ctx->max_level() + 1), LevelError);
}

TEST(Bootstrap, CoeffToSlotIsTheScaledInverseFft) {
    auto& [e, boot] = boot_env();
    const Ciphertext raised =
        boot.raise(e.ev, e.encryptor.encrypt(e.enc.encode(e.random(true), e.ctx->scale_at(0), 0), e.pk));
    const Ciphertext v = boot.coeff_to_slot(e.ev, raised);
    EXPECT_EQ(v.level(), boot.raise_level() - boot.config().cts_levels);
    EXPECT_EQ(v.scale, e.ctx->scale_at(v.level()));
    cvec want = e.decrypt(raised);
    e.enc.fft_special_inv(want);
    bit_reverse(want);
    const double f = raised.scale / (static_cast<double>(e.ctx->rns().prime(0)) * 2.0 * (boot.k_bound() + 1.0));
    for (auto& x : want) x *= f;
    EXPECT_LT(max_abs_error(e.decrypt(v), want), std::ldexp(1.0, -25));
}

TEST(Bootstrap, EvalModIsTheSineOfTheScaledInput) {
    auto& [e, boot] = boot_env();
    const double range = boot.k_bound() + 1.0, k = boot.message_ratio();
    std::mt19937_64 rng(5);
    std::uniform_int_distribution<int> i_dist(-static_cast<int>(boot.k_bound()), static_cast<int>(boot.k_bound()));
    std::uniform_real_distribution<double> m_dist(-1, 1);
    cvec y(e.ctx->slots());
    for (auto& v : y) v = (i_dist(rng) + m_dist(rng) / k) / range;
    const int level = boot.raise_level() - boot.config().cts_levels;
    const Ciphertext ct = e.encryptor.encrypt_symmetric(e.enc.encode(y, e.ctx->scale_at(level), level), e.sk);
    const Ciphertext s = boot.eval_mod(e.ev, ct);
    EXPECT_EQ(s.level(), level - boot.cosine().depth() - boot.config().double_angle);
    cvec want(y.size());
    for (std::size_t i = 0; i < y.size(); ++i) want[i] = std::sin(2.0 * std::numbers::pi * range * y[i].real());
    EXPECT_LT(max_abs_error(e.decrypt(s), want), std::ldexp(1.0, -22));
}

TEST(Bootstrap, SlotToCoeffIsTheScaledForwardFft) {
    auto& [e, boot] = boot_env();
    const int level = boot.output_level() + boot.config().stc_levels;
    const cvec w = e.random(true);
    const Ciphertext ct = e.encryptor.encrypt_symmetric(e.enc.encode(w, e.ctx->scale_at(level), level), e.sk);
    const Ciphertext out = boot.slot_to_coeff(e.ev, ct);
    EXPECT_EQ(out.level(), boot.output_level());
    // fft_special bit-reverses its input first: fft_special(bitrev(w)) is its stages applied to w.
    cvec want = w;
    bit_reverse(want);
    e.enc.fft_special(want);
    for (auto& x : want) x *= boot.message_ratio() / (2.0 * std::numbers::pi);
    EXPECT_LT(max_abs_error(e.decrypt(out), want), std::ldexp(1.0, -20) * boot.message_ratio());
}

TEST(Bootstrap, EndToEndFromLevelZeroAndAbove) {
    auto& [e, boot] = boot_env();
    const cvec z = e.random(true);
    for (int level : {0, 2}) {
        const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(level), level), e.pk);
        OpCounts counts;
        const Ciphertext out = boot.bootstrap(e.ev, ct, {}, &counts);
        EXPECT_EQ(out.level(), boot.output_level());
        EXPECT_EQ(out.scale, e.ctx->scale_at(out.level()));
        const double bits = test::precision_bits(e.decrypt(out), z);
        EXPECT_GT(bits, 14.0) << "from level " << level;
        EXPECT_GT(counts.rot, 0u);
        // The result computes on: a product uses one of the levels it gained.
        const Ciphertext sq = e.ev.multiply(out, out);
        cvec want(z.size());
        for (std::size_t i = 0; i < z.size(); ++i) want[i] = z[i] * z[i];
        EXPECT_GT(test::precision_bits(e.decrypt(sq), want), 12.0);
    }
}

TEST(Bootstrap, KeysForTheLevelsTheyServe) {
    auto& e = boot_env().env;
    const Bootstrapper sparse(e.ctx, {.slots = e.ctx->slots() / 4});
    const KeyGenerator kg(e.ctx);
    const cvec values = e.random(true);
    for (const Bootstrapper* boot : std::initializer_list<const Bootstrapper*>{&boot_env().boot, &sparse}) {
        const std::size_t s = boot->slots();  // sparse: s values repeated
        const cvec z = e.enc.replicate(cvec(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(s)), s);
        const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(0), 0), e.pk);
        const std::map<std::uint64_t, int> levels = boot->galois_levels();
        EXPECT_EQ(Bootstrapper::galois_levels(*e.ctx, boot->config()), levels);
        std::vector<std::uint64_t> elements;
        std::map<int, std::uint64_t> one_at;  // a key of each level
        for (const auto& [g, level] : levels) {
            elements.push_back(g);
            one_at[level] = g;
            EXPECT_LE(level, boot->raise_level());
            EXPECT_GE(level, boot->output_level());
        }
        EXPECT_EQ(elements, boot->galois_elements());
        EXPECT_EQ(levels.at(e.ctx->conjugation_element()), boot->raise_level() - boot->config().cts_levels);

        const auto keys = [&](const std::map<std::uint64_t, int>& at) {
            return std::make_shared<const EvaluationKeys>(
                kg.evaluation_keys(e.sk, true, {}, false, elements, {}, {}, false, at));
        };
        const auto cut = keys(levels);
        const auto words = [](const EvaluationKeys& k) {
            std::size_t w = 0;
            for (const auto& [g, key] : k.galois)
                for (const auto& p : key->b) w += p.words();
            return w;
        };
        EXPECT_LT(words(*cut), words(*keys({})));
        EXPECT_GT(test::precision_bits(e.decrypt(boot->bootstrap(Evaluator(e.ctx, cut), ct)), z), 14.0) << s;
        // A key of each level one level short: the bootstrap needs it.
        for (const auto& [level, g] : one_at) {
            std::map<std::uint64_t, int> fewer = levels;
            --fewer.at(g);
            EXPECT_THROW(boot->bootstrap(Evaluator(e.ctx, keys(fewer)), ct), LevelError) << g << " at " << level;
        }
    }
    // Sparse slots: SlotToCoeff's own keys serve its levels only, far below CoeffToSlot's (the lowest: the last
    // transform's).
    const std::map<std::uint64_t, int> levels = sparse.galois_levels();
    const auto lowest =
        std::min_element(levels.begin(), levels.end(), [](auto& a, auto& b) { return a.second < b.second; });
    EXPECT_EQ(lowest->second, sparse.output_level() + 1);
}

TEST(Bootstrap, Errors) {
    auto& [e, boot] = boot_env();
    // Not enough levels: the message names what is needed.
    try {
        Parameters p = boot_params();
        p.levels = 8;
        Bootstrapper b(Context::create(p, 1));
        FAIL() << "no error";
    } catch (const ParameterError& err) {
        EXPECT_NE(std::string(err.what()).find("needs"), std::string::npos) << err.what();
    }
    Parameters dense = boot_params();
    dense.hamming_weight = 0;
    EXPECT_THROW(Bootstrapper(Context::create(dense, 1)), ParameterError);
    EXPECT_THROW(Bootstrapper(e.ctx, {.cts_levels = -1}), ParameterError);
    EXPECT_THROW(Bootstrapper(e.ctx, {.cts_levels = 10}), ParameterError);  // 2^9 slots: 9 stages
    EXPECT_THROW(Bootstrapper(e.ctx, {.double_angle = 9}), ParameterError);
    EXPECT_THROW(Bootstrapper(e.ctx, {.double_angle = -2}), ParameterError);
    EXPECT_THROW(Bootstrapper(e.ctx, {.failure_bits = 0}), ParameterError);
    // A given k_bound is kept whatever its failure probability, and says it.
    const Bootstrapper loose(e.ctx, {.double_angle = 3, .k_bound = 3});
    EXPECT_EQ(loose.k_bound(), 3.0);
    EXPECT_GT(loose.failure().log2_per_bootstrap, -20.0);
    // A level-0 ciphertext off its canonical scale (limbs dropped, the scale of the level it came from): no level is
    // left to adjust it, and the error says what to do.
    const Ciphertext odd = e.ev.drop_limbs(e.encrypt(e.random()), 0);
    try {
        boot.bootstrap(e.ev, odd);
        FAIL() << "no error";
    } catch (const ScaleError& err) {
        EXPECT_NE(std::string(err.what()).find("drop_level"), std::string::npos) << err.what();
    }
    // Missing Galois keys.
    Evaluator bare(e.ctx,
                   std::make_shared<const EvaluationKeys>(KeyGenerator(e.ctx).evaluation_keys(e.sk, true, {}, false)));
    const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(e.random(), e.ctx->scale_at(0), 0), e.pk);
    EXPECT_THROW(boot.bootstrap(bare, ct), MissingKeyError);
}

TEST(Parameters, BootstrappingLevelsHaveAScaleChainOfTheirOwn) {
    auto& e = layered_env().env;
    const Context& ctx = *e.ctx;
    EXPECT_EQ(ctx.user_level(), 2);
    EXPECT_EQ(ctx.max_level(), 17);
    EXPECT_EQ(ctx.rns().q_count(), 18u);
    EXPECT_EQ(ctx.scale_at(2), std::ldexp(1.0, 40));
    EXPECT_EQ(ctx.scale_at(17), std::ldexp(1.0, 55));
    for (int l = 17; l >= 1; --l) {
        const double q = static_cast<double>(ctx.rns().prime(static_cast<std::size_t>(l)));
        EXPECT_NEAR(std::log2(q), l > 2 ? 55.0 : 40.0, 0.5) << l;
        if (l != 3) EXPECT_DOUBLE_EQ(ctx.scale_at(l - 1), ctx.scale_at(l) * ctx.scale_at(l) / q) << l;
    }
    EXPECT_EQ(layered_params().log_qp_bits(), 60 + 2 * 40 + 15 * 55 + 3 * 60);
    EXPECT_EQ(layered_params().digits(), 6);  // 18 primes, alpha = 3
    Parameters p = layered_params();
    p.boot_bits = 30;  // below the user scale
    EXPECT_THROW(p.validate(), ParameterError);
    p = layered_params();
    p.boot_levels = 0;  // bits without levels
    EXPECT_THROW(p.validate(), ParameterError);
    p = layered_params();
    p.boot_secret_weight = -1;
    EXPECT_THROW(p.validate(), ParameterError);
    // The parameters (and the context's fingerprint) carry the new fields.
    const Bytes b = serialize(layered_params());
    const Parameters back = deserialize_parameters(b.data(), b.size());
    EXPECT_EQ(back.boot_levels, 15);
    EXPECT_EQ(back.boot_bits, 55);
    EXPECT_EQ(back.boot_secret_weight, 32);
}

TEST(Bootstrap, EncapsulationSwitchesToTheSparseSecretAndBack) {
    auto& le = layered_env();
    auto& e = le.env;
    const cvec z = e.random(true);
    const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(0), 0), e.pk);
    const Ciphertext sparse = switch_to_sparse(le.ev, ct);
    EXPECT_EQ(sparse.level(), 0);
    EXPECT_LT(test::precision_bits(e.decrypt(sparse), z), 2.0);  // under s', it does not decrypt under s
    // Back at level 0 (exact: the same phase mod q_0 up to the switching noise).
    const Ciphertext back = switch_from_sparse(le.ev, sparse);
    EXPECT_GT(test::precision_bits(e.decrypt(back), z), 15.0);
    // The keys survive serialization.
    const Bytes bytes = serialize(*e.ctx, *le.keys);
    const EvaluationKeys loaded = deserialize_evaluation_keys(*e.ctx, bytes.data(), bytes.size());
    ASSERT_TRUE(loaded.to_sparse && loaded.from_sparse);
    Evaluator ev2(e.ctx, std::make_shared<const EvaluationKeys>(loaded));
    EXPECT_GT(test::precision_bits(e.decrypt(switch_from_sparse(ev2, switch_to_sparse(ev2, ct))), z), 15.0);
    // Errors: above level 0, and without the keys (the environment's own evaluator has none).
    EXPECT_THROW(switch_to_sparse(le.ev, e.encrypt(z)), LevelError);
    EXPECT_THROW(switch_to_sparse(e.ev, ct), MissingKeyError);
    // The key switch behind them: to_sparse serves level 0 only; a key of another secret key is refused.
    EXPECT_THROW(le.ev.key_switch(e.ev.drop_level(e.encrypt(z), 1), *le.keys->to_sparse), LevelError);
    EXPECT_THROW(le.ev.key_switch(e.ev.tensor(e.encrypt(z), e.encrypt(z)), *le.keys->from_sparse),
                 ParameterError);  // size 3
    Ciphertext foreign = ct;
    foreign.key_id ^= 1;
    EXPECT_THROW(le.ev.key_switch(foreign, *le.keys->to_sparse), ParameterError);
    EXPECT_THROW(le.boot.bootstrap(e.ev, ct), MissingKeyError);
    Parameters plain = boot_params();
    auto other = Context::create(plain, 1);
    EvaluationKeys none;
    EXPECT_THROW(KeyGenerator(other).encapsulation_keys(KeyGenerator(other).secret_key(), none), ParameterError);
}

TEST(Bootstrap, LayeredEndToEndLandsOnTheUserLevelAndScale) {
    auto& le = layered_env();
    auto& e = le.env;
    const Bootstrapper& boot = le.boot;
    EXPECT_EQ(boot.output_level(), 2);
    EXPECT_EQ(boot.raise_level(), 2 + boot.depth());
    EXPECT_LE(boot.depth(), 15);
    const cvec z = e.random(true);
    for (int level : {0, 2}) {
        const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(level), level), e.pk);
        const Ciphertext out = boot.bootstrap(le.ev, ct);
        EXPECT_EQ(out.level(), 2);
        EXPECT_EQ(out.scale, std::ldexp(1.0, 40));
        EXPECT_GT(test::precision_bits(e.decrypt(out), z), 20.0) << "from level " << level;
        const Ciphertext sq = le.ev.multiply(out, out);
        cvec want(z.size());
        for (std::size_t i = 0; i < z.size(); ++i) want[i] = z[i] * z[i];
        EXPECT_GT(test::precision_bits(e.decrypt(sq), want), 15.0);
    }
    // Too few bootstrapping levels: the message says so.
    Parameters p = layered_params();
    p.boot_levels = 8;
    try {
        Bootstrapper b(Context::create(p, 1));
        FAIL() << "no error";
    } catch (const ParameterError& err) {
        EXPECT_NE(std::string(err.what()).find("bootstrapping levels"), std::string::npos) << err.what();
    }
}

// The Irwin-Hall tail against what is known of it in closed form: P(V >= 0) = 1/2, the complement, one and two terms,
// t^m / m! within one of the end (t = m / 2 - a <= 1), and the alternating sum of the CDF where it cancels little.
TEST(FailureProbability, IrwinHallTailIsTheExactLaw) {
    for (int m : {1, 2, 7, 32, 64}) EXPECT_NEAR(log2_irwin_hall_tail(m, 0.0), -1.0, 1e-12) << m;
    for (int m : {3, 32})
        for (double a : {0.3, 1.1, 2.5})
            EXPECT_NEAR(std::exp2(log2_irwin_hall_tail(m, a)) + std::exp2(log2_irwin_hall_tail(m, -a)), 1.0, 1e-12);
    EXPECT_NEAR(std::exp2(log2_irwin_hall_tail(1, 0.2)), 0.3, 1e-15);
    EXPECT_NEAR(std::exp2(log2_irwin_hall_tail(2, 0.5)), 0.125, 1e-15);  // (1 - 0.5)^2 / 2
    // One term of the CDF's sum: t^m / m!, here 2^-149.6 (|I| = 16 for a secret of weight 32).
    const auto log2_factorial = [](int m) { return std::lgamma(m + 1.0) / std::numbers::ln2; };
    EXPECT_NEAR(log2_irwin_hall_tail(32, 15.5), -32.0 - log2_factorial(32), 1e-9);
    EXPECT_NEAR(log2_irwin_hall_tail(32, 15.25), 32 * std::log2(0.75) - log2_factorial(32), 1e-9);
    EXPECT_EQ(log2_irwin_hall_tail(32, 16.0), -std::numeric_limits<double>::infinity());
    EXPECT_EQ(log2_irwin_hall_tail(32, -16.0), 0.0);
    // (1 / m!) sum_k (-1)^k C(m, k) (t - k)^m in long double: exact enough at m = 12.
    for (double a : {0.7, 2.5, 4.5}) {
        const int m = 12;
        const long double t = m / 2.0L - a;
        long double sum = 0, binom = 1, fact = 1;
        for (int k = 1; k <= m; ++k) fact *= k;
        for (int k = 0; k <= m && t - k > 0; ++k) {
            sum += (k % 2 ? -1 : 1) * binom * std::pow(t - k, static_cast<long double>(m));
            binom = binom * (m - k) / (k + 1);
        }
        EXPECT_NEAR(log2_irwin_hall_tail(m, a), static_cast<double>(std::log2(sum / fact)), 1e-9) << a;
    }
    EXPECT_THROW(log2_irwin_hall_tail(0, 1.0), ParameterError);
    EXPECT_THROW(log2_irwin_hall_tail(4, std::nan("")), ParameterError);
}

namespace {
// The layered shape's bootstrapper with k_bound 4 and a cosine of degree 19 under 3 double angles: EvalMod maps
// |I| <= 5 (past its nominal range of 4) within 2^-28 of the sine (in the output's units) and puts 2^-13.6 into the
// slots at |I| = 6.
BootstrapConfig short_reach() { return {.double_angle = 3, .k_bound = 4, .cos_degree = 19}; }
}  // namespace

// The reach rests on the plain chain modelling the encrypted one: eval_mod on x / (k_bound + 1) decrypts to
// eval_mod_reference(x) within the reach, past the nominal range, where the chain is within tolerance of the sine; one
// beyond it the encrypted EvalMod is off the sine as the chain is.
TEST(FailureProbability, EncryptedEvalModFollowsThePlainChainPastItsRange) {
    auto& le = layered_env();
    auto& e = le.env;
    const Bootstrapper boot(e.ctx, short_reach());
    const BootstrapFailure& f = boot.failure();
    ASSERT_EQ(f.reach, 5);
    const double range = boot.k_bound() + 1.0, k = boot.message_ratio();
    std::mt19937_64 rng(9);
    std::uniform_int_distribution<int> i_dist(-(f.reach + 1), f.reach + 1);
    std::uniform_real_distribution<double> m_dist(-1, 1);
    cvec y(e.ctx->slots());
    for (auto& v : y) v = (i_dist(rng) + m_dist(rng) / k) / range;
    const int level = boot.raise_level() - boot.config().cts_levels;
    const Ciphertext ct = e.encryptor.encrypt_symmetric(e.enc.encode(y, e.ctx->scale_at(level), level), e.sk);
    const cvec got = e.decrypt(boot.eval_mod(le.ev, ct));
    double within = 0, chain_within = 0, beyond = 1e300;
    for (std::size_t i = 0; i < y.size(); ++i) {
        const double x = y[i].real() * range, sine = std::sin(2.0 * std::numbers::pi * x);
        if (std::abs(std::nearbyint(x)) <= f.reach) {
            within = std::max(within, std::abs(got[i].real() - boot.eval_mod_reference(x)));
            chain_within = std::max(chain_within, std::abs(boot.eval_mod_reference(x) - sine));
        } else {
            beyond = std::min(beyond, std::abs(got[i].real() - sine));
        }
    }
    EXPECT_LT(within, std::ldexp(1.0, -20));
    EXPECT_LE(chain_within, f.tolerance);
    EXPECT_GT(beyond, f.tolerance);
}

// The failure probability is a computation (the law of I and EvalMod's reach); here it meets bootstraps. The layered
// shape (weight-32 encapsulation, n = 1024) with short_reach(): |I| > 5 happens in a coefficient with probability
// 6.4e-4 (1 - (1 - 6.4e-4)^1024 = 0.48 of the bootstraps). Each bootstrap fails exactly when its raise has a
// coefficient with |I| > reach; the bootstraps that fail, and the coefficients with |I| >= j, are as many as the law
// says, within 4.5 standard deviations.
TEST(FailureProbability, BootstrapsFailAsTheLawAndTheReachPredict) {
    auto& le = layered_env();
    auto& e = le.env;
    const Bootstrapper boot(e.ctx, short_reach());
    const BootstrapFailure& f = boot.failure();
    ASSERT_EQ(f.secret_weight, 32);
    ASSERT_EQ(f.coefficients, e.ctx->n());
    ASSERT_EQ(f.reach, 5);
    const double q0 = static_cast<double>(e.ctx->rns().prime(0));
    constexpr int kBootstraps = 100, kRaises = 300, kMaxJ = 7;
    std::vector<double> at_least(kMaxJ + 1, 0.0);  // coefficients with |I| >= j
    int failed = 0;
    for (int k = 0; k < kRaises; ++k) {
        const cvec z = e.random(true);
        const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(0), 0), e.pk);
        // The raise is deterministic: bootstrap(ct) raises ct to this same ciphertext.
        const Ciphertext raised = boot.raise(le.ev, ct);
        cvec c = e.decrypt(raised);  // decode(t) / scale: t's coefficients after the inverse special FFT
        e.enc.fft_special_inv(c);
        int largest = 0;
        for (const auto& w : c)
            for (double v : {w.real(), w.imag()}) {
                const int i = static_cast<int>(std::abs(std::nearbyint(v * raised.scale / q0)));
                largest = std::max(largest, i);
                for (int j = 1; j <= std::min(i, kMaxJ); ++j) at_least[static_cast<std::size_t>(j)] += 1;
            }
        if (k < kBootstraps) {
            const double bits = test::precision_bits(e.decrypt(boot.bootstrap(le.ev, ct)), z);
            EXPECT_EQ(bits<16.0, largest> f.reach)
                << "bootstrap " << k << ": |I| up to " << largest << ", " << bits << " bits";
            failed += bits < 16.0 ? 1 : 0;
        }
    }
    const double p_coefficient = std::exp2(f.log2_per_coefficient);
    const double p = 1.0 - std::pow(1.0 - p_coefficient, static_cast<double>(f.coefficients));
    EXPECT_GT(p, 0.3);
    EXPECT_LT(p, 0.7);
    EXPECT_LE(p, boot.failure_probability());  // the union bound is above
    EXPECT_NEAR(failed, kBootstraps * p, 4.5 * std::sqrt(kBootstraps * p * (1 - p)));
    const double samples = static_cast<double>(kRaises) * static_cast<double>(e.ctx->n());
    for (int j = 1; j <= kMaxJ; ++j) {
        const double expected = samples * 2.0 * std::exp2(log2_irwin_hall_tail(32, j - 0.5));
        if (expected < 10) continue;
        EXPECT_NEAR(at_least[static_cast<std::size_t>(j)], expected, 4.5 * std::sqrt(expected)) << "|I| >= " << j;
    }
}

// Every ciphertext a user can hold bootstraps (the layered shape of BOOT16: user levels under bootstrapping levels,
// a dense secret): fresh, brought down with drop_level, products rescaled or not, size 3, plaintext products, a
// polynomial's value; each comes back at the user level on its canonical scale with the message it had.
TEST(Bootstrap, EveryInputAUserCanHoldBootstraps) {
    auto& le = layered_env();
    auto& e = le.env;
    const Evaluator& ev = le.ev;
    const cvec z = e.random(true), w = e.random();
    const Ciphertext fresh = e.encrypt(z);  // at the user level, 2
    ASSERT_EQ(fresh.level(), 2);
    const Ciphertext product = ev.multiply(fresh, fresh);
    const std::map<std::string, Ciphertext> inputs = {
        {"fresh", fresh},
        {"drop_level to 1", ev.drop_level(fresh, 1)},
        {"drop_level to 0", ev.drop_level(fresh, 0)},
        {"a product", product},
        {"a product of a product", ev.multiply(product, ev.drop_level(fresh, 1))},
        {"a product, not rescaled", ev.multiply(fresh, fresh, false)},
        {"a tensor product (size 3)", ev.tensor(fresh, fresh)},
        {"a plaintext product", ev.multiply_plain(fresh, w)},
        {"a polynomial", algo::evaluate(ev, fresh, Polynomial({0.1, 0.5, 0.0, -0.25}))},
    };
    for (const auto& [what, ct] : inputs) {
        const cvec want = e.decrypt(ct.size() == 3 ? ev.relinearize(ct) : ct);
        const Ciphertext out = le.boot.bootstrap(ev, ct);
        EXPECT_EQ(out.level(), 2) << what;
        EXPECT_EQ(out.scale, e.ctx->scale_at(2)) << what;
        EXPECT_GT(test::precision_bits(e.decrypt(out), want), 20.0) << what;  // measured 22.0-25.3
    }
    // and drop_level keeps the canonical scale, so that the dropped ciphertext adds to one at that level as it is
    const Ciphertext at0 = ev.drop_level(fresh, 0), other = ev.drop_level(product, 0);
    EXPECT_EQ(at0.scale, e.ctx->scale_at(0));
    EXPECT_EQ(ev.add(at0, other).level(), 0);
    EXPECT_EQ(ev.drop_limbs(fresh, 0).scale, fresh.scale);
}

// A second bootstrapper of one context and config shares the first's encoded transforms (made without encoding), and
// a plan encoded afresh once both are gone gives the same bits.
TEST(Bootstrap, TransformsAreSharedAndAFreshPlanGivesTheSameBits) {
    auto& le = layered_env();
    auto& e = le.env;
    const Bootstrapper second(e.ctx);
    EXPECT_TRUE(second.shares_transforms_with(le.boot));
    EXPECT_FALSE(Bootstrapper(e.ctx, {.slots = 16}).shares_transforms_with(le.boot));
    const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(e.random(true), e.ctx->scale_at(0), 0), e.pk);
    auto other = Context::create(layered_params(), 1);  // the same parameters in a context whose plans nobody shares
    const Bytes kb = serialize(*e.ctx, *le.keys), cb = serialize(*e.ctx, ct);
    const auto keys = std::make_shared<const EvaluationKeys>(deserialize_evaluation_keys(*other, kb.data(), kb.size()));
    const Ciphertext ct2 = deserialize_ciphertext(*other, cb.data(), cb.size());
    Bytes fresh;
    {
        const Bootstrapper b(other);
        EXPECT_FALSE(b.shares_transforms_with(le.boot));
        fresh = serialize(*other, b.bootstrap(Evaluator(other, keys), ct2));
    }
    EXPECT_EQ(serialize(*e.ctx, second.bootstrap(le.ev, ct)), fresh);
}

TEST(Parameters, BootstrappingPresetsAreSecureAndHoldTheirBootstrap) {
    for (const char* name : {"BOOT15", "BOOT16", "BOOT16L"}) {
        const Parameters p = Parameters::named(name);
        EXPECT_NO_THROW(p.validate()) << name;
        EXPECT_EQ(p.hamming_weight, 0) << name;  // dense main secret: the HE Standard bound applies
        EXPECT_LE(p.log_qp_bits(), Parameters::max_log_qp_128(p.log_n)) << name;
        auto ctx = Context::create(p, 1);
        EXPECT_EQ(Bootstrapper::levels_needed(*ctx), p.boot_levels) << name;  // the default config fills them exactly
        // The chosen k_bound and double angles keep one bootstrap's failure probability at 2^-128 or below.
        const BootstrapFailure f = Bootstrapper::failure(*ctx);
        EXPECT_LE(f.log2_per_bootstrap, -128.0) << name;
        EXPECT_EQ(f.secret_weight, 32) << name;
        EXPECT_GE(f.reach, 15) << name;
    }
    const Parameters b16 = Parameters::named("BOOT16");
    EXPECT_EQ(b16.n(), std::uint64_t{1} << 16);
    EXPECT_GE(b16.levels, 9);
    EXPECT_EQ(b16.scale_bits, 40);
    const Parameters deep = Parameters::named("BOOT16L");  // 14 levels of 40 bits left after each bootstrap
    EXPECT_EQ(deep.n(), std::uint64_t{1} << 16);
    EXPECT_GE(deep.levels, 14);
    EXPECT_EQ(deep.scale_bits, 40);
}
