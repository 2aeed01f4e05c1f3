// Linear transforms and encrypted matrix products against plaintext references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "kasoku/algo/matmul.hpp"
#include "kasoku/support/error.hpp"
#include "test_env.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using namespace kasoku::algo;
using test::cvec;

namespace {

// N = 2^10 (512 slots), four levels of 40 bits: a matrix product (depth 3) plus one spare level.
Parameters small_params() { return test::research_params(10, 60, 40, 4, 60, 2); }

using Mat = std::vector<double>;

Mat product(const Mat& a, const Mat& b, std::size_t l, std::size_t d) {
    Mat c(l * d, 0.0);
    for (std::size_t i = 0; i < l; ++i)
        for (std::size_t k = 0; k < d; ++k)
            for (std::size_t j = 0; j < d; ++j) c[i * d + j] += a[i * d + k] * b[k * d + j];
    return c;
}

double max_error(const Mat& x, const Mat& y) {
    double e = 0;
    for (std::size_t i = 0; i < x.size(); ++i) e = std::max(e, std::fabs(x[i] - y[i]));
    return e;
}

// One context and one key set for every test: the union of the Galois elements of the shapes below.
struct Shared {
    std::unique_ptr<test::Env> env;
    static const std::vector<std::tuple<std::size_t, std::size_t, std::size_t>>& shapes() {
        static const std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> s = {
            {2, 1, 0}, {3, 1, 0}, {4, 1, 0}, {8, 1, 0}, {2, 2, 0}, {3, 2, 0},
            {4, 4, 0}, {8, 4, 0}, {8, 2, 2}, {8, 1, 4}, {6, 1, 3}, {40, 1, 0}};
        return s;
    }
    Shared() {
        const Parameters p = small_params();
        auto ctx = Context::create(p, 2);
        std::set<std::uint64_t> elts;
        for (auto [d, g, rows] : shapes())
            for (auto e : MatrixEncoder(ctx, d, g, rows).galois_elements()) elts.insert(e);
        env = std::make_unique<test::Env>(p, std::vector<std::int64_t>{1, 2, 3, 5, -1, -7, 100},
                                          std::vector<std::uint64_t>(elts.begin(), elts.end()));
    }
};

Shared& shared() {
    static Shared s;
    return s;
}

std::vector<Mat> random_mats(std::mt19937_64& rng, std::size_t count, std::size_t size) {
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<Mat> out(count, Mat(size));
    for (auto& m : out)
        for (auto& x : m) x = u(rng);
    return out;
}

// Error bound of one product: entries in [0, 1), sums of d terms, scale 2^40.
constexpr double kBound = 1e-6;

void check_product(std::size_t d, std::size_t g, std::size_t rows) {
    auto& e = *shared().env;
    MatrixEncoder enc(e.ctx, d, g, rows);
    auto A = random_mats(e.rng, g, rows * d), B = random_mats(e.rng, g, d * d);
    auto ca = enc.encrypt(A, rows, e.pk), cb = enc.encrypt(B, d, e.pk);
    OpCounts counts;
    auto cc = matmul(e.ev, ca, cb, 0, &counts);
    EXPECT_EQ(cc.level(), e.ctx->max_level() - 3);
    auto C = enc.decrypt(cc, e.sk);
    ASSERT_EQ(C.size(), g);
    for (std::size_t i = 0; i < g; ++i) {
        ASSERT_EQ(C[i].size(), rows * d);
        EXPECT_LT(max_error(C[i], product(A[i], B[i], rows, d)), kBound)
            << "d=" << d << " g=" << g << " rows=" << rows << " i=" << i;
    }
    EXPECT_EQ(counts.mult, cc.grid() * cc.grid() * cc.grid() * std::min(rows, enc.block()));
    EXPECT_GT(counts.rot, 0u);
}

}  // namespace

