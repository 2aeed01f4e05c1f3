#include "kasoku/ckks/encoder.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "kasoku/support/aligned.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::ckks {

namespace {
void bit_reverse(std::vector<std::complex<double>>& v) {
    const std::size_t n = v.size();
    for (std::size_t i = 1, j = 0; i < n; ++i) {
        std::size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) std::swap(v[i], v[j]);
    }
}
}  // namespace

// The butterflies read each stage's twiddles in order from the context's tables (Context::fft_twiddles): the same
// values as ksi[(rot[j] mod 4 len) 2n / 4 len], without a division per butterfly. The values are split into real and
// imaginary arrays for the stages, so that the compiler vectorises their inner loops; each product is (ac - bd,
// ad + bc), as std::complex computes it.
namespace {
// Temporaries of a few hundred KB come from the block pool (support/aligned.hpp), not from malloc: glibc maps each
// anew above its mmap threshold, and their page faults made a sixth of an encode's time at N = 2^16.
using Doubles = std::vector<double, AlignedAllocator<double>>;

struct Split {
    Doubles re, im;
    explicit Split(const std::vector<std::complex<double>>& v) : re(v.size()), im(v.size()) {
        for (std::size_t i = 0; i < v.size(); ++i) re[i] = v[i].real(), im[i] = v[i].imag();
    }
    void to(std::vector<std::complex<double>>& v) const {
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = {re[i], im[i]};
    }
};
void split_twiddles(const std::vector<std::complex<double>>& tw, std::size_t lenh, Doubles& wr, Doubles& wi) {
    for (std::size_t j = 0; j < lenh; ++j) wr[j] = tw[lenh + j].real(), wi[j] = tw[lenh + j].imag();
}
}  // namespace

void Encoder::fft_special(std::vector<std::complex<double>>& v) const {
    const std::size_t n = v.size();
    bit_reverse(v);
    Split s(v);
    Doubles wr(n / 2 + 1), wi(n / 2 + 1);
    for (std::size_t len = 2; len <= n; len <<= 1) {
        const std::size_t lenh = len >> 1;
        split_twiddles(ctx_->fft_twiddles(), lenh, wr, wi);
        for (std::size_t i = 0; i < n; i += len) {
            double *xr = s.re.data() + i, *xi = s.im.data() + i, *yr = xr + lenh, *yi = xi + lenh;
            for (std::size_t j = 0; j < lenh; ++j) {
                const double tr = yr[j] * wr[j] - yi[j] * wi[j], ti = yr[j] * wi[j] + yi[j] * wr[j];
                const double ur = xr[j], ui = xi[j];
                xr[j] = ur + tr, xi[j] = ui + ti;
                yr[j] = ur - tr, yi[j] = ui - ti;
            }
        }
    }
    s.to(v);
}

void Encoder::fft_special_inv(std::vector<std::complex<double>>& v) const {
    const std::size_t n = v.size();
    Split s(v);
    Doubles wr(n / 2 + 1), wi(n / 2 + 1);
    for (std::size_t len = n; len >= 2; len >>= 1) {
        const std::size_t lenh = len >> 1;
        split_twiddles(ctx_->fft_twiddles_inverse(), lenh, wr, wi);
        for (std::size_t i = 0; i < n; i += len) {
            double *xr = s.re.data() + i, *xi = s.im.data() + i, *yr = xr + lenh, *yi = xi + lenh;
            for (std::size_t j = 0; j < lenh; ++j) {
                const double dr = xr[j] - yr[j], di = xi[j] - yi[j];
                xr[j] += yr[j], xi[j] += yi[j];
                yr[j] = dr * wr[j] - di * wi[j], yi[j] = dr * wi[j] + di * wr[j];
            }
        }
    }
    s.to(v);
    bit_reverse(v);
    const double inv = 1.0 / static_cast<double>(n);
    for (auto& x : v) x *= inv;
}

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
    const std::size_t slots = ctx_->slots(), n = ctx_->n();
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
    // Values of period p are m(X^stride), stride = n / 2p, with m from the special FFT of p points: coefficients
    // stride i = round(scale Re v[i]), stride (i + p) = round(scale Im v[i]), the others 0 (p = n/2: every one).
    // Compact: the 2p coefficients alone, into a subring plaintext (rns::Backend::from_signed_subring).
    const std::size_t p = period(values);
    compact = compact && p < slots;
    const std::size_t stride = compact ? 1 : n / (2 * p);
    std::vector<std::complex<double>> v(p, {0.0, 0.0});
    std::copy_n(values.begin(), std::min(p, values.size()), v.begin());
    fft_special_inv(v);
    const double bound = std::exp2(std::min(ctx_->log_modulus(level) - 1.0, 126.0));
    std::vector<__int128, AlignedAllocator<__int128>> coeff(compact ? 2 * p : n, 0);
    double max_abs = 0;
    // below 2^62 (every encoding at a 40-bit scale) through int64, a single instruction, not libgcc's __int128 one
    const auto to_int = [](double x) {
        return std::fabs(x) < 0x1p62 ? static_cast<__int128>(static_cast<std::int64_t>(x)) : static_cast<__int128>(x);
    };
    for (std::size_t i = 0; i < p; ++i) {
        double re = std::nearbyint(v[i].real() * scale), im = std::nearbyint(v[i].imag() * scale);
        max_abs = std::max({max_abs, std::fabs(re), std::fabs(im)});
        coeff[stride * i] = to_int(re);
        coeff[stride * (i + p)] = to_int(im);
    }
    if (!(max_abs < bound))
        throw ScaleError("encoded values do not fit the modulus: max |coefficient| = 2^" +
                         std::to_string(std::log2(max_abs)) + " but level " + std::to_string(level) +
                         " holds less than 2^" + std::to_string(std::log2(bound)) +
                         "; use smaller values, a smaller scale or a higher level");
    Plaintext pt;
    pt.scale = scale;
    pt.context_uid = ctx_->uid();
    const std::size_t nq = static_cast<std::size_t>(level) + 1;
    const std::size_t np = special ? ctx_->rns().p_count() : 0;
    if (compact) {
        pt.poly = rns::RnsPoly(ctx_->backend().memory(), 2 * p, nq, np, true);
        ctx_->backend().from_signed_subring(coeff.data(), pt.poly, exec);
    } else {
        pt.poly = ctx_->backend().poly(nq, np, true);
        ctx_->backend().from_signed(coeff.data(), pt.poly, exec);
    }
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
    const std::size_t n = ctx_->n(), slots = ctx_->slots();
    const auto& r = ctx_->rns();
    if (poly.ntt_form() || t == 0 || t > poly.num_q())
        throw ParameterError("decode needs a coefficient-form polynomial with at least " + std::to_string(t) +
                             " q-limbs");
    // The first t limbs on the host, composed exactly (CRT) into centered integers, as doubles.
    Doubles real(n);
    ctx_->backend().download(
        poly, [&](const std::uint64_t* const* limbs) { r.compose_centered(limbs, t, real.data()); }, {}, t);
    std::vector<std::complex<double>> v(slots);
    const double inv = 1.0 / scale;
    for (std::size_t i = 0; i < slots; ++i) v[i] = {real[i] * inv, real[i + slots] * inv};
    fft_special(v);
    return v;
}

}  // namespace kasoku::ckks
