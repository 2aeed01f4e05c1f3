// Hoisted key switching, lazy ModDown and trace-type functions against plaintext references.
#include <gtest/gtest.h>
#include <thread>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/ckks/serialization.hpp"
#include "kasoku/support/error.hpp"
#include "test_env.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using test::cvec;

namespace {
using test::Env;
using test::precision_bits;

// N = 2^8 (128 slots, so M = 7 doubling steps cover all slots), two digits of two primes each.
Parameters small_params() { return test::research_params(8, 50, 32, 3, 50, 2); }

constexpr std::size_t kM = 7;

// every element any h needs, for rotations alone and with conjugation as an eighth step
std::vector<std::uint64_t> all_trace_elements(const Parameters& p) {
    std::set<std::uint64_t> s;
    const std::uint64_t two_n = 2 * p.n();
    auto steps = rotation_doubling_steps(kM, two_n);
    auto with_conj = steps;
    with_conj.push_back(two_n - 1);
    for (auto* a : {&steps, &with_conj})
        for (std::size_t h = 1; h <= a->size(); ++h)
            for (auto& g : trace_group_elements(*a, h, two_n)) s.insert(g.begin(), g.end());
    return {s.begin(), s.end()};
}

// Two digits of two primes on two threads, one digit of four primes (k = 4) on one thread, and alpha = 2 below
// k = 3 special primes.
std::vector<test::Shape> shapes() {
    return {{"dnum2_k2_2threads", small_params(), 2},
            {"dnum1_k4_1thread", test::research_params(8, 50, 32, 3, 50, 4), 1},
            {"dnum2_alpha2_k3_2threads", test::with_dnum(test::research_params(8, 50, 32, 3, 50, 3), 2), 2}};
}

class Hoisting : public ::testing::TestWithParam<test::Shape> {
protected:
    static Env& env() {
        static std::map<std::string, std::unique_ptr<Env>> envs;
        const test::Shape& s = GetParam();
        auto& e = envs[s.name];
        if (!e)
            e = std::make_unique<Env>(s.params, std::vector<std::int64_t>{1, -2, 5, 17}, all_trace_elements(s.params),
                                      7, s.threads);
        return *e;
    }
};
INSTANTIATE_TEST_SUITE_P(Shapes, Hoisting, ::testing::ValuesIn(shapes()),
                         [](const ::testing::TestParamInfo<test::Shape>& i) { return i.param.name; });

cvec rotated(const cvec& v, std::int64_t step) {
    const std::int64_t s = static_cast<std::int64_t>(v.size());
    cvec r(v.size());
    for (std::int64_t i = 0; i < s; ++i)
        r[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>(((i + step) % s + s) % s)];
    return r;
}

cvec conj(const cvec& v) {
    cvec r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = std::conj(v[i]);
    return r;
}
}  // namespace

TEST(TracePlan, GroupsAndElements) {
    EXPECT_EQ(trace_group_sizes(7, 3), (std::vector<std::size_t>{3, 2, 2}));
    EXPECT_EQ(trace_group_sizes(15, 15), std::vector<std::size_t>(15, 1));
    EXPECT_THROW(trace_group_sizes(4, 5), ParameterError);
    const std::uint64_t two_n = 512;
    const auto steps = rotation_doubling_steps(3, two_n);  // 5, 25, 625 mod 512
    EXPECT_EQ(steps, (std::vector<std::uint64_t>{5, 25, 625 % 512}));
    // h = 1: one group, the products of every non-empty subset = rotations by 1..7
    const auto g = trace_group_elements(steps, 1, two_n);
    ASSERT_EQ(g.size(), 1u);
    std::uint64_t e = 1;
    for (std::size_t r = 1; r <= 7; ++r) {
        e = e * 5 % two_n;
        EXPECT_EQ(g[0][r - 1], e) << "rotation by " << r;
    }
    // trace_galois_elements: repeated doubling needs exactly the M steps
    Parameters p = small_params();
    auto need = trace_galois_elements(p, kM, kM);
    auto want = rotation_doubling_steps(kM, 2 * p.n());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(need, want);
    EXPECT_EQ(trace_galois_elements(p, kM, 1).size(), 127u);  // every rotation 1..127
    EXPECT_EQ(trace_galois_elements(p, 6, 2).size(), 14u);    // 2 groups of 3 steps: 7 + 7
}

