// CKKS parameters: a plain validated value (docs/CONVENTIONS.md "Data and state").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kasoku::ckks {

struct Parameters {
    int log_n = 13;
    int first_bits = 60;       // q_0
    int scale_bits = 40;       // q_1..q_L and the default scale 2^scale_bits
    int levels = 2;            // L: number of rescalings available (L + 1 ciphertext primes)
    int special_bits = 60;     // p_0..p_{k-1}
    int special_primes = 1;    // k
    std::optional<int> security = 128;  // 128 (HE Standard, ternary secret) or nullopt for research sets
    int dnum = 0;              // key-switching digits; 0 = ceil((L + 1) / k), i.e. alpha = k
    int hamming_weight = 0;    // 0 = uniform ternary secret; otherwise exactly this many nonzero coefficients
    std::string name;          // set by named()

    // The sets of docs/PARAMS.md: T12, T13, H15, H16, B13, M14, SCHED. ParameterError for another name (it lists them).
    static Parameters named(const std::string& name);
    static std::vector<std::string> names();

    std::uint64_t n() const { return std::uint64_t{1} << log_n; }
    std::uint64_t slots() const { return n() / 2; }
    int alpha() const;           // primes per digit
    int digits() const;          // dnum actually used
    int log_qp_bits() const;     // first + L * scale + k * special (an upper bound on log2(QP))
    static int max_log_qp_128(int log_n);  // HE Standard table, ternary secret; 0 if the table has no entry

    // Throws ParameterError with what is wrong and what to do.
    void validate() const;
    std::string describe() const;
};

}  // namespace kasoku::ckks
