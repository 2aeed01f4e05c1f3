#include "kasoku/rns/base_conv.hpp"

#include "kasoku/arith/kernels.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::rns {

using arith::u128;
using arith::u64;

BaseConverter::BaseConverter(const std::vector<arith::Modulus>& source, const std::vector<arith::Modulus>& target)
    : src_(source), dst_(target) {
    // Sums of up to 32 products of two 61-bit values fit in 128 bits.
    if (src_.empty() || src_.size() > 32) throw ParameterError("base conversion supports 1..32 source primes");
    const std::size_t s = src_.size();
    inv_.resize(s);
    inv_shoup_.resize(s);
    for (std::size_t i = 0; i < s; ++i) {
        u64 prod = 1;  // Q/q_i mod q_i
        for (std::size_t j = 0; j < s; ++j)
            if (j != i) prod = arith::mul_mod(prod, src_[j].value % src_[i].value, src_[i]);
        inv_[i] = arith::inv_mod(prod, src_[i]);
        inv_shoup_[i] = arith::shoup(inv_[i], src_[i].value);
    }
    factor_.resize(dst_.size() * s);
    for (std::size_t t = 0; t < dst_.size(); ++t)
        for (std::size_t i = 0; i < s; ++i) {
            u64 prod = 1 % dst_[t].value;
            for (std::size_t j = 0; j < s; ++j)
                if (j != i) prod = arith::mul_mod(prod, src_[j].value % dst_[t].value, dst_[t]);
            factor_[t * s + i] = prod;
        }
    q_mod_t_.resize(dst_.size() * (s + 1));
    for (std::size_t t = 0; t < dst_.size(); ++t) {
        u64 qm = 1 % dst_[t].value;
        for (std::size_t j = 0; j < s; ++j) qm = arith::mul_mod(qm, src_[j].value % dst_[t].value, dst_[t]);
        for (std::size_t v = 0; v <= s; ++v) q_mod_t_[t * (s + 1) + v] = arith::mul_mod(qm, v, dst_[t]);
    }
    for (const auto& m : src_) inv_q_.push_back(1.0 / static_cast<double>(m.value));
}

void BaseConverter::overflow_count(const u64* const* y, std::size_t n, std::uint8_t* v) const {
    const std::size_t s = src_.size();
    for (std::size_t c = 0; c < n; ++c) {
        double acc = 0;
        for (std::size_t i = 0; i < s; ++i) acc += static_cast<double>(y[i][c]) * inv_q_[i];
        v[c] = static_cast<std::uint8_t>(acc + 0.5);  // round: centered result
    }
}

void BaseConverter::scale_source(const u64* const* x, std::size_t n, u64* const* y) const {
    for (std::size_t i = 0; i < src_.size(); ++i) arith::mul_scalar_mod(x[i], inv_[i], inv_shoup_[i], n, src_[i].value, y[i]);
}

namespace {
template <std::size_t S>
void convert_fixed(const u64* const* y, const u64* f, std::size_t n, const arith::Modulus& m, u64* out) {
    for (std::size_t c = 0; c < n; ++c) {
        u128 acc = 0;
        for (std::size_t i = 0; i < S; ++i) acc += static_cast<u128>(y[i][c]) * f[i];
        out[c] = arith::reduce_128(acc, m);
    }
}
}  // namespace

void BaseConverter::convert_to(std::size_t t, const u64* const* y, std::size_t n, u64* out, const std::uint8_t* overflow) const {
    const std::size_t s = src_.size();
    const u64* f = factor_.data() + t * s;
    const arith::Modulus& m = dst_[t];
    switch (s) {  // unrolled bodies for the common digit sizes
        case 1: convert_fixed<1>(y, f, n, m, out); break;
        case 2: convert_fixed<2>(y, f, n, m, out); break;
        case 3: convert_fixed<3>(y, f, n, m, out); break;
        case 4: convert_fixed<4>(y, f, n, m, out); break;
        case 5: convert_fixed<5>(y, f, n, m, out); break;
        case 6: convert_fixed<6>(y, f, n, m, out); break;
        case 7: convert_fixed<7>(y, f, n, m, out); break;
        case 8: convert_fixed<8>(y, f, n, m, out); break;
        default:
            for (std::size_t c = 0; c < n; ++c) {
                u128 acc = 0;
                for (std::size_t i = 0; i < s; ++i) acc += static_cast<u128>(y[i][c]) * f[i];
                out[c] = arith::reduce_128(acc, m);
            }
    }
    if (overflow) {
        const u64* qv = q_mod_t_.data() + t * (s + 1);
        for (std::size_t c = 0; c < n; ++c) out[c] = arith::sub_mod(out[c], qv[overflow[c]], m.value);
    }
}

}  // namespace kasoku::rns
