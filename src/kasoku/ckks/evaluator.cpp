#include "kasoku/ckks/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "checks_internal.hpp"
#include "count_internal.hpp"
#include "kasoku/support/error.hpp"
#include "sampling_internal.hpp"

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

// A ciphertext stamped like a at `scale` whose part k is written by f(a.polys[k], part k): the result in new
// polynomials, a untouched.
template <class F>
Ciphertext each_part(const Ciphertext& a, double scale, const F& f) {
    Ciphertext r;
    detail::stamp(r, a, scale);
    r.polys.resize(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) f(a.polys[k], r.polys[k]);
    return r;
}
}  // namespace

OpCounts& OpCounts::operator+=(const OpCounts& o) {
    for (auto f : kOpCountFields) this->*f += o.*f;
    return *this;
}

Evaluator Evaluator::counting(OpCounts& counts) const {
    Evaluator e = *this;
    e.counts_ = &counts;
    return e;
}

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

Evaluator::Aligned Evaluator::align(const Ciphertext& a, const Ciphertext& b, bool sum, Exec exec) const {
    check(a, "first operand");
    check(b, "second operand");
    if (a.key_id != b.key_id)
        throw ParameterError("the operands were encrypted under different keys; they cannot be combined");
    if (a.level() == b.level()) {
        if (sum && !same_scale(a.scale, b.scale))
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
        adjusted = drop_limbs(hi, lo.level(), exec);
    } else {
        // Exact scale adjustment: drop to lo.level + 1, multiply by round(s_lo q / s_hi), rescale by q. The product
        // reads the limbs it keeps in place (a linear combination of one term) and the rescale works in its result.
        const std::size_t keep = static_cast<std::size_t>(lo.level()) + 2;
        const double q = static_cast<double>(ctx_->rns().prime(keep - 1));
        const double c = std::nearbyint(lo.scale * q / hi.scale);
        if (c < 1.0)
            throw ScaleError("cannot align scales " + fmt_scale(hi.scale) + " and " + fmt_scale(lo.scale) +
                             ": rescale the operand with the larger scale first");
        const std::vector<std::vector<std::uint64_t>> res{integer_residues(ctx_->rns(), c)};
        Ciphertext t = each_part(hi, hi.scale * c, [&](const RnsPoly& p, RnsPoly& out) {
            ctx_->backend().linear_combination({&p}, res, keep, out, exec);
        });
        adjusted = rescale(std::move(t), exec);
        adjusted.scale = lo.scale;  // equal up to a relative 2^-40: the rounding of c
    }
    return {&a, &b, std::move(adjusted), a_high ? 1 : 2};
}

Ciphertext Evaluator::add(const Ciphertext& a0, const Ciphertext& b0, Exec exec) const {
    const Count count(*this, {.add = 1});
    exec = ctx_->exec(exec);
    Aligned al = align(a0, b0, true, exec);
    const bool a_larger = al.a().size() >= al.b().size();
    const Ciphertext& a = a_larger ? al.a() : al.b();
    const Ciphertext& b = a_larger ? al.b() : al.a();
    Ciphertext r;
    detail::stamp(r, a, al.a().scale);
    r.polys.resize(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
        if (k < b.size()) ctx_->backend().add(a.polys[k], b.polys[k], r.polys[k], exec);
        else r.polys[k] = a.polys[k];
    }
    return r;
}

Ciphertext Evaluator::sub(const Ciphertext& a0, const Ciphertext& b0, Exec exec) const {
    const Count count(*this, {.add = 1});
    exec = ctx_->exec(exec);
    Aligned al = align(a0, b0, true, exec);
    const Ciphertext& a = al.a();
    const Ciphertext& b = al.b();
    const auto& be = ctx_->backend();
    Ciphertext r;
    detail::stamp(r, a, a.scale);
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
    return each_part(a, a.scale, [&](const RnsPoly& p, RnsPoly& out) { ctx_->backend().negate(p, out, exec); });
}