TEST_P(Hoisting, ListFormEqualsSeparateRotations) {
    Env& e = env();
    const auto v = e.random(true);
    const auto c = e.encrypt(v);
    const std::vector<std::int64_t> steps = {1, -2, 5, 17};
    const auto hoisted = e.ev.rotate_hoisted(c, steps, /*conjugate=*/true);
    ASSERT_EQ(hoisted.size(), steps.size() + 1);
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const auto want = rotated(v, steps[i]);
        EXPECT_GT(precision_bits(e.decrypt(hoisted[i]), want), 20) << "step " << steps[i];
        EXPECT_GT(precision_bits(e.decrypt(e.ev.rotate(c, steps[i])), want), 20) << "step " << steps[i];
    }
    EXPECT_GT(precision_bits(e.decrypt(hoisted.back()), conj(v)), 20);
}

TEST_P(Hoisting, SumFormAndSplitStepsEqualSumOfRotations) {
    Env& e = env();
    const auto v = e.random(true);
    const auto c = e.encrypt(v);
    const std::vector<std::int64_t> steps = {1, -2, 5};
    std::vector<std::uint64_t> elts;
    cvec want(v.size(), 0.0);
    for (auto s : steps) {
        elts.push_back(e.ctx->galois_element(s));
        auto r = rotated(v, s);
        for (std::size_t i = 0; i < v.size(); ++i) want[i] += r[i];
    }
    elts.push_back(e.ctx->conjugation_element());
    auto cv = conj(v);
    for (std::size_t i = 0; i < v.size(); ++i) want[i] += cv[i];
    EXPECT_GT(precision_bits(e.decrypt(e.ev.apply_galois_sum_hoisted(c, elts)), want), 18);
    EXPECT_EQ(e.ev.rotate_sum_hoisted(c, steps, {}, true).polys, e.ev.apply_galois_sum_hoisted(c, elts).polys);

    // decompose -> inner_product_lazy -> add_lazy_inplace -> mod_down: the same sum by hand
    const Decomposition d = e.ev.decompose(c);
    LazyCiphertext acc = e.ev.inner_product_lazy(d, elts[0]);
    for (std::size_t i = 1; i < elts.size(); ++i) e.ev.add_lazy_inplace(acc, e.ev.inner_product_lazy(d, elts[i]));
    EXPECT_GT(precision_bits(e.decrypt(e.ev.mod_down(acc)), want), 18);

    // at a lower level too
    const auto low = e.ev.drop_level(c, 1);
    EXPECT_GT(precision_bits(e.decrypt(e.ev.apply_galois_sum_hoisted(low, elts)), want), 18);
}

