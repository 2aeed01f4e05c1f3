#include "kasoku/ckks/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "checks_internal.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::ckks {

using rns::RnsPoly;

namespace {
using detail::same_scale;

std::string fmt_scale(double s) { return "2^" + std::to_string(std::log2(s)); }

// Residues of round(c) (|c| < 2^126) for every prime.
std::vector<std::uint64_t> integer_residues(const rns::RnsContext& r, double c) {
    if (!std::isfinite(c) || std::fabs(c) >= std::ldexp(1.0, 126))
        throw ScaleError("constant too large for the ciphertext modulus: " + std::to_string(c));
    return r.signed_residues(static_cast<__int128>(std::nearbyint(c)));
}
}  // namespace

Evaluator::Evaluator(ContextPtr ctx, std::shared_ptr<const EvaluationKeys> keys)
    : ctx_(std::move(ctx)), keys_(std::move(keys)), encoder_(ctx_) {
    if (keys_) detail::check_key(*ctx_, keys_->context_uid, "evaluation keys");
}

void Evaluator::check(const Ciphertext& a, const char* what) const { detail::check_ciphertext(*ctx_, a, what); }

void Evaluator::check_scale_fits(double scale, int level, const char* op) const {
    // The message needs log2(scale) bits plus a sign bit and at least one bit of integer part.
    if (std::log2(scale) + 2.0 > ctx_->log_modulus(level))
        throw ScaleError(std::string(op) + ": the scale " + fmt_scale(scale) + " no longer fits the modulus at level " +
                         std::to_string(level) + " (2^" + std::to_string(ctx_->log_modulus(level)) +
                         "); rescale after each multiplication, or use parameters with more or larger primes");
}

Evaluator::Aligned Evaluator::align(const Ciphertext& a, const Ciphertext& b, Exec exec) const {
    check(a, "first operand");
    check(b, "second operand");
    if (a.key_id != b.key_id)
        throw ParameterError("the operands were encrypted under different keys; they cannot be combined");
    if (a.level() == b.level()) {
        if (!same_scale(a.scale, b.scale))
            throw ScaleError("operands have different scales (" + fmt_scale(a.scale) + " and " + fmt_scale(b.scale) +
                             ") at the same level " + std::to_string(a.level()) +
                             "; rescale the one with the larger scale or multiply by a constant to match");
        return {&a, &b, {}, 0};
    }
    const bool a_high = a.level() > b.level();
    const Ciphertext& hi = a_high ? a : b;
    const Ciphertext& lo = a_high ? b : a;
    Ciphertext adjusted;
    if (same_scale(hi.scale, lo.scale)) {
        adjusted = drop_level(hi, lo.level(), exec);
    } else {
        // Exact scale adjustment: drop to lo.level + 1, multiply by round(s_lo q / s_hi), rescale by q.
        Ciphertext t = drop_level(hi, lo.level() + 1, exec);
        const double q = static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(lo.level()) + 1));
        const double c = std::nearbyint(lo.scale * q / hi.scale);
        if (c < 1.0)
            throw ScaleError("cannot align scales " + fmt_scale(hi.scale) + " and " + fmt_scale(lo.scale) +
                             ": rescale the operand with the larger scale first");
        const auto res = integer_residues(ctx_->rns(), c);
        for (auto& p : t.polys) ctx_->backend().mul_constant(p, res, p, exec);
        t.scale = hi.scale * c;
        adjusted = rescale(t, exec);
        adjusted.scale = lo.scale;  // equal up to a relative 2^-40: the rounding of c
    }
    return {&a, &b, std::move(adjusted), a_high ? 1 : 2};
}

Ciphertext Evaluator::add(const Ciphertext& a0, const Ciphertext& b0, Exec exec) const {
    exec = ctx_->exec(exec);
    Aligned al = align(a0, b0, exec);
    const bool a_larger = al.a().size() >= al.b().size();
    const Ciphertext& a = a_larger ? al.a() : al.b();
    const Ciphertext& b = a_larger ? al.b() : al.a();
    Ciphertext r;
    r.scale = al.a().scale;
    r.context_uid = a.context_uid;
    r.key_id = a.key_id;
    r.polys.resize(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
        if (k < b.size()) ctx_->backend().add(a.polys[k], b.polys[k], r.polys[k], exec);
        else r.polys[k] = a.polys[k];
    }
    return r;
}