// i in every slot is the monomial X^(n/2): encoded at scale 1 it is exact.
const Plaintext& Evaluator::i_monomial(int level, Exec exec) const {
    std::lock_guard<std::mutex> lock(i_monomials_->mu);
    auto& made = i_monomials_->at[level];
    if (!made)
        made = std::make_unique<const Plaintext>(
            encoder_.encode(std::vector<std::complex<double>>(ctx_->slots(), {0.0, 1.0}), 1.0, level, exec));
    return *made;
}

Ciphertext Evaluator::multiply_by_i(const Ciphertext& a, Exec exec) const {
    check(a, "operand");
    exec = ctx_->exec(exec);
    const Plaintext& mono = i_monomial(a.level(), exec);
    return each_part(a, a.scale, [&](const RnsPoly& p, RnsPoly& out) { ctx_->backend().mul(p, mono.poly, out, exec); });
}

Ciphertext Evaluator::key_switch(const Ciphertext& a, const SwitchKey& key, Exec exec) const {
    const Count count(*this, {.decompose = 1, .mod_down = 1});
    check(a, "operand");
    detail::check_relinearised(a, "key_switch");
    detail::check_key(*ctx_, key.context_uid, "the key");
    if (key.key_id != a.key_id)
        throw ParameterError("key_switch: the key belongs to another secret key than the operand");
    const std::size_t serves = key.b.empty() ? 0 : key.b[0].num_q();
    if (static_cast<std::size_t>(a.level()) + 1 > serves)
        throw LevelError("key_switch: the key serves levels up to " + std::to_string(static_cast<int>(serves) - 1) +
                         ", the operand is at level " + std::to_string(a.level()) + "; drop_level it first");
    exec = ctx_->exec(exec);
    // Not owned: the key outlives the call (a compact key's a-parts are expanded for it alone).
    const auto k =
        detail::gadget_key(*ctx_, std::shared_ptr<const SwitchKey>(std::shared_ptr<const SwitchKey>(), &key));
    return switch_finish(a, a.polys[1], *k, &a.polys[0], nullptr, 1, exec);
}

Ciphertext Evaluator::add_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, Exec exec) const {
    const Count count(*this, {.add = 1});
    check(a, "operand");
    exec = ctx_->exec(exec);
    Plaintext pt = encoder_.encode(values, a.scale, a.level(), exec);
    Ciphertext r = copied(a, 1, exec);
    ctx_->backend().add(a.polys[0], pt.poly, r.polys[0], exec);
    return r;
}

Ciphertext Evaluator::add_scalar(const Ciphertext& a, std::complex<double> c, Exec exec) const {
    const Count count(*this, {.add = 1});
    check(a, "operand");
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) throw ParameterError("the constant is NaN or infinite");
    if (c.imag() != 0.0) return add_plain(a, std::vector<std::complex<double>>(ctx_->slots(), c), exec);
    exec = ctx_->exec(exec);
    // A constant polynomial is the same constant in every slot and in every NTT point.
    const double v = c.real() * a.scale;
    if (!(std::log2(std::fabs(v) + 1.0) + 1.0 < ctx_->log_modulus(a.level())))
        throw ScaleError("constant " + std::to_string(c.real()) +
                         " times the scale does not fit the modulus at this level");
    const auto res = integer_residues(ctx_->rns(), v);
    Ciphertext r = copied(a, 1, exec);
    ctx_->backend().add_constant(a.polys[0], res, r.polys[0], exec);
    return r;
}

double Evaluator::plain_scale(const Ciphertext& a) const {
    // Chosen so that the rescale lands exactly on the canonical scale of the next level.
    if (a.level() == 0) return ctx_->default_scale();
    const double q = static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(a.level())));
    return ctx_->scale_at(a.level() - 1) * q / a.scale;
}