TEST(Bsgs, SplitCoversEveryOffsetOnce) {
    for (std::vector<std::int64_t> offs :
         {std::vector<std::int64_t>{-7, -3, 0, 1, 2, 9, 30}, std::vector<std::int64_t>{0, 64, 128, 192},
          std::vector<std::int64_t>{5, -59}}) {
        auto p = plan_bsgs(offs);
        ASSERT_EQ(p.split.size(), offs.size());
        for (std::size_t k = 0; k < offs.size(); ++k)
            EXPECT_EQ(p.babies[p.split[k].first] + p.giants[p.split[k].second], offs[k]);
        for (std::size_t n1 : {1u, 2u, 4u}) {
            auto q = plan_bsgs(offs, n1);
            for (std::size_t k = 0; k < offs.size(); ++k)
                EXPECT_EQ(q.babies[q.split[k].first] + q.giants[q.split[k].second], offs[k]);
        }
    }
    // 2d-1 = 63 consecutive offsets: far fewer rotations than 62 one-by-one
    std::vector<std::int64_t> s;
    for (int k = -31; k < 32; ++k) s.push_back(k);
    auto p = plan_bsgs(s);
    EXPECT_GT(p.n1, 1u);
    EXPECT_LT(p.babies.size() + p.giants.size(), 24u);
}

TEST(LinearTransform, DenseMatrixAndDiagonalsMatchReference) {
    auto& e = *shared().env;
    const std::size_t slots = e.ctx->slots();
    std::uniform_real_distribution<double> u(-1, 1);
    for (std::size_t dim : {std::size_t{16}, slots}) {
        for (std::size_t baby : {std::size_t{0}, std::size_t{4}}) {
            // a banded matrix (dim = slots: cyclic) with 9 nonzero diagonals
            std::vector<std::complex<double>> m(dim * dim, 0.0);
            for (std::size_t s = 0; s < dim; ++s)
                for (int r : {-4, -3, -1, 0, 1, 2, 5, 6, 7}) m[s * dim + (s + dim + r) % dim] = u(e.rng);
            // keys for exactly the elements the transform reports (they depend on the parameters only)
            const auto elts =
                LinearTransform::from_matrix(e.ctx, m.data(), dim, e.ctx->max_level(), baby).galois_elements();
            test::Env env2(small_params(), {}, elts, 7);
            auto lt = LinearTransform::from_matrix(env2.ctx, m.data(), dim, env2.ctx->max_level(), baby);
            cvec x = env2.random();
            OpCounts c;
            Ciphertext y = lt.apply(env2.ev, env2.encrypt(x), 0, &c);
            EXPECT_EQ(y.level(), env2.ctx->max_level() - 1);
            EXPECT_NEAR(y.scale, env2.ctx->scale_at(env2.ctx->max_level() - 1), 1e-6 * y.scale);
            cvec want(slots, 0.0);
            for (std::size_t s = 0; s < dim; ++s)
                for (std::size_t t = 0; t < dim; ++t) want[s] += m[s * dim + t] * x[t];
            EXPECT_GT(test::precision_bits(env2.decrypt(y), want), 25) << "dim=" << dim << " baby=" << baby;
            EXPECT_EQ(c.cmult, lt.diagonal_count());
            EXPECT_EQ(c.rescale, 1u);
        }
    }
}

// Diagonals that repeat every p slots are kept in their subring (2p words per limb) and give the same map.
TEST(LinearTransform, PeriodicDiagonalsAreKeptInTheirSubring) {
    auto& e = *shared().env;
    const std::size_t slots = e.ctx->slots(), n = e.ctx->n();
    std::uniform_real_distribution<double> u(-1, 1);
    std::map<std::int64_t, cvec> diags;
    for (auto [r, period] : {std::pair<std::int64_t, std::size_t>{0, 4}, {3, 2}, {-7, 1}, {5, slots}}) {
        cvec base(period);
        for (auto& x : base) x = {u(e.rng), u(e.rng)};
        auto& d = diags[r];
        for (std::size_t s = 0; s < slots; ++s) d.push_back(base[s % period]);
    }
    const int level = e.ctx->max_level();
    const auto elts = LinearTransform(e.ctx, diags, level).galois_elements();
    test::Env env2(small_params(), {}, elts, 7);
    const LinearTransform lt(env2.ctx, diags, level);
    const std::size_t limbs = static_cast<std::size_t>(level) + 1 + env2.ctx->rns().p_count();
    EXPECT_EQ(lt.nbytes(), limbs * (8 + 4 + 2 + n) * sizeof(std::uint64_t));
    const cvec x = env2.random();
    cvec want(slots, 0.0);
    for (const auto& [r, d] : diags)
        for (std::size_t s = 0; s < slots; ++s)
            want[s] += d[s] * x[(s + slots + static_cast<std::size_t>(r + static_cast<std::int64_t>(slots))) % slots];
    EXPECT_GT(test::precision_bits(env2.decrypt(lt.apply(env2.ev, env2.encrypt(x))), want), 25);
}

