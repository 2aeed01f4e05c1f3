// Polynomial evaluation, linear combinations and the functions built on them, against plain arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kasoku/algo/functions.hpp"
#include "kasoku/algo/polynomial.hpp"
#include "kasoku/support/error.hpp"
#include "test_env.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using namespace kasoku::algo;
using test::cvec;

namespace {

// N = 2^10 (512 slots), 2^40 scale, 12 levels: degree 2^10 - 1 on a mapped interval, or f_3 composites.
test::Env& env() {
    static test::Env e(test::research_params(10, 60, 40, 12, 60, 3), {});
    return e;
}

cvec uniform(double a, double b, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(a, b);
    cvec v(env().ctx->slots());
    for (auto& x : v) x = u(rng);
    return v;
}

// Uniform in [-1, 1] (decay: divided by i^2, as the Chebyshev coefficients of a smooth function decay).
cvec random_coeffs(std::size_t degree, bool complex, std::uint64_t seed, bool decay = false) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    cvec c(degree + 1);
    for (std::size_t i = 0; i < c.size(); ++i) {
        c[i] = {u(rng), complex ? u(rng) : 0.0};
        if (decay && i > 1) c[i] /= static_cast<double>(i * i);
    }
    return c;
}

double max_error(const cvec& got, const cvec& x, const std::function<std::complex<double>(std::complex<double>)>& f) {
    double e = 0;
    for (std::size_t i = 0; i < x.size(); ++i) e = std::max(e, std::abs(got[i] - f(x[i])));
    return e;
}

int ceil_log2(std::size_t v) {
    int k = 0;
    while ((std::size_t{1} << k) < v) ++k;
    return k;
}

}  // namespace

TEST(LinearCombination, TermsAtSeveralLevelsRealAndComplexCoefficients) {
    auto& e = env();
    const cvec a = e.random(true), b = e.random();
    const Ciphertext ca = e.encrypt(a);
    const Ciphertext cb = e.ev.multiply_scalar(e.ev.multiply_scalar(e.encrypt(b), 1.0), 1.0);  // two levels lower
    const std::complex<double> ka(0.75, -0.5), kb(-1.25, 0.0), k0(0.3, 0.2);
    const Ciphertext r = e.ev.linear_combination({&ca, &cb}, {ka, kb}, k0);
    EXPECT_EQ(r.level(), cb.level() - 1);
    EXPECT_DOUBLE_EQ(r.scale, e.ctx->scale_at(r.level()));
    const cvec got = e.decrypt(r);
    double err = 0;
    for (std::size_t i = 0; i < a.size(); ++i) err = std::max(err, std::abs(got[i] - (ka * a[i] + kb * b[i] + k0)));
    EXPECT_LT(err, std::ldexp(1.0, -25));
}

TEST(LinearCombination, AtALowerLevelAndScale) {
    auto& e = env();
    const cvec a = e.random(true);
    const Ciphertext ca = e.encrypt(a);
    const int level = ca.level() - 3;
    const double scale = e.ctx->scale_at(level) * 1.001;
    const Ciphertext r = e.ev.linear_combination_at({&ca}, {{0.5, 0.25}}, -0.125, level, scale);
    EXPECT_EQ(r.level(), level);
    EXPECT_EQ(r.scale, scale);
    EXPECT_LT(
        max_error(e.decrypt(r), a, [](std::complex<double> x) { return std::complex<double>(0.5, 0.25) * x - 0.125; }),
        std::ldexp(1.0, -25));
    EXPECT_THROW(e.ev.linear_combination_at({&ca}, {1.0}, 0.0, ca.level()), LevelError);  // not below the term
    EXPECT_THROW(e.ev.linear_combination_at({&ca}, {1.0}, 0.0, level, 0.5), ParameterError);
}

