// Big-integer multiplication through the NTT (Kawamura et al. §2, docs/HARDWARE.md).
// - multiply_decimal: the seed's scheme: base-10 digits as a signal of M = 2^m points (m <= 16), the seed's field
//   (P >= 81 M bounds every convolution value), the M-point NTT of ntt.hpp (Fig. 7's structure, the seed's best),
//   a pointwise product, the inverse transform and the carries. Up to 32,768 digits per operand.
// - multiply: the wide base for large sizes: 32-bit limbs, two 60-bit NTT primes of arith (their product bounds
//   every convolution value, < 2^90 up to 2^26 limbs), arith's fast negacyclic NTT on zero-padded operands (no
//   wrap-around), CRT and carries; the two primes on two threads when threads >= 2 and the transform has >= 2^14
//   points. Small operands go schoolbook.
// Errors: ParameterError for a digit above 9, an operand too long for its scheme, or threads < 1.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kasoku::hls {

// Little-endian decimal digits (0..9) -> their product's digits, without leading zeros (zero: one digit 0).
// @throws ParameterError for a digit above 9, or an operand of more than kMaxDecimalDigits digits
std::vector<std::uint8_t> multiply_decimal(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b);
// The same on decimal strings ("-" allowed), e.g. multiply_decimal("123", "-4") == "-492".
// @throws ParameterError for a string that is not a decimal integer, or one of more than kMaxDecimalDigits digits
//     (leading zeros dropped)
std::string multiply_decimal(const std::string& a, const std::string& b);
inline constexpr std::size_t kMaxDecimalDigits = std::size_t(1) << 15;

// Little-endian base-2^32 limbs -> their product's limbs, without leading zero limbs (zero: empty). Builds the NTT
// tables of its size on each call; a Multiplier keeps them for the next product.
// @throws ParameterError for threads < 1, or an operand of more than kMaxLimbs limbs (leading zero limbs dropped)
std::vector<std::uint32_t> multiply(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b,
                                    int threads = 1);
inline constexpr std::size_t kMaxLimbs = std::size_t(1) << 26;

// multiply() with the tables of the transform sizes it used last kept (at most kKeptSizes of them, the least recently
// used dropped first: 64 bytes per point each), for repeated products; safe to share between threads.
class Multiplier {
public:
    Multiplier();
    ~Multiplier();
    Multiplier(const Multiplier&) = delete;
    Multiplier& operator=(const Multiplier&) = delete;
    // hls::multiply with the kept tables.
    // @throws ParameterError for threads < 1, or an operand of more than kMaxLimbs limbs (leading zero limbs dropped)
    std::vector<std::uint32_t> multiply(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b,
                                        int threads = 1) const;
    static constexpr std::size_t kKeptSizes = 4;

private:
    struct Plans;
    std::unique_ptr<Plans> plans_;
};

}  // namespace kasoku::hls