// The baby steps of a linear transform and their products in one call: the bits of inner_product_lazy and
// multiply_plain_sum_lazy, the values of the rotations times the plaintexts, the same counts, and its refusals.
TEST_P(Hoisting, InnerProductSumsEqualTheSeparateSteps) {
    Env& e = env();
    const auto v = e.random(true);
    const auto c = e.encrypt(v);
    const Decomposition d = e.ev.decompose(c);
    {  // handed over instead of copied: the same decomposition
        Ciphertext moved = c;
        const Decomposition m = e.ev.decompose(std::move(moved));
        EXPECT_EQ(m.input.polys, d.input.polys);
        EXPECT_EQ(m.input.scale, d.input.scale);
        EXPECT_EQ(m.digits, d.digits);
    }
    const std::vector<std::int64_t> steps = {1, -2, 5, 17};
    std::vector<std::uint64_t> elts;
    for (auto s : steps) elts.push_back(e.ctx->galois_element(s));
    const double scale = e.ctx->default_scale();
    std::vector<cvec> values;
    std::vector<Plaintext> pts;
    for (int i = 0; i < 5; ++i) {
        values.push_back(e.random(true));
        if (i == 4) values.back().assign(v.size(), std::complex<double>(0.25, -0.5));  // a subring plaintext
        pts.push_back(e.enc.encode_compact(values.back(), scale, c.level(), true));
    }
    const std::vector<std::vector<std::pair<std::size_t, const Plaintext*>>> groups = {
        {{0, &pts[0]}, {1, &pts[1]}, {3, &pts[2]}}, {{2, &pts[3]}}, {{1, &pts[4]}, {0, &pts[3]}}};
    OpCounts fused_counts, split_counts;
    const auto sums = e.ev.counting(fused_counts).inner_product_sums_lazy(d, elts, groups);
    ASSERT_EQ(sums.size(), groups.size());
    const Evaluator split = e.ev.counting(split_counts);
    for (std::size_t j = 0; j < groups.size(); ++j) {
        ASSERT_EQ(sums[j].size(), 1u);  // one set of special primes
        std::vector<LazyCiphertext> lazy;
        for (const auto& [i, pt] : groups[j]) lazy.push_back(split.inner_product_lazy(d, elts[i]));
        std::vector<const LazyCiphertext*> xs;
        std::vector<const Plaintext*> ps;
        for (std::size_t k = 0; k < lazy.size(); ++k) xs.push_back(&lazy[k]), ps.push_back(groups[j][k].second);
        const LazyCiphertext want = split.multiply_plain_sum_lazy(xs, ps);
        EXPECT_EQ(sums[j][0].b, want.b) << "group " << j;
        EXPECT_EQ(sums[j][0].a, want.a) << "group " << j;
        EXPECT_EQ(sums[j][0].c0, want.c0) << "group " << j;
        EXPECT_EQ(sums[j][0].scale, want.scale);
        // the values: sum of rotations times the plaintexts' values
        cvec expect(v.size(), 0.0);
        for (const auto& [i, pt] : groups[j]) {
            const auto r = rotated(v, steps[i]);
            const cvec& w = values[static_cast<std::size_t>(pt - pts.data())];
            for (std::size_t s = 0; s < v.size(); ++s) expect[s] += r[s] * w[s];
        }
        EXPECT_GT(precision_bits(e.decrypt(e.ev.rescale(e.ev.mod_down(sums[j][0]))), expect), 16) << "group " << j;
    }
    EXPECT_EQ(fused_counts.cmult, split_counts.cmult);
    EXPECT_EQ(fused_counts.add, split_counts.add);
    EXPECT_EQ(fused_counts.rot, 4u);  // each Galois element once, however many groups use it
    EXPECT_THROW(e.ev.inner_product_sums_lazy(d, elts, {}), ParameterError);
    EXPECT_THROW(e.ev.inner_product_sums_lazy(d, elts, {{}}), ParameterError);
    EXPECT_THROW(e.ev.inner_product_sums_lazy(d, elts, {{{4, &pts[0]}}}), ParameterError);
    EXPECT_THROW(e.ev.inner_product_sums_lazy(d, elts, {{{0, nullptr}}}), ParameterError);
    const Plaintext low = e.enc.encode_extended(values[0], scale, c.level() - 1);
    EXPECT_THROW(e.ev.inner_product_sums_lazy(d, elts, {{{0, &low}}}), ParameterError);
    const Plaintext over_q = e.enc.encode(values[0], scale, c.level());  // not extended
    EXPECT_THROW(e.ev.inner_product_sums_lazy(d, elts, {{{0, &over_q}}}), ParameterError);
    const Plaintext other_scale = e.enc.encode_extended(values[0], scale * 2, c.level());
    EXPECT_THROW(e.ev.inner_product_sums_lazy(d, elts, {{{0, &pts[0]}, {1, &other_scale}}}), ParameterError);
    auto no_galois = std::make_shared<EvaluationKeys>(*e.ek);
    no_galois->galois.clear();
    EXPECT_THROW(Evaluator(e.ctx, no_galois).inner_product_sums_lazy(d, elts, {{{0, &pts[0]}}}), MissingKeyError);
}