// Encoded at use (each giant step's diagonals encoded when apply reaches it): the same ciphertext bit for bit, real
// diagonals kept as one double per slot, complex ones as two.
TEST(LinearTransform, EncodedAtUseGivesTheSameCiphertext) {
    auto& e = *shared().env;
    const std::size_t slots = e.ctx->slots();
    std::uniform_real_distribution<double> u(-1, 1);
    std::map<std::int64_t, cvec> diags;
    for (std::int64_t r : {0, 1, 2, 3, 9, 17, -5, 40}) {
        auto& d = diags[r];
        for (std::size_t s = 0; s < slots; ++s) d.emplace_back(u(e.rng), r == 3 ? u(e.rng) : 0.0);
    }
    const int level = e.ctx->max_level();
    const LinearTransform kept(e.ctx, diags, level, 4);
    test::Env env2(small_params(), {}, kept.galois_elements(), 7);
    const LinearTransform whole(env2.ctx, diags, level, 4), at_use(env2.ctx, diags, level, 4, {}, true);
    EXPECT_GT(whole.plan().giants.size(), 1u);
    EXPECT_EQ(at_use.nbytes(), (diags.size() + 1) * slots * sizeof(double));
    EXPECT_EQ(at_use.galois_elements(), whole.galois_elements());
    const Ciphertext x = env2.encrypt(env2.random());
    const Ciphertext a = whole.apply(env2.ev, x), b = at_use.apply(env2.ev, x);
    ASSERT_EQ(a.polys.size(), b.polys.size());
    for (std::size_t i = 0; i < a.polys.size(); ++i) EXPECT_TRUE(a.polys[i] == b.polys[i]) << "polynomial " << i;
    EXPECT_EQ(a.scale, b.scale);
    // the operand handed over (its decomposition keeps it instead of a copy): the same bits
    Ciphertext moved = x;
    const Ciphertext c = whole.apply(env2.ev, std::move(moved));
    for (std::size_t i = 0; i < a.polys.size(); ++i) EXPECT_TRUE(a.polys[i] == c.polys[i]) << "polynomial " << i;
    EXPECT_EQ(a.scale, c.scale);
    // the rotated babies' diagonals one giant step a pass (each pass makes the babies again): the same bits
    LinearTransform one_by_one(env2.ctx, diags, level, 4, {}, true);
    one_by_one.set_at_use_batch_bytes(1);
    OpCounts batched, passes;
    EXPECT_EQ(at_use.apply(env2.ev, x, {}, &batched).polys, one_by_one.apply(env2.ev, x, {}, &passes).polys);
    EXPECT_GT(passes.rot, batched.rot);
    EXPECT_EQ(passes.cmult, batched.cmult);
}