Ciphertext Evaluator::multiply_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values,
                                     bool rescale_after, Exec exec) const {
    const Count count(*this, {.cmult = 1, .rescale = rescale_after ? 1u : 0u});
    check(a, "operand");
    exec = ctx_->exec(exec);
    if (rescale_after && a.level() == 0)
        throw LevelError(
            "multiply_plain at level 0: no level left to rescale; decrypt, or use parameters with more levels "
            "(or pass rescale=False and keep the larger scale)");
    const double pt_scale = plain_scale(a);
    check_scale_fits(a.scale * pt_scale, a.level(), "multiply_plain");
    Plaintext pt = encoder_.encode(values, pt_scale, a.level(), exec);
    Ciphertext r = each_part(a, a.scale * pt_scale,
                             [&](const RnsPoly& p, RnsPoly& out) { ctx_->backend().mul(p, pt.poly, out, exec); });
    return rescale_after ? rescale(std::move(r), exec) : r;
}

Ciphertext Evaluator::multiply_scalar(const Ciphertext& a, std::complex<double> c, bool rescale_after,
                                      Exec exec) const {
    const Count count(*this, {.cmult = 1, .rescale = rescale_after ? 1u : 0u});
    check(a, "operand");
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) throw ParameterError("the constant is NaN or infinite");
    exec = ctx_->exec(exec);
    if (rescale_after && a.level() == 0)
        throw LevelError("multiply_scalar at level 0: no level left to rescale; pass rescale=False or use more levels");
    const double pt_scale = plain_scale(a);
    check_scale_fits(a.scale * pt_scale, a.level(), "multiply_scalar");
    const auto& be = ctx_->backend();
    const auto res = integer_residues(ctx_->rns(), c.real() * pt_scale);
    Ciphertext r =
        each_part(a, a.scale * pt_scale, [&](const RnsPoly& p, RnsPoly& out) { be.mul_constant(p, res, out, exec); });
    if (c.imag() != 0.0) {
        // c in every slot is the polynomial Re c + Im c X^(n/2) (the encoding of the constant): a Re c plus (a Im c)
        // times the monomial this evaluator keeps per level, with nothing encoded or sent to a device.
        const auto im = integer_residues(ctx_->rns(), c.imag() * pt_scale);
        const Plaintext& mono = i_monomial(a.level(), exec);
        for (std::size_t k = 0; k < r.polys.size(); ++k) {
            rns::RnsPoly t = be.poly(a.polys[k].num_q(), a.polys[k].num_p(), a.polys[k].ntt_form());
            be.mul_constant(a.polys[k], im, t, exec);
            be.mul(t, mono.poly, t, exec);
            be.add(r.polys[k], t, r.polys[k], exec);
        }
    }
    return rescale_after ? rescale(std::move(r), exec) : r;
}

Ciphertext Evaluator::multiply(const Ciphertext& a0, const Ciphertext& b0, bool rescale_after, Exec exec) const {
    const Count count(*this, {.mult = 1, .decompose = 1, .mod_down = 1, .rescale = rescale_after ? 1u : 0u});
    if (!keys_ || !keys_->relin)
        throw MissingKeyError(
            "multiply needs the relinearisation key: create the evaluator with keys.evaluation() "
            "from ctx.keygen() (relinearisation key included by default)");
    check(a0, "first operand");
    check(b0, "second operand");
    if (rescale_after && std::min(a0.level(), b0.level()) == 0)
        throw LevelError(
            "multiply at level 0: no level left to rescale; decrypt here, or use parameters with more levels");
    exec = ctx_->exec(exec);
    Ciphertext d = tensor_product(a0, b0, "multiply", exec);
    if (keys_->key_id != d.key_id)
        throw ParameterError("the evaluation keys belong to another secret key than the operands");
    Ciphertext out;
    detail::stamp(out, d,
                  rescale_after ? d.scale / static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(d.level())))
                                : d.scale);
    out.polys.resize(2);
    // With a rescale, (d0 P + ks0) / (P q_l): ModDown and rescale in one base conversion.
    ctx_->keyswitcher().key_switch_mod_down(d.polys[2], *relin_key(), &d.polys[0], &d.polys[1], 1, rescale_after,
                                            out.polys[0], out.polys[1], exec);
    return out;
}

