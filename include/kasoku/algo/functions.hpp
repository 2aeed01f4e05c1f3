// Functions of encrypted inputs built on the polynomial evaluator (polynomial.hpp): Chebyshev interpolants on an
// interval, Newton refinement for 1/x, and composite polynomials for the sign.
//
// Each function states the levels it takes (the *_depth helpers) and throws what evaluate() throws: LevelError with
// the depth needed when the input has too few levels, ParameterError for a bad interval, degree or precision.
#pragma once
#include <cstddef>
#include <functional>

#include "kasoku/algo/polynomial.hpp"

namespace kasoku::algo {

// f on [a, b] by its Chebyshev interpolant of this degree (inputs outside [a, b] give meaningless results).
// @throws ParameterError for an interval that is not finite or has b <= a, a degree outside 1..kMaxDegree, f
//     non-finite at a node, or as evaluate (a bad or size-3 operand, a negative thread count)
// @throws LevelError if x has fewer levels than the interpolant takes
// @throws ScaleError if x is off the canonical scale of its level
// @throws MissingKeyError if ev's keys have no relinearisation key
// @throws what f throws
ckks::Ciphertext evaluate_function(const ckks::Evaluator& ev, const ckks::Ciphertext& x,
                                   const std::function<double(double)>& f, double a, double b, std::size_t degree,
                                   Exec exec = {});

// The logistic function 1 / (1 + e^-x) on [a, b] (degree 63 on [-8, 8]: within 1e-4 everywhere, 7 levels).
// @throws ParameterError as evaluate_function
// @throws LevelError as evaluate_function
// @throws ScaleError as evaluate_function
// @throws MissingKeyError as evaluate_function
ckks::Ciphertext sigmoid(const ckks::Evaluator& ev, const ckks::Ciphertext& x, double a = -8.0, double b = 8.0,
                         std::size_t degree = 63, Exec exec = {});
// e^x, sin x and cos x on [a, b].
// @throws ParameterError as evaluate_function
// @throws LevelError as evaluate_function
// @throws ScaleError as evaluate_function
// @throws MissingKeyError as evaluate_function
ckks::Ciphertext exp(const ckks::Evaluator& ev, const ckks::Ciphertext& x, double a = -1.0, double b = 1.0,
                     std::size_t degree = 15, Exec exec = {});
ckks::Ciphertext sin(const ckks::Evaluator& ev, const ckks::Ciphertext& x, double a = -3.14159265358979323846,
                     double b = 3.14159265358979323846, std::size_t degree = 31, Exec exec = {});
ckks::Ciphertext cos(const ckks::Evaluator& ev, const ckks::Ciphertext& x, double a = -3.14159265358979323846,
                     double b = 3.14159265358979323846, std::size_t degree = 31, Exec exec = {});
// sqrt(x) on [a, b], 0 <= a < b (a = 0 converges slowly near 0: prefer a > 0).
// @throws ParameterError for a < 0, and as evaluate_function
// @throws LevelError as evaluate_function
// @throws ScaleError as evaluate_function
// @throws MissingKeyError as evaluate_function
ckks::Ciphertext sqrt(const ckks::Evaluator& ev, const ckks::Ciphertext& x, double a, double b, std::size_t degree = 31,
                      Exec exec = {});

// 1/x on [a, b] (0 < a < b, or a < b < 0): the Chebyshev interpolant of this degree, then `iterations` Newton steps
// y <- y (2 - x y), each squaring the relative error and taking 2 levels.
// @throws ParameterError for an interval that contains 0 or has b <= a, iterations outside 0..16, and as
//     evaluate_function
// @throws LevelError if x has fewer levels than inverse_depth
// @throws ScaleError as evaluate_function
// @throws MissingKeyError as evaluate_function
ckks::Ciphertext inverse(const ckks::Evaluator& ev, const ckks::Ciphertext& x, double a, double b,
                         std::size_t degree = 15, int iterations = 2, Exec exec = {});
// The levels inverse takes.
// @throws ParameterError for an interval that contains 0 or has b <= a, iterations outside 0..16, or a degree above
//     kMaxDegree
int inverse_depth(double a, double b, std::size_t degree = 15, int iterations = 2);

// sign(x) for x in [-1, 1] with |x| >= eps: within 2^-precision_bits of +-1 in plain arithmetic (CKKS noise adds its
// own ~2^-25 at scale 2^40). The composite f_3(f_3(...f_3(x))) of Cheon, Kim and Kim (Asiacrypt 2020),
// f_3(x) = (35 x - 35 x^3 + 21 x^5 - 5 x^7) / 16, as many times as sign_iterations says (3 levels each).
// @throws ParameterError for eps outside (0, 1), precision_bits outside 1..40, and as evaluate
// @throws LevelError if x has fewer levels than sign_depth
// @throws ScaleError as evaluate
// @throws MissingKeyError as evaluate
ckks::Ciphertext sign(const ckks::Evaluator& ev, const ckks::Ciphertext& x, double eps = 1.0 / 64,
                      int precision_bits = 16, Exec exec = {});
// 1 where x > y, 0 where x < y, for x - y in [-1, 1] with |x - y| >= eps: (sign(x - y) + 1) / 2, the halving folded
// into the last composite step (no extra level).
// @throws ParameterError as sign and Evaluator::sub (operands under different keys)
// @throws LevelError if x - y has fewer levels than sign_depth
// @throws ScaleError if x and y have different scales at one level, and as evaluate
// @throws MissingKeyError as evaluate
ckks::Ciphertext compare(const ckks::Evaluator& ev, const ckks::Ciphertext& x, const ckks::Ciphertext& y,
                         double eps = 1.0 / 64, int precision_bits = 16, Exec exec = {});
// Composite steps that take eps to within 2^-precision_bits of 1 (simulated in plain arithmetic).
// @throws ParameterError for eps outside (0, 1) or precision_bits outside 1..40
int sign_iterations(double eps, int precision_bits);
// The levels sign takes: 3 sign_iterations.
// @throws ParameterError for eps outside (0, 1) or precision_bits outside 1..40
int sign_depth(double eps, int precision_bits);

}  // namespace kasoku::algo