// The two product bases: the diagonals multiply the hoisted baby rotations over Q_l * P, or each baby rotation brought
// down to Q_l; both give the map (to the rounding of the products), kept or encoded at use the same bits, and the
// diagonals over Q_l hold l + 1 limbs instead of l + 1 + k. Automatic: the level basis low in the chain with many
// diagonals (k = 4 special primes above 2 q-limbs), the extended one at the top with few.
TEST(LinearTransform, BothProductBasesGiveTheMap) {
    const Parameters p = test::research_params(10, 60, 40, 4, 60, 4);
    std::mt19937_64 rng(21);
    std::uniform_real_distribution<double> u(-1, 1);
    const std::size_t slots = std::size_t{1} << 9;
    std::map<std::int64_t, cvec> many, few;
    for (std::int64_t r = -40; r < 40; ++r) {
        auto& d = many[r];
        for (std::size_t s = 0; s < slots; ++s) d.emplace_back(u(rng), r == 3 ? u(rng) : 0.0);
    }
    for (std::int64_t r : {0, 1, 2}) few[r] = many[r];
    auto ctx0 = Context::create(p, 1);
    std::set<std::uint64_t> elts;
    for (int level : {1, 4})
        for (const auto* d : {&many, &few})
            for (std::size_t baby : {0, 40})  // 40: giant steps of 40 terms, more than a chunk at use
                for (auto g : LinearTransform(ctx0, *d, level, baby).galois_elements()) elts.insert(g);
    test::Env e(p, {}, {elts.begin(), elts.end()}, 9, 1);
    EXPECT_EQ(LinearTransform(e.ctx, many, 1).products(), ProductBasis::level);
    EXPECT_EQ(LinearTransform(e.ctx, few, 4).products(), ProductBasis::extended);
    const cvec x = e.random(true);
    cvec want(slots, 0.0);
    for (const auto& [r, d] : many)
        for (std::size_t s = 0; s < slots; ++s)
            want[s] += d[s] * x[(s + slots + static_cast<std::size_t>(r + static_cast<std::int64_t>(slots))) % slots];
    for (int level : {1, 4}) {
        const Ciphertext in = e.ev.drop_level(e.encrypt(x), level);
        for (auto basis : {ProductBasis::extended, ProductBasis::level}) {
            const LinearTransform kept(e.ctx, many, level, 0, {}, false, basis);
            const LinearTransform at_use(e.ctx, many, level, 0, {}, true, basis);
            EXPECT_EQ(kept.products(), basis);
            const Ciphertext y = kept.apply(e.ev, in);
            EXPECT_EQ(y.level(), level - 1);
            EXPECT_NEAR(y.scale, e.ctx->scale_at(level - 1), 1e-6 * y.scale);
            EXPECT_GT(test::precision_bits(e.decrypt(y), want), 20) << "level " << level;
            EXPECT_EQ(at_use.apply(e.ev, in).polys, y.polys) << "level " << level;
            // Giant steps of 40 terms: encoded at use in chunks of kAtUseChunk, summed to the same bits.
            const LinearTransform wide(e.ctx, many, level, 40, {}, false, basis);
            const LinearTransform wide_at_use(e.ctx, many, level, 40, {}, true, basis);
            ASSERT_GT(many.size() / wide.plan().giants.size(), LinearTransform::kAtUseChunk);
            EXPECT_EQ(wide_at_use.apply(e.ev, in).polys, wide.apply(e.ev, in).polys) << "level " << level;
            const std::size_t limbs = static_cast<std::size_t>(level) + 1 + (basis == ProductBasis::level ? 0 : 4);
            EXPECT_EQ(kept.nbytes(), many.size() * limbs * e.ctx->n() * sizeof(std::uint64_t));
        }
    }
}

// Keys made for low levels hold fewer special primes (RnsContext::special_for): a transform whose rotations' keys are
// some for its level only and some for every level (two special-prime counts among its baby and giant steps) sums each
// count's products apart, and gives the map in both product bases, kept and encoded at use.
TEST(LinearTransform, KeysOfSeveralSpecialPrimeCounts) {
    const Parameters p = test::research_params(10, 60, 40, 4, 60, 4);
    std::mt19937_64 rng(22);
    std::uniform_real_distribution<double> u(-1, 1);
    const std::size_t slots = std::size_t{1} << 9;
    std::map<std::int64_t, cvec> diags;
    for (std::int64_t r = -20; r < 20; ++r)
        for (std::size_t s = 0; s < slots; ++s) diags[r].emplace_back(u(rng), 0.0);
    test::Env e(p, {}, {}, 9, 1);
    const int level = 1;
    const std::size_t low_p = e.ctx->rns().special_for(level + 1);
    ASSERT_LT(low_p, e.ctx->rns().p_count());
    const std::vector<std::uint64_t> elts = LinearTransform(e.ctx, diags, level, 5).galois_elements();
    std::map<std::uint64_t, int> levels;  // every other element's key for this level only
    for (std::size_t i = 0; i < elts.size(); i += 2) levels[elts[i]] = level;
    const auto keys = std::make_shared<const EvaluationKeys>(
        KeyGenerator(e.ctx).evaluation_keys(e.sk, true, {}, false, elts, {}, {}, false, levels));
    std::set<std::size_t> counts;
    for (const auto& [g, k] : keys->galois) counts.insert(k->b[0].num_p());
    EXPECT_EQ(counts, (std::set<std::size_t>{low_p, e.ctx->rns().p_count()}));
    const Evaluator ev(e.ctx, keys);
    const cvec x = e.random(true);
    cvec want(slots, 0.0);
    for (const auto& [r, d] : diags)
        for (std::size_t s = 0; s < slots; ++s)
            want[s] += d[s] * x[(s + static_cast<std::size_t>(r + static_cast<std::int64_t>(slots))) % slots];
    const Ciphertext in = ev.drop_level(e.encrypt(x), level);
    for (auto basis : {ProductBasis::extended, ProductBasis::level}) {
        const LinearTransform kept(e.ctx, diags, level, 5, {}, false, basis);
        const LinearTransform at_use(e.ctx, diags, level, 5, {}, true, basis);
        ASSERT_GT(kept.plan().giants.size(), 2u);
        const Ciphertext y = kept.apply(ev, in);
        EXPECT_GT(test::precision_bits(e.decrypt(y), want), 20) << static_cast<int>(basis);
        EXPECT_EQ(at_use.apply(ev, in).polys, y.polys);
    }
    // Lazy values over different special primes are not added: each is brought down first.
    const ckks::Decomposition d = ev.decompose(in);
    LazyCiphertext a = ev.inner_product_lazy(d, elts[0]);
    EXPECT_THROW(ev.add_lazy_inplace(a, ev.inner_product_lazy(d, elts[1])), ParameterError);
}