Ciphertext Evaluator::sub(const Ciphertext& a0, const Ciphertext& b0, Exec exec) const {
    exec = ctx_->exec(exec);
    Aligned al = align(a0, b0, exec);
    const Ciphertext& a = al.a();
    const Ciphertext& b = al.b();
    const auto& be = ctx_->backend();
    Ciphertext r;
    r.scale = a.scale;
    r.context_uid = a.context_uid;
    r.key_id = a.key_id;
    r.polys.resize(std::max(a.size(), b.size()));
    for (std::size_t k = 0; k < r.size(); ++k) {
        if (k < a.size() && k < b.size()) be.sub(a.polys[k], b.polys[k], r.polys[k], exec);
        else if (k < a.size()) r.polys[k] = a.polys[k];
        else be.negate(b.polys[k], r.polys[k], exec);
    }
    return r;
}

Ciphertext Evaluator::negate(const Ciphertext& a, Exec exec) const {
    check(a, "operand");
    exec = ctx_->exec(exec);
    Ciphertext r = a;
    for (auto& p : r.polys) ctx_->backend().negate(p, p, exec);
    return r;
}

Ciphertext Evaluator::add_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, Exec exec) const {
    check(a, "operand");
    exec = ctx_->exec(exec);
    Plaintext pt = encoder_.encode(values, a.scale, a.level(), exec);
    Ciphertext r = a;
    ctx_->backend().add(r.polys[0], pt.poly, r.polys[0], exec);
    return r;
}

Ciphertext Evaluator::add_scalar(const Ciphertext& a, std::complex<double> c, Exec exec) const {
    check(a, "operand");
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) throw ParameterError("the constant is NaN or infinite");
    if (c.imag() != 0.0) return add_plain(a, std::vector<std::complex<double>>(ctx_->slots(), c), exec);
    exec = ctx_->exec(exec);
    // A constant polynomial is the same constant in every slot and in every NTT point.
    const double v = c.real() * a.scale;
    if (!(std::log2(std::fabs(v) + 1.0) + 1.0 < ctx_->log_modulus(a.level())))
        throw ScaleError("constant " + std::to_string(c.real()) + " times the scale does not fit the modulus at this level");
    const auto res = integer_residues(ctx_->rns(), v);
    Ciphertext r = a;
    ctx_->backend().add_constant(r.polys[0], res, r.polys[0], exec);
    return r;
}

double Evaluator::plain_scale(const Ciphertext& a) const {
    // Chosen so that the rescale lands exactly on the canonical scale of the next level.
    if (a.level() == 0) return ctx_->default_scale();
    const double q = static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(a.level())));
    return ctx_->scale_at(a.level() - 1) * q / a.scale;
}

Ciphertext Evaluator::multiply_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, bool rescale_after,
                                     Exec exec) const {
    check(a, "operand");
    exec = ctx_->exec(exec);
    if (rescale_after && a.level() == 0)
        throw LevelError("multiply_plain at level 0: no level left to rescale; decrypt, or use parameters with more levels "
                         "(or pass rescale=False and keep the larger scale)");
    const double pt_scale = plain_scale(a);
    check_scale_fits(a.scale * pt_scale, a.level(), "multiply_plain");
    Plaintext pt = encoder_.encode(values, pt_scale, a.level(), exec);
    Ciphertext r = a;
    for (auto& p : r.polys) ctx_->backend().mul(p, pt.poly, p, exec);
    r.scale = a.scale * pt_scale;
    return rescale_after ? rescale(r, exec) : r;
}

Ciphertext Evaluator::multiply_scalar(const Ciphertext& a, std::complex<double> c, bool rescale_after, Exec exec) const {
    check(a, "operand");
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) throw ParameterError("the constant is NaN or infinite");
    if (c.imag() != 0.0)
        return multiply_plain(a, std::vector<std::complex<double>>(ctx_->slots(), c), rescale_after, exec);
    exec = ctx_->exec(exec);
    if (rescale_after && a.level() == 0)
        throw LevelError("multiply_scalar at level 0: no level left to rescale; pass rescale=False or use more levels");
    const double pt_scale = plain_scale(a);
    check_scale_fits(a.scale * pt_scale, a.level(), "multiply_scalar");
    const auto res = integer_residues(ctx_->rns(), c.real() * pt_scale);
    Ciphertext r = a;
    for (auto& p : r.polys) ctx_->backend().mul_constant(p, res, p, exec);
    r.scale = a.scale * pt_scale;
    return rescale_after ? rescale(r, exec) : r;
}