// Compact keys (a-parts expanded from their seeds at each use) give the full keys' bits in every key-switching path,
// in half the memory, and serialize to the same bytes.
TEST_P(Hoisting, CompactKeysGiveTheFullKeysBits) {
    Env& e = env();
    auto compact = std::make_shared<EvaluationKeys>(*e.ek);
    std::size_t full_words = 0, compact_words = 0;
    const auto drop_a = [&](std::shared_ptr<const SwitchKey>& k) {
        for (const auto& p : k->a) full_words += p.words();
        for (const auto& p : k->b) full_words += p.words(), compact_words += p.words();
        auto c = std::make_shared<SwitchKey>(*k);
        c->a.clear();
        k = c;
    };
    drop_a(compact->relin);
    for (auto& [g, k] : compact->galois) drop_a(k);
    EXPECT_EQ(2 * compact_words, full_words);
    const Evaluator ev(e.ctx, compact);
    const auto c = e.encrypt(e.random(true));
    const std::vector<std::int64_t> steps = {1, -2, 5};
    std::vector<std::uint64_t> elts;
    for (auto s : steps) elts.push_back(e.ctx->galois_element(s));
    EXPECT_EQ(ev.multiply(c, c).polys, e.ev.multiply(c, c).polys);
    EXPECT_EQ(ev.rotate(c, 5).polys, e.ev.rotate(c, 5).polys);
    EXPECT_EQ(ev.conjugate(c).polys, e.ev.conjugate(c).polys);
    const auto h1 = ev.rotate_hoisted(c, steps, true), h2 = e.ev.rotate_hoisted(c, steps, true);
    for (std::size_t i = 0; i < h1.size(); ++i) EXPECT_EQ(h1[i].polys, h2[i].polys) << i;
    EXPECT_EQ(ev.apply_galois_sum_hoisted(c, elts).polys, e.ev.apply_galois_sum_hoisted(c, elts).polys);
    EXPECT_EQ(ev.mod_down(ev.inner_product_lazy(ev.decompose(c), elts[0])).polys,
              e.ev.mod_down(e.ev.inner_product_lazy(e.ev.decompose(c), elts[0])).polys);
    EXPECT_EQ(ev.sum_slots(c, 0, 2).polys, e.ev.sum_slots(c, 0, 2).polys);
    // below the top level only the level's limbs are drawn: the same bits
    const auto low = e.ev.drop_level(c, 1);
    EXPECT_EQ(ev.rotate(low, 5).polys, e.ev.rotate(low, 5).polys);
    EXPECT_EQ(ev.apply_galois_sum_hoisted(low, elts).polys, e.ev.apply_galois_sum_hoisted(low, elts).polys);
    EXPECT_EQ(serialize(*e.ctx, *compact), serialize(*e.ctx, *e.ek));
    // loaded compact (or, by default for a set without encapsulation keys, whole)
    const Bytes bytes = serialize(*e.ctx, *e.ek);
    const auto loaded =
        std::make_shared<const EvaluationKeys>(deserialize_evaluation_keys(*e.ctx, bytes.data(), bytes.size(), true));
    EXPECT_TRUE(!loaded->relin->a.empty() && loaded->galois.begin()->second->a.empty());
    EXPECT_EQ(Evaluator(e.ctx, loaded).rotate(c, 5).polys, e.ev.rotate(c, 5).polys);
    EXPECT_FALSE(deserialize_evaluation_keys(*e.ctx, bytes.data(), bytes.size(), std::nullopt)
                     .galois.begin()
                     ->second->a.empty());
    // made compact by the key generator: seeds kept, a-parts dropped, and they work
    const auto made = std::make_shared<const EvaluationKeys>(
        KeyGenerator(e.ctx).evaluation_keys(e.sk, true, {1}, false, {}, {}, {}, /*compact=*/true));
    ASSERT_TRUE(made->relin && !made->relin->a.empty());  // the relinearisation key stays whole
    ASSERT_TRUE(made->galois.begin()->second->a.empty() && made->galois.begin()->second->seed);
    const Evaluator ev2(e.ctx, made);
    const auto v = e.random(true);
    const auto c2 = e.encrypt(v);
    EXPECT_GT(precision_bits(e.decrypt(ev2.rotate(c2, 1)), rotated(v, 1)), 20);
    cvec sq(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) sq[i] = v[i] * v[i];
    EXPECT_GT(precision_bits(e.decrypt(ev2.multiply(c2, c2)), sq), 15);
}

