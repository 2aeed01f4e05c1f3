#include "kasoku/ckks/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "checks_internal.hpp"
#include "kasoku/arith/kernels.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/threads.hpp"

namespace kasoku::ckks {

using rns::RnsPoly;
using arith::u64;

namespace {
using detail::same_scale;

std::string fmt_scale(double s) { return "2^" + std::to_string(std::log2(s)); }

// Residues of round(c) (|c| < 2^126) for every prime.
std::vector<std::uint64_t> integer_residues(const rns::RnsContext& r, double c) {
    if (!std::isfinite(c) || std::fabs(c) >= std::ldexp(1.0, 126))
        throw ScaleError("constant too large for the ciphertext modulus: " + std::to_string(c));
    const __int128 v = static_cast<__int128>(std::nearbyint(c));
    std::vector<std::uint64_t> res(r.q_count() + r.p_count());
    for (std::size_t i = 0; i < res.size(); ++i) res[i] = arith::reduce_signed(v, r.modulus(i));
    return res;
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

Evaluator::Aligned Evaluator::align(const Ciphertext& a, const Ciphertext& b, int threads) const {
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
        adjusted = drop_level(hi, lo.level(), threads);
    } else {
        // Exact scale adjustment: drop to lo.level + 1, multiply by round(s_lo q / s_hi), rescale by q.
        Ciphertext t = drop_level(hi, lo.level() + 1, threads);
        const double q = static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(lo.level()) + 1));
        const double c = std::nearbyint(lo.scale * q / hi.scale);
        if (c < 1.0)
            throw ScaleError("cannot align scales " + fmt_scale(hi.scale) + " and " + fmt_scale(lo.scale) +
                             ": rescale the operand with the larger scale first");
        const auto res = integer_residues(ctx_->rns(), c);
        for (auto& p : t.polys) ctx_->rns().mul_constant(p, res, p, threads);
        t.scale = hi.scale * c;
        adjusted = rescale(t, threads);
        adjusted.scale = lo.scale;  // equal up to a relative 2^-40: the rounding of c
    }
    return {&a, &b, std::move(adjusted), a_high ? 1 : 2};
}

Ciphertext Evaluator::add(const Ciphertext& a0, const Ciphertext& b0, int threads) const {
    threads = ctx_->threads_or_default(threads);
    Aligned al = align(a0, b0, threads);
    const bool a_larger = al.a().size() >= al.b().size();
    const Ciphertext& a = a_larger ? al.a() : al.b();
    const Ciphertext& b = a_larger ? al.b() : al.a();
    Ciphertext r;
    r.scale = al.a().scale;
    r.context_uid = a.context_uid;
    r.key_id = a.key_id;
    r.polys.resize(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
        if (k < b.size()) ctx_->rns().add(a.polys[k], b.polys[k], r.polys[k], threads);
        else r.polys[k] = a.polys[k];
    }
    return r;
}

Ciphertext Evaluator::sub(const Ciphertext& a0, const Ciphertext& b0, int threads) const {
    threads = ctx_->threads_or_default(threads);
    Aligned al = align(a0, b0, threads);
    const Ciphertext& a = al.a();
    const Ciphertext& b = al.b();
    Ciphertext r;
    r.scale = a.scale;
    r.context_uid = a.context_uid;
    r.key_id = a.key_id;
    r.polys.resize(std::max(a.size(), b.size()));
    for (std::size_t k = 0; k < r.size(); ++k) {
        if (k < a.size() && k < b.size()) ctx_->rns().sub(a.polys[k], b.polys[k], r.polys[k], threads);
        else if (k < a.size()) r.polys[k] = a.polys[k];
        else ctx_->rns().negate(b.polys[k], r.polys[k], threads);
    }
    return r;
}

Ciphertext Evaluator::negate(const Ciphertext& a, int threads) const {
    check(a, "operand");
    threads = ctx_->threads_or_default(threads);
    Ciphertext r = a;
    for (auto& p : r.polys) ctx_->rns().negate(p, p, threads);
    return r;
}

Ciphertext Evaluator::add_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, int threads) const {
    check(a, "operand");
    threads = ctx_->threads_or_default(threads);
    Plaintext pt = encoder_.encode(values, a.scale, a.level(), threads);
    Ciphertext r = a;
    ctx_->rns().add(r.polys[0], pt.poly, r.polys[0], threads);
    return r;
}