// k a b + sum c_i x_i + c with one relinearisation and rescale: factors at one level with different scales, terms at
// two levels (one of them the factors'), a complex coefficient.
TEST(MultiplyAdd, ProductPlusTermsInOneRescale) {
    auto& e = env();
    const cvec b = e.random(true), x = e.random(), y = e.random(true);
    const Ciphertext cx = e.encrypt(x);
    const int level = cx.level() - 2;
    const Ciphertext fa = e.ev.linear_combination_at({&cx}, {1.0}, 0.0, level, e.ctx->scale_at(level) * 1.01);
    const Ciphertext cb = e.ev.drop_level(e.encrypt(b), level);
    const Ciphertext cy = e.ev.multiply_scalar(e.encrypt(y), 1.0);  // above the factors' level
    const Ciphertext r = e.ev.multiply_add(fa, cb, 2, {&cy, &fa}, {{0.5, -0.75}, -1.0}, {0.25, 0.5});
    EXPECT_EQ(r.level(), level - 1);
    EXPECT_DOUBLE_EQ(r.scale,
                     fa.scale * cb.scale / static_cast<double>(e.ctx->rns().prime(static_cast<std::size_t>(level))));
    const cvec got = e.decrypt(r);
    double err = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        err = std::max(err, std::abs(got[i] - (2.0 * x[i] * b[i] + std::complex<double>(0.5, -0.75) * y[i] - x[i] +
                                               std::complex<double>(0.25, 0.5))));
    EXPECT_LT(err, std::ldexp(1.0, -20));
    EXPECT_THROW(e.ev.multiply_add(cx, cb, 1, {}, {}), ParameterError);  // factors at two levels
    EXPECT_THROW(e.ev.multiply_add(fa, cb, 0, {}, {}), ParameterError);  // k = 0
    const Ciphertext deeper = e.ev.multiply_scalar(fa, 1.0);
    EXPECT_THROW(e.ev.multiply_add(fa, cb, 1, {&deeper}, {1.0}), ParameterError);  // a term below the factors
}

TEST(LinearCombination, RefusesBadInput) {
    auto& e = env();
    const Ciphertext c = e.encrypt(e.random());
    EXPECT_THROW(e.ev.linear_combination({}, {}), ParameterError);
    EXPECT_THROW(e.ev.linear_combination({&c}, {1.0, 2.0}), ParameterError);
    EXPECT_THROW(e.ev.linear_combination({&c}, {std::nan("")}), ParameterError);
    const Ciphertext low = e.ev.drop_level(c, 0);
    EXPECT_THROW(e.ev.linear_combination({&low}, {1.0}), LevelError);
}

// Every degree class, both bases: the encrypted result against the same polynomial in plain arithmetic, at the stated
// level and on the canonical scale. Any evaluation, even an exact one of the noisy input, is off by about
// max|p'| times the noise of one product (2^-30 here); unit coefficients give |p'| up to sum_i i (power) or sum_i i^2
// (Chebyshev) near +-1, so above degree 16 the coefficients decay like 1/i^2 (those of a smooth function decay faster).
class PolynomialDegrees : public ::testing::TestWithParam<std::tuple<Basis, std::size_t>> {};

TEST_P(PolynomialDegrees, MatchesPlainEvaluation) {
    auto& e = env();
    const auto [basis, degree] = GetParam();
    const Polynomial p(random_coeffs(degree, false, degree, degree > 16), basis);
    ASSERT_EQ(p.depth(), ceil_log2(degree + 1));
    const cvec x = uniform(-1, 1, 7);
    const Ciphertext cx = e.encrypt(x);
    OpCounts counts;
    const Ciphertext r = evaluate(e.ev, cx, p, {}, &counts);
    EXPECT_EQ(r.level(), cx.level() - p.depth());
    EXPECT_NEAR(r.scale / e.ctx->scale_at(r.level()), 1.0, 1e-9);
    EXPECT_EQ(counts.mult, plan_polynomial(p).products);
    const double err = max_error(e.decrypt(r), x, [&](auto v) { return p(v); });
    EXPECT_LE(err, std::ldexp(1.0, -20)) << p.describe();
}

