#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <string>

#include "kasoku/support/error.hpp"
#include "sampling_internal.hpp"

namespace kasoku::ckks::detail {

namespace {

// 1 where a < b, else 0, for a, b < 2^63: the sign bit of a - b (no comparison the compiler could turn into a branch).
inline std::uint64_t less_63(std::uint64_t a, std::uint64_t b) { return (a - b) >> 63; }

// Sorts a[0..n) ascending (n a power of two) with Batcher's bitonic network: the same compare-exchanges, in the same
// order, whatever the values, each a masked swap (values below 2^63).
void bitonic_sort(std::uint64_t* a, std::size_t n) {
    for (std::size_t k = 2; k <= n; k <<= 1)
        for (std::size_t j = k >> 1; j > 0; j >>= 1)
            for (std::size_t i = 0; i < n; ++i) {
                const std::size_t l = i ^ j;
                if (l <= i) continue;  // a public index, as every other branch here
                const bool up = (i & k) == 0;
                const std::uint64_t swap = up ? less_63(a[l], a[i]) : less_63(a[i], a[l]);
                const std::uint64_t t = (a[i] ^ a[l]) & (0 - swap);
                a[i] ^= t;
                a[l] ^= t;
            }
}

}  // namespace

void ternary_from_words(const std::uint64_t* r, std::size_t n, std::int64_t* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = rns::draw::ternary(r[2 * i], r[2 * i + 1]);
}

void fixed_weight_from_words(const std::uint64_t* r, std::size_t n, int hamming_weight, std::int64_t* out,
                             std::uint64_t* scratch) {
    // Each position gets a random 61-bit key (bits 3..63 of its word) and a label in its two low bits: 1 (+1) or 2
    // (-1) by its word's bit 0 for the first hamming_weight positions, 0 for the others. Sorted by key, the labels
    // land on a uniformly random set of positions (two equal keys, which would favour the lower label, have
    // probability below n^2 / 2^62), and every step is data-independent.
    const auto h = static_cast<std::size_t>(hamming_weight);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t label = i < h ? 1 + (r[i] & 1) : 0;
        scratch[i] = ((r[i] >> 1) & ~std::uint64_t{3}) | label;
    }
    bitonic_sort(scratch, n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t v = scratch[i] & 3;
        out[i] = static_cast<std::int64_t>(v & 1) - static_cast<std::int64_t>(v >> 1);
    }
}

std::vector<std::int64_t> sample_ternary(std::size_t n, int hamming_weight, Prng& prng) {
    std::vector<std::int64_t> s(n, 0);
    if (hamming_weight == 0) {
        std::vector<std::uint64_t> r(2 * n);
        prng.fill(r.data(), r.size() * sizeof(std::uint64_t));
        ternary_from_words(r.data(), n, s.data());
        secure_wipe(r.data(), r.size() * sizeof(std::uint64_t));
        return s;
    }
    if ((n & (n - 1)) != 0 || static_cast<std::size_t>(hamming_weight) > n)
        throw ParameterError("a secret of Hamming weight " + std::to_string(hamming_weight) +
                             " needs n a power of two " + "at least as large (n = " + std::to_string(n) + ")");
    std::vector<std::uint64_t> r(n), scratch(n);
    prng.fill(r.data(), n * sizeof(std::uint64_t));
    fixed_weight_from_words(r.data(), n, hamming_weight, s.data(), scratch.data());
    secure_wipe(r.data(), n * sizeof(std::uint64_t));
    secure_wipe(scratch.data(), n * sizeof(std::uint64_t));
    return s;
}

void gaussian_from_words(const std::uint64_t* r, std::size_t n, std::int64_t* out) {
    const std::uint64_t* cdf = gaussian_cdf().data();
    for (std::size_t i = 0; i < n; ++i) out[i] = rns::draw::gaussian(r[i], cdf);
}

std::vector<std::int64_t> sample_gaussian(std::size_t n, Prng& prng) {
    std::vector<std::int64_t> e(n);
    std::vector<std::uint64_t> r(n);
    prng.fill(r.data(), n * sizeof(std::uint64_t));
    gaussian_from_words(r.data(), n, e.data());
    secure_wipe(r.data(), r.size() * sizeof r[0]);
    return e;
}

std::vector<__int128> sample_wide_gaussian(std::size_t n, double sigma, Prng& prng) {
    std::vector<__int128> e(n);
    const auto unit = [&] { return (static_cast<double>(prng.next_u64() >> 11) + 0.5) * 0x1p-53; };
    for (std::size_t i = 0; i < n; i += 2) {
        double z[2];
        do {
            const double r = std::sqrt(-2.0 * std::log(unit())), t = 2.0 * std::numbers::pi * unit();
            z[0] = r * std::cos(t);
            z[1] = r * std::sin(t);
        } while (std::fabs(z[0]) > 6.0 || std::fabs(z[1]) > 6.0);
        e[i] = static_cast<__int128>(std::llround(z[0] * sigma));
        if (i + 1 < n) e[i + 1] = static_cast<__int128>(std::llround(z[1] * sigma));
    }
    return e;
}

void uniform_limb(const Seed& seed, std::size_t part, std::size_t prime, std::uint64_t q, std::size_t n,
                  std::uint64_t* out) {
    Prng prng(seed, (static_cast<std::uint64_t>(part) << 32) | prime);
    const std::uint64_t mask = (q >> 1 == 0) ? 1 : (~0ull >> __builtin_clzll(q));
    // Rejection sampling in place: words of the stream land in out, the accepted ones (masked value < q) are packed
    // to the front without a branch, and the shortfall is drawn again, until n are accepted.
    std::size_t filled = 0;
    while (filled < n) {
        const std::size_t want = n - filled;
        std::uint64_t* d = out + filled;
        prng.fill(d, want * sizeof(std::uint64_t));
        std::size_t k = 0;
        for (std::size_t i = 0; i < want; ++i) {
            const std::uint64_t v = d[i] & mask;
            d[k] = v;
            k += v < q;
        }
        filled += k;
    }
}

void sample_uniform(const rns::Backend& be, const Seed& seed, std::size_t part, rns::RnsPoly& out) {
    be.upload(out, [&](std::size_t l, std::uint64_t* d) {
        const std::size_t idx = be.ring().prime_index(l, out.num_q());
        uniform_limb(seed, part, idx, be.ring().prime(idx), out.n(), d);
    });
}

}  // namespace kasoku::ckks::detail