Ciphertext Evaluator::add_scalar(const Ciphertext& a, std::complex<double> c, int threads) const {
    check(a, "operand");
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) throw ParameterError("the constant is NaN or infinite");
    if (c.imag() != 0.0) return add_plain(a, std::vector<std::complex<double>>(ctx_->slots(), c), threads);
    threads = ctx_->threads_or_default(threads);
    // A constant polynomial is the same constant in every slot and in every NTT point.
    const double v = c.real() * a.scale;
    if (!(std::log2(std::fabs(v) + 1.0) + 1.0 < ctx_->log_modulus(a.level())))
        throw ScaleError("constant " + std::to_string(c.real()) + " times the scale does not fit the modulus at this level");
    const auto res = integer_residues(ctx_->rns(), v);
    Ciphertext r = a;
    ctx_->rns().add_constant(r.polys[0], res, r.polys[0], threads);
    return r;
}

}  // namespace kasoku::ckks

namespace kasoku::ckks {

double Evaluator::plain_scale(const Ciphertext& a) const {
    // Chosen so that the rescale lands exactly on the canonical scale of the next level.
    if (a.level() == 0) return ctx_->default_scale();
    const double q = static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(a.level())));
    return ctx_->scale_at(a.level() - 1) * q / a.scale;
}

Ciphertext Evaluator::multiply_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, bool rescale_after,
                                     int threads) const {
    check(a, "operand");
    threads = ctx_->threads_or_default(threads);
    if (rescale_after && a.level() == 0)
        throw LevelError("multiply_plain at level 0: no level left to rescale; decrypt, or use parameters with more levels "
                         "(or pass rescale=False and keep the larger scale)");
    const double pt_scale = plain_scale(a);
    check_scale_fits(a.scale * pt_scale, a.level(), "multiply_plain");
    Plaintext pt = encoder_.encode(values, pt_scale, a.level(), threads);
    Ciphertext r = a;
    for (auto& p : r.polys) ctx_->rns().mul(p, pt.poly, p, threads);
    r.scale = a.scale * pt_scale;
    return rescale_after ? rescale(r, threads) : r;
}

Ciphertext Evaluator::multiply_scalar(const Ciphertext& a, std::complex<double> c, bool rescale_after, int threads) const {
    check(a, "operand");
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) throw ParameterError("the constant is NaN or infinite");
    if (c.imag() != 0.0)
        return multiply_plain(a, std::vector<std::complex<double>>(ctx_->slots(), c), rescale_after, threads);
    threads = ctx_->threads_or_default(threads);
    if (rescale_after && a.level() == 0)
        throw LevelError("multiply_scalar at level 0: no level left to rescale; pass rescale=False or use more levels");
    const double pt_scale = plain_scale(a);
    check_scale_fits(a.scale * pt_scale, a.level(), "multiply_scalar");
    const auto res = integer_residues(ctx_->rns(), c.real() * pt_scale);
    Ciphertext r = a;
    for (auto& p : r.polys) ctx_->rns().mul_constant(p, res, p, threads);
    r.scale = a.scale * pt_scale;
    return rescale_after ? rescale(r, threads) : r;
}

Evaluator::Lazy Evaluator::key_switch_lazy(const RnsPoly& d, const SwitchKey& key, int threads) const {
    const auto& r = ctx_->rns();
    if (key.b.size() != r.dnum() || key.a.size() != r.dnum())
        throw ParameterError("key-switching key has " + std::to_string(key.b.size()) + " digits, expected dnum = " +
                             std::to_string(r.dnum()));
    const std::size_t nq = d.num_q(), np = r.p_count(), n = ctx_->n(), L1 = r.q_count();
    const auto dec = r.decompose(d, threads);
    const std::size_t digits = r.digits_at(nq);
    Lazy out{RnsPoly(n, nq, np, true), RnsPoly(n, nq, np, true)};
    parallel_for(threads, nq + np, [&](std::size_t t) {
        AlignedWords tmp(n);
        const std::size_t kl = t < nq ? t : L1 + (t - nq);  // limb of the key (over Q_L * P)
        const arith::Modulus& m = r.modulus(kl);
        u64* o0 = out.c0.limb(t);
        u64* o1 = out.c1.limb(t);
        for (std::size_t j = 0; j < digits; ++j) {
            r.mod_up_limb(dec, j, t, tmp.data());
            if (j == 0) {
                arith::mul_mod(tmp.data(), key.b[j].limb(kl), n, m, o0);
                arith::mul_mod(tmp.data(), key.a[j].limb(kl), n, m, o1);
            } else {
                arith::fma_mod(tmp.data(), key.b[j].limb(kl), o0, n, m, o0);
                arith::fma_mod(tmp.data(), key.a[j].limb(kl), o1, n, m, o1);
            }
        }
    });
    return out;
}

