#include "kasoku/algo/polynomial.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "kasoku/support/error.hpp"

namespace kasoku::algo {

using cplx = std::complex<double>;
using ckks::Ciphertext;

namespace {

constexpr double kPi = 3.14159265358979323846;

// Smallest k with 2^k >= v.
int ceil_log2(std::size_t v) {
    int k = 0;
    while ((std::size_t{1} << k) < v) ++k;
    return k;
}

std::size_t highest_nonzero(const cvec& c) {
    for (std::size_t i = c.size(); i-- > 1;)
        if (c[i] != 0.0) return i;
    return 0;
}

// Depth of the basis element B_i (i >= 1) as the evaluator makes it.
int power_depth(std::size_t i) { return ceil_log2(i); }

// p = q * B_n + r with deg r < n (n >= 1). Chebyshev: T_i = 2 T_n T_{i-n} - T_{|2n-i|} for i > n.
void split(const cvec& p, std::size_t n, Basis basis, cvec& q, cvec& r) {
    const std::size_t deg = highest_nonzero(p);
    q.assign(deg - n + 1, 0.0);
    cvec work(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(deg + 1));
    for (std::size_t i = deg; i >= n; --i) {
        const cplx c = work[i];
        work[i] = 0.0;
        if (c == 0.0) continue;
        if (basis == Basis::power || i == n) {
            q[i - n] += c;
        } else {
            q[i - n] += 2.0 * c;
            work[i >= 2 * n ? i - 2 * n : 2 * n - i] -= c;
        }
    }
    work.resize(n);
    r = std::move(work);
}

// A part of the evaluation: a ciphertext, or a pending linear combination of basis elements plus a constant that is
// summed (one rescale) only when a product or the caller needs it.
struct Value {
    bool is_ct = false;
    Ciphertext ct;                                    // when is_ct (empty in a dry run)
    std::vector<std::pair<std::size_t, cplx>> terms;  // basis index -> coefficient, when !is_ct
    cplx constant = 0.0;
    int depth = 0;
};

// One basis element with coefficient 1 and no constant: the element itself, no linear combination.
bool bare_power(const std::vector<std::pair<std::size_t, cplx>>& terms, cplx constant) {
    return terms.size() == 1 && terms[0].second == 1.0 && constant == 0.0;
}

int terms_depth(const std::vector<std::pair<std::size_t, cplx>>& terms, cplx constant) {
    if (terms.empty()) return 0;
    if (bare_power(terms, constant)) return power_depth(terms[0].first);
    int d = 0;
    for (const auto& t : terms) d = std::max(d, power_depth(t.first));
    return d + 1;
}

// The baby-step giant-step recursion. dry: count and check depths only (no ciphertext). Every ciphertext it makes is
// on the canonical scale of its level. Each product is an Evaluator::multiply_add: the sum it belongs to (a leaf of
// baby-step powers, a part made by a deeper product, the Chebyshev recurrence's T_{a-b}) rides along as terms at the
// product's scale, so that no sum needs a rescale or alignment of its own. A leaf that is a factor is made at the
// product's level with the scale that makes the product canonical, so the giant step it multiplies is only dropped to
// that level (its limbs), not rescaled; other factors are taken down exactly, once per power and level.
class Recursion {
public:
    Recursion(const ckks::Evaluator* ev, const Ciphertext* x, Basis basis, std::size_t baby, Exec exec)
        : ev_(ev), basis_(basis), baby_(baby), exec_(exec), top_(x ? x->level() : 0) {
        powers_[1] = x ? *x : Ciphertext{};  // dry runs keep empty ciphertexts: the keys say what was made
    }

