#include "kasoku/ckks/encoder.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "kasoku/arith/ntt.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/threads.hpp"

namespace kasoku::ckks {

using arith::u64;

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

void Encoder::fft_special(std::vector<std::complex<double>>& v) const {
    const std::size_t n = v.size(), m = 2 * ctx_->n();
    const auto& rot = ctx_->rot_group();
    const auto& ksi = ctx_->ksi();
    bit_reverse(v);
    for (std::size_t len = 2; len <= n; len <<= 1) {
        const std::size_t lenh = len >> 1, lenq = len << 2;
        for (std::size_t i = 0; i < n; i += len)
            for (std::size_t j = 0; j < lenh; ++j) {
                const std::size_t idx = (rot[j] % lenq) * (m / lenq);
                auto u = v[i + j], w = v[i + j + lenh] * ksi[idx];
                v[i + j] = u + w;
                v[i + j + lenh] = u - w;
            }
    }
}

void Encoder::fft_special_inv(std::vector<std::complex<double>>& v) const {
    const std::size_t n = v.size(), m = 2 * ctx_->n();
    const auto& rot = ctx_->rot_group();
    const auto& ksi = ctx_->ksi();
    for (std::size_t len = n; len >= 2; len >>= 1) {
        const std::size_t lenh = len >> 1, lenq = len << 2;
        for (std::size_t i = 0; i < n; i += len)
            for (std::size_t j = 0; j < lenh; ++j) {
                const std::size_t idx = (lenq - (rot[j] % lenq)) * (m / lenq);
                auto u = v[i + j] + v[i + j + lenh];
                auto w = (v[i + j] - v[i + j + lenh]) * ksi[idx];
                v[i + j] = u;
                v[i + j + lenh] = w;
            }
    }
    bit_reverse(v);
    const double inv = 1.0 / static_cast<double>(n);
    for (auto& x : v) x *= inv;
}

Plaintext Encoder::encode(const std::vector<std::complex<double>>& values, double scale, int level, int threads) const {
    return encode_over(values, scale, level, false, threads);
}

Plaintext Encoder::encode_extended(const std::vector<std::complex<double>>& values, double scale, int level,
                                   int threads) const {
    return encode_over(values, scale, level, true, threads);
}

Plaintext Encoder::encode_over(const std::vector<std::complex<double>>& values, double scale, int level, bool special,
                               int threads) const {
    const std::size_t slots = ctx_->slots(), n = ctx_->n();
    threads = ctx_->threads_or_default(threads);
    if (values.size() > slots)
        throw ParameterError("too many values: " + std::to_string(values.size()) + " given, but this context has " +
                             std::to_string(slots) + " slots (n/2); split the data or use a larger log_n");
    if (level < 0 || level > ctx_->max_level())
        throw LevelError("cannot encode at level " + std::to_string(level) + ": levels are 0.." + std::to_string(ctx_->max_level()));
    if (!(scale > 0) || !std::isfinite(scale)) throw ScaleError("scale must be a positive finite number");
    for (std::size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i].real()) || !std::isfinite(values[i].imag()))
            throw ParameterError("value " + std::to_string(i) + " is NaN or infinite; only finite values can be encoded");
    std::vector<std::complex<double>> v(slots, {0.0, 0.0});
    std::copy(values.begin(), values.end(), v.begin());
    fft_special_inv(v);
    // coefficients m[i] = round(scale Re v[i]), m[i + n/2] = round(scale Im v[i])
    const double bound = std::exp2(std::min(ctx_->log_modulus(level) - 1.0, 126.0));
    std::vector<__int128> coeff(n);
    double max_abs = 0;
    for (std::size_t i = 0; i < slots; ++i) {
        double re = std::nearbyint(v[i].real() * scale), im = std::nearbyint(v[i].imag() * scale);
        max_abs = std::max({max_abs, std::fabs(re), std::fabs(im)});
        coeff[i] = static_cast<__int128>(re);
        coeff[i + slots] = static_cast<__int128>(im);
    }
    if (!(max_abs < bound))
        throw ScaleError("encoded values do not fit the modulus: max |coefficient| = 2^" + std::to_string(std::log2(max_abs)) +
                         " but level " + std::to_string(level) + " holds less than 2^" + std::to_string(std::log2(bound)) +
                         "; use smaller values, a smaller scale or a higher level");
    Plaintext pt;
    pt.scale = scale;
    pt.context_uid = ctx_->uid();
    const auto& r = ctx_->rns();
    const std::size_t nq = static_cast<std::size_t>(level) + 1;
    pt.poly = rns::RnsPoly(n, nq, special ? r.p_count() : 0, false);
    parallel_for(threads, pt.poly.limbs(), [&](std::size_t l) {
        const std::size_t idx = r.prime_index(l, nq);
        const arith::Modulus& m = r.modulus(idx);
        u64* d = pt.poly.limb(l);
        for (std::size_t c = 0; c < n; ++c) d[c] = arith::reduce_signed(coeff[c], m);
        arith::ntt_forward(d, r.ntt_tables(idx));
    });
    pt.poly.set_ntt_form(true);
    return pt;
}