Ciphertext Evaluator::tensor(const Ciphertext& a, const Ciphertext& b, Exec exec) const {
    const Count count(*this, {.mult = 1});
    return tensor_product(a, b, "tensor", ctx_->exec(exec));
}

Ciphertext Evaluator::tensor_product(const Ciphertext& a0, const Ciphertext& b0, const char* op, Exec exec) const {
    Aligned al = align(a0, b0, false, exec);
    const Ciphertext& a = al.a();
    const Ciphertext& b = al.b();
    if (a.size() != 2 || b.size() != 2)
        throw ParameterError(std::string(op) + " expects relinearised (size 2) operands; call relinearize first");
    const double scale = a.scale * b.scale;
    check_scale_fits(scale, a.level(), op);
    const auto& be = ctx_->backend();
    Ciphertext out;
    detail::stamp(out, a, scale);
    out.polys.resize(3);
    be.tensor(a.polys[0], a.polys[1], b.polys[0], b.polys[1], out.polys[0], out.polys[1], out.polys[2], exec);
    return out;
}

void Evaluator::multiply_plain_accumulate(const Ciphertext& a, const Plaintext& pt, Ciphertext& acc, Exec exec) const {
    const Count count(*this, {.add = acc.polys.empty() ? 0u : 1u, .cmult = 1});
    check(a, "operand");
    detail::check_plain(*ctx_, pt);
    if (pt.level() != a.level())
        throw LevelError("multiply_plain_accumulate: the plaintext is at level " + std::to_string(pt.level()) +
                         " and the ciphertext at level " + std::to_string(a.level()) +
                         "; encode it at the ciphertext's level");
    const bool first = acc.polys.empty();
    if (!first && (acc.level() != a.level() || acc.size() != a.size() || acc.key_id != a.key_id ||
                   !same_scale(acc.scale, a.scale * pt.scale)))
        throw ParameterError(
            "multiply_plain_accumulate: the accumulator's level, size, key or scale differs from the product's");
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
    if (first) detail::stamp(acc, a, scale);
}

Ciphertext Evaluator::multiply_plain_sum(const std::vector<const Ciphertext*>& xs,
                                         const std::vector<const Plaintext*>& pts, Exec exec) const {
    const Count count(*this, {.add = xs.empty() ? 0 : xs.size() - 1, .cmult = xs.size()});
    if (xs.empty() || xs.size() != pts.size())
        throw ParameterError("multiply_plain_sum: give as many plaintexts as ciphertexts (at least one)");
    for (std::size_t i = 0; i < xs.size(); ++i)
        if (!xs[i] || !pts[i]) throw ParameterError("multiply_plain_sum: term " + std::to_string(i) + " is null");
    const Ciphertext& x0 = *xs[0];
    for (std::size_t i = 0; i < xs.size(); ++i) {
        check(*xs[i], "operand");
        detail::check_plain(*ctx_, *pts[i]);
        if (xs[i]->level() != x0.level() || xs[i]->size() != x0.size() || xs[i]->key_id != x0.key_id ||
            !same_scale(xs[i]->scale, x0.scale) || !same_scale(pts[i]->scale, pts[0]->scale))
            throw ParameterError("multiply_plain_sum: the terms differ in level, size, key or scale");
        if (pts[i]->level() != x0.level())
            throw LevelError("multiply_plain_sum: a plaintext is at level " + std::to_string(pts[i]->level()) +
                             " and the ciphertexts at level " + std::to_string(x0.level()));
    }
    const double scale = x0.scale * pts[0]->scale;
    check_scale_fits(scale, x0.level(), "multiply_plain_sum");
    exec = ctx_->exec(exec);
    std::vector<std::vector<const RnsPoly*>> terms(xs.size());
    std::vector<const RnsPoly*> polys;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        for (const auto& p : xs[i]->polys) terms[i].push_back(&p);
        polys.push_back(&pts[i]->poly);
    }
    Ciphertext out;
    out.polys.resize(x0.size());
    std::vector<RnsPoly*> parts;
    for (auto& p : out.polys) parts.push_back(&p);
    ctx_->backend().sum_of_products(terms, polys, parts, false, exec);
    detail::stamp(out, x0, scale);
    return out;
}