    Value eval(const cvec& p, int allowed) {
        const std::size_t deg = highest_nonzero(p);
        if (deg == 0) {
            Value v;
            v.constant = p.empty() ? 0.0 : p[0];
            return v;
        }
        if (deg < baby_) {
            Value leaf;
            for (std::size_t i = 1; i <= deg; ++i)
                if (p[i] != 0.0) leaf.terms.emplace_back(i, p[i]);
            leaf.constant = p[0];
            leaf.depth = terms_depth(leaf.terms, leaf.constant);
            if (leaf.depth <= allowed) return leaf;
        }
        std::size_t n = 1;
        while (2 * n <= deg) n *= 2;
        cvec q, r;
        split(p, n, basis_, q, r);
        if (highest_nonzero(q) == 0) {  // q * B_n is one more term
            Value rest = eval(r, allowed);
            Value term;
            term.terms.emplace_back(n, q[0]);
            term.depth = terms_depth(term.terms, 0.0);
            if (!rest.is_ct) {
                rest.terms.push_back(term.terms[0]);
                rest.depth = terms_depth(rest.terms, rest.constant);
                return rest;
            }
            return add(std::move(rest), std::move(term));
        }
        Value quotient = eval(q, allowed - 1);
        // The product at the lower level of its factors.
        const int level = std::min(natural_level(quotient), level_of(n));
        const bool leaf = !quotient.is_ct && !bare_power(quotient.terms, quotient.constant);
        Value qv;
        const Ciphertext* bn = nullptr;
        if (leaf) {  // B_n on the leaf's level by its limbs; the leaf's scale makes the product canonical
            bn = &taken_down(n, level, false);
            const double q_level =
                dry() ? 0.0 : static_cast<double>(ctx().rns().prime(static_cast<std::size_t>(level)));
            const double scale = dry() ? 0.0 : ctx().scale_at(level - 1) * q_level / bn->scale;
            qv = materialize(std::move(quotient), level, scale);
        } else {
            bn = &power_at(n, level);
            qv = materialize(std::move(quotient), level);
        }
        Value rest = eval(r, allowed);
        Value out;
        out.is_ct = true;
        out.depth = std::max(qv.depth, power_depth(n)) + 1;
        ++counts_.mult;
        ++counts_.rescale;
        // The rest rides along when it is at the factors' level or above (a leaf always is).
        if (rest.is_ct && !dry() && rest.ct.level() < level) {  // a deeper rest: the evaluator aligns the sum
            out.ct = ev_->multiply_add(qv.ct, *bn, 1, {}, {}, 0.0, exec_);
            return add(std::move(out), std::move(rest));
        }
        std::vector<const Ciphertext*> xs;
        cvec cs;
        if (rest.is_ct) {
            xs.push_back(&rest.ct);
            cs.push_back(1.0);
            out.depth = std::max(out.depth, rest.depth);
        } else {
            for (const auto& [i, c] : rest.terms) {
                xs.push_back(&power(i));
                cs.push_back(c);
            }
        }
        counts_.cmult += xs.size();
        counts_.add += xs.size() + (rest.constant != 0.0 ? 1 : 0);
        terms_ += xs.size();
        if (!dry()) out.ct = ev_->multiply_add(qv.ct, *bn, 1, xs, cs, rest.constant, exec_);
        return out;
    }

    // A ciphertext for v (v must have a term) at `level` (-1: where its terms put it) and `scale` (0: the canonical one;
    // only for a linear combination of powers). Lower levels cost nothing for a linear combination and one constant
    // product (kept, for a power) otherwise.
    Value materialize(Value&& v, int level = -1, double scale = 0.0) {
        if (v.is_ct) {
            if (!dry() && level >= 0 && level < v.ct.level()) v.ct = lower(v.ct, level);
            return std::move(v);
        }
        if (v.terms.empty()) throw InternalError("polynomial evaluation: a constant part reached a product");
        Value out;
        out.is_ct = true;
        out.depth = v.depth;
        if (bare_power(v.terms, v.constant)) {
            const std::size_t i = v.terms[0].first;
            if (!dry()) out.ct = power_at(i, level < 0 ? level_of(i) : level);
            return out;
        }
        std::vector<const Ciphertext*> xs;
        cvec cs;
        for (const auto& [i, c] : v.terms) {
            xs.push_back(&power(i));
            cs.push_back(c);
        }
        counts_.cmult += v.terms.size();
        counts_.add += v.terms.size() - 1 + (v.constant != 0.0 ? 1 : 0);
        ++counts_.rescale;
        terms_ += v.terms.size();
        if (!dry())
            out.ct = ev_->linear_combination_at(xs, cs, v.constant, level < 0 ? natural_level(v) : level, scale, exec_);
        return out;
    }