std::size_t Encoder::limbs_for_scale(double scale, int level) const {
    const double need = std::log2(scale) + 64.0 + 2.0;
    std::size_t t = 1;
    while (t < static_cast<std::size_t>(level) + 1 && ctx_->log_modulus(static_cast<int>(t) - 1) < need) ++t;
    return t;
}

std::vector<std::complex<double>> Encoder::decode(const rns::RnsPoly& coeff, std::size_t t, double scale) const {
    const std::size_t n = ctx_->n(), slots = ctx_->slots();
    const auto& r = ctx_->rns();
    // Exact CRT of the first t limbs into W-word integers, centered, then to double.
    const std::size_t W = t + 1;
    std::vector<u64> Q(W, 0), half(W, 0);
    std::vector<std::vector<u64>> qhat(t, std::vector<u64>(W, 0));
    std::vector<u64> qhat_inv(t), qhat_inv_shoup(t);
    auto mul_small = [&](std::vector<u64>& x, u64 f) {
        arith::u128 carry = 0;
        for (auto& w : x) {
            arith::u128 p = static_cast<arith::u128>(w) * f + carry;
            w = static_cast<u64>(p);
            carry = p >> 64;
        }
    };
    Q[0] = 1;
    for (std::size_t i = 0; i < t; ++i) mul_small(Q, r.prime(i));
    for (std::size_t i = 0; i < t; ++i) {
        qhat[i][0] = 1;
        u64 rem = 1;
        for (std::size_t j = 0; j < t; ++j)
            if (j != i) {
                mul_small(qhat[i], r.prime(j));
                rem = arith::mul_mod(rem, r.prime(j) % r.prime(i), r.modulus(i));
            }
        qhat_inv[i] = arith::inv_mod(rem, r.modulus(i));
        qhat_inv_shoup[i] = arith::shoup(qhat_inv[i], r.prime(i));
    }
    for (std::size_t k = 0; k < W; ++k) half[k] = (Q[k] >> 1) | (k + 1 < W ? Q[k + 1] << 63 : 0);
    auto geq = [W](const u64* a, const u64* b) {
        for (std::size_t k = W; k-- > 0;)
            if (a[k] != b[k]) return a[k] > b[k];
        return true;
    };
    auto sub_in = [W](u64* a, const u64* b) {  // a -= b
        u64 borrow = 0;
        for (std::size_t k = 0; k < W; ++k) {
            arith::u128 d = static_cast<arith::u128>(a[k]) - b[k] - borrow;
            a[k] = static_cast<u64>(d);
            borrow = static_cast<u64>(d >> 64) ? 1 : 0;
        }
    };
    auto to_double = [W](const u64* a) {
        double x = 0;
        for (std::size_t k = W; k-- > 0;) x = x * 18446744073709551616.0 + static_cast<double>(a[k]);
        return x;
    };
    std::vector<double> real(n);
    std::vector<u64> acc(W), tmp(W);
    for (std::size_t c = 0; c < n; ++c) {
        std::fill(acc.begin(), acc.end(), 0);
        for (std::size_t i = 0; i < t; ++i) {
            u64 y = arith::mul_shoup(coeff.limb(i)[c], qhat_inv[i], qhat_inv_shoup[i], r.prime(i));
            arith::u128 carry = 0;
            for (std::size_t k = 0; k < W; ++k) {
                arith::u128 p = static_cast<arith::u128>(qhat[i][k]) * y + acc[k] + carry;
                acc[k] = static_cast<u64>(p);
                carry = p >> 64;
            }
        }
        while (geq(acc.data(), Q.data())) sub_in(acc.data(), Q.data());
        if (geq(acc.data(), half.data())) {
            tmp = Q;
            sub_in(tmp.data(), acc.data());
            real[c] = -to_double(tmp.data());
        } else {
            real[c] = to_double(acc.data());
        }
    }
    std::vector<std::complex<double>> v(slots);
    const double inv = 1.0 / scale;
    for (std::size_t i = 0; i < slots; ++i) v[i] = {real[i] * inv, real[i + slots] * inv};
    fft_special(v);
    return v;
}

}  // namespace kasoku::ckks
