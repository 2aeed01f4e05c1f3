#include "kasoku/hls/bigmul.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/hls/ntt.hpp"
#include "kasoku/support/aligned.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::hls {

std::vector<std::uint8_t> multiply_decimal(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
    for (const auto* v : {&a, &b}) {
        if (v->size() > kMaxDecimalDigits)
            throw ParameterError("multiply_decimal: an operand has " + std::to_string(v->size()) +
                                 " digits; the seed's scheme takes up to " + std::to_string(kMaxDecimalDigits) +
                                 " (M = 2^16 points); use multiply for larger numbers");
        for (std::uint8_t d : *v)
            if (d > 9) throw ParameterError("multiply_decimal: digit " + std::to_string(d) + " is not in 0..9");
    }
    if (a.empty() || b.empty()) return {0};
    int m = 2;
    while ((std::size_t(1) << m) < a.size() + b.size()) ++m;  // M >= the product's length: no wrap-around
    const Field f = seed_field(m), inv = {f.m, f.p, f.s, pow_mod(f.alpha, f.p - 2, f.p)};
    const std::size_t M = std::size_t(1) << m;
    std::vector<word> x(M, 0), y(M, 0);
    std::copy(a.begin(), a.end(), x.begin());
    std::copy(b.begin(), b.end(), y.begin());
    const auto X = ntt(Structure::two_butterflies, f, x), Y = ntt(Structure::two_butterflies, f, y);
    // Pointwise in bit-reversed order, back to natural order, and the transform at alpha^-1 (eq. 10), scaled by 1/M.
    std::vector<word> z(M);
    for (std::size_t i = 0; i < M; ++i) z[bit_reverse(i, m)] = mul_mod(X[i], Y[i], f.p);
    const auto Z = ntt(Structure::two_butterflies, inv, z);
    const word m_inv = pow_mod(word(M % f.p), f.p - 2, f.p);
    std::vector<std::uint8_t> out(M);
    wide carry = 0;
    for (std::size_t t = 0; t < M; ++t) {
        carry += mul_mod(Z[bit_reverse(t, m)], m_inv, f.p);  // the convolution value, < 81 * digits < P
        out[t] = static_cast<std::uint8_t>(carry % 10);
        carry /= 10;
    }
    while (out.size() > 1 && out.back() == 0) out.pop_back();
    return out;
}

std::string multiply_decimal(const std::string& a, const std::string& b) {
    auto digits = [](const std::string& s, bool& negative) {
        std::size_t i = 0;
        negative = !s.empty() && s[0] == '-';
        if (negative) i = 1;
        if (i == s.size()) throw ParameterError("multiply_decimal: '" + s + "' is not a decimal integer");
        std::vector<std::uint8_t> d;
        for (std::size_t j = s.size(); j-- > i;) {
            if (s[j] < '0' || s[j] > '9')
                throw ParameterError("multiply_decimal: '" + s.substr(0, 40) + "' is not a decimal integer");
            d.push_back(static_cast<std::uint8_t>(s[j] - '0'));
        }
        while (d.size() > 1 && d.back() == 0) d.pop_back();
        return d;
    };
    bool na = false, nb = false;
    const auto p = multiply_decimal(digits(a, na), digits(b, nb));
    std::string out = (na != nb && !(p.size() == 1 && p[0] == 0)) ? "-" : "";
    for (std::size_t j = p.size(); j-- > 0;) out.push_back(static_cast<char>('0' + p[j]));
    return out;
}

namespace {

using arith::u64;

// Two 60-bit primes = 1 mod 2L and their tables.
struct Plan {
    std::unique_ptr<arith::NttTables> t[2];
    explicit Plan(std::size_t L) {
        const auto q = arith::generate_ntt_primes(60, 2, L);
        for (int i = 0; i < 2; ++i) t[i] = std::make_unique<arith::NttTables>(q[i], L);
    }
};

// a * b mod q as a negacyclic product of length L (= the plain product: a and b are zero-padded).
void product_mod(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b, const arith::NttTables& t,
                 AlignedWords& out) {
    const std::size_t L = t.n();
    AlignedWords x(L), y(L);
    std::fill(x.begin(), x.end(), 0);
    std::fill(y.begin(), y.end(), 0);
    std::copy(a.begin(), a.end(), x.begin());
    std::copy(b.begin(), b.end(), y.begin());
    arith::ntt_forward(x.data(), t);
    arith::ntt_forward(y.data(), t);
    for (std::size_t i = 0; i < L; ++i) x[i] = arith::mul_mod(x[i], y[i], t.modulus());
    arith::ntt_inverse(x.data(), t);
    out = std::move(x);
}

}  // namespace