TEST(LinearTransform, Errors) {
    auto& e = *shared().env;
    std::map<std::int64_t, cvec> diags{{3, cvec(4, 1.0)}};
    EXPECT_THROW(LinearTransform(e.ctx, diags, 0), LevelError);
    EXPECT_THROW(LinearTransform(e.ctx, {{1, cvec(4, 0.0)}}, 2), ParameterError);
    LinearTransform lt(e.ctx, diags, 2);
    Ciphertext ct = e.encrypt(e.random());
    const Ciphertext before = ct;
    EXPECT_THROW(lt.apply(e.ev, ct), LevelError);
    test::Env nokeys(small_params(), {});
    LinearTransform lt2(nokeys.ctx, diags, nokeys.ctx->max_level());
    try {
        lt2.apply(nokeys.ev, nokeys.encrypt(nokeys.random()));
        FAIL() << "expected MissingKeyError";
    } catch (const MissingKeyError& err) {
        EXPECT_NE(std::string(err.what()).find(std::to_string(nokeys.ctx->galois_element(3))), std::string::npos);
    }
    EXPECT_EQ(ct.polys[0], before.polys[0]);
}

// sigma, tau, phi^k, psi^k are checked through the products: each wrong map changes the product. Here they are
// checked one by one as the plaintext permutations of Jiang et al. (a product with identity matrices isolates them).
TEST(Matmul, IdentityFactorsReturnTheOtherOperand) {
    auto& e = *shared().env;
    for (std::size_t d : {3u, 4u}) {
        MatrixEncoder enc(e.ctx, d, 2);
        Mat id(d * d, 0.0);
        for (std::size_t i = 0; i < d; ++i) id[i * d + i] = 1;
        auto A = random_mats(e.rng, 2, d * d);
        auto C = enc.decrypt(matmul(e.ev, enc.encrypt(A, d, e.pk), enc.encrypt({id, id}, d, e.pk)), e.sk);
        for (int i = 0; i < 2; ++i) EXPECT_LT(max_error(C[i], A[i]), kBound);
        auto C2 = enc.decrypt(matmul(e.ev, enc.encrypt({id, id}, d, e.pk), enc.encrypt(A, d, e.pk)), e.sk);
        for (int i = 0; i < 2; ++i) EXPECT_LT(max_error(C2[i], A[i]), kBound);
    }
}

TEST(Matmul, SquareProducts) {
    for (std::size_t d : {2u, 3u, 4u, 8u}) check_product(d, 1, d);
}

TEST(Matmul, PackedProducts) {
    check_product(2, 2, 2);
    check_product(3, 2, 3);
    check_product(4, 4, 4);
    check_product(8, 4, 8);
}

TEST(Matmul, RectangularProducts) {
    check_product(8, 2, 2);
    check_product(8, 1, 4);
    check_product(6, 1, 3);
}

TEST(Matmul, BlockedProduct) {
    auto& e = *shared().env;
    MatrixEncoder enc(e.ctx, 40, 1);
    EXPECT_EQ(enc.block(), 16u);
    EXPECT_EQ(enc.grid(), 3u);
    check_product(40, 1, 40);
}