Ciphertext Evaluator::linear_combination(const std::vector<const Ciphertext*>& xs,
                                         const std::vector<std::complex<double>>& coeffs, std::complex<double> constant,
                                         Exec exec) const {
    return linear_combination_at(xs, coeffs, constant, -1, 0.0, exec);
}

Evaluator::Terms Evaluator::check_terms(const std::vector<const Ciphertext*>& xs,
                                        const std::vector<std::complex<double>>& coeffs, std::complex<double> constant,
                                        const char* op) const {
    if (xs.size() != coeffs.size())
        throw ParameterError(std::string(op) + " needs one coefficient per ciphertext (got " +
                             std::to_string(xs.size()) + " ciphertexts and " + std::to_string(coeffs.size()) +
                             " coefficients)");
    const auto finite = [](std::complex<double> c) { return std::isfinite(c.real()) && std::isfinite(c.imag()); };
    if (!finite(constant)) throw ParameterError(std::string(op) + ": the constant is NaN or infinite");
    Terms t{ctx_->max_level(), std::abs(constant)};
    for (std::size_t i = 0; i < xs.size(); ++i) {
        if (!xs[i]) throw ParameterError(std::string(op) + ": ciphertext " + std::to_string(i) + " is null");
        check(*xs[i], "a term");
        if (xs[i]->size() != 2) throw ParameterError(std::string(op) + ": relinearize size-3 terms first");
        if (xs[i]->key_id != xs[0]->key_id)
            throw ParameterError(std::string(op) + ": the terms were encrypted under different keys");
        if (!finite(coeffs[i]))
            throw ParameterError(std::string(op) + ": coefficient " + std::to_string(i) + " is NaN or infinite");
        t.lowest = std::min(t.lowest, xs[i]->level());
        t.largest = std::max(t.largest, std::abs(coeffs[i]));
    }
    return t;
}

void Evaluator::combine(const std::vector<const Ciphertext*>& xs, const std::vector<std::complex<double>>& coeffs,
                        std::complex<double> constant, std::size_t limbs, double target, const Ciphertext* base,
                        std::int64_t k, RnsPoly* out, Exec exec) const {
    const rns::Backend& be = ctx_->backend();
    // Real parts (with k * base), and imaginary parts (times X^(n/2), i in every slot, once at the end): one fused sum
    // per part and component over the leading limbs of the terms.
    std::vector<const RnsPoly*> terms[2][2];
    std::vector<std::vector<std::uint64_t>> consts[2];
    const auto add_term = [&](int part, const Ciphertext& x, std::vector<std::uint64_t> c) {
        for (std::size_t comp = 0; comp < 2; ++comp) terms[part][comp].push_back(&x.polys[comp]);
        consts[part].push_back(std::move(c));
    };
    if (base) add_term(0, *base, ctx_->rns().signed_residues(k));
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const double c[2] = {coeffs[i].real(), coeffs[i].imag()};
        for (int part = 0; part < 2; ++part)
            if (c[part] != 0.0) add_term(part, *xs[i], integer_residues(ctx_->rns(), c[part] * target / xs[i]->scale));
    }
    RnsPoly parts[2][2];
    const auto make_zero = [&](RnsPoly* p) {
        for (std::size_t comp = 0; comp < 2; ++comp) {
            p[comp] = be.poly(limbs, 0, true);
            p[comp].zero();
        }
    };
    const double cst[2] = {constant.real(), constant.imag()};
    for (int part = 0; part < 2; ++part) {
        if (!consts[part].empty()) {
            for (std::size_t comp = 0; comp < 2; ++comp)
                be.linear_combination(terms[part][comp], consts[part], limbs, parts[part][comp], exec);
        } else if (cst[part] != 0.0) {
            make_zero(parts[part]);
        }
        if (cst[part] != 0.0)
            be.add_constant(parts[part][0], integer_residues(ctx_->rns(), cst[part] * target), parts[part][0], exec);
    }
    if (!parts[1][0].empty()) {
        const Plaintext& mono = i_monomial(static_cast<int>(limbs) - 1, exec);
        for (auto& p : parts[1]) be.mul(p, mono.poly, p, exec);
        if (parts[0][0].empty()) {
            for (std::size_t comp = 0; comp < 2; ++comp) parts[0][comp] = std::move(parts[1][comp]);
        } else {
            for (std::size_t comp = 0; comp < 2; ++comp) be.add(parts[0][comp], parts[1][comp], parts[0][comp], exec);
        }
    }
    if (parts[0][0].empty()) make_zero(parts[0]);  // every coefficient and the constant are zero
    for (std::size_t comp = 0; comp < 2; ++comp) out[comp] = std::move(parts[0][comp]);
}