Ciphertext Evaluator::multiply(const Ciphertext& a0, const Ciphertext& b0, bool rescale_after, Exec exec) const {
    if (!keys_ || !keys_->relin)
        throw MissingKeyError("multiply needs the relinearisation key: create the evaluator with keys.evaluation() "
                              "from ctx.keygen() (relinearisation key included by default)");
    check(a0, "first operand");
    check(b0, "second operand");
    if (rescale_after && std::min(a0.level(), b0.level()) == 0)
        throw LevelError("multiply at level 0: no level left to rescale; decrypt here, or use parameters with more levels");
    exec = ctx_->exec(exec);
    Ciphertext d = tensor_product(a0, b0, "multiply", exec);
    if (keys_->key_id != d.key_id) throw ParameterError("the evaluation keys belong to another secret key than the operands");
    const auto& ks = ctx_->keyswitcher();
    rns::LazyPolys lazy = ks.switch_lazy(d.polys[2], *keys_->relin, exec);
    Ciphertext out;
    out.context_uid = d.context_uid;
    out.key_id = d.key_id;
    out.polys.resize(2);
    if (rescale_after) {
        // (d0 P + ks0) / (P q_l): ModDown and rescale in one base conversion.
        ks.mod_down_rescale(std::move(lazy), &d.polys[0], &d.polys[1], out.polys[0], out.polys[1], exec);
        out.scale = d.scale / static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(d.level())));
    } else {
        ks.mod_down(lazy, &d.polys[0], &d.polys[1], 1, out.polys[0], out.polys[1], exec);
        out.scale = d.scale;
    }
    return out;
}

Ciphertext Evaluator::tensor(const Ciphertext& a, const Ciphertext& b, Exec exec) const {
    return tensor_product(a, b, "tensor", ctx_->exec(exec));
}

Ciphertext Evaluator::tensor_product(const Ciphertext& a0, const Ciphertext& b0, const char* op, Exec exec) const {
    Aligned al = align(a0, b0, exec);
    const Ciphertext& a = al.a();
    const Ciphertext& b = al.b();
    if (a.size() != 2 || b.size() != 2)
        throw ParameterError(std::string(op) + " expects relinearised (size 2) operands; call relinearize first");
    const double scale = a.scale * b.scale;
    check_scale_fits(scale, a.level(), op);
    const auto& be = ctx_->backend();
    Ciphertext out;
    out.polys.resize(3);
    be.mul(a.polys[0], b.polys[0], out.polys[0], exec);
    be.mul(a.polys[0], b.polys[1], out.polys[1], exec);
    be.fma(a.polys[1], b.polys[0], out.polys[1], out.polys[1], exec);
    be.mul(a.polys[1], b.polys[1], out.polys[2], exec);
    out.scale = scale;
    out.context_uid = a.context_uid;
    out.key_id = a.key_id;
    return out;
}

void Evaluator::multiply_plain_accumulate(const Ciphertext& a, const Plaintext& pt, Ciphertext& acc, Exec exec) const {
    check(a, "operand");
    detail::check_plain(*ctx_, pt);
    if (pt.level() != a.level())
        throw LevelError("multiply_plain_accumulate: the plaintext is at level " + std::to_string(pt.level()) +
                         " and the ciphertext at level " + std::to_string(a.level()) + "; encode it at the ciphertext's level");
    const bool first = acc.polys.empty();
    if (!first && (acc.level() != a.level() || acc.size() != a.size() || acc.key_id != a.key_id ||
                   !same_scale(acc.scale, a.scale * pt.scale)))
        throw ParameterError("multiply_plain_accumulate: the accumulator's level, size, key or scale differs from the product's");
    const double scale = a.scale * pt.scale;
    check_scale_fits(scale, a.level(), "multiply_plain_accumulate");
    exec = ctx_->exec(exec);
    std::vector<const RnsPoly*> term;
    std::vector<RnsPoly*> parts;
    if (first) acc.polys.resize(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
        term.push_back(&a.polys[k]);
        parts.push_back(&acc.polys[k]);
    }
    try {
        ctx_->backend().sum_of_products({term}, {&pt.poly}, parts, !first, exec);
    } catch (...) {
        if (first) acc.polys.clear();
        throw;
    }
    if (first) {
        acc.scale = scale;
        acc.context_uid = a.context_uid;
        acc.key_id = a.key_id;
    }
}