struct Multiplier::Plans {
    std::mutex mu;
    std::vector<std::pair<std::size_t, std::shared_ptr<const Plan>>> kept;  // most recently used last
    std::shared_ptr<const Plan> get(std::size_t L) {
        std::lock_guard<std::mutex> lock(mu);
        for (std::size_t i = 0; i < kept.size(); ++i)
            if (kept[i].first == L) {
                auto p = kept[i].second;
                kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
                kept.emplace_back(L, p);
                return p;
            }
        auto p = std::make_shared<const Plan>(L);  // under the lock: threads asking for one size make it once
        if (kept.size() == kKeptSizes) kept.erase(kept.begin());
        kept.emplace_back(L, p);
        return p;
    }
};

Multiplier::Multiplier() : plans_(std::make_unique<Plans>()) {}
Multiplier::~Multiplier() = default;

std::vector<std::uint32_t> multiply(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b,
                                    int threads) {
    return Multiplier().multiply(a, b, threads);
}

std::vector<std::uint32_t> Multiplier::multiply(const std::vector<std::uint32_t>& a0,
                                                const std::vector<std::uint32_t>& b0, int threads) const {
    if (threads < 1) throw ParameterError("multiply: threads must be >= 1, got " + std::to_string(threads));
    auto trim = [](std::vector<std::uint32_t> v) {
        while (!v.empty() && v.back() == 0) v.pop_back();
        return v;
    };
    const auto a = trim(a0), b = trim(b0);
    if (a.empty() || b.empty()) return {};
    if (a.size() > kMaxLimbs || b.size() > kMaxLimbs)
        throw ParameterError("multiply: operands up to " + std::to_string(kMaxLimbs) + " limbs (2^31 bits), got " +
                             std::to_string(std::max(a.size(), b.size())));
    std::vector<std::uint32_t> out(a.size() + b.size(), 0);
    if (std::min(a.size(), b.size()) <= 48) {  // schoolbook: below the NTT's break-even
        for (std::size_t i = 0; i < a.size(); ++i) {
            wide carry = 0;
            for (std::size_t j = 0; j < b.size(); ++j) {
                carry += wide(a[i]) * b[j] + out[i + j];
                out[i + j] = static_cast<std::uint32_t>(carry);
                carry >>= 32;
            }
            out[i + b.size()] = static_cast<std::uint32_t>(carry);
        }
        return trim(std::move(out));
    }
    std::size_t L = 2;
    while (L < out.size()) L <<= 1;
    const std::shared_ptr<const Plan> plan = plans_->get(L);
    const Plan& p = *plan;
    AlignedWords c[2];
    if (threads >= 2 && L >= (std::size_t(1) << 14)) {  // one prime per thread, where that outweighs starting one
        std::thread second([&] { product_mod(a, b, *p.t[1], c[1]); });
        product_mod(a, b, *p.t[0], c[0]);
        second.join();
    } else {
        for (int i = 0; i < 2; ++i) product_mod(a, b, *p.t[i], c[i]);
    }
    // CRT: v = c0 + q0 * ((c1 - c0) * q0^-1 mod q1) < q0 q1 < 2^120; then the carries in base 2^32.
    const arith::Modulus& m1 = p.t[1]->modulus();
    const u64 q0 = p.t[0]->q(), q1 = m1.value, q0_inv = arith::inv_mod(q0 % q1, m1);
    unsigned __int128 carry = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const u64 h = arith::mul_mod(arith::sub_mod(c[1][i], c[0][i] % q1, q1), q0_inv, m1);
        carry += static_cast<unsigned __int128>(h) * q0 + c[0][i];
        out[i] = static_cast<std::uint32_t>(carry);
        carry >>= 32;
    }
    return trim(std::move(out));
}

}  // namespace kasoku::hls