Ciphertext Evaluator::multiply(const Ciphertext& a0, const Ciphertext& b0, bool rescale_after, int threads) const {
    if (!keys_ || !keys_->relin)
        throw MissingKeyError("multiply needs the relinearisation key: create the evaluator with keys.evaluation() "
                              "from ctx.keygen() (relinearisation key included by default)");
    check(a0, "first operand");
    check(b0, "second operand");
    if (rescale_after && std::min(a0.level(), b0.level()) == 0)
        throw LevelError("multiply at level 0: no level left to rescale; decrypt here, or use parameters with more levels");
    threads = ctx_->threads_or_default(threads);
    Ciphertext d = tensor_product(a0, b0, "multiply", threads);
    if (keys_->key_id != d.key_id) throw ParameterError("the evaluation keys belong to another secret key than the operands");
    const int level = d.level();
    const auto& r = ctx_->rns();
    Lazy ks = key_switch_lazy(d.polys[2], *keys_->relin, threads);
    Ciphertext out;
    out.context_uid = d.context_uid;
    out.key_id = d.key_id;
    if (rescale_after) {
        // (d0 P + ks0) / (P q_l): ModDown and rescale in one base conversion.
        r.add_times_p(d.polys[0], ks.c0, threads);
        r.add_times_p(d.polys[1], ks.c1, threads);
        r.mod_down_rescale(ks.c0, threads);
        r.mod_down_rescale(ks.c1, threads);
        out.polys = {std::move(ks.c0), std::move(ks.c1)};
        out.scale = d.scale / static_cast<double>(r.prime(static_cast<std::size_t>(level)));
    } else {
        r.mod_down(ks.c0, threads);
        r.mod_down(ks.c1, threads);
        r.add(d.polys[0], ks.c0, d.polys[0], threads);
        r.add(d.polys[1], ks.c1, d.polys[1], threads);
        d.polys.pop_back();
        out.polys = std::move(d.polys);
        out.scale = d.scale;
    }
    return out;
}

Ciphertext Evaluator::tensor(const Ciphertext& a, const Ciphertext& b, int threads) const {
    return tensor_product(a, b, "tensor", ctx_->threads_or_default(threads));
}

Ciphertext Evaluator::tensor_product(const Ciphertext& a0, const Ciphertext& b0, const char* op, int threads) const {
    Aligned al = align(a0, b0, threads);
    const Ciphertext& a = al.a();
    const Ciphertext& b = al.b();
    if (a.size() != 2 || b.size() != 2)
        throw ParameterError(std::string(op) + " expects relinearised (size 2) operands; call relinearize first");
    const double scale = a.scale * b.scale;
    check_scale_fits(scale, a.level(), op);
    const auto& r = ctx_->rns();
    Ciphertext out;
    out.polys.resize(3);
    r.mul(a.polys[0], b.polys[0], out.polys[0], threads);
    r.mul(a.polys[0], b.polys[1], out.polys[1], threads);
    r.fma(a.polys[1], b.polys[0], out.polys[1], out.polys[1], threads);
    r.mul(a.polys[1], b.polys[1], out.polys[2], threads);
    out.scale = scale;
    out.context_uid = a.context_uid;
    out.key_id = a.key_id;
    return out;
}

void Evaluator::multiply_plain_accumulate(const Ciphertext& a, const Plaintext& pt, Ciphertext& acc, int threads) const {
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
    threads = ctx_->threads_or_default(threads);
    const auto& r = ctx_->rns();
    const std::size_t n = ctx_->n(), nq = a.polys[0].num_q();
    if (first) {
        acc.polys.assign(a.size(), RnsPoly(n, nq, 0, true));
        acc.scale = scale;
        acc.context_uid = a.context_uid;
        acc.key_id = a.key_id;
    }
    parallel_for(threads, nq, [&](std::size_t t) {
        const arith::Modulus& m = r.modulus(t);
        for (std::size_t k = 0; k < a.size(); ++k) {
            if (first) arith::mul_mod(a.polys[k].limb(t), pt.poly.limb(t), n, m, acc.polys[k].limb(t));
            else arith::fma_mod(a.polys[k].limb(t), pt.poly.limb(t), acc.polys[k].limb(t), n, m, acc.polys[k].limb(t));
        }
    });
}