// One counting mechanism: a counting evaluator adds each public operation's own counts (not those of the operations
// it runs inside), nothing for an operation that throws, and the counts of every thread that uses it.
TEST_P(Hoisting, CountingEvaluatorCountsEachOperationOnce) {
    Env& e = env();
    const auto c = e.encrypt(e.random(true));
    OpCounts n;
    const Evaluator ev = e.ev.counting(n);
    const auto expect = [&](OpCounts want, const char* what) {
        EXPECT_EQ(n.add, want.add) << what;
        EXPECT_EQ(n.cmult, want.cmult) << what;
        EXPECT_EQ(n.rot, want.rot) << what;
        EXPECT_EQ(n.mult, want.mult) << what;
        EXPECT_EQ(n.decompose, want.decompose) << what;
        EXPECT_EQ(n.mod_down, want.mod_down) << what;
        EXPECT_EQ(n.rescale, want.rescale) << what;
        n = {};
    };
    (void)ev.multiply(c, c);
    expect({.mult = 1, .decompose = 1, .mod_down = 1, .rescale = 1}, "multiply");
    (void)ev.relinearize(ev.tensor(c, c));
    expect({.mult = 1, .decompose = 1, .mod_down = 1}, "tensor + relinearize");
    (void)ev.relinearize(c);  // size 2: returned as it is
    expect({}, "relinearize of a relinearised ciphertext");
    (void)ev.rotate(c, 5);
    expect({.rot = 1, .decompose = 1, .mod_down = 1}, "rotate");
    (void)ev.rotate_hoisted(c, {1, -2, 5});
    expect({.rot = 3, .decompose = 1, .mod_down = 3}, "rotate_hoisted");
    (void)ev.linear_combination({&c, &c, &c}, {1.0, 2.0, 3.0}, 0.5);
    expect({.add = 3, .cmult = 3, .rescale = 1}, "linear_combination");
    (void)ev.add(c, ev.multiply_scalar(c, 2.0));  // the alignment add does is not counted
    expect({.add = 1, .cmult = 1, .rescale = 1}, "add of two levels");
    EXPECT_THROW((void)ev.apply_galois(c, 2), ParameterError);  // an even element: refused
    expect({}, "an automorphism that throws");
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) threads.emplace_back([&] { (void)ev.add(c, c); });
    for (auto& t : threads) t.join();
    expect({.add = 2}, "two threads");
    (void)e.ev.multiply(c, c);  // the evaluator it was made from does not count
    expect({}, "the original evaluator");
}

TEST_P(Hoisting, SumSlotsEveryH) {
    Env& e = env();
    const auto v = e.random(true);
    const auto c = e.encrypt(v);
    const std::size_t slots = e.ctx->slots();
    for (std::size_t count : {std::size_t{4}, slots}) {
        cvec want(slots, 0.0);
        for (std::size_t i = 0; i < slots; ++i)
            for (std::size_t j = 0; j < count; ++j) want[i] += v[(i + j) % slots];
        const std::size_t M = static_cast<std::size_t>(__builtin_ctzll(count));
        for (std::size_t h = 1; h <= M; ++h)
            EXPECT_GT(precision_bits(e.decrypt(e.ev.sum_slots(c, count, static_cast<int>(h))), want), 14)
                << "count " << count << " h " << h;
        // h chosen by the cost model among those whose keys exist (all of them here)
        const int chosen = e.ev.choose_trace_h(rotation_doubling_steps(M, 2 * e.ctx->n()), c.level());
        EXPECT_GE(chosen, 1);
        EXPECT_LE(chosen, static_cast<int>(M));
        EXPECT_GT(precision_bits(e.decrypt(e.ev.sum_slots(c, count)), want), 14);
    }
}

TEST_P(Hoisting, TraceWithConjugationEveryH) {
    Env& e = env();
    const auto v = e.random(true);
    const auto c = e.encrypt(v);
    const std::size_t slots = e.ctx->slots();
    auto autos = rotation_doubling_steps(kM, 2 * e.ctx->n());
    autos.push_back(e.ctx->conjugation_element());
    // sum over all rotations and their conjugates: 2 Re(sum of all slots) in every slot
    std::complex<double> total = 0;
    for (auto x : v) total += x;
    const cvec want(slots, 2.0 * total.real());
    for (std::size_t h = 1; h <= autos.size(); ++h)
        EXPECT_GT(precision_bits(e.decrypt(e.ev.trace(c, autos, static_cast<int>(h))), want), 12) << "h " << h;
}

