#include "kasoku/ckks/encoder.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "kasoku/support/error.hpp"

namespace kasoku::ckks {

void Encoder::fft_special(std::vector<std::complex<double>>& v) const { ctx_->rns().slot_fft().forward(v); }

void Encoder::fft_special_inv(std::vector<std::complex<double>>& v) const { ctx_->rns().slot_fft().inverse(v); }

Plaintext Encoder::encode(const std::vector<std::complex<double>>& values, double scale, int level, Exec exec) const {
    return encode_over(values, scale, level, false, exec);
}

std::vector<std::complex<double>> Encoder::replicate(const std::vector<std::complex<double>>& values,
                                                     std::size_t count) const {
    const std::size_t slots = ctx_->slots();
    if (count == 0 || count > slots || !std::has_single_bit(count))
        throw ParameterError("sparse packing repeats a power of two of values up to " + std::to_string(slots) +
                             " (the slots), not " + std::to_string(count));
    if (values.size() > count)
        throw ParameterError(std::to_string(values.size()) + " values do not fit " + std::to_string(count) +
                             " sparse slots; pack fewer values or more slots");
    std::vector<std::complex<double>> out(slots);
    for (std::size_t i = 0; i < values.size(); ++i)
        for (std::size_t j = i; j < slots; j += count) out[j] = values[i];
    return out;
}

Plaintext Encoder::encode_extended(const std::vector<std::complex<double>>& values, double scale, int level,
                                   Exec exec) const {
    return encode_over(values, scale, level, true, exec);
}

Plaintext Encoder::encode_compact(const std::vector<std::complex<double>>& values, double scale, int level,
                                  bool extended, Exec exec) const {
    return encode_over(values, scale, level, extended, exec, true);
}

Plaintext Encoder::encode_over(const std::vector<std::complex<double>>& values, double scale, int level, bool special,
                               Exec exec, bool compact) const {
    const std::size_t slots = ctx_->slots();
    exec = ctx_->exec(exec);
    if (values.size() > slots)
        throw ParameterError("too many values: " + std::to_string(values.size()) + " given, but this context has " +
                             std::to_string(slots) + " slots (n/2); split the data or use a larger log_n");
    if (level < 0 || level > ctx_->max_level())
        throw LevelError("cannot encode at level " + std::to_string(level) + ": levels are 0.." +
                         std::to_string(ctx_->max_level()));
    if (!(scale > 0) || !std::isfinite(scale)) throw ScaleError("scale must be a positive finite number");
    for (std::size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i].real()) || !std::isfinite(values[i].imag()))
            throw ParameterError("value " + std::to_string(i) +
                                 " is NaN or infinite; only finite values can be encoded");
    // Values of period p are m(X^stride), stride = n / 2p, with m from the special FFT of p points (the backend's
    // encode_slots); compact: the 2p coefficients alone, into a subring plaintext.
    const std::size_t p = period(values);
    compact = compact && p < slots;
    std::vector<std::complex<double>> v(p, {0.0, 0.0});
    std::copy_n(values.begin(), std::min(p, values.size()), v.begin());
    // Every coefficient is at most scale sum |v_i| / p (each is a value of the inverse transform, an average of the
    // values times roots of unity) plus its rounding, and |v_i| <= |Re v_i| + |Im v_i| (no square root on the encoder's
    // path): below the bound, no coefficient needs to be looked at, and a device encodes without a wait. Else they are
    // computed here, and the largest decides.
    const double bound = std::exp2(std::min(ctx_->log_modulus(level) - 1.0, 126.0));
    double sum = 0;
    for (const auto& x : v) sum += std::fabs(x.real()) + std::fabs(x.imag());
    if (!(scale * (sum / static_cast<double>(p)) * (1 + 0x1p-20) + 1 < bound)) {
        std::vector<std::complex<double>> m = v;
        fft_special_inv(m);
        double max_abs = 0;
        for (const auto& x : m)
            max_abs = std::max(
                {max_abs, std::fabs(std::nearbyint(x.real() * scale)), std::fabs(std::nearbyint(x.imag() * scale))});
        if (!(max_abs < bound))
            throw ScaleError("encoded values do not fit the modulus: max |coefficient| = 2^" +
                             std::to_string(std::log2(max_abs)) + " but level " + std::to_string(level) +
                             " holds less than 2^" + std::to_string(std::log2(bound)) +
                             "; use smaller values, a smaller scale or a higher level");
    }
    Plaintext pt;
    pt.scale = scale;
    pt.context_uid = ctx_->uid();
    const std::size_t nq = static_cast<std::size_t>(level) + 1;
    const std::size_t np = special ? ctx_->rns().p_count() : 0;
    pt.poly =
        compact ? rns::RnsPoly(ctx_->backend().memory(), 2 * p, nq, np, true) : ctx_->backend().poly(nq, np, true);
    ctx_->backend().encode_slots(v.data(), p, scale, pt.poly, exec);
    return pt;
}

std::size_t Encoder::period(const std::vector<std::complex<double>>& values) const {
    const std::size_t slots = ctx_->slots();
    const auto at = [&](std::size_t s) { return s < values.size() ? values[s] : std::complex<double>(0.0); };
    std::size_t p = slots;
    for (; p > 1; p /= 2) {  // period p: halve it while the two halves of [0, p) agree
        bool same = true;
        for (std::size_t s = 0; s < p / 2 && same; ++s) same = at(s) == at(s + p / 2);
        if (!same) break;
    }
    return p;
}

std::size_t Encoder::limbs_for_scale(double scale, int level) const {
    const double need = std::log2(scale) + 64.0 + 2.0;
    std::size_t t = 1;
    while (t < static_cast<std::size_t>(level) + 1 && ctx_->log_modulus(static_cast<int>(t) - 1) < need) ++t;
    return t;
}

std::vector<std::complex<double>> Encoder::decode(const rns::RnsPoly& poly, std::size_t t, double scale) const {
    if (poly.ntt_form() || t == 0 || t > poly.num_q())
        throw ParameterError("decode needs a coefficient-form polynomial with at least " + std::to_string(t) +
                             " q-limbs");
    return ctx_->backend().decode_slots(poly, t, scale, {});
}

}  // namespace kasoku::ckks