Ciphertext Evaluator::relinearize(const Ciphertext& a, int threads) const {
    check(a, "operand");
    if (a.size() == 2) return a;
    if (!keys_ || !keys_->relin) throw MissingKeyError("relinearize needs the relinearisation key (keys.evaluation())");
    if (keys_->key_id != a.key_id) throw ParameterError("the evaluation keys belong to another secret key than the operand");
    threads = ctx_->threads_or_default(threads);
    const auto& r = ctx_->rns();
    Lazy ks = key_switch_lazy(a.polys[2], *keys_->relin, threads);
    Ciphertext out;
    out.polys.resize(2);
    r.mod_down_galois(ks.c0, &a.polys[0], 1, out.polys[0], threads);  // c0 + ModDown(ks0), c1 + ModDown(ks1)
    r.mod_down_galois(ks.c1, &a.polys[1], 1, out.polys[1], threads);
    out.scale = a.scale;
    out.context_uid = a.context_uid;
    out.key_id = a.key_id;
    return out;
}

Ciphertext Evaluator::rescale(const Ciphertext& a, int threads) const {
    check(a, "operand");
    if (a.level() == 0)
        throw LevelError("rescale at level 0: the ciphertext has no level left; decrypt it, or use parameters with more levels");
    threads = ctx_->threads_or_default(threads);
    Ciphertext r = a;
    for (auto& p : r.polys) ctx_->rns().rescale(p, threads);
    r.scale = a.scale / static_cast<double>(ctx_->rns().prime(static_cast<std::size_t>(a.level())));
    return r;
}

Ciphertext Evaluator::drop_level(const Ciphertext& a, int level, int threads) const {
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

Ciphertext Evaluator::rotate(const Ciphertext& a, std::int64_t step, int threads) const {
    check(a, "operand");
    const std::uint64_t g = ctx_->galois_element(step);
    if (g == 1) return a;
    if (!keys_ || !keys_->galois.count(g))
        throw MissingKeyError("no rotation key for step " + std::to_string(step) + " (Galois element " + std::to_string(g) +
                              "); generate it with ctx.keygen(rotations=[" + std::to_string(step) + "])");
    return apply_galois(a, g, threads);
}

Ciphertext Evaluator::conjugate(const Ciphertext& a, int threads) const {
    check(a, "operand");
    const std::uint64_t g = ctx_->conjugation_element();
    if (!keys_ || !keys_->galois.count(g))
        throw MissingKeyError("no conjugation key; generate it with ctx.keygen(conjugation=True)");
    return apply_galois(a, g, threads);
}

Ciphertext Evaluator::apply_galois(const Ciphertext& a, std::uint64_t g, int threads) const {
    check(a, "operand");
    if (a.size() != 2) throw ParameterError("rotation expects a relinearised (size 2) ciphertext; call relinearize first");
    const SwitchKey& key = galois_key(g, "this automorphism; generate it with ctx.keygen(galois_elements=[...])");
    if (key.key_id != a.key_id) throw ParameterError("the Galois key belongs to another secret key than the operand");
    threads = ctx_->threads_or_default(threads);
    // The key switches s -> s(X^{g^-1}); the automorphism comes last (see hoisting.cpp), on two polynomials over Q_l.
    Lazy ks = key_switch_lazy(a.polys[1], key, threads);
    return finish_galois(a, g, ks.c0, ks.c1, threads);
}

Ciphertext Evaluator::finish_galois(const Ciphertext& a, std::uint64_t g, const RnsPoly& b, const RnsPoly& ka, int threads) const {
    // psi_g(c0 + ModDown(b)), psi_g(ModDown(ka)): one pass per polynomial over its Q_l limbs.
    const auto& r = ctx_->rns();
    Ciphertext out;
    out.polys.resize(2);
    r.mod_down_galois(b, &a.polys[0], g, out.polys[0], threads);
    r.mod_down_galois(ka, nullptr, g, out.polys[1], threads);
    out.scale = a.scale;
    out.context_uid = a.context_uid;
    out.key_id = a.key_id;
    return out;
}

}  // namespace kasoku::ckks
