#include "kasoku/algo/functions.hpp"

#include <cmath>
#include <string>

#include "kasoku/support/error.hpp"

namespace kasoku::algo {

using ckks::Ciphertext;

namespace {

// f_3 of Cheon, Kim and Kim in the power basis.
const double kF3[8] = {0.0, 35.0 / 16, 0.0, -35.0 / 16, 0.0, 21.0 / 16, 0.0, -5.0 / 16};

double f3(double x) {
    const double x2 = x * x;
    return x * (kF3[1] + x2 * (kF3[3] + x2 * (kF3[5] + x2 * kF3[7])));
}

Polynomial f3_polynomial(bool halved) {
    cvec c(kF3, kF3 + 8);
    if (halved) {
        for (auto& v : c) v *= 0.5;
        c[0] = 0.5;
    }
    return Polynomial(c, Basis::power);
}

// Composite sign; halve_last: (sign + 1) / 2 from the last step.
Ciphertext sign_steps(const ckks::Evaluator& ev, const Ciphertext& x, double eps, int bits, bool halve_last,
                      Exec exec) {
    const int k = sign_iterations(eps, bits);
    if (x.level() < 3 * k)
        throw LevelError("sign: |x| >= " + std::to_string(eps) + " to 2^-" + std::to_string(bits) + " needs " +
                         std::to_string(3 * k) + " levels (" + std::to_string(k) +
                         " composite steps of 3) and the ciphertext is at level " + std::to_string(x.level()) +
                         "; use more levels (Parameters.for_circuit), a larger eps or fewer bits");
    const Polynomial step = f3_polynomial(false), last = f3_polynomial(halve_last);
    Ciphertext y = x;
    for (int i = 0; i < k; ++i) y = evaluate(ev, y, i + 1 == k ? last : step, exec);
    return y;
}

}  // namespace

Ciphertext evaluate_function(const ckks::Evaluator& ev, const Ciphertext& x, const std::function<double(double)>& f,
                             double a, double b, std::size_t degree, Exec exec) {
    return evaluate(ev, x, chebyshev(f, a, b, degree), exec);
}

Ciphertext sigmoid(const ckks::Evaluator& ev, const Ciphertext& x, double a, double b, std::size_t degree, Exec exec) {
    return evaluate_function(
        ev, x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, a, b, degree, exec);
}

Ciphertext exp(const ckks::Evaluator& ev, const Ciphertext& x, double a, double b, std::size_t degree, Exec exec) {
    return evaluate_function(
        ev, x, [](double v) { return std::exp(v); }, a, b, degree, exec);
}

Ciphertext sin(const ckks::Evaluator& ev, const Ciphertext& x, double a, double b, std::size_t degree, Exec exec) {
    return evaluate_function(
        ev, x, [](double v) { return std::sin(v); }, a, b, degree, exec);
}

Ciphertext cos(const ckks::Evaluator& ev, const Ciphertext& x, double a, double b, std::size_t degree, Exec exec) {
    return evaluate_function(
        ev, x, [](double v) { return std::cos(v); }, a, b, degree, exec);
}

Ciphertext sqrt(const ckks::Evaluator& ev, const Ciphertext& x, double a, double b, std::size_t degree, Exec exec) {
    if (!(a >= 0.0)) throw ParameterError("sqrt: the interval must lie in [0, inf): got a = " + std::to_string(a));
    return evaluate_function(
        ev, x, [](double v) { return std::sqrt(std::max(v, 0.0)); }, a, b, degree, exec);
}

int inverse_depth(double a, double b, std::size_t degree, int iterations) {
    if (!(a < b) || (a <= 0.0 && b >= 0.0))
        throw ParameterError("inverse: the interval [" + std::to_string(a) + ", " + std::to_string(b) +
                             "] must not contain 0 (0 < a < b or a < b < 0)");
    if (iterations < 0 || iterations > 16) throw ParameterError("inverse: iterations must be in 0..16");
    cvec c(degree + 1, 0.0);
    c[degree] = 1.0;
    return Polynomial(c, Basis::chebyshev, a, b).depth() + 2 * iterations;
}

Ciphertext inverse(const ckks::Evaluator& ev, const Ciphertext& x, double a, double b, std::size_t degree,
                   int iterations, Exec exec) {
    const int depth = inverse_depth(a, b, degree, iterations);
    if (x.level() < depth)
        throw LevelError("inverse: degree " + std::to_string(degree) + " and " + std::to_string(iterations) +
                         " Newton steps need " + std::to_string(depth) + " levels and the ciphertext is at level " +
                         std::to_string(x.level()) + "; use more levels, a lower degree or fewer steps");
    Ciphertext y = evaluate_function(
        ev, x, [](double v) { return 1.0 / v; }, a, b, degree, exec);
    for (int i = 0; i < iterations; ++i) {  // y (2 - x y)
        const Ciphertext xy = ev.multiply(x, y, true, exec);
        y = ev.multiply(y, ev.add_scalar(ev.negate(xy, exec), 2.0, exec), true, exec);
    }
    return y;
}

int sign_iterations(double eps, int precision_bits) {
    if (!(eps > 0.0 && eps < 1.0)) throw ParameterError("sign: eps must be in (0, 1), got " + std::to_string(eps));
    if (precision_bits < 1 || precision_bits > 40)
        throw ParameterError("sign: precision_bits must be in 1..40, got " + std::to_string(precision_bits));
    // f_3 is odd and increasing on [0, 1] with f_3(1) = 1: the worst input is eps.
    double v = eps;
    int k = 0;
    while (1.0 - v > std::ldexp(1.0, -precision_bits)) {
        v = f3(v);
        if (++k > 64) throw InternalError("sign: the composite did not converge");
    }
    return k;
}

int sign_depth(double eps, int precision_bits) { return 3 * sign_iterations(eps, precision_bits); }

Ciphertext sign(const ckks::Evaluator& ev, const Ciphertext& x, double eps, int precision_bits, Exec exec) {
    return sign_steps(ev, x, eps, precision_bits, false, exec);
}

Ciphertext compare(const ckks::Evaluator& ev, const Ciphertext& x, const Ciphertext& y, double eps, int precision_bits,
                   Exec exec) {
    return sign_steps(ev, ev.sub(x, y, exec), eps, precision_bits, true, exec);
}

}  // namespace kasoku::algo
