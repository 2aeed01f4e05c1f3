// Bootstrapping of sparse slots (the trace to a subring), the arcsine correction, SlotToCoeff first and real slots,
// end to end on the layered shape.
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
// Sparse packing on the layered parameters (dense secret, encapsulation): s = 16 (a trace of 5 steps) and s = 256 =
// n/4 (one step); keys for both, and for the arcsine test's configs.
constexpr std::size_t kSparse[] = {16, 256};
BootstrapConfig arcsine_config(int degree) {
    return {.cts_levels = 2, .stc_levels = 2, .log_message_ratio = 4, .arcsine_degree = degree};
}

struct SparseEnv {
    test::Env env;
    std::shared_ptr<const EvaluationKeys> keys;
    Evaluator ev;
    static std::vector<std::uint64_t> elements() {
        auto ctx = Context::create(layered_params(), 1);
        std::set<std::uint64_t> all;
        for (const BootstrapConfig& cfg :
             {BootstrapConfig{.slots = kSparse[0]}, BootstrapConfig{.slots = kSparse[1]},
              BootstrapConfig{.slots = kSparse[0], .arcsine_degree = 3}, arcsine_config(0),
              BootstrapConfig{.arcsine_degree = 3, .slot_to_coeff_first = true},
              BootstrapConfig{.slots = kSparse[0], .arcsine_degree = 3, .slot_to_coeff_first = true}})
            for (std::uint64_t g : Bootstrapper::galois_elements(*ctx, cfg)) all.insert(g);
        return {all.begin(), all.end()};
    }
    SparseEnv() : env(layered_params(), {}, elements()), keys(LayeredEnv::with_encapsulation(env)), ev(env.ctx, keys) {}
    cvec random_values(std::size_t s) {
        std::uniform_real_distribution<double> u(-1, 1);
        cvec v(s);
        for (auto& x : v) x = {u(env.rng), u(env.rng)};
        return v;
    }
};

SparseEnv& sparse_env() {
    static SparseEnv e;
    return e;
}
}  // namespace

TEST(Bootstrap, SparseCoeffToSlotPutsTheSubringCoefficientsInRealSlots) {
    auto& se = sparse_env();
    auto& e = se.env;
    const std::size_t half = e.ctx->slots();
    for (std::size_t s : kSparse) {
        const Bootstrapper boot(e.ctx, {.slots = s});
        ASSERT_TRUE(boot.sparse());
        EXPECT_EQ(Bootstrapper::galois_elements(*e.ctx, boot.config()), boot.galois_elements());
        EXPECT_EQ(Bootstrapper::galois_levels(*e.ctx, boot.config()), boot.galois_levels());
        const cvec z = e.enc.replicate(se.random_values(s), s);
        const Ciphertext raised = boot.raise(se.ev, e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(0), 0), e.pk));
        const Ciphertext w = boot.coeff_to_slot(se.ev, raised);
        EXPECT_EQ(w.level(), boot.raise_level() - boot.config().cts_levels);
        // raised's coefficients c_k / scale: Re u_k (k < n/2) and Im u_{k - n/2}; the subring's are t'_j = c_{g j}.
        cvec u = e.decrypt(raised);
        e.enc.fft_special_inv(u);
        const std::size_t g = half / s;
        const auto coeff = [&](std::size_t k) { return k < half ? u[k].real() : u[k - half].imag(); };
        const double f = 1.0 / (static_cast<double>(e.ctx->rns().prime(0)) / raised.scale * (boot.k_bound() + 1.0));
        cvec want(half);
        for (std::size_t p = 0; p < half; ++p) {
            const std::size_t q = p % (2 * s);
            std::size_t r = 0;  // bit reversal of q mod s over log2(s) bits
            for (std::size_t b = 1; b < s; b <<= 1) r = (r << 1) | ((q % s & b) ? 1 : 0);
            want[p] = coeff(g * (r + (q < s ? 0 : s))) * f;
        }
        EXPECT_LT(max_abs_error(e.decrypt(w), want), std::ldexp(1.0, -25)) << s << " slots";
    }
}