INSTANTIATE_TEST_SUITE_P(Bases, PolynomialDegrees,
                         ::testing::Combine(::testing::Values(Basis::power, Basis::chebyshev),
                                            ::testing::Values(1, 2, 3, 4, 5, 7, 8, 12, 15, 16, 31, 33, 63, 64, 127, 200,
                                                              255)),
                         [](const auto& info) {
                             return std::string(std::get<0>(info.param) == Basis::power ? "power" : "chebyshev") + "_" +
                                    std::to_string(std::get<1>(info.param));
                         });

TEST(Polynomial, ChebyshevOnAnIntervalWithComplexCoefficientsAtDegree1023) {
    auto& e = env();
    const cvec c = random_coeffs(1023, true, 3, true);
    const Polynomial p(c, Basis::chebyshev, -3.0, 5.0);
    EXPECT_EQ(p.depth(), 11);
    const cvec x = uniform(-3, 5, 11);
    const Ciphertext r = evaluate(e.ev, e.encrypt(x), p);
    EXPECT_EQ(r.level(), e.ctx->max_level() - 11);
    EXPECT_LE(max_error(e.decrypt(r), x, [&](auto v) { return p(v); }), std::ldexp(1.0, -20));
}

TEST(Polynomial, ProductsStayNearTwoSqrtDegree) {
    for (std::size_t d : {7u, 15u, 31u, 63u, 127u, 255u, 511u, 1023u}) {
        for (Basis b : {Basis::power, Basis::chebyshev}) {
            const PolynomialPlan plan = plan_polynomial(Polynomial(random_coeffs(d, false, d), b));
            const double bound = 2.0 * std::sqrt(static_cast<double>(d)) + std::log2(static_cast<double>(d)) + 1.0;
            EXPECT_LE(static_cast<double>(plan.products), bound) << "degree " << d;
        }
    }
}

TEST(Polynomial, TooFewLevelsNamesTheDepthAndLeavesTheOperand) {
    auto& e = env();
    const Polynomial p(random_coeffs(63, false, 5), Basis::chebyshev, -8.0, 8.0);  // depth 7
    const Ciphertext cx = e.ev.drop_level(e.encrypt(e.random()), 6);
    const Ciphertext copy = cx;
    try {
        evaluate(e.ev, cx, p);
        FAIL() << "expected LevelError";
    } catch (const LevelError& err) {
        EXPECT_NE(std::string(err.what()).find("needs 7 levels"), std::string::npos) << err.what();
    }
    EXPECT_EQ(cx.polys[0], copy.polys[0]);
    EXPECT_THROW(evaluate(e.ev, e.encrypt(e.random()), Polynomial({1.0}, Basis::power)), ParameterError);
    EXPECT_THROW(Polynomial({1.0, std::nan("")}), ParameterError);
    EXPECT_THROW(Polynomial({1.0, 1.0}, Basis::chebyshev, 2.0, 1.0), ParameterError);
}

TEST(Polynomial, SparsePolynomialLandsOnTheStatedLevel) {
    auto& e = env();
    cvec c(16, 0.0);
    c[1] = 1.0;
    c[15] = 1e-3;  // most levels are taken by one term
    const Polynomial p(c, Basis::power);
    const cvec x = uniform(-1, 1, 2);
    const Ciphertext r = evaluate(e.ev, e.encrypt(x), p);
    EXPECT_EQ(r.level(), e.ctx->max_level() - 4);
    EXPECT_LE(max_error(e.decrypt(r), x, [&](auto v) { return p(v); }), std::ldexp(1.0, -20));
}