TEST_P(Hoisting, MissingKeyNamesTheElement) {
    Env& e = env();
    const auto c = e.encrypt(e.random());
    auto keys = std::make_shared<EvaluationKeys>(*e.ek);
    const std::uint64_t g4 = e.ctx->galois_element(4);
    keys->galois.erase(g4);
    Evaluator ev(e.ctx, keys);
    try {
        ev.sum_slots(c, 8, 3);  // repeated doubling needs the rotation by 4
        FAIL() << "expected MissingKeyError";
    } catch (const MissingKeyError& err) {
        EXPECT_NE(std::string(err.what()).find(std::to_string(g4)), std::string::npos) << err.what();
    }
    EXPECT_THROW(ev.sum_slots(c, 8), MissingKeyError);  // every h needs it
    EXPECT_THROW(ev.rotate_hoisted(c, {4}), MissingKeyError);
    EXPECT_THROW(ev.sum_slots(c, 6), ParameterError);                          // not a power of two
    EXPECT_THROW(ev.trace(c, {e.ctx->galois_element(1)}, 2), ParameterError);  // h > M
    // One check of Galois elements for every operation, naming the operation: even, 2n or more, 1 where a key switch
    // is needed.
    const std::uint64_t two_n = 2 * e.ctx->n();
    auto names = [](const auto& call, const char* op) {
        try {
            call();
            ADD_FAILURE() << "expected ParameterError from " << op;
        } catch (const ParameterError& err) {
            EXPECT_NE(std::string(err.what()).find(op), std::string::npos) << err.what();
            EXPECT_NE(std::string(err.what()).find("must be odd"), std::string::npos) << err.what();
        }
    };
    names([&] { ev.apply_galois_hoisted(c, {4}); }, "apply_galois_hoisted");
    names([&] { ev.apply_galois_sum_hoisted(c, {1}); }, "apply_galois_sum_hoisted");
    names([&] { ev.trace(c, {two_n + 1}, 1); }, "trace");
    names([&] { KeyGenerator(e.ctx).galois_key(e.sk, two_n); }, "galois_key");
    EXPECT_EQ(ev.apply_galois_hoisted(c, {1})[0].polys, c.polys);  // the identity is allowed where nothing is switched
}