TEST(Bootstrap, SparseSlotsEndToEndWithOneEvalMod) {
    auto& se = sparse_env();
    auto& e = se.env;
    for (std::size_t s : kSparse) {
        const Bootstrapper boot(e.ctx, {.slots = s});
        const cvec z = e.enc.replicate(se.random_values(s), s);
        for (int level : {0, 2}) {
            const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(level), level), e.pk);
            OpCounts counts;
            const Ciphertext out = boot.bootstrap(se.ev, ct, {}, &counts);
            EXPECT_EQ(out.level(), 2);
            EXPECT_EQ(out.scale, std::ldexp(1.0, 40));
            const double bits = test::precision_bits(e.decrypt(out), z);  // every slot: the output repeats too
            // Fewer slots, larger coefficients: the default K grows with them (16 slots: 23.9 bits measured, 20.4
            // with full slots' K, the sine's curvature; 256 slots: 24.1).
            EXPECT_GT(bits, 22.5) << s << " slots from level " << level;
            // One EvalMod: its products are the only ciphertext products.
            EXPECT_EQ(counts.mult,
                      plan_polynomial(boot.cosine()).products + static_cast<std::size_t>(boot.config().double_angle));
        }
    }
    // With the arcsine correction the 16 slots keep their bits too.
    const Bootstrapper corrected(e.ctx, {.slots = kSparse[0], .arcsine_degree = 3});
    const cvec z = e.enc.replicate(se.random_values(kSparse[0]), kSparse[0]);
    const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(0), 0), e.pk);
    // measured 24.5-25.5 (25.1-26.1 with k_bound 10 and three double angles, which fail with probability 2^-42)
    EXPECT_GT(test::precision_bits(e.decrypt(corrected.bootstrap(se.ev, ct)), z), 23.0);
    EXPECT_THROW(Bootstrapper(e.ctx, {.slots = 3}), ParameterError);
    EXPECT_THROW(Bootstrapper(e.ctx, {.slots = 1024}), ParameterError);
    EXPECT_THROW(e.enc.replicate(cvec(17), 16), ParameterError);
    EXPECT_THROW(e.enc.replicate(cvec(4), 12), ParameterError);
    // The default K: full slots' times 2^floor(log2(g) / 2), g = n / (2 slots) copies of each value.
    const double full_k = Bootstrapper(e.ctx).message_ratio();
    EXPECT_EQ(Bootstrapper(e.ctx, {.slots = 16}).message_ratio(), 4 * full_k);  // g = 32
    EXPECT_EQ(Bootstrapper(e.ctx, {.slots = 64}).message_ratio(), 2 * full_k);  // g = 8
    EXPECT_EQ(Bootstrapper(e.ctx, {.slots = 256}).message_ratio(), full_k);     // g = 2
    // Full slots with slots = n/2 given explicitly.
    EXPECT_FALSE(Bootstrapper(e.ctx, {.slots = e.ctx->slots()}).sparse());
}

TEST(Bootstrap, ArcsineCorrectionRemovesTheSineError) {
    auto& se = sparse_env();
    auto& e = se.env;
    // K in [16, 32): a coefficient c loses about (2 pi c / K)^2 / 6 of itself to the sine's curvature.
    const Bootstrapper plain(e.ctx, arcsine_config(0)), corrected(e.ctx, arcsine_config(3));
    EXPECT_EQ(corrected.depth(), plain.depth() + 2);
    EXPECT_LT(plain.message_ratio(), 32.0);
    cvec z = e.random(true);
    for (auto& x : z) x *= 8.0;  // large values: large coefficients
    const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(0), 0), e.pk);
    const double before = test::precision_bits(e.decrypt(plain.bootstrap(se.ev, ct)), z);
    const double after = test::precision_bits(e.decrypt(corrected.bootstrap(se.ev, ct)), z);
    EXPECT_GT(after, before + 4.0);
    EXPECT_THROW(Bootstrapper(e.ctx, arcsine_config(4)), ParameterError);
    EXPECT_THROW(Bootstrapper(e.ctx, arcsine_config(17)), ParameterError);
}