Ciphertext Evaluator::linear_combination_at(const std::vector<const Ciphertext*>& xs,
                                            const std::vector<std::complex<double>>& coeffs,
                                            std::complex<double> constant, int level, double scale, Exec exec) const {
    const Count count(
        *this, {.add = xs.empty() ? 0 : xs.size() - 1 + (constant != 0.0 ? 1 : 0), .cmult = xs.size(), .rescale = 1});
    if (xs.empty()) throw ParameterError("linear_combination needs at least one ciphertext");
    const Terms t = check_terms(xs, coeffs, constant, "linear_combination");
    if (t.lowest == 0)
        throw LevelError(
            "linear_combination at level 0: no level left for its rescale; use parameters with more levels");
    if (level < 0) level = t.lowest - 1;
    if (level >= t.lowest)
        throw LevelError("linear_combination_at: the result's level " + std::to_string(level) +
                         " must be below every term's (the lowest is " + std::to_string(t.lowest) + ")");
    if (scale == 0.0) scale = ctx_->scale_at(level);
    if (!(std::isfinite(scale) && scale >= 1.0))
        throw ParameterError("linear_combination_at: the scale must be finite and >= 1");
    // The terms are summed on the limbs of level + 1, at the scale that one rescale by q_{level+1} takes to `scale`.
    const std::size_t limbs = static_cast<std::size_t>(level) + 2;
    const double target = scale * static_cast<double>(ctx_->rns().prime(limbs - 1));
    check_scale_fits(target * std::max(1.0, t.largest), level + 1, "linear_combination");
    exec = ctx_->exec(exec);
    Ciphertext out;
    out.polys.resize(2);
    combine(xs, coeffs, constant, limbs, target, nullptr, 1, out.polys.data(), exec);
    ctx_->backend().rescale(out.polys, exec);
    detail::stamp(out, *xs[0], scale);
    return out;
}