// Galois keys made for the lower levels (KeyGenerator::galois_key's max_level): over Q_1 * P_k with the digits of Q_1,
// fewer words than a key for every level; at levels 0 and 1 every key-switching path rotates (whole and compact,
// serialized and read back to the same bits); above level 1 each raises LevelError naming the key's levels.
TEST_P(Hoisting, KeysForLowerLevelsServeThemAlone) {
    Env& e = env();
    const std::vector<std::int64_t> steps = {1, -2, 5};
    std::map<std::uint64_t, int> levels;
    std::vector<std::uint64_t> elts;
    for (auto s : steps) elts.push_back(e.ctx->galois_element(s)), levels[elts.back()] = 1;
    for (const bool compact : {false, true}) {
        const auto low = std::make_shared<const EvaluationKeys>(
            KeyGenerator(e.ctx).evaluation_keys(e.sk, true, {}, false, elts, {}, {}, compact, levels));
        const SwitchKey& k = *low->galois.at(elts[0]);
        ASSERT_EQ(k.b[0].num_q(), 2u);
        EXPECT_EQ(k.b.size(), e.ctx->rns().digits_at(2));
        // over the special primes a digit of Q_1 needs: fewer than all where the shape has more (not dnum2_k2)
        EXPECT_EQ(k.b[0].num_p(), e.ctx->rns().special_for(2));
        if (GetParam().name != "dnum2_k2_2threads") EXPECT_LT(k.b[0].num_p(), e.ctx->rns().p_count());
        EXPECT_LT(k.b.size() * k.b[0].words(),
                  e.ek->galois.at(elts[0])->b.size() * e.ek->galois.at(elts[0])->b[0].words());
        const Evaluator ev(e.ctx, low);
        const auto v = e.random(true);
        const auto c = e.encrypt(v);
        for (int level : {1, 0}) {
            const auto x = e.ev.drop_level(c, level);
            const auto hoisted = ev.rotate_hoisted(x, steps);
            cvec sum(v.size());
            for (std::size_t i = 0; i < steps.size(); ++i) {
                const auto want = rotated(v, steps[i]);
                for (std::size_t j = 0; j < v.size(); ++j) sum[j] += want[j];
                EXPECT_GT(precision_bits(e.decrypt(ev.rotate(x, steps[i])), want), 20) << level << " " << steps[i];
                EXPECT_GT(precision_bits(e.decrypt(hoisted[i]), want), 20) << level << " " << steps[i];
            }
            EXPECT_GT(precision_bits(e.decrypt(ev.apply_galois_sum_hoisted(x, elts)), sum), 18) << level;
            EXPECT_GT(
                precision_bits(e.decrypt(ev.mod_down(ev.inner_product_lazy(ev.decompose(x), elts[2]))), rotated(v, 5)),
                20)
                << level;
        }
        const auto high = e.ev.drop_level(c, 2);
        try {
            ev.rotate(high, 1);
            ADD_FAILURE() << "expected LevelError";
        } catch (const LevelError& err) {
            EXPECT_NE(std::string(err.what()).find("serves levels up to 1"), std::string::npos) << err.what();
        }
        EXPECT_THROW(ev.rotate_hoisted(high, steps), LevelError);
        EXPECT_THROW(ev.apply_galois_sum_hoisted(high, elts), LevelError);
        EXPECT_THROW(ev.inner_product_lazy(ev.decompose(high), elts[0]), LevelError);
        // serialized and read back (whole and compact): the same rotations, bit for bit
        const Bytes bytes = serialize(*e.ctx, *low);
        const auto x = e.ev.drop_level(c, 1);
        for (const bool read_compact : {false, true}) {
            const auto back = std::make_shared<const EvaluationKeys>(
                deserialize_evaluation_keys(*e.ctx, bytes.data(), bytes.size(), read_compact));
            EXPECT_EQ(back->galois.at(elts[0])->b[0].num_q(), 2u);
            EXPECT_EQ(Evaluator(e.ctx, back).rotate(x, 5).polys, ev.rotate(x, 5).polys);
        }
        EXPECT_LT(bytes.size(), serialize(*e.ctx, *e.ek).size());
    }
    EXPECT_THROW(KeyGenerator(e.ctx).galois_key(e.sk, elts[0], {}, e.ctx->max_level() + 1), ParameterError);
}

TEST_P(Hoisting, CostModelIsMeasured) {
    Env& e = env();
    const KeySwitchCosts c = e.ev.keyswitch_costs(e.ctx->max_level(), 1);
    EXPECT_GT(c.decompose_ms, 0);
    EXPECT_GT(c.inner_product_ms, 0);
    EXPECT_GT(c.mod_down_ms, 0);
    // the modelled cost of h = 1 with M = 7 (127 inner products) exceeds that of repeated doubling only when an
    // inner product costs more than about (decompose + mod_down) / 20; either way best_trace_h is the argmin
    const std::size_t best = best_trace_h(c, kM);
    for (std::size_t h = 1; h <= kM; ++h) EXPECT_LE(trace_cost(c, kM, best), trace_cost(c, kM, h));
    // measured once per context: the same for another evaluator of the context, not shared with another context of
    // the same parameters, and dropped with its context
    const Evaluator keyless(e.ctx, nullptr);
    const KeySwitchCosts again = keyless.keyswitch_costs(e.ctx->max_level(), 1);
    EXPECT_EQ(again.decompose_ms, c.decompose_ms);
    EXPECT_EQ(again.mod_down_ms, c.mod_down_ms);
    ASSERT_TRUE(keyless.kept_keyswitch_costs(e.ctx->max_level(), 1).has_value());
    std::weak_ptr<const Context> gone;
    {
        auto other = Context::create(e.ctx->params(), 1);
        gone = other;
        const Evaluator there(other, nullptr);
        EXPECT_FALSE(there.kept_keyswitch_costs(e.ctx->max_level(), 1).has_value());
        there.keyswitch_costs(0, 1);
        EXPECT_TRUE(there.kept_keyswitch_costs(0, 1).has_value());
    }
    EXPECT_TRUE(gone.expired());  // the kept costs do not hold their context
}