TEST(Bootstrap, SlotToCoeffFirstRunsOnTheInputsLevels) {
    auto& se = sparse_env();
    auto& e = se.env;
    // The slots become coefficients, as large as the values: the arcsine correction keeps the sine's curvature away.
    for (std::size_t s : {std::size_t{0}, kSparse[0]}) {
        const Bootstrapper boot(e.ctx, {.slots = s, .arcsine_degree = 3, .slot_to_coeff_first = true});
        EXPECT_EQ(boot.config().stc_levels, 2) << s;  // all the user's levels (2), up to 3
        EXPECT_EQ(boot.input_level(), 2);
        EXPECT_EQ(boot.output_level(), 2);
        EXPECT_EQ(boot.raise_level(), 2 + boot.depth());
        EXPECT_EQ(boot.depth(), boot.config().cts_levels + boot.cosine().depth() + boot.config().double_angle +
                                    boot.arcsine().depth() + 1);
        EXPECT_EQ(Bootstrapper::galois_elements(*e.ctx, boot.config()), boot.galois_elements());
        EXPECT_EQ(Bootstrapper::galois_levels(*e.ctx, boot.config()), boot.galois_levels());
        const cvec z = s ? e.enc.replicate(se.random_values(s), s) : e.random(true);
        const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(2), 2), e.pk);
        BootstrapTimes times;
        const Ciphertext out = boot.bootstrap(se.ev, ct, {}, nullptr, &times);
        EXPECT_GT(times.slot_to_coeff, 0.0);
        EXPECT_EQ(out.level(), 2);
        EXPECT_EQ(out.scale, std::ldexp(1.0, 40));
        EXPECT_GT(test::precision_bits(e.decrypt(out), z), 24.0) << s << " slots";  // measured 25.6-27.6
        // Below its SlotToCoeff levels: the error says which level is needed.
        try {
            boot.bootstrap(se.ev, e.ev.drop_level(ct, 1));
            FAIL() << "no error";
        } catch (const LevelError& err) {
            EXPECT_NE(std::string(err.what()).find("level >= 2"), std::string::npos) << err.what();
        }
    }
    EXPECT_THROW(Bootstrapper(e.ctx, {.stc_levels = 3, .slot_to_coeff_first = true}), ParameterError);
}

// Transforms encoded at each bootstrap (BootstrapConfig::at_use): the plan holds one period of each diagonal's values,
// a fraction of the encodings, and the bootstrap gives the same bits (full and sparse slots, real and complex).
TEST(Bootstrap, TransformsEncodedAtUseGiveTheSameBits) {
    auto& e = boot_env().env;
    for (const BootstrapConfig& cfg : {BootstrapConfig{}, BootstrapConfig{.slots = e.ctx->slots() / 4, .real = true}}) {
        BootstrapConfig use = cfg;
        use.at_use = true;
        const Bootstrapper kept(e.ctx, cfg), at_use(e.ctx, use);
        EXPECT_FALSE(at_use.shares_transforms_with(kept));
        EXPECT_LT(at_use.plan_nbytes() * 4, kept.plan_nbytes());
        EXPECT_EQ(at_use.galois_levels(), kept.galois_levels());
        const std::size_t s = kept.slots();
        const cvec v = e.random(true);
        const cvec z = e.enc.replicate(cvec(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(s)), s);
        const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(0), 0), e.pk);
        const Evaluator ev(e.ctx, std::make_shared<const EvaluationKeys>(KeyGenerator(e.ctx).evaluation_keys(
                                      e.sk, true, {}, false, kept.galois_elements())));
        EXPECT_EQ(at_use.bootstrap(ev, ct).polys, kept.bootstrap(ev, ct).polys) << s;
    }
}