Ciphertext Evaluator::multiply_add(const Ciphertext& a, const Ciphertext& b, std::int64_t k,
                                   const std::vector<const Ciphertext*>& xs,
                                   const std::vector<std::complex<double>>& coeffs, std::complex<double> constant,
                                   Exec exec) const {
    const Count count(
        *this, {.add = xs.size() + (constant != 0.0 ? 1 : 0), .mult = 1, .decompose = 1, .mod_down = 1, .rescale = 1});
    if (!keys_ || !keys_->relin)
        throw MissingKeyError(
            "multiply_add needs the relinearisation key: create the evaluator with keys.evaluation()");
    check(a, "first factor");
    check(b, "second factor");
    if (a.level() != b.level())
        throw ParameterError("multiply_add: the factors are at levels " + std::to_string(a.level()) + " and " +
                             std::to_string(b.level()) + "; bring them to one level first (drop_level)");
    if (a.level() == 0)
        throw LevelError("multiply_add at level 0: no level left to rescale; use parameters with more levels");
    if (k == 0 || k > (std::int64_t{1} << 20) || k < -(std::int64_t{1} << 20))
        throw ParameterError("multiply_add: the product's factor " + std::to_string(k) +
                             " must be a nonzero integer of at most 2^20");
    const Terms t = check_terms(xs, coeffs, constant, "multiply_add");
    if (!xs.empty() && (t.lowest < a.level() || xs[0]->key_id != a.key_id))
        throw ParameterError("multiply_add: every term must be at the factors' level " + std::to_string(a.level()) +
                             " or above, under the factors' key");
    exec = ctx_->exec(exec);
    Ciphertext d = tensor_product(a, b, "multiply_add", exec);
    if (keys_->key_id != d.key_id)
        throw ParameterError("the evaluation keys belong to another secret key than the operands");
    check_scale_fits(d.scale * std::max({1.0, t.largest, std::fabs(static_cast<double>(k))}), a.level(),
                     "multiply_add");
    // k (d0, d1) + the terms at the product's scale, then the key switch of k d2 and one ModDown + rescale.
    RnsPoly sum[2];
    combine(xs, coeffs, constant, static_cast<std::size_t>(a.level()) + 1, d.scale, &d, k, sum, exec);
    if (k != 1) ctx_->backend().mul_constant(d.polys[2], ctx_->rns().signed_residues(k), d.polys[2], exec);
    Ciphertext out;
    detail::stamp(out, d, d.scale / static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(a.level()))));
    out.polys.resize(2);
    ctx_->keyswitcher().key_switch_mod_down(d.polys[2], *relin_key(), &sum[0], &sum[1], 1, true, out.polys[0],
                                            out.polys[1], exec);
    return out;
}

Ciphertext Evaluator::relinearize(const Ciphertext& a, Exec exec) const {
    const std::size_t switched = a.size() == 3 ? 1 : 0;  // a size-2 operand is returned as it is
    const Count count(*this, {.decompose = switched, .mod_down = switched});
    check(a, "operand");
    if (a.size() == 2) return a;
    if (!keys_ || !keys_->relin) throw MissingKeyError("relinearize needs the relinearisation key (keys.evaluation())");
    if (keys_->key_id != a.key_id)
        throw ParameterError("the evaluation keys belong to another secret key than the operand");
    exec = ctx_->exec(exec);
    // c0 + ModDown(ks0), c1 + ModDown(ks1)
    return switch_finish(a, a.polys[2], *relin_key(), &a.polys[0], &a.polys[1], 1, exec);
}

Ciphertext Evaluator::rescale(const Ciphertext& a, Exec exec) const {
    check(a, "operand");
    return rescale(copied(a, 0, exec), exec);
}

Ciphertext Evaluator::rescale(Ciphertext&& a, Exec exec) const {
    const Count count(*this, {.rescale = 1});
    check(a, "operand");
    if (a.level() == 0)
        throw LevelError(
            "rescale at level 0: the ciphertext has no level left; decrypt it, or use parameters with more levels");
    exec = ctx_->exec(exec);
    const double q = static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(a.level())));
    Ciphertext r = std::move(a);
    ctx_->backend().rescale(r.polys, exec);
    r.scale /= q;
    return r;
}

Ciphertext Evaluator::copied(const Ciphertext& a, std::size_t first, Exec exec, std::size_t num_q) const {
    exec = ctx_->exec(exec);
    Ciphertext r;
    detail::stamp(r, a, a.scale);
    r.seed = a.seed;  // still a's second part's when that is copied (serialization checks it)
    r.polys.resize(a.size());
    for (std::size_t k = first; k < a.size(); ++k) ctx_->backend().copy(a.polys[k], r.polys[k], exec, num_q);
    return r;
}

