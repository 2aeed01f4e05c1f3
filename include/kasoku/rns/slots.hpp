// The canonical embedding of the ring Z[X]/(X^n + 1) on its n/2 slots: the HEAAN-style special FFT between slot values
// and the coefficients' halves, with its tables. Encoding is the inverse transform, then the scaling and rounding;
// decoding the forward one. The backends run it (rns::Backend::encode_slots, decode_slots): the CPU on the host, a
// device with the butterflies below (KASOKU_HD), in the same order, so that both give the same bits.
#pragma once
#include <complex>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kasoku/arith/modarith.hpp"

namespace kasoku::rns {

class SlotFft {
public:
    // The tables of the ring of degree n (a power of two >= 2): rot_group[j] = 5^j mod 2n, ksi[k] = exp(2 pi i k / 2n),
    // and each stage's twiddles in order: for the stage of `len` points (2 <= len <= n/2), entry len / 2 + j (j < len /
    // 2) of twiddles() is ksi[(rot_group[j] mod 4 len) 2n / (4 len)], of twiddles_inverse() ksi[(4 len - (rot_group[j]
    // mod 4 len)) 2n / (4 len)]. The stages of a transform of p <= n/2 points are the first log2(p) of them.
    explicit SlotFft(std::size_t n);
    std::size_t slots() const { return rot_group_.size(); }
    const std::vector<std::uint64_t>& rot_group() const { return rot_group_; }
    const std::vector<std::complex<double>>& ksi() const { return ksi_; }
    const std::vector<std::complex<double>>& twiddles() const { return tw_; }
    const std::vector<std::complex<double>>& twiddles_inverse() const { return tw_inv_; }

    // The special FFT on v.size() values (a power of two up to slots()): bit reversal, then the stages of 2, 4, ...
    // points (decoding).
    void forward(std::vector<std::complex<double>>& v) const;
    // Its inverse: the stages from v.size() points down to 2, the bit reversal, then 1 / v.size() (encoding).
    void inverse(std::vector<std::complex<double>>& v) const;

private:
    std::vector<std::uint64_t> rot_group_;
    std::vector<std::complex<double>> ksi_, tw_, tw_inv_;
};

namespace slots {

// The butterflies, on split real and imaginary parts; each product is (ac - bd, ad + bc), as std::complex computes it
// (without contraction into FMAs on the host and on the device: kernels.cu is compiled with --fmad=false).
// Forward: (x, y) -> (x + w y, x - w y).
KASOKU_HD inline void forward_pair(double& xr, double& xi, double& yr, double& yi, double wr, double wi) {
    const double tr = yr * wr - yi * wi, ti = yr * wi + yi * wr;
    const double ur = xr, ui = xi;
    xr = ur + tr, xi = ui + ti;
    yr = ur - tr, yi = ui - ti;
}
// Inverse: (x, y) -> (x + y, (x - y) w).
KASOKU_HD inline void inverse_pair(double& xr, double& xi, double& yr, double& yi, double wr, double wi) {
    const double dr = xr - yr, di = xi - yi;
    xr += yr, xi += yi;
    yr = dr * wr - di * wi, yi = dr * wi + di * wr;
}
// i with its low `bits` bits reversed.
KASOKU_HD inline std::uint32_t bit_reverse(std::uint32_t i, unsigned bits) {
    std::uint32_t r = 0;
    for (unsigned b = 0; b < bits; ++b) r |= ((i >> b) & 1u) << (bits - 1 - b);
    return r;
}
// The residue mod q of an integral double x (|x| < 2^127): x = m 2^e with m an integer of 53 bits; exact.
KASOKU_HD inline arith::u64 residue_of_integral(double x, arith::u64 q) {
    const double a = x < 0 ? -x : x;
    arith::u64 r;
    if (a < 9223372036854775808.0) {  // 2^63
        r = static_cast<arith::u64>(a) % q;
    } else {
        // a = m 2^e, 2^52 <= m < 2^53, e >= 11: scale by 2^-e exactly (a power of two), then 2^e mod q by doubling
        int e = 0;
        double s = a;
        while (s >= 9007199254740992.0) s *= 0.5, ++e;  // 2^53
        r = static_cast<arith::u64>(s) % q;
        for (int k = 0; k < e; ++k) r = r >= q - r ? r - (q - r) : r + r;
    }
    return x < 0 && r ? q - r : r;
}

}  // namespace slots
}  // namespace kasoku::rns
