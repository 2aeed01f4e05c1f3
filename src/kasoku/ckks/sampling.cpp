#include <algorithm>
#include <array>
#include <cmath>

#include "sampling_internal.hpp"

namespace kasoku::ckks::detail {

std::vector<std::int64_t> sample_ternary(std::size_t n, int hamming_weight, Prng& prng) {
    std::vector<std::int64_t> s(n, 0);
    std::vector<std::uint8_t> buf(4096);
    std::size_t pos = buf.size();
    auto byte = [&]() {
        if (pos == buf.size()) {
            prng.fill(buf.data(), buf.size());
            pos = 0;
        }
        return buf[pos++];
    };
    if (hamming_weight == 0) {
        for (std::size_t i = 0; i < n; ++i) {
            std::uint8_t b;
            do b = byte();
            while (b >= 255);  // 255 = 3 * 85: reject to stay uniform
            s[i] = static_cast<std::int64_t>(b % 3) - 1;
        }
        secure_wipe(buf.data(), buf.size());
        return s;
    }
    // Fixed Hamming weight: Fisher-Yates choice of positions, random signs.
    std::vector<std::uint32_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) idx[i] = static_cast<std::uint32_t>(i);
    for (int k = 0; k < hamming_weight; ++k) {
        const std::uint64_t range = n - k, limit = UINT64_MAX - UINT64_MAX % range;
        std::uint64_t r;
        do r = prng.next_u64();
        while (r >= limit);
        std::swap(idx[k], idx[k + r % range]);
        s[idx[k]] = (byte() & 1) ? 1 : -1;
    }
    secure_wipe(idx.data(), idx.size() * sizeof idx[0]);
    return s;
}

std::vector<std::int64_t> sample_gaussian(std::size_t n, Prng& prng) {
    constexpr double sigma = 3.2;
    constexpr int bound = 19;  // 6 sigma
    // Cumulative table of |x| for x in 0..bound (x = 0 counted once), scaled to 2^63.
    static const std::array<std::uint64_t, bound + 1> cdf = [] {
        std::array<double, bound + 1> w{};
        double total = 0;
        for (int x = 0; x <= bound; ++x) {
            w[x] = std::exp(-static_cast<double>(x * x) / (2 * sigma * sigma)) * (x == 0 ? 1.0 : 2.0);
            total += w[x];
        }
        std::array<std::uint64_t, bound + 1> c{};
        double acc = 0;
        for (int x = 0; x <= bound; ++x) {
            acc += w[x] / total;
            c[x] = x == bound ? (1ull << 63) : static_cast<std::uint64_t>(std::ldexp(acc, 63));
        }
        return c;
    }();
    std::vector<std::int64_t> e(n);
    std::vector<std::uint64_t> r(n);
    prng.fill(r.data(), n * sizeof(std::uint64_t));
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t u = r[i] >> 1;  // 63 bits for the magnitude, bit 0 for the sign
        int x = 0;
        while (x < bound && u >= cdf[x]) ++x;
        e[i] = (r[i] & 1) ? -x : x;
    }
    secure_wipe(r.data(), r.size() * sizeof r[0]);
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