TEST(Chebyshev, InterpolantOfTheLogisticIsWithin1e4On10000Points) {
    const Polynomial p = chebyshev([](double v) { return 1.0 / (1.0 + std::exp(-v)); }, -8, 8, 63);
    double err = 0;
    for (int i = 0; i < 10000; ++i) {
        const double v = -8.0 + 16.0 * i / 9999.0;
        err = std::max(err, std::abs(p(v) - 1.0 / (1.0 + std::exp(-v))));
    }
    EXPECT_LT(err, 1e-4);
    // Odd function: the even Chebyshev coefficients (but the constant 1/2) are dropped.
    for (std::size_t j = 2; j < p.coeffs.size(); j += 2) EXPECT_EQ(p.coeffs[j], 0.0);
}

TEST(Functions, SigmoidExpSinCosSqrt) {
    auto& e = env();
    const cvec x8 = uniform(-8, 8, 21);
    EXPECT_LT(max_error(e.decrypt(sigmoid(e.ev, e.encrypt(x8))), x8, [](auto v) { return 1.0 / (1.0 + std::exp(-v)); }),
              1e-4);
    const cvec x1 = uniform(-1, 1, 22);
    EXPECT_LT(max_error(e.decrypt(kasoku::algo::exp(e.ev, e.encrypt(x1))), x1, [](auto v) { return std::exp(v); }),
              1e-6);
    const cvec xp = uniform(-3.14, 3.14, 23);
    EXPECT_LT(max_error(e.decrypt(kasoku::algo::sin(e.ev, e.encrypt(xp))), xp, [](auto v) { return std::sin(v); }),
              1e-6);
    EXPECT_LT(max_error(e.decrypt(kasoku::algo::cos(e.ev, e.encrypt(xp))), xp, [](auto v) { return std::cos(v); }),
              1e-6);
    const cvec xs = uniform(0.1, 1, 24);
    EXPECT_LT(
        max_error(e.decrypt(kasoku::algo::sqrt(e.ev, e.encrypt(xs), 0.1, 1)), xs, [](auto v) { return std::sqrt(v); }),
        1e-4);
}

TEST(Functions, InverseWithNewtonSteps) {
    auto& e = env();
    const cvec x = uniform(0.5, 4, 25);
    EXPECT_EQ(inverse_depth(0.5, 4, 15, 2), 9);
    const Ciphertext r = inverse(e.ev, e.encrypt(x), 0.5, 4, 15, 2);
    EXPECT_EQ(r.level(), e.ctx->max_level() - 9);
    EXPECT_LT(max_error(e.decrypt(r), x, [](auto v) { return 1.0 / v; }), 1e-6);
    EXPECT_THROW(inverse_depth(-1, 1), ParameterError);
}

TEST(Functions, SignAndCompareAwayFromZero) {
    auto& e = env();
    const double eps = 0.25;
    const int bits = 12;
    const int k = sign_iterations(eps, bits);
    ASSERT_LE(3 * k, e.ctx->max_level());
    cvec x = uniform(-1, 1, 26);
    for (auto& v : x) v = v.real() >= 0 ? std::max(v.real(), eps) : std::min(v.real(), -eps);
    const Ciphertext s = sign(e.ev, e.encrypt(x), eps, bits);
    EXPECT_EQ(s.level(), e.ctx->max_level() - 3 * k);
    EXPECT_LT(max_error(e.decrypt(s), x, [](auto v) { return v.real() > 0 ? 1.0 : -1.0; }),
              std::ldexp(1.0, -bits) + 1e-5);
    cvec y(x.size(), 0.0);
    const Ciphertext c = compare(e.ev, e.encrypt(x), e.encrypt(y), eps, bits);
    EXPECT_LT(max_error(e.decrypt(c), x, [](auto v) { return v.real() > 0 ? 1.0 : 0.0; }),
              std::ldexp(1.0, -bits) + 1e-5);
    EXPECT_THROW(sign(e.ev, e.ev.drop_level(e.encrypt(x), 2), eps, bits), LevelError);
    EXPECT_THROW(sign_iterations(0.0, 10), ParameterError);
}