Ciphertext Evaluator::linear_combination(const std::vector<const Ciphertext*>& xs,
                                         const std::vector<std::complex<double>>& coeffs, std::complex<double> constant,
                                         Exec exec) const {
    if (xs.empty() || xs.size() != coeffs.size())
        throw ParameterError("linear_combination needs one coefficient per ciphertext and at least one ciphertext (got " +
                             std::to_string(xs.size()) + " ciphertexts and " + std::to_string(coeffs.size()) + " coefficients)");
    const auto finite = [](std::complex<double> c) { return std::isfinite(c.real()) && std::isfinite(c.imag()); };
    if (!finite(constant)) throw ParameterError("linear_combination: the constant is NaN or infinite");
    int level = ctx_->max_level();
    double largest = std::abs(constant);
    for (std::size_t i = 0; i < xs.size(); ++i) {
        if (!xs[i]) throw ParameterError("linear_combination: ciphertext " + std::to_string(i) + " is null");
        check(*xs[i], "a term of linear_combination");
        if (xs[i]->size() != 2) throw ParameterError("linear_combination: relinearize size-3 terms first");
        if (xs[i]->key_id != xs[0]->key_id)
            throw ParameterError("linear_combination: the terms were encrypted under different keys");
        if (!finite(coeffs[i])) throw ParameterError("linear_combination: coefficient " + std::to_string(i) + " is NaN or infinite");
        level = std::min(level, xs[i]->level());
        largest = std::max(largest, std::abs(coeffs[i]));
    }
    if (level == 0)
        throw LevelError("linear_combination at level 0: no level left for its rescale; use parameters with more levels");
    const auto lvl = static_cast<std::size_t>(level);
    // Scale of the sum before its rescale by q_level: s_{level-1} * q_level.
    const double target = ctx_->scale_at(level - 1) * static_cast<double>(ctx_->rns().prime(lvl));
    check_scale_fits(target * std::max(1.0, largest), level, "linear_combination");
    exec = ctx_->exec(exec);
    const rns::Backend& be = ctx_->backend();

    // parts[0]: sum of the real parts, parts[1]: of the imaginary parts (times X^(n/2) at the end).
    Ciphertext parts[2];
    const auto make_zero = [&](Ciphertext& acc) {
        acc.polys.assign(2, be.poly(lvl + 1, 0, true));
        for (auto& p : acc.polys) p.zero();
    };
    RnsPoly tmp;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const Ciphertext& x = *xs[i];
        const double c[2] = {coeffs[i].real(), coeffs[i].imag()};
        for (int part = 0; part < 2; ++part) {
            if (c[part] == 0.0) continue;
            const auto res = integer_residues(ctx_->rns(), c[part] * target / x.scale);
            Ciphertext& acc = parts[part];
            if (acc.polys.empty()) acc.polys.resize(2);
            for (std::size_t k = 0; k < 2; ++k) {
                const RnsPoly* src = &x.polys[k];
                if (x.level() != level) {
                    tmp = x.polys[k];
                    tmp.truncate(lvl + 1);
                    src = &tmp;
                }
                if (acc.polys[k].empty()) {
                    be.mul_constant(*src, res, acc.polys[k], exec);
                } else {
                    RnsPoly& prod = src == &tmp ? tmp : (tmp = *src);
                    be.mul_constant(prod, res, prod, exec);
                    be.add(acc.polys[k], prod, acc.polys[k], exec);
                }
            }
        }
    }
    const double cst[2] = {constant.real(), constant.imag()};
    for (int part = 0; part < 2; ++part) {
        if (cst[part] == 0.0) continue;
        Ciphertext& acc = parts[part];
        if (acc.polys.empty()) make_zero(acc);
        be.add_constant(acc.polys[0], integer_residues(ctx_->rns(), cst[part] * target), acc.polys[0], exec);
    }
    if (!parts[1].polys.empty()) {
        // i in every slot is the monomial X^(n/2): encoded at scale 1 it is exact.
        const Plaintext mono = encoder_.encode(std::vector<std::complex<double>>(ctx_->slots(), {0.0, 1.0}), 1.0, level, exec);
        for (auto& p : parts[1].polys) be.mul(p, mono.poly, p, exec);
        if (parts[0].polys.empty()) {
            parts[0] = std::move(parts[1]);
        } else {
            for (std::size_t k = 0; k < 2; ++k) be.add(parts[0].polys[k], parts[1].polys[k], parts[0].polys[k], exec);
        }
    }
    Ciphertext& sum = parts[0];
    if (sum.polys.empty()) make_zero(sum);  // every coefficient and the constant are zero
    sum.context_uid = xs[0]->context_uid;
    sum.key_id = xs[0]->key_id;
    sum.scale = target;
    Ciphertext out = rescale(sum, exec);
    out.scale = ctx_->scale_at(level - 1);
    return out;
}

