// One evaluator, several threads (docs/CONVENTIONS.md: any two calls may run at once). Run under ThreadSanitizer by make test.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "kasoku/algo/linear_transform.hpp"
#include "test_env.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using test::cvec;

TEST(Concurrency, SharedEvaluatorAcrossThreads) {
    // First use of every cache (automorphism permutations, key-switching cost model, transform diagonals) happens
    // concurrently here.
    test::Env e(test::research_params(8, 50, 32, 3, 50, 2), {1, 2, 3, 4}, {}, 11, 1);
    const cvec x = e.random(true);
    const Ciphertext c = e.encrypt(x);
    const std::size_t n = x.size();
    std::map<std::int64_t, cvec> diags{{0, cvec(n, 0.5)}, {1, cvec(n, 2.0)}};
    const algo::LinearTransform lt(e.ctx, diags, e.ctx->max_level());
    constexpr int kThreads = 4;
    std::vector<Ciphertext> products(kThreads), rotations(kThreads), sums(kThreads), transforms(kThreads);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
        ts.emplace_back([&, t] {
            products[t] = e.ev.multiply(c, c, true, 1);
            rotations[t] = e.ev.rotate_hoisted(c, {1, 2, 3, 4}, false, 1)[t];
            sums[t] = e.ev.sum_slots(c, 4, 0, 1);  // h from the cost model, measured on first use
            transforms[t] = lt.apply(e.ev, c, 1);
        });
    for (auto& t : ts) t.join();
    for (int t = 0; t < kThreads; ++t) {
        cvec sq(n), rot(n), sum(n, 0.0), lin(n);
        for (std::size_t i = 0; i < n; ++i) {
            sq[i] = x[i] * x[i];
            rot[i] = x[(i + static_cast<std::size_t>(t) + 1) % n];
            for (std::size_t j = 0; j < 4; ++j) sum[i] += x[(i + j) % n];
            lin[i] = 0.5 * x[i] + 2.0 * x[(i + 1) % n];
        }
        EXPECT_GT(test::precision_bits(e.decrypt(products[t]), sq), 14);
        EXPECT_GT(test::precision_bits(e.decrypt(rotations[t]), rot), 14);
        EXPECT_GT(test::precision_bits(e.decrypt(sums[t]), sum), 14);
        EXPECT_GT(test::precision_bits(e.decrypt(transforms[t]), lin), 12);
        EXPECT_EQ(products[t].polys[0], products[0].polys[0]);  // the same bits on every thread
    }
}
