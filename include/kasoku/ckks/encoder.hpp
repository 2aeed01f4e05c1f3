// CKKS encoding: z in C^{n/2} -> m(X) = round(scale * tau^-1(z)) with the O(n log n) special FFT
// over the roots zeta^{5^j}; decoding is its inverse.
#pragma once
#include <complex>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/objects.hpp"

namespace kasoku::ckks {

class Encoder {
public:
    explicit Encoder(ContextPtr ctx) : ctx_(std::move(ctx)) {}

    // Encodes up to slots() values (zero padded) at `level` with `scale`.
    // @throws ParameterError for more than slots() values, non-finite ones, or a negative thread count
    // @throws LevelError if `level` is outside 0..max_level
    // @throws ScaleError if `scale` is not positive and finite, or the scaled values do not fit the modulus at `level`
    Plaintext encode(const std::vector<std::complex<double>>& values, double scale, int level, Exec exec = {}) const;
    // The same values over Q_level * P (num_p = k): plaintexts that multiply lazy (key-switched, before ModDown)
    // ciphertexts, as in the baby steps of a linear transform.
    // @throws ParameterError for more than slots() values, non-finite ones, or a negative thread count
    // @throws LevelError if `level` is outside 0..max_level
    // @throws ScaleError if `scale` is not positive and finite, or the scaled values do not fit the modulus at `level`
    Plaintext encode_extended(const std::vector<std::complex<double>>& values, double scale, int level,
                              Exec exec = {}) const;
    // As encode (extended: encode_extended), but values of a period p < slots() come as a plaintext of their subring
    // (2p words per limb: rns::Backend::to_subring) without a transform of n points: for multiply_plain_accumulate and
    // multiply_plain_sum_lazy, which read it as the full one (the diagonals of linear transforms).
    // @throws ParameterError for more than slots() values, non-finite ones, or a negative thread count
    // @throws LevelError if `level` is outside 0..max_level
    // @throws ScaleError if `scale` is not positive and finite, or the scaled values do not fit the modulus at `level`
    Plaintext encode_compact(const std::vector<std::complex<double>>& values, double scale, int level, bool extended,
                             Exec exec = {}) const;
    // Sparse packing (algo::BootstrapConfig::slots): `values` (up to `count`, zero padded to count, a power of two
    // <= slots()) repeated over all slots, which puts the encoded message in the subring of X^(n / (2 count)).
    // @throws ParameterError for a count that is not such a power of two, or more values than count
    std::vector<std::complex<double>> replicate(const std::vector<std::complex<double>>& values,
                                                std::size_t count) const;
    // The smallest power of two p such that values (zero padded to slots()) repeat every p slots. A message of
    // period p is m(X^(n / 2p)) for an m of degree < 2p: encode computes it with the special FFT of p points, so that
    // it lies in that subring exactly (rns::Backend::to_subring keeps it in 2p words per limb).
    std::size_t period(const std::vector<std::complex<double>>& values) const;
    // Decodes a coefficient-form polynomial whose first limbs hold m mod q_0..q_{t-1} (|m| < q_0...q_{t-1} / 2).
    // @throws ParameterError for an NTT-form polynomial, limbs = 0, or fewer than `limbs` q-limbs
    // @throws InternalError for a polynomial of another backend (rns::Backend::download)
    std::vector<std::complex<double>> decode(const rns::RnsPoly& coeff, std::size_t limbs, double scale) const;
    // Number of leading limbs that determine a message of this scale exactly (with 64 bits of headroom). `level` is
    // not checked: a level above max_level() + 1 whose limbs the scale needs reads past the top.
    // @throws LevelError if it reads a level above max_level() (Context::log_modulus)
    std::size_t limbs_for_scale(double scale, int level) const;

    // The special FFT pair on n/2 complex values (exposed for tests).
    void fft_special(std::vector<std::complex<double>>& v) const;
    void fft_special_inv(std::vector<std::complex<double>>& v) const;

private:
    Plaintext encode_over(const std::vector<std::complex<double>>& values, double scale, int level, bool special,
                          Exec exec, bool compact = false) const;
    ContextPtr ctx_;
};

}  // namespace kasoku::ckks