Ciphertext Evaluator::relinearize(const Ciphertext& a, Exec exec) const {
    check(a, "operand");
    if (a.size() == 2) return a;
    if (!keys_ || !keys_->relin) throw MissingKeyError("relinearize needs the relinearisation key (keys.evaluation())");
    if (keys_->key_id != a.key_id) throw ParameterError("the evaluation keys belong to another secret key than the operand");
    exec = ctx_->exec(exec);
    // c0 + ModDown(ks0), c1 + ModDown(ks1)
    return finish(a, ctx_->keyswitcher().switch_lazy(a.polys[2], *keys_->relin, exec), &a.polys[0], &a.polys[1], 1, exec);
}

Ciphertext Evaluator::rescale(const Ciphertext& a, Exec exec) const {
    check(a, "operand");
    if (a.level() == 0)
        throw LevelError("rescale at level 0: the ciphertext has no level left; decrypt it, or use parameters with more levels");
    exec = ctx_->exec(exec);
    Ciphertext r = a;
    for (auto& p : r.polys) ctx_->backend().rescale(p, exec);
    r.scale = a.scale / static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(a.level())));
    return r;
}

Ciphertext Evaluator::drop_level(const Ciphertext& a, int level, Exec) const {
    check(a, "operand");
    if (level < 0 || level > a.level())
        throw LevelError("drop_level to " + std::to_string(level) + ": the ciphertext is at level " + std::to_string(a.level()) +
                         " and levels can only go down to 0");
    Ciphertext r = a;
    for (auto& p : r.polys) p.truncate(static_cast<std::size_t>(level) + 1);
    return r;
}

const SwitchKey& Evaluator::galois_key(std::uint64_t g, const char* what) const {
    if (keys_) {
        auto it = keys_->galois.find(g);
        if (it != keys_->galois.end()) return *it->second;
    }
    throw MissingKeyError(std::string("no Galois key for ") + what + " (Galois element " + std::to_string(g) + ")");
}

Ciphertext Evaluator::rotate(const Ciphertext& a, std::int64_t step, Exec exec) const {
    check(a, "operand");
    const std::uint64_t g = ctx_->galois_element(step);
    if (g == 1) return a;
    if (!keys_ || !keys_->galois.count(g))
        throw MissingKeyError("no rotation key for step " + std::to_string(step) + " (Galois element " + std::to_string(g) +
                              "); generate it with ctx.keygen(rotations=[" + std::to_string(step) + "])");
    return apply_galois(a, g, exec);
}

Ciphertext Evaluator::conjugate(const Ciphertext& a, Exec exec) const {
    check(a, "operand");
    const std::uint64_t g = ctx_->conjugation_element();
    if (!keys_ || !keys_->galois.count(g))
        throw MissingKeyError("no conjugation key; generate it with ctx.keygen(conjugation=True)");
    return apply_galois(a, g, exec);
}

Ciphertext Evaluator::apply_galois(const Ciphertext& a, std::uint64_t g, Exec exec) const {
    check(a, "operand");
    if (a.size() != 2) throw ParameterError("rotation expects a relinearised (size 2) ciphertext; call relinearize first");
    const SwitchKey& key = galois_key(g, "this automorphism; generate it with ctx.keygen(galois_elements=[...])");
    if (key.key_id != a.key_id) throw ParameterError("the Galois key belongs to another secret key than the operand");
    exec = ctx_->exec(exec);
    // The key switches s -> s(X^{g^-1}); the automorphism comes last (see hoisting.cpp), on two polynomials over Q_l.
    return finish(a, ctx_->keyswitcher().switch_lazy(a.polys[1], key, exec), &a.polys[0], nullptr, g, exec);
}

Ciphertext Evaluator::finish(const Ciphertext& like, const rns::LazyPolys& x, const RnsPoly* add0, const RnsPoly* add1,
                             std::uint64_t g, Exec exec) const {
    Ciphertext out;
    out.polys.resize(2);
    ctx_->keyswitcher().mod_down(x, add0, add1, g, out.polys[0], out.polys[1], exec);
    out.scale = like.scale;
    out.context_uid = like.context_uid;
    out.key_id = like.key_id;
    return out;
}

}  // namespace kasoku::ckks
