#include "kasoku/rns/slots.hpp"

#include <cmath>
#include <numbers>

#include "kasoku/support/aligned.hpp"

namespace kasoku::rns {

SlotFft::SlotFft(std::size_t n) {
    const std::uint64_t m = 2 * n, slots = n / 2;
    rot_group_.resize(slots);
    std::uint64_t g = 1;
    for (std::uint64_t j = 0; j < slots; ++j) {
        rot_group_[j] = g;
        g = g * 5 % m;
    }
    ksi_.resize(m + 1);
    for (std::uint64_t k = 0; k <= m; ++k) {
        const double angle = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(m);
        ksi_[k] = {std::cos(angle), std::sin(angle)};
    }
    tw_.resize(slots);
    tw_inv_.resize(slots);
    for (std::uint64_t len = 2; len <= slots; len <<= 1) {
        const std::uint64_t lenq = len << 2;
        for (std::uint64_t j = 0; j < len / 2; ++j) {
            const std::uint64_t r = rot_group_[j] & (lenq - 1);
            tw_[len / 2 + j] = ksi_[r * (m / lenq)];
            tw_inv_[len / 2 + j] = ksi_[(lenq - r) * (m / lenq)];
        }
    }
}

// The butterflies read each stage's twiddles in order from the tables: the same values as ksi[(rot[j] mod 4 len) 2n /
// 4 len], without a division per butterfly. The values are split into real and imaginary arrays for the stages, so
// that the compiler vectorises their inner loops.
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

// Temporaries of a few hundred KB come from the block pool (support/aligned.hpp), not from malloc: glibc maps each
// anew above its mmap threshold, and their page faults made a sixth of an encode's time at N = 2^16.
using Doubles = std::vector<double, AlignedAllocator<double>>;

struct Split {
    Doubles re, im;
    explicit Split(const std::vector<std::complex<double>>& v) : re(v.size()), im(v.size()) {
        for (std::size_t i = 0; i < v.size(); ++i) re[i] = v[i].real(), im[i] = v[i].imag();
    }
    void to(std::vector<std::complex<double>>& v) const {
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = {re[i], im[i]};
    }
};
// The stage of `len` points: its twiddles split once, then `pair` (a lambda: inlined, so that the compiler vectorises
// the inner loop) on every butterfly of every group.
template <class Pair>
void stage(Split& s, const std::vector<std::complex<double>>& tw, std::size_t len, Doubles& wr, Doubles& wi,
           Pair pair) {
    const std::size_t lenh = len >> 1;
    for (std::size_t j = 0; j < lenh; ++j) wr[j] = tw[lenh + j].real(), wi[j] = tw[lenh + j].imag();
    for (std::size_t i = 0; i < s.re.size(); i += len) {
        double *xr = s.re.data() + i, *xi = s.im.data() + i, *yr = xr + lenh, *yi = xi + lenh;
        for (std::size_t j = 0; j < lenh; ++j) pair(xr[j], xi[j], yr[j], yi[j], wr[j], wi[j]);
    }
}
}  // namespace

void SlotFft::forward(std::vector<std::complex<double>>& v) const {
    const std::size_t n = v.size();
    bit_reverse(v);
    Split s(v);
    Doubles wr(n / 2 + 1), wi(n / 2 + 1);
    for (std::size_t len = 2; len <= n; len <<= 1)
        stage(s, tw_, len, wr, wi, [](auto&... x) { slots::forward_pair(x...); });
    s.to(v);
}

void SlotFft::inverse(std::vector<std::complex<double>>& v) const {
    const std::size_t n = v.size();
    Split s(v);
    Doubles wr(n / 2 + 1), wi(n / 2 + 1);
    for (std::size_t len = n; len >= 2; len >>= 1)
        stage(s, tw_inv_, len, wr, wi, [](auto&... x) { slots::inverse_pair(x...); });
    s.to(v);
    bit_reverse(v);
    const double inv = 1.0 / static_cast<double>(n);
    for (auto& x : v) x *= inv;
}

}  // namespace kasoku::rns