TEST(Bootstrap, RealSlotsTakeOneEvalModAndKeepTheRealParts) {
    auto& [e, full] = boot_env();
    const Bootstrapper real(e.ctx, {.real = true});
    EXPECT_FALSE(real.shares_transforms_with(full));  // its SlotToCoeff halves the constant coefficient's slot
    EXPECT_EQ(real.galois_elements(), full.galois_elements());
    EXPECT_EQ(Bootstrapper::galois_elements(*e.ctx, real.config()), real.galois_elements());
    EXPECT_EQ(Bootstrapper::galois_levels(*e.ctx, real.config()), real.galois_levels());
    EXPECT_EQ(real.depth(), full.depth());
    const cvec z = e.random(true);
    cvec re(z.size());
    for (std::size_t i = 0; i < z.size(); ++i) re[i] = z[i].real();
    for (int level : {0, 2}) {
        const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(level), level), e.pk);
        OpCounts real_counts, full_counts;
        const Ciphertext out = real.bootstrap(e.ev, ct, {}, &real_counts);
        EXPECT_EQ(out.level(), real.output_level());
        EXPECT_EQ(out.scale, e.ctx->scale_at(out.level()));
        // The real parts, the imaginary ones dropped, as precise as the full bootstrap of the complex values.
        const double bits = test::precision_bits(e.decrypt(out), re);
        const double full_bits = test::precision_bits(e.decrypt(full.bootstrap(e.ev, ct, {}, &full_counts)), z);
        EXPECT_GT(bits, 14.0) << "from level " << level;
        EXPECT_GT(bits, full_bits - 1.0) << "from level " << level;
        // One EvalMod instead of two: the products are EvalMod's. (Its cosine may differ from the full bootstrap's:
        // with half the coefficients, a smaller k_bound can meet the same failure probability.)
        const auto eval_mod_products = [](const Bootstrapper& b) {
            return plan_polynomial(b.cosine()).products + static_cast<std::size_t>(b.config().double_angle);
        };
        EXPECT_EQ(full_counts.mult, 2 * eval_mod_products(full));
        EXPECT_EQ(real_counts.mult, eval_mod_products(real));
    }
}

TEST(Bootstrap, RealSlotsWithoutDoublings) {
    // K as large as q_0 / s_0 allows: no doubling before ModRaise, so the projection doubles the message instead.
    auto& [e, full] = boot_env();
    const double q0_over_s0 = static_cast<double>(e.ctx->rns().prime(0)) / e.ctx->scale_at(0);
    const int log_k = static_cast<int>(std::floor(std::log2(q0_over_s0)));
    const Bootstrapper real(e.ctx, {.log_message_ratio = log_k, .real = true}),
        complex(e.ctx, {.log_message_ratio = log_k});
    EXPECT_EQ(real.message_ratio(), q0_over_s0);
    const cvec z = e.random(true);
    cvec re(z.size());
    for (std::size_t i = 0; i < z.size(); ++i) re[i] = z[i].real();
    const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(0), 0), e.pk);
    const double bits = test::precision_bits(e.decrypt(real.bootstrap(e.ev, ct)), re);
    EXPECT_GT(bits, test::precision_bits(e.decrypt(complex.bootstrap(e.ev, ct)), z) - 1.5);
    EXPECT_GT(bits, 16.0);  // measured 20.9
}

TEST(Bootstrap, RealSlotsWithSlotToCoeffFirst) {
    auto& se = sparse_env();
    auto& e = se.env;
    const Bootstrapper boot(e.ctx, {.arcsine_degree = 3, .slot_to_coeff_first = true, .real = true});
    const cvec z = e.random(true);
    cvec re(z.size());
    for (std::size_t i = 0; i < z.size(); ++i) re[i] = z[i].real();
    const Ciphertext ct = e.encryptor.encrypt(e.enc.encode(z, e.ctx->scale_at(2), 2), e.pk);
    const Ciphertext out = boot.bootstrap(se.ev, ct);
    EXPECT_EQ(out.level(), 2);
    EXPECT_GT(test::precision_bits(e.decrypt(out), re), 24.0);
}
