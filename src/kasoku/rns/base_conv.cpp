#include "kasoku/rns/base_conv.hpp"

#include "kasoku/arith/kernels.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::rns {

using arith::u64;

BaseConverter::BaseConverter(const std::vector<arith::Modulus>& source, const std::vector<arith::Modulus>& target)
    : src_(source), dst_(target) {
    if (src_.empty()) throw ParameterError("base conversion needs at least one source prime");
    if (src_.size() > 255)
        throw ParameterError("base conversion supports up to 255 source primes");  // uint8 overflow counts
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
    for (const auto& m : src_) {
        inv_q_.push_back(1.0 / static_cast<double>(m.value));
        small_ = small_ && arith::small_source(m.value);
    }
}

void BaseConverter::overflow_count(const u64* const* y, std::size_t n, std::uint8_t* v) const {
    const std::size_t s = src_.size();
    for (std::size_t c = 0; c < n; ++c) {
        double acc = 0;
        for (std::size_t i = 0; i < s; ++i) acc += static_cast<double>(y[i][c]) * inv_q_[i];
        v[c] = static_cast<std::uint8_t>(acc + 0.5);  // NOLINT(bugprone-incorrect-roundings): acc >= 0, centered result
    }
}

void BaseConverter::scale_source(const u64* const* x, std::size_t n, u64* const* y) const {
    for (std::size_t i = 0; i < src_.size(); ++i)
        arith::mul_scalar_mod(x[i], inv_[i], inv_shoup_[i], n, src_[i].value, y[i]);
}

void BaseConverter::convert_to(std::size_t t, const u64* const* y, std::size_t n, u64* out,
                               const std::uint8_t* overflow) const {
    const std::size_t s = src_.size();
    // minus v Q mod t for the overflow count v of each coefficient, in the same pass
    arith::dot_const_mod(y, factor_.data() + t * s, s, n, dst_[t], out, overflow,
                         overflow ? q_mod_t_.data() + t * (s + 1) : nullptr, small_);
}

}  // namespace kasoku::rns
