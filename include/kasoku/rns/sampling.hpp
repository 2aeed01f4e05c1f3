// Small polynomials drawn from a seed, the same coefficients on every backend: encryption's randomness (the ternary v
// and the Gaussian errors) expanded where the ciphertext is made, on the host or on a device, from a 32-byte seed.
//
// Coefficient i of a draw comes from the words of ChaCha20 stream `stream` of the seed (support/random.hpp's Prng(seed,
// stream): key = the seed, counter from 0, nonce = the stream number and a tag word 1), word k being bytes 8k..8k+7 of
// the keystream, little-endian:
// - ternary: uniform in {-1, 0, 1}, floor(3 x / 2^128) - 1 of the 128-bit x = words 2i (low) and 2i + 1 (high); each
//   value's probability is within 2^-127 of 1/3 (2^-110 in statistical distance for n = 2^16) and no word is rejected,
//   so that coefficient i depends on its own words alone;
// - gaussian: sigma 3.2 cut at 19 (|x| from the top 63 bits of word i against the whole table, its sign from bit 0).
// Both run in constant time: no branch and no memory index depends on a drawn value. The per-block functions below are
// KASOKU_HD: the GPU kernels expand the stream with this very code (src/kasoku/gpu), one ChaCha20 block per thread.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/support/random.hpp"

namespace kasoku::rns {

inline constexpr double kGaussianSigma = 3.2;
inline constexpr int kGaussianBound = 19;

// One draw: the seed, its stream, and the distribution.
struct SmallDraw {
    enum class Kind : std::uint32_t { ternary, gaussian };
    Seed seed{};
    std::uint64_t stream = 0;
    Kind kind = Kind::gaussian;
};

// P(|x| <= k) for k = 0..bound (x = 0 once, the others for both signs), times 2^63: the Gaussian's table.
const std::array<std::uint64_t, kGaussianBound + 1>& gaussian_cdf();

// The n coefficients of the draw (n a multiple of 8), on the host (OpenSSL's ChaCha20).
// @throws Error if the ChaCha20 keystream fails
void draw_small(const SmallDraw& d, std::size_t n, std::int64_t* out);

namespace draw {

using arith::u128;
using arith::u64;
using u32 = std::uint32_t;

// The ChaCha20 block `counter` of the seed's stream as 16 keystream words (RFC 8439's block function with the 32-bit
// counter and 96-bit nonce OpenSSL's EVP_chacha20 takes).
struct Key {
    u32 k[8];
    u32 nonce[3];
};
inline Key key_of(const Seed& seed, std::uint64_t stream) {
    Key key{};
    for (int i = 0; i < 8; ++i)
        key.k[i] = static_cast<u32>(seed[4 * i]) | static_cast<u32>(seed[4 * i + 1]) << 8 |
                   static_cast<u32>(seed[4 * i + 2]) << 16 | static_cast<u32>(seed[4 * i + 3]) << 24;
    key.nonce[0] = static_cast<u32>(stream);
    key.nonce[1] = static_cast<u32>(stream >> 32);
    key.nonce[2] = 1;  // the tag of numbered streams (Prng(seed, stream))
    return key;
}
KASOKU_HD inline u32 rotl(u32 x, int r) { return (x << r) | (x >> (32 - r)); }
KASOKU_HD inline void quarter(u32* x, int a, int b, int c, int d) {
    x[a] += x[b], x[d] = rotl(x[d] ^ x[a], 16);
    x[c] += x[d], x[b] = rotl(x[b] ^ x[c], 12);
    x[a] += x[b], x[d] = rotl(x[d] ^ x[a], 8);
    x[c] += x[d], x[b] = rotl(x[b] ^ x[c], 7);
}
KASOKU_HD inline void chacha20_block(const Key& key, u32 counter, u32* out) {
    u32 in[16] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};  // "expand 32-byte k"
    for (int i = 0; i < 8; ++i) in[4 + i] = key.k[i];
    in[12] = counter;
    in[13] = key.nonce[0], in[14] = key.nonce[1], in[15] = key.nonce[2];
    for (int i = 0; i < 16; ++i) out[i] = in[i];
    for (int round = 0; round < 10; ++round) {
        quarter(out, 0, 4, 8, 12), quarter(out, 1, 5, 9, 13), quarter(out, 2, 6, 10, 14), quarter(out, 3, 7, 11, 15);
        quarter(out, 0, 5, 10, 15), quarter(out, 1, 6, 11, 12), quarter(out, 2, 7, 8, 13), quarter(out, 3, 4, 9, 14);
    }
    for (int i = 0; i < 16; ++i) out[i] += in[i];
}
// Word k of a block's keystream words (little-endian bytes, as the host reads them).
KASOKU_HD inline u64 word(const u32* block, int k) {
    return static_cast<u64>(block[2 * k]) | static_cast<u64>(block[2 * k + 1]) << 32;
}

// floor(3 (hi 2^64 + lo) / 2^128) - 1, without a branch.
KASOKU_HD inline std::int64_t ternary(u64 lo, u64 hi) {
    const u64 carry = arith::mul_hi(lo, 3);                             // floor(3 lo / 2^64), 0..2
    const u64 top = arith::mul_hi(hi, 3) + ((hi * 3 + carry) < carry);  // floor((3 hi + carry) / 2^64)
    return static_cast<std::int64_t>(top) - 1;
}
// The Gaussian of word r: |x| = the number of table entries at or below r's top 63 bits, counted over the whole table;
// the sign from bit 0, applied by a mask.
KASOKU_HD inline std::int64_t gaussian(u64 r, const u64* cdf) {
    const u64 u = r >> 1;
    u64 x = 0;
    for (int k = 0; k < kGaussianBound; ++k) x += ((u - cdf[k]) >> 63) ^ 1;  // u >= cdf[k] (both below 2^63)
    const u64 neg = 0 - (r & 1);
    return static_cast<std::int64_t>((x ^ neg) - neg);
}
// The coefficients a block yields: 8 Gaussian, 4 ternary.
KASOKU_HD inline u32 per_block(SmallDraw::Kind kind) { return kind == SmallDraw::Kind::ternary ? 4 : 8; }
// The coefficients of one block of keystream.
KASOKU_HD inline void coefficients(SmallDraw::Kind kind, const u32* block, const u64* cdf, std::int64_t* out) {
    if (kind == SmallDraw::Kind::ternary)
        for (int j = 0; j < 4; ++j) out[j] = ternary(word(block, 2 * j), word(block, 2 * j + 1));
    else
        for (int j = 0; j < 8; ++j) out[j] = gaussian(word(block, j), cdf);
}

}  // namespace draw
}  // namespace kasoku::rns