    // B_i (made on demand, with minimal depth) at its own level top - ceil(log2(i)), canonical scale.
    const Ciphertext& power(std::size_t i) {
        if (const auto it = powers_.find(i); it != powers_.end()) return it->second;
        std::size_t a = 1;
        while (2 * a < i) a *= 2;  // the largest power of two below i (i/2 when i is one)
        const std::size_t b = i - a;
        const Ciphertext& pa = power(a);
        const Ciphertext& pb = power_at(b, level_of(a));
        const std::size_t c = a - b;  // Chebyshev: T_{a+b} = 2 T_a T_b - T_{a-b}, T_{a-b} as a term of the product
        const Ciphertext* pc = basis_ == Basis::chebyshev && c > 0 ? &power(c) : nullptr;
        ++counts_.mult;
        ++counts_.rescale;
        if (basis_ == Basis::chebyshev) ++counts_.add;
        Ciphertext& t = powers_[i];
        if (!dry()) {
            if (basis_ == Basis::power) t = ev_->multiply_add(pa, pb, 1, {}, {}, 0.0, exec_);
            else if (pc) t = ev_->multiply_add(pa, pb, 2, {pc}, {-1.0}, 0.0, exec_);
            else t = ev_->multiply_add(pa, pb, 2, {}, {}, -1.0, exec_);
        }
        return t;
    }

    const OpCounts& counts() const { return counts_; }
    std::size_t terms() const { return terms_; }

private:
    bool dry() const { return ev_ == nullptr; }
    const ckks::Context& ctx() const { return ev_->context(); }
    int level_of(std::size_t i) const { return top_ - power_depth(i); }
    // Where materialize(v) puts v by default (top - v.depth).
    int natural_level(const Value& v) const { return v.is_ct && !dry() ? v.ct.level() : top_ - v.depth; }
    // x on the canonical scale of a lower level (one constant product and rescale).
    Ciphertext lower(const Ciphertext& x, int level) {
        ++counts_.cmult;
        ++counts_.rescale;
        return ev_->linear_combination_at({&x}, {1.0}, 0.0, level, 0.0, exec_);
    }
    // B_i at `level` (at most its own), kept for the next use: exact, on that level's canonical scale (one rescale), or
    // only its limbs of that level (its scale unchanged).
    const Ciphertext& taken_down(std::size_t i, int level, bool exact) {
        const Ciphertext& own = power(i);
        if (dry() || level >= level_of(i)) return own;
        const auto key = std::make_tuple(i, level, exact);
        if (const auto it = lowered_.find(key); it != lowered_.end()) return it->second;
        return lowered_[key] = exact ? lower(own, level) : ev_->drop_limbs(own, level, exec_);
    }
    const Ciphertext& power_at(std::size_t i, int level) { return taken_down(i, level, true); }

    // A ciphertext plus a part: the part made on the ciphertext's level and scale when it is a linear combination
    // that can land there, else aligned by the evaluator.
    Value add(Value&& x, Value&& y) {
        if (!y.is_ct && y.terms.empty()) {  // a constant
            if (y.constant != 0.0) {
                ++counts_.add;
                if (!dry()) x.ct = ev_->add_scalar(x.ct, y.constant, exec_);
            }
            return std::move(x);
        }
        const int level = dry() ? -1 : std::min(natural_level(x), natural_level(y));
        Value a = materialize(std::move(x), level), b = materialize(std::move(y), level);
        Value out;
        out.is_ct = true;
        out.depth = std::max(a.depth, b.depth);
        ++counts_.add;
        if (!dry()) out.ct = ev_->add(a.ct, b.ct, exec_);
        return out;
    }

