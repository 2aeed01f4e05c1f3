// Randomness: seeds from the OS through OpenSSL's RAND_bytes, expansion by OpenSSL's ChaCha20
// (a keyed stream, so that a 32-byte seed can stand for a whole uniform polynomial).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace kasoku {

using Seed = std::array<std::uint8_t, 32>;

// Every function here throws kasoku::Error when OpenSSL fails (no randomness from the OS, a cipher that cannot start).

// A fresh seed from the operating system's CSPRNG (OpenSSL RAND_bytes).
// @throws Error if the OS has no randomness to give
Seed random_seed();
// `count` bytes straight from the OS CSPRNG.
// @throws Error if the OS has no randomness to give
void os_random_bytes(void* out, std::size_t count);

// Deterministic stream of random bytes from a seed (ChaCha20 keystream, OpenSSL EVP).
class Prng {
public:
    // @throws Error if ChaCha20 cannot start
    explicit Prng(const Seed& seed);
    // Stream `stream` of the seed (the stream number as ChaCha20's nonce): streams of one seed are independent, and
    // each can be drawn alone, in any order (the limbs of a seeded polynomial: ckks sampling).
    // @throws Error if ChaCha20 cannot start
    Prng(const Seed& seed, std::uint64_t stream);
    // From a fresh seed (random_seed).
    // @throws Error if the OS has no randomness to give, or ChaCha20 cannot start
    Prng() : Prng(random_seed()) {}
    ~Prng();
    Prng(const Prng&) = delete;
    Prng& operator=(const Prng&) = delete;

    // @throws Error if the ChaCha20 keystream fails
    void fill(void* out, std::size_t count);
    // @throws Error if the ChaCha20 keystream fails
    std::uint64_t next_u64();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Overwrites memory in a way the compiler cannot elide (OPENSSL_cleanse).
void secure_wipe(void* data, std::size_t bytes);

}  // namespace kasoku
