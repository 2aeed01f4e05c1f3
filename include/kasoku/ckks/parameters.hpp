// CKKS parameters: a plain validated value (docs/CONVENTIONS.md "Data and state").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kasoku::ckks {

struct Parameters {
    int log_n = 13;
    int first_bits = 60;                // q_0
    int scale_bits = 40;                // q_1..q_L and the default scale 2^scale_bits
    int levels = 2;                     // L: rescalings available to the user (fresh ciphertexts start at level L)
    int special_bits = 60;              // p_0..p_{k-1}
    int special_primes = 1;             // k
    std::optional<int> security = 128;  // 128 (HE Standard, ternary secret) or nullopt for research sets
    int dnum = 0;                       // key-switching digits; 0: chosen with alpha() (digits P covers)
    int hamming_weight = 0;             // 0 = uniform ternary secret; otherwise exactly this many nonzero coefficients
    // Bootstrapping levels: boot_levels primes of boot_bits above the user's, q_{L+1}..q_{L+B}. Bootstrapping raises
    // into them and runs CoeffToSlot, EvalMod and SlotToCoeff there, on scales near 2^boot_bits (EvalMod's noise,
    // multiplied by q_0 / scale, sets its precision), and lands on level L with the user's scale 2^scale_bits.
    int boot_levels = 0;
    int boot_bits = 0;  // scale_bits..60 when boot_levels > 0
    // Sparse-secret encapsulation (Bossuat, Troncoso-Pastoriza, Hubaux, ePrint 2022/024): bootstrapping switches the
    // ciphertext at level 0 to an ephemeral secret of this many nonzero coefficients, raises it, and switches back to
    // the main secret, so that the main secret can be dense while ModRaise's q_0 I stays small. 0: no encapsulation.
    int boot_secret_weight = 0;
    std::string name;       // set by named()
    std::string rationale;  // set by for_circuit(): what each choice is for (not serialized)

    // The sets of docs/PARAMS.md: T12, T13, H15, H16, B13, M14, SCHED, BOOT15, BOOT16, BOOT16L, and the test sets
    // TB10, TS10 (names()).
    // @throws ParameterError for another name (the message lists them)
    static Parameters named(const std::string& name);
    static std::vector<std::string> names();
    // The smallest set (least N, then the fewest key-switching digits from 3 up) that runs a circuit of `depth`
    // rescalings and leaves about `precision_bits` of precision (scale = precision + noise of one product at that N +
    // log2(depth + 1) for the noise that adds up along the circuit; q_0 `integer_bits` above the scale for the integer
    // part of results; alpha = k special primes of 50 bits where they exceed every digit's modulus, else 60-bit ones,
    // else q_0's size where that lets a smaller ring hold it), with log2(QP) within the 128-bit HE Standard bound
    // (security = 128) or no bound (nullopt), and at least `slots` slots (0: any). dnum > 0 fixes the digits.
    // `rationale` explains the choices.
    // @throws ParameterError for depth outside 0..60, precision_bits outside 8..40, slots above 2^16, a security other
    //     than 128 or nullopt, integer_bits outside 1..30 or dnum outside 0..depth + 1, and when no set fits, with
    //     what cannot be had and what to change (e.g. a depth that no secure N holds needs bootstrapping)
    static Parameters for_circuit(int depth, int precision_bits = 20, std::uint64_t slots = 0,
                                  std::optional<int> security = 128, int dnum = 0, int integer_bits = 20);

    std::uint64_t n() const { return std::uint64_t{1} << log_n; }
    std::uint64_t slots() const { return n() / 2; }
    int q_primes() const { return levels + boot_levels + 1; }  // ciphertext primes: q_0, user, bootstrapping
    // Primes per key-switching digit: ceil(q_primes() / dnum); when dnum is 0, the most primes, at most special_primes,
    // whose every digit has no more nominal bits than the special primes together (a digit wider than P multiplies
    // the key switch's noise by 2^(its excess): special primes narrower than q_0 or the bootstrapping primes take
    // smaller digits). Needs special_primes >= 1 (validate() and every Context check it; digits() divides by alpha()).
    int alpha() const;
    // The nominal bits of the widest key-switching digit of `alpha` primes (q_0, the user primes, the bootstrapping
    // primes, in that order), and of the special primes together.
    int max_digit_bits(int alpha) const;
    int special_bits_total() const { return special_primes * special_bits; }
    int digits() const;                    // dnum actually used: ceil(q_primes() / alpha()); the same precondition
    int log_qp_bits() const;               // first + L * scale + B * boot + k * special (an upper bound on log2(QP))
    static int max_log_qp_128(int log_n);  // HE Standard table, ternary secret; 0 if the table has no entry

    // Checks every field's range, the digits against the special primes, and the 128-bit HE Standard bound.
    // @throws ParameterError with what is wrong and what to do
    void validate() const;
    std::string describe() const;
};

}  // namespace kasoku::ckks
