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
}

void BaseConverter::scale_source(const u64* const* x, std::size_t n, u64* const* y) const {
    for (std::size_t i = 0; i < src_.size(); ++i) arith::mul_scalar_mod(x[i], inv_[i], inv_shoup_[i], n, src_[i].value, y[i]);
}

void BaseConverter::convert_to(std::size_t t, const u64* const* y, std::size_t n, u64* out) const {
    const std::size_t s = src_.size();
    const u64* f = factor_.data() + t * s;
    const arith::Modulus& m = dst_[t];
    for (std::size_t c = 0; c < n; ++c) {
        u128 acc = 0;
        for (std::size_t i = 0; i < s; ++i) acc += static_cast<u128>(y[i][c]) * f[i];
        out[c] = arith::reduce_128(acc, m);
    }
}

}  // namespace kasoku::rns
