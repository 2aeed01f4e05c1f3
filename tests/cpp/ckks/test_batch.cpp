// Batches (Takao et al.): element i of every batch operation equals the single operation's result, bit for bit, on a
// batch spread over the thread team and on one run item by item; errors name the element's problem.
#include <gtest/gtest.h>

#include "kasoku/ckks/serialization.hpp"
#include "kasoku/support/error.hpp"
#include "test_env.hpp"

using namespace kasoku;
using namespace kasoku::ckks;

namespace {

class Batches : public ::testing::TestWithParam<std::size_t> {};  // batch size: below and above the 2-thread team

TEST_P(Batches, EveryElementEqualsItsSingleOperation) {
    test::Env e(test::research_params(8, 50, 32, 3, 50, 2), {3}, {}, 11, 2);
    const std::size_t count = GetParam();
    std::vector<Ciphertext> a, b;
    std::vector<test::cvec> values;
    for (std::size_t i = 0; i < count; ++i) {
        a.push_back(e.encrypt(e.random(true)));
        b.push_back(e.encrypt(e.random(true)));
        values.push_back(e.random());
    }
    const auto A = Evaluator::batch(a), B = Evaluator::batch(b);
    auto same = [&](const std::vector<Ciphertext>& got, auto single, const char* what) {
        ASSERT_EQ(got.size(), count) << what;
        for (std::size_t i = 0; i < count; ++i)
            EXPECT_EQ(serialize(*e.ctx, got[i]), serialize(*e.ctx, single(i))) << what << " element " << i;
    };
    same(
        e.ev.add_many(A, B), [&](std::size_t i) { return e.ev.add(a[i], b[i]); }, "add_many");
    same(
        e.ev.sub_many(A, B), [&](std::size_t i) { return e.ev.sub(a[i], b[i]); }, "sub_many");
    same(
        e.ev.multiply_many(A, B), [&](std::size_t i) { return e.ev.multiply(a[i], b[i]); }, "multiply_many");
    same(
        e.ev.multiply_many(A, B, true, false), [&](std::size_t i) { return e.ev.multiply(a[i], b[i], false); },
        "multiply_many without rescale");
    const auto tensors = e.ev.tensor_many(A, B);
    same(
        tensors, [&](std::size_t i) { return e.ev.tensor(a[i], b[i]); }, "tensor_many");
    same(
        e.ev.multiply_many(A, B, false, true), [&](std::size_t i) { return e.ev.rescale(e.ev.tensor(a[i], b[i])); },
        "multiply_many without relinearisation");
    const auto relin = e.ev.relinearize_many(Evaluator::batch(tensors));
    same(
        relin, [&](std::size_t i) { return e.ev.relinearize(tensors[i]); }, "relinearize_many");
    same(
        e.ev.rescale_many(Evaluator::batch(relin)), [&](std::size_t i) { return e.ev.rescale(relin[i]); },
        "rescale_many");
    same(
        e.ev.rotate_many(A, 3), [&](std::size_t i) { return e.ev.rotate(a[i], 3); }, "rotate_many");
    same(
        e.ev.multiply_plain_many(A, values), [&](std::size_t i) { return e.ev.multiply_plain(a[i], values[i]); },
        "multiply_plain_many");
    EXPECT_TRUE(e.ev.add_many({}, {}).empty());
}

INSTANTIATE_TEST_SUITE_P(Sizes, Batches, ::testing::Values(1, 5));

TEST(BatchErrors, SayWhatIsWrong) {
    test::Env e(test::research_params(8, 50, 32, 2, 50, 1), {1}, {}, 12, 2);
    const std::vector<Ciphertext> a = {e.encrypt(e.random()), e.encrypt(e.random()), e.encrypt(e.random())};
    const auto A = Evaluator::batch(a);
    EXPECT_THROW(e.ev.add_many(A, {A[0]}), ParameterError);
    EXPECT_THROW(e.ev.add_many(A, {A[0], nullptr, A[2]}), ParameterError);
    EXPECT_THROW(e.ev.multiply_plain_many(A, {e.random()}), ParameterError);
    EXPECT_THROW(e.ev.rotate_many(A, 2), MissingKeyError);    // an element's error, from the team
    const Ciphertext low = e.ev.rescale(e.ev.rescale(a[0]));  // level 0
    EXPECT_THROW(e.ev.rescale_many({&a[1], &low, &a[2]}), LevelError);
}

}  // namespace
