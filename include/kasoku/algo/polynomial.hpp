// Polynomials of an encrypted input (after Paterson-Stockmeyer and Bossuat et al., Eurocrypt 2021): baby-step
// giant-step evaluation in the power or the Chebyshev basis with the least depth, ceil(log2(degree + 1)) levels
// (one more when the interval is not [-1, 1]), and about 2 sqrt(degree) + log2(degree) ciphertext products.
//
//   p = q * B_n + r (n a power of two, deg r < n), recursively, until a part is a leaf: a linear combination of the
//   baby steps B_1..B_{k-1}, summed with one rescale (Evaluator::linear_combination). A leaf whose highest term would
//   exceed the depth left to it is split further, so that the depth stays minimal for every degree; k is chosen by
//   counting the products of each choice before any is made. Powers are made on demand with minimal depth
//   (B_{2^j} by squaring, B_{a+b} = B_a B_b, or 2 T_a T_b - T_{a-b} for Chebyshev), and every intermediate lands on
//   the canonical scale of its level, so parts that reach a level by different paths add exactly.
//
// Errors: ParameterError for no nonzero coefficient beyond the constant, non-finite coefficients, a degree above
// kMaxDegree or an empty interval; LevelError, naming the depth needed, when the ciphertext has fewer levels than
// depth(); ScaleError when its scale is not the canonical scale of its level (rescale it first). The operand is
// never modified.
#pragma once
#include <complex>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "kasoku/algo/linear_transform.hpp"
#include "kasoku/ckks/evaluator.hpp"

namespace kasoku::algo {

enum class Basis { power, chebyshev };

// p(x) = sum_i coeffs[i] B_i(t), t = (2x - a - b) / (b - a) (t = x on the default [-1, 1]); B_i = t^i or T_i(t).
struct Polynomial {
    static constexpr std::size_t kMaxDegree = std::size_t{1} << 14;

    cvec coeffs;
    Basis basis = Basis::power;
    double a = -1.0, b = 1.0;

    Polynomial() = default;
    // Trailing zero coefficients are dropped.
    // @throws ParameterError for non-finite coefficients, a degree above kMaxDegree, or an interval that is not finite
    //     or has b <= a
    explicit Polynomial(cvec coeffs, Basis basis = Basis::power, double a = -1.0, double b = 1.0);

    // Index of the highest nonzero coefficient (0 for a constant or no coefficients).
    std::size_t degree() const;
    bool maps_interval() const { return a != -1.0 || b != 1.0; }
    // Levels evaluate() takes: ceil(log2(degree + 1)), plus one when the interval is not [-1, 1].
    int depth() const;
    // p(x) in plain arithmetic (Horner or Clenshaw): the reference the encrypted evaluation is tested against.
    std::complex<double> operator()(std::complex<double> x) const;
    std::string describe() const;
};

// The Chebyshev nodes of [a, b] for an interpolant of this degree (degree + 1 points, descending).
// @throws ParameterError for an interval that is not finite or has b <= a, or a degree outside 1..kMaxDegree
std::vector<double> chebyshev_nodes(double a, double b, std::size_t degree);
// The Chebyshev interpolant through values[k] = f(chebyshev_nodes(a, b, degree)[k]); coefficients below the
// rounding of the interpolation (2^-50 of the largest) are set to zero, so that odd or even functions keep only
// their odd or even terms.
// @throws ParameterError for fewer than 2 values or more than kMaxDegree + 1, non-finite values, or an interval that
//     is not finite or has b <= a
Polynomial chebyshev_from_values(const cvec& values, double a, double b);
// chebyshev_from_values of f at the nodes.
// @throws ParameterError as chebyshev_nodes, or when f returns a non-finite value at a node
// @throws what f throws
Polynomial chebyshev(const std::function<double(double)>& f, double a, double b, std::size_t degree);

// p(x) slot-wise: x.level() - p.depth() is the level of the result, on its canonical scale.
// @throws ParameterError for a polynomial of degree 0, a ciphertext of another context or malformed, a size-3 one, or
//     a negative thread count
// @throws LevelError if x.level() is below the depth (the message names it)
// @throws ScaleError if x is off the canonical scale of its level
// @throws MissingKeyError if ev's keys have no relinearisation key (and p needs a product)
ckks::Ciphertext evaluate(const ckks::Evaluator& ev, const ckks::Ciphertext& x, const Polynomial& p, Exec exec = {},
                          OpCounts* counts = nullptr);

// What evaluate() will do for p, without a ciphertext: its ciphertext products (powers and giant steps), the terms of
// its linear combinations and the baby-step bound k it picks.
// @throws ParameterError for a polynomial of degree 0
struct PolynomialPlan {
    std::size_t products = 0, terms = 0, baby = 0;
    int depth = 0;
};
PolynomialPlan plan_polynomial(const Polynomial& p);

}  // namespace kasoku::algo