Ciphertext Evaluator::drop_limbs(const Ciphertext& a, int level, Exec exec) const {
    check(a, "operand");
    if (level < 0 || level > a.level())
        throw LevelError("drop_level to " + std::to_string(level) + ": the ciphertext is at level " +
                         std::to_string(a.level()) + " and levels can only go down to 0");
    return copied(a, 0, exec, static_cast<std::size_t>(level) + 1);
}

Ciphertext Evaluator::drop_level(const Ciphertext& a, int level, Exec exec) const {
    Ciphertext r = drop_limbs(a, level, exec);  // checks
    if (level == a.level() || a.size() != 2 || !ctx_->is_canonical(a.scale, a.level())) return r;
    return linear_combination_at({&a}, {1.0}, 0.0, level, 0.0, exec);
}

std::shared_ptr<const rns::GadgetKey> Evaluator::galois_key(std::uint64_t galois_elt, std::uint64_t key_id,
                                                            int level) const {
    return detail::galois_keys(*this, {galois_elt}, key_id, level, true).front();
}

std::shared_ptr<const rns::GadgetKey> Evaluator::relin_key() const { return detail::gadget_key(*ctx_, keys_->relin); }

Ciphertext Evaluator::rotate(const Ciphertext& a, std::int64_t step, Exec exec) const {
    check(a, "operand");
    const std::uint64_t galois_elt = ctx_->galois_element(step);
    if (galois_elt == 1) return a;
    if (!keys_ || !keys_->galois.count(galois_elt))
        throw MissingKeyError("no rotation key for step " + std::to_string(step) + " (Galois element " +
                              std::to_string(galois_elt) + "); generate it with ctx.keygen(rotations=[" +
                              std::to_string(step) + "])");
    return apply_galois(a, galois_elt, exec);
}

Ciphertext Evaluator::conjugate(const Ciphertext& a, Exec exec) const {
    check(a, "operand");
    const std::uint64_t galois_elt = ctx_->conjugation_element();
    if (!keys_ || !keys_->galois.count(galois_elt))
        throw MissingKeyError("no conjugation key; generate it with ctx.keygen(conjugation=True)");
    return apply_galois(a, galois_elt, exec);
}

Ciphertext Evaluator::apply_galois(const Ciphertext& a, std::uint64_t galois_elt, Exec exec) const {
    const Count count(*this, {.rot = 1, .decompose = 1, .mod_down = 1});
    check(a, "operand");
    detail::check_relinearised(a, "rotation");
    ctx_->check_galois_element(galois_elt, "apply_galois", false);
    const auto key = galois_key(galois_elt, a.key_id, a.level());
    exec = ctx_->exec(exec);
    // The key switches s -> s(X^{g^-1}); the automorphism comes last (see evaluator_hoisting.cpp), on two polynomials over Q_l.
    return switch_finish(a, a.polys[1], *key, &a.polys[0], nullptr, galois_elt, exec);
}

Ciphertext Evaluator::switch_finish(const Ciphertext& like, const RnsPoly& d, const rns::GadgetKey& key,
                                    const RnsPoly* add_b, const RnsPoly* add_a, std::uint64_t galois_elt,
                                    Exec exec) const {
    Ciphertext out;
    out.polys.resize(2);
    ctx_->keyswitcher().key_switch_mod_down(d, key, add_b, add_a, galois_elt, false, out.polys[0], out.polys[1], exec);
    detail::stamp(out, like, like.scale);
    return out;
}

Ciphertext Evaluator::finish(const Ciphertext& like, const rns::LazyPolys& x, const RnsPoly* add_b,
                             const RnsPoly* add_a, std::uint64_t galois_elt, Exec exec) const {
    Ciphertext out;
    out.polys.resize(2);
    ctx_->keyswitcher().mod_down(x, add_b, add_a, galois_elt, out.polys[0], out.polys[1], exec);
    detail::stamp(out, like, like.scale);
    return out;
}

}  // namespace kasoku::ckks
