// Why a shared decryption needs flooding, shown by the attack it stops; and the samplers of secrets and errors
// checked for their distributions (their constant time is measured by bench/dudect_sampling.cpp, docs/SECURITY.md).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

#include "ckks/sampling_internal.hpp"
#include "kasoku/support/error.hpp"
#include "test_env.hpp"

namespace kasoku::ckks::test {
namespace {

std::uint64_t mul_mod(std::uint64_t a, std::uint64_t b, std::uint64_t q) {
    return static_cast<std::uint64_t>(static_cast<unsigned __int128>(a) * b % q);
}
std::uint64_t inverse_mod(std::uint64_t a, std::uint64_t q) {  // a^(q-2), q prime
    std::uint64_t r = 1, e = q - 2;
    for (; e; e >>= 1, a = mul_mod(a, a, q))
        if (e & 1) r = mul_mod(r, a, q);
    return r;
}

// The residues of a polynomial's first `limbs` limbs, as the backend holds them (NTT form for ciphertexts and keys).
std::vector<std::vector<std::uint64_t>> residues(const Context& ctx, const rns::RnsPoly& p, std::size_t limbs) {
    std::vector<std::vector<std::uint64_t>> out(limbs, std::vector<std::uint64_t>(ctx.n()));
    ctx.backend().download(
        p,
        [&](const std::uint64_t* const* l) {
            for (std::size_t j = 0; j < limbs; ++j) std::copy(l[j], l[j] + ctx.n(), out[j].begin());
        },
        {}, limbs);
    return out;
}

// Li and Micciancio's passive attack (EUROCRYPT 2021) on a ciphertext and the values its decryption revealed. CKKS
// decryption computes c_0 + c_1 s = m + e and decodes it; the values, encoded again at the ciphertext's scale, round
// back to the same integers m + e (decoding and encoding are inverse maps, and the rounding absorbs their floating
// point error). So Encode(values) = c_0 + c_1 s holds exactly, and in NTT form, where the product is pointwise,
// s = (Encode(values) - c_0) / c_1 limb by limb. Returns how many of s's NTT residues over the ciphertext's limbs
// the attack gets right (a residue where c_1 is 0 counts as wrong; that has probability n / q).
std::size_t attack(const Env& env, const Ciphertext& ct, const cvec& values) {
    const Context& ctx = *env.ctx;
    const std::size_t limbs = static_cast<std::size_t>(ct.level()) + 1;
    const Plaintext pt = env.enc.encode(values, ct.scale, ct.level());
    const auto m = residues(ctx, pt.poly, limbs), c0 = residues(ctx, ct.polys[0], limbs),
               c1 = residues(ctx, ct.polys[1], limbs), s = residues(ctx, env.sk.poly(), limbs);
    std::size_t right = 0;
    for (std::size_t j = 0; j < limbs; ++j) {
        const std::uint64_t q = ctx.rns().prime(j);
        for (std::size_t i = 0; i < ctx.n(); ++i) {
            if (c1[j][i] == 0) continue;
            const std::uint64_t guess = mul_mod((m[j][i] + q - c0[j][i]) % q, inverse_mod(c1[j][i], q), q);
            right += guess == s[j][i];
        }
    }
    return right;
}

cvec average(const std::vector<cvec>& xs) {
    cvec out(xs[0].size());
    for (const auto& x : xs)
        for (std::size_t i = 0; i < x.size(); ++i) out[i] += x[i];
    for (auto& v : out) v /= static_cast<double>(xs.size());
    return out;
}

struct Flood : ::testing::Test {
    // N = 2^12 at a scale of 2^55 (flooding for 40 bits costs about 39 bits of it here), a product and its rescale:
    // the attack works on any result, not only on fresh encryptions.
    Env env{research_params(12, 60, 55, 2, 60, 1), {}};
    // Values within 1/16 (a product within 1/256), so that m + e, about 2^47 here, decodes to doubles that round
    // back to it exactly; larger ones leave the attacker a few units of error, which a lattice step removes.
    Ciphertext result() {
        auto small = [&] {
            cvec v = env.random();
            for (auto& x : v) x /= 16;
            return v;
        };
        return env.ev.multiply(env.encrypt(small()), env.encrypt(small()));
    }
    std::size_t total(const Ciphertext& ct) const { return env.ctx->n() * (static_cast<std::size_t>(ct.level()) + 1); }
};

TEST_F(Flood, OneExactDecryptionGivesAwayTheSecretKey) {
    const Ciphertext ct = result();
    const cvec shared = env.dec.decrypt(ct, env.sk);
    EXPECT_EQ(attack(env, ct, shared), total(ct));  // every residue of s: the whole key
}

TEST_F(Flood, AFloodedDecryptionDoesNot) {
    const Ciphertext ct = result();
    const cvec exact = env.dec.decrypt(ct, env.sk);
    const FloodedDecryption d = env.dec.decrypt(ct, env.sk, Flooding{});
    EXPECT_EQ(attack(env, ct, d.values), 0u);
    // and the values keep the precision it states (a slot's error has standard deviation 2^-precision_bits)
    EXPECT_GT(d.precision_bits, 1.0);
    EXPECT_GE(precision_bits(d.values, exact), d.precision_bits - 4);
    EXPECT_EQ(d.sigma, flooding_sigma(env.ctx->n(), d.noise_bound, 40, 1));
}

// The refinement of many queries: each flood is fresh, so averaging k decryptions of one ciphertext divides the
// flood by sqrt(k). A flood too small for the queries made (here sigma about 0.45 for one query, the shape of the
// non-worst-case flooding that Guo et al. attack, USENIX Security 2024) is averaged away and the attack succeeds;
// sized for those queries, it is not.
TEST_F(Flood, AveragingManyDecryptionsUndoesAFloodSizedForFewerQueries) {
    const Ciphertext ct = result();
    constexpr int k = 256;
    const Flooding small{.statistical_security = 0, .queries = 1, .noise_bound = 0.01, .min_precision_bits = 0};
    std::vector<cvec> seen;
    for (int i = 0; i < k; ++i) seen.push_back(env.dec.decrypt(ct, env.sk, small).values);
    EXPECT_EQ(attack(env, ct, seen[0]), 0u);               // one query: not enough to round back to m + e
    EXPECT_EQ(attack(env, ct, average(seen)), total(ct));  // k of them: the whole key

    const Flooding sized{.statistical_security = 40, .queries = k};
    seen.clear();
    for (int i = 0; i < 64; ++i) seen.push_back(env.dec.decrypt(ct, env.sk, sized).values);
    EXPECT_EQ(attack(env, ct, average(seen)), 0u);
}

TEST_F(Flood, TheEstimatedNoiseBoundIsAboveTheNoise) {
    const cvec a = env.random(), b = env.random();
    cvec ab(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) ab[i] = a[i] * b[i];
    const Ciphertext ct = env.ev.multiply(env.encrypt(a), env.encrypt(b));
    const double noise = env.dec.noise(ct, env.sk, ab);  // the real noise: its values are known here
    const double estimate = env.dec.estimate_noise_bound(ct, env.sk);
    EXPECT_GT(noise, 0.0);
    EXPECT_GE(estimate, 4 * noise);
    // noise() is the coefficients' root mean square: the same as summing the coefficients of m + e - Encode(ab)
    // directly (over the first limb, centered: the noise is far below q_0 / 2)
    const Plaintext pt = env.enc.encode(ab, ct.scale, ct.level());
    rns::RnsPoly m = env.ctx->backend().poly(1, 0, true);
    std::vector<const rns::RnsPoly*> c{&ct.polys[0], &ct.polys[1]};
    env.ctx->backend().horner(c, env.sk.poly(), m, {});
    rns::RnsPoly p = env.ctx->backend().poly(1, 0, true);
    env.ctx->backend().upload(p, [&](std::size_t, std::uint64_t* d) {
        const auto r = residues(*env.ctx, pt.poly, 1);
        std::copy(r[0].begin(), r[0].end(), d);
    });
    env.ctx->backend().sub(m, p, m, {});
    env.ctx->backend().from_ntt(m, {});
    const std::uint64_t q = env.ctx->rns().prime(0);
    double sum = 0;
    const auto noise_residues = residues(*env.ctx, m, 1);
    for (std::uint64_t v : noise_residues[0]) {
        const double c = v > q / 2 ? -static_cast<double>(q - v) : static_cast<double>(v);
        sum += c * c;
    }
    EXPECT_NEAR(noise, std::sqrt(sum / static_cast<double>(env.ctx->n())), 1e-6 * noise);
}

TEST_F(Flood, RefusesAFloodThatDrownsTheValues) {
    const Ciphertext ct = result();
    try {
        env.dec.decrypt(ct, env.sk, Flooding{.statistical_security = 128, .queries = 1u << 20});
        FAIL() << "a flood of 128 bits over 2^20 queries at scale 2^40 leaves no bit";
    } catch (const kasoku::ParameterError& e) {
        EXPECT_NE(std::string(e.what()).find("compute to a scale of 2^"), std::string::npos) << e.what();
    }
    EXPECT_THROW(env.dec.decrypt(ct, env.sk, Flooding{.noise_bound = -1}), kasoku::ParameterError);
    EXPECT_THROW(env.dec.decrypt(ct, env.sk, Flooding{.queries = 0}), kasoku::ParameterError);
    EXPECT_THROW(env.dec.decrypt(ct, env.sk, Flooding{.statistical_security = 129}), kasoku::ParameterError);
}

// ---- the samplers' distributions

// The chi-square statistic of counts against probabilities, bins with fewer than 5 expected merged into the next
// (the tails); the count of merged bins minus one is its degrees of freedom.
std::pair<double, int> chi_square(const std::vector<double>& p, const std::vector<std::size_t>& counts, double total) {
    double stat = 0, e = 0, o = 0;
    int bins = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
        e += p[i] * total;
        o += static_cast<double>(counts[i]);
        if (e >= 5 || i + 1 == p.size()) {
            stat += (o - e) * (o - e) / std::max(e, 1e-300);
            e = o = 0;
            ++bins;
        }
    }
    return {stat, bins - 1};
}
// Wilson and Hilferty's approximation of the chi-square quantile at z standard deviations (z = 5: p below 3e-7).
double chi_square_limit(int df, double z = 5.0) {
    const double d = static_cast<double>(df), c = 2.0 / (9.0 * d);
    return d * std::pow(1.0 - c + z * std::sqrt(c), 3.0);
}

TEST(Samplers, GaussianMatchesTheDiscreteGaussianOfSigma3_2) {
    // the probabilities from the density itself (not the sampler's table): exp(-x^2 / 2 sigma^2), |x| <= 19
    constexpr int b = detail::kGaussianBound;
    std::vector<double> p(2 * b + 1);
    double z = 0;
    for (int x = -b; x <= b; ++x) z += p[x + b] = std::exp(-x * x / (2 * 3.2 * 3.2));
    for (auto& v : p) v /= z;
    Prng prng(Seed{}, 1);
    constexpr std::size_t draws = 1 << 21;
    std::vector<std::size_t> counts(p.size());
    for (std::size_t k = 0; k < draws; k += 4096)
        for (std::int64_t e : detail::sample_gaussian(4096, prng)) ++counts.at(static_cast<std::size_t>(e + b));
    const auto [stat, df] = chi_square(p, counts, draws);
    EXPECT_LT(stat, chi_square_limit(df)) << df << " degrees of freedom";
}

TEST(Samplers, GaussianIsTheTableScanWithoutItsEarlyExit) {
    // The constant-time count against the early-exit scan it replaced, on random words and on the words at every
    // boundary of the table (the same values: keys and encryptions are unchanged).
    const auto& cdf = detail::gaussian_cdf();
    std::vector<std::uint64_t> words;
    Prng prng(Seed{}, 2);
    for (int i = 0; i < 100000; ++i) words.push_back(prng.next_u64());
    for (std::uint64_t c : cdf)
        for (std::uint64_t d : {c - 1, c, c + 1})
            for (std::uint64_t sign : {0, 1}) words.push_back((d << 1) | sign);
    std::vector<std::int64_t> got(words.size());
    detail::gaussian_from_words(words.data(), words.size(), got.data());
    for (std::size_t i = 0; i < words.size(); ++i) {
        const std::uint64_t u = words[i] >> 1;
        int x = 0;
        while (x < detail::kGaussianBound && u >= cdf[x]) ++x;
        ASSERT_EQ(got[i], (words[i] & 1) ? -x : x) << "word " << words[i];
    }
}

TEST(Samplers, UniformTernaryIsUniform) {
    Prng prng(Seed{}, 3);
    constexpr std::size_t n = 1 << 20;
    std::vector<std::size_t> counts(3);
    for (std::int64_t v : detail::sample_ternary(n, 0, prng)) ++counts.at(static_cast<std::size_t>(v + 1));
    const auto [stat, df] = chi_square({1.0 / 3, 1.0 / 3, 1.0 / 3}, counts, n);
    EXPECT_LT(stat, chi_square_limit(df));
}

TEST(Samplers, TernaryIsThreeTimesTwoWordsOver2To128) {
    // floor(3 x / 2^128) = [x >= ceil(2^128 / 3)] + [x >= ceil(2^129 / 3)], at both thresholds and on random words
    using u128 = unsigned __int128;
    const u128 third = ((u128{0x5555555555555555ull} << 64) | 0x5555555555555556ull),
               two_thirds = ((u128{0xAAAAAAAAAAAAAAAAull} << 64) | 0xAAAAAAAAAAAAAAABull);
    std::vector<u128> xs = {0, ~u128{0}};
    for (u128 t : {third, two_thirds})
        for (u128 d : {u128{0}, u128{1}, u128{2}}) xs.insert(xs.end(), {t - d, t + d});
    Prng prng(Seed{}, 5);
    for (int i = 0; i < 100000; ++i) xs.push_back((u128{prng.next_u64()} << 64) | prng.next_u64());
    for (u128 x : xs) {
        const std::uint64_t w[2] = {static_cast<std::uint64_t>(x), static_cast<std::uint64_t>(x >> 64)};
        std::int64_t got = 9;
        detail::ternary_from_words(w, 1, &got);
        ASSERT_EQ(got, static_cast<std::int64_t>(x >= third) + static_cast<std::int64_t>(x >= two_thirds) - 1);
    }
}

TEST(Samplers, TheBackendsDrawsAreOpenSslsChaCha20Streams) {
    // rns::draw's ChaCha20 block function (what a device computes) against OpenSSL's keystream of Prng(seed, stream),
    // streams past 2^32 included, and draw_small against the samplers on those words.
    for (std::uint64_t stream : {std::uint64_t{0}, std::uint64_t{2}, std::uint64_t{0x123456789abcdefull}}) {
        Seed seed{};
        for (std::size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<std::uint8_t>(31 * i + stream);
        constexpr std::size_t blocks = 70;
        std::vector<std::uint32_t> want(16 * blocks);
        Prng(seed, stream).fill(want.data(), want.size() * sizeof(std::uint32_t));
        const rns::draw::Key key = rns::draw::key_of(seed, stream);
        for (std::size_t b = 0; b < blocks; ++b) {
            std::uint32_t got[16];
            rns::draw::chacha20_block(key, static_cast<std::uint32_t>(b), got);
            for (int i = 0; i < 16; ++i) ASSERT_EQ(got[i], want[16 * b + i]) << "block " << b << " word " << i;
        }
        constexpr std::size_t n = 256;
        std::vector<std::uint64_t> words(2 * n);
        std::vector<std::int64_t> got(n), expect(n);
        using Kind = rns::SmallDraw::Kind;
        for (Kind kind : {Kind::ternary, Kind::gaussian}) {
            Prng(seed, stream).fill(words.data(), words.size() * sizeof(std::uint64_t));
            if (kind == Kind::ternary) detail::ternary_from_words(words.data(), n, expect.data());
            else detail::gaussian_from_words(words.data(), n, expect.data());
            rns::draw_small({seed, stream, kind}, n, got.data());
            EXPECT_EQ(got, expect);
        }
    }
}

TEST(Samplers, FixedWeightPlacesItsNonzerosUniformly) {
    Prng prng(Seed{}, 4);
    constexpr std::size_t n = 64, draws = 40000;
    constexpr int h = 8;
    std::vector<std::size_t> where(n), sign(2);
    for (std::size_t k = 0; k < draws; ++k) {
        const auto s = detail::sample_ternary(n, h, prng);
        int nonzero = 0;
        for (std::size_t i = 0; i < n; ++i)
            if (s[i] != 0) {
                ASSERT_TRUE(s[i] == 1 || s[i] == -1);
                ++nonzero;
                ++where[i];
                ++sign[s[i] > 0];
            }
        ASSERT_EQ(nonzero, h);
    }
    const auto [stat, df] = chi_square(std::vector<double>(n, 1.0 / n), where, draws * h);
    EXPECT_LT(stat, chi_square_limit(df));
    const auto [s2, df2] = chi_square({0.5, 0.5}, sign, draws * h);
    EXPECT_LT(s2, chi_square_limit(df2));
    // a full-size draw (bootstrapping's encapsulation: 32 of 2^16)
    const auto big = detail::sample_ternary(1 << 16, 32, prng);
    EXPECT_EQ(std::count_if(big.begin(), big.end(), [](std::int64_t v) { return v != 0; }), 32);
    EXPECT_THROW(detail::sample_ternary(48, 4, prng), kasoku::ParameterError);  // n not a power of two
}

}  // namespace
}  // namespace kasoku::ckks::test