    const ckks::Evaluator* ev_;
    Basis basis_;
    std::size_t baby_;
    Exec exec_;
    int top_;                                   // the level of B_1
    std::map<std::size_t, Ciphertext> powers_;  // B_i made so far (std::map: references stay valid)
    std::map<std::tuple<std::size_t, int, bool>, Ciphertext> lowered_;  // taken_down(i, level, exact)
    OpCounts counts_;
    std::size_t terms_ = 0;
};

// The baby-step bound with the fewest products (then the fewest linear-combination terms).
PolynomialPlan best_plan(const Polynomial& p) {
    const std::size_t deg = p.degree();
    const int depth = ceil_log2(deg + 1);
    PolynomialPlan best;
    for (int k = 1; k <= std::max(1, depth); ++k) {
        Recursion r(nullptr, nullptr, p.basis, std::size_t{1} << k, {});
        const Value v = r.materialize(r.eval(p.coeffs, depth));
        if (v.depth > depth) throw InternalError("polynomial plan exceeds its depth");
        const std::size_t terms = r.terms();
        if (best.baby == 0 || r.counts().mult < best.products ||
            (r.counts().mult == best.products && terms < best.terms)) {
            best.products = r.counts().mult;
            best.terms = terms;
            best.baby = std::size_t{1} << k;
        }
    }
    best.depth = p.depth();
    return best;
}

const char* basis_name(Basis b) { return b == Basis::power ? "power" : "chebyshev"; }

}  // namespace

Polynomial::Polynomial(cvec c, Basis basis_, double a_, double b_) : coeffs(std::move(c)), basis(basis_), a(a_), b(b_) {
    for (std::size_t i = 0; i < coeffs.size(); ++i)
        if (!std::isfinite(coeffs[i].real()) || !std::isfinite(coeffs[i].imag()))
            throw ParameterError("polynomial coefficient " + std::to_string(i) + " is NaN or infinite");
    if (!(std::isfinite(a) && std::isfinite(b) && a < b))
        throw ParameterError("polynomial interval [" + std::to_string(a) + ", " + std::to_string(b) +
                             "] is empty or not finite: give (a, b) with a < b");
    if (degree() > kMaxDegree)
        throw ParameterError("polynomial degree " + std::to_string(degree()) + " is above the largest supported, " +
                             std::to_string(kMaxDegree));
    coeffs.resize(degree() + 1);
}

std::size_t Polynomial::degree() const { return highest_nonzero(coeffs); }

int Polynomial::depth() const { return ceil_log2(degree() + 1) + (maps_interval() ? 1 : 0); }

cplx Polynomial::operator()(cplx x) const {
    const cplx t = maps_interval() ? (2.0 * x - a - b) / (b - a) : x;
    if (coeffs.empty()) return 0.0;
    if (basis == Basis::power) {
        cplx s = 0.0;
        for (std::size_t i = coeffs.size(); i-- > 0;) s = s * t + coeffs[i];
        return s;
    }
    cplx b1 = 0.0, b2 = 0.0;  // Clenshaw
    for (std::size_t i = coeffs.size(); i-- > 1;) {
        const cplx b0 = coeffs[i] + 2.0 * t * b1 - b2;
        b2 = b1;
        b1 = b0;
    }
    return coeffs[0] + t * b1 - b2;
}

std::string Polynomial::describe() const {
    std::ostringstream o;
    o << "degree " << degree() << " in the " << basis_name(basis) << " basis";
    if (maps_interval()) o << " on [" << a << ", " << b << "]";
    return o.str();
}

std::vector<double> chebyshev_nodes(double a, double b, std::size_t degree) {
    if (!(std::isfinite(a) && std::isfinite(b) && a < b))
        throw ParameterError("chebyshev: the interval must be (a, b) with a < b, both finite");
    if (degree < 1 || degree > Polynomial::kMaxDegree)
        throw ParameterError("chebyshev: degree " + std::to_string(degree) + " is outside 1.." +
                             std::to_string(Polynomial::kMaxDegree));
    const std::size_t m = degree + 1;
    std::vector<double> x(m);
    for (std::size_t k = 0; k < m; ++k)
        x[k] = 0.5 * (a + b) + 0.5 * (b - a) * std::cos(kPi * (static_cast<double>(k) + 0.5) / static_cast<double>(m));
    return x;
}

Polynomial chebyshev_from_values(const cvec& values, double a, double b) {
    const std::size_t m = values.size();
    if (m < 2) throw ParameterError("chebyshev: at least 2 values (degree 1) are needed");
    chebyshev_nodes(a, b, m - 1);  // checks the interval and degree
    for (const cplx& v : values)
        if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
            throw ParameterError("chebyshev: the function returned NaN or infinity at a node; check its interval");
    // c_j = (2 / m) sum_k f(x_k) cos(pi j (k + 1/2) / m), c_0 halved. cos(pi u / (2m)) for u = j (2k + 1) mod 4m.
    std::vector<double> table(4 * m);
    for (std::size_t u = 0; u < 4 * m; ++u)
        table[u] = std::cos(kPi * static_cast<double>(u) / (2.0 * static_cast<double>(m)));
    cvec c(m);
    double largest = 0.0;
    for (std::size_t j = 0; j < m; ++j) {
        cplx s = 0.0;
        for (std::size_t k = 0; k < m; ++k) s += values[k] * table[(j * (2 * k + 1)) % (4 * m)];
        c[j] = s * (j == 0 ? 1.0 : 2.0) / static_cast<double>(m);
        largest = std::max(largest, std::abs(c[j]));
    }
    for (cplx& v : c)
        if (std::abs(v) <= largest * std::ldexp(1.0, -50)) v = 0.0;
    return Polynomial(std::move(c), Basis::chebyshev, a, b);
}

Polynomial chebyshev(const std::function<double(double)>& f, double a, double b, std::size_t degree) {
    const std::vector<double> x = chebyshev_nodes(a, b, degree);
    cvec v(x.size());
    for (std::size_t k = 0; k < x.size(); ++k) v[k] = f(x[k]);
    return chebyshev_from_values(v, a, b);
}

PolynomialPlan plan_polynomial(const Polynomial& p) {
    if (p.degree() == 0) throw ParameterError("the polynomial is a constant (degree 0): nothing to evaluate");
    return best_plan(p);
}

Ciphertext evaluate(const ckks::Evaluator& ev, const Ciphertext& x, const Polynomial& p, Exec exec, OpCounts* counts) {
    const ckks::Context& ctx = ev.context();
    const PolynomialPlan plan = plan_polynomial(p);
    if (x.context_uid != ctx.uid() || x.level() < 0 || x.level() > ctx.max_level())
        throw ParameterError("evaluate_polynomial: the ciphertext belongs to another context or is malformed");
    if (x.size() != 2) throw ParameterError("evaluate_polynomial: relinearize the operand first (it has 3 parts)");
    if (x.level() < plan.depth)
        throw LevelError("evaluate_polynomial: " + p.describe() + " needs " + std::to_string(plan.depth) + " levels" +
                         (p.maps_interval()
                              ? " (" + std::to_string(plan.depth - 1) + " for the degree, 1 for the interval)"
                              : std::string()) +
                         " and the ciphertext is at level " + std::to_string(x.level()) +
                         "; use parameters with more levels (Parameters.for_circuit), a lower "
                         "degree, or bootstrap first");
    if (!ctx.is_canonical(x.scale, x.level()))
        throw ScaleError(
            "evaluate_polynomial: the operand's scale is not the canonical scale of its level; rescale it "
            "first");
    exec = ctx.exec(exec);
    const ckks::Evaluator cev = counts ? ev.counting(*counts) : ev;
    Ciphertext t;
    const Ciphertext* input = &x;
    if (p.maps_interval()) {  // t = (2x - a - b) / (b - a)
        t = cev.linear_combination({&x}, {2.0 / (p.b - p.a)}, -(p.a + p.b) / (p.b - p.a), exec);
        input = &t;
    }
    Recursion rec(&cev, input, p.basis, plan.baby, exec);
    // Land exactly on the stated level (a sparse polynomial may need fewer levels than its degree says).
    const int target = x.level() - plan.depth;
    return rec.materialize(rec.eval(p.coeffs, ceil_log2(p.degree() + 1)), target).ct;
}

}  // namespace kasoku::algo