TEST(Matmul, PackingMatchesSeedLayout) {
    auto& e = *shared().env;
    MatrixEncoder enc(e.ctx, 4, 2);
    auto A = random_mats(e.rng, 2, 16);
    auto v = enc.pack(A, 4);
    ASSERT_EQ(v.size(), 1u);
    for (std::size_t j = 0; j < 16; ++j)
        for (std::size_t i = 0; i < 2; ++i) {
            EXPECT_EQ(v[0][2 * j + i].real(), A[i][j]);           // V[g*j + i] = M_i[j / d][j mod d]
            EXPECT_EQ(v[0][32 * 5 + 2 * j + i].real(), A[i][j]);  // tiled
        }
    EXPECT_EQ(enc.unpack(v, 4), A);
    // rows past d, and blocks shorter than they pack, are refused (not read past their ends)
    EXPECT_THROW(enc.unpack(v, 5), ParameterError);
    EXPECT_THROW(enc.unpack({cvec(31)}, 4), ParameterError);
}

TEST(Matmul, Errors) {
    auto& e = *shared().env;
    EXPECT_THROW(MatrixEncoder(e.ctx, 16, 4), ParameterError);  // g*d*d = 1024 > 512 slots
    try {
        MatrixEncoder(e.ctx, 16, 4);
    } catch (const ParameterError& err) {
        EXPECT_NE(std::string(err.what()).find("1024"), std::string::npos);
    }
    EXPECT_THROW(MatrixEncoder(e.ctx, 8, 1, 3), ParameterError);  // 3 does not divide 8
    MatrixEncoder enc(e.ctx, 4, 1);
    EXPECT_THROW(enc.encrypt({Mat(15, 0.0)}, 4, e.pk), ParameterError);
    EXPECT_THROW(enc.encrypt({Mat(16, 0.0), Mat(16, 0.0)}, 4, e.pk), ParameterError);
    EXPECT_THROW(enc.encrypt({Mat(16, 0.0)}, 4, e.pk, 2), LevelError);
    auto ca = enc.encrypt({Mat(16, 0.5)}, 4, e.pk);
    // another packing
    MatrixEncoder enc2(e.ctx, 4, 2);
    auto cb = enc2.encrypt({Mat(16, 0.5), Mat(16, 0.5)}, 4, e.pk);
    EXPECT_THROW(matmul(e.ev, ca, cb), ParameterError);
    // missing keys: the error names a Galois element, the operands are unchanged
    test::Env nokeys(small_params(), {1});
    MatrixEncoder enc3(nokeys.ctx, 4, 1);
    auto x = enc3.encrypt({Mat(16, 0.5)}, 4, nokeys.pk);
    const auto before = x.blocks[0].polys[1];
    try {
        matmul(nokeys.ev, x, x);
        FAIL() << "expected MissingKeyError";
    } catch (const MissingKeyError& err) {
        EXPECT_NE(std::string(err.what()).find("Galois key for element"), std::string::npos);
    }
    EXPECT_EQ(x.blocks[0].polys[1], before);
    // too few levels
    auto low = enc.encrypt({Mat(16, 0.5)}, 4, e.pk);
    for (auto& b : low.blocks) b = e.ev.drop_level(b, 2);
    EXPECT_THROW(matmul(e.ev, low, low), LevelError);
}

TEST(Matmul, SchoolbookBaseline) {
    auto& e = *shared().env;
    const std::size_t d = 3;
    auto A = random_mats(e.rng, 1, d * d)[0], B = random_mats(e.rng, 1, d * d)[0];
    std::vector<Ciphertext> ca, cb;
    for (double x : A) ca.push_back(e.encrypt(cvec(1, x)));
    for (double x : B) cb.push_back(e.encrypt(cvec(1, x)));
    OpCounts c;
    auto cc = matmul_schoolbook(e.ev, ca, cb, d, 0, &c);
    EXPECT_EQ(c.mult, d * d * d);
    const Mat want = product(A, B, d, d);
    for (std::size_t i = 0; i < d * d; ++i) EXPECT_NEAR(e.decrypt(cc[i])[0].real(), want[i], kBound);
}
