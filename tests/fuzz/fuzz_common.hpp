// Shared by the fuzz targets and their corpus generator: a tiny ring (N = 16, research parameters) whose objects are a
// few hundred bytes, and the envelope (header, length, SHA-256) around a payload. The fuzzer mutates payloads: a
// mutated digest would stop every input at the integrity check, so each target seals its input first and the parsers
// behind the check are what it explores.
#pragma once
#include <openssl/sha.h>

#include <cstdint>
#include <cstring>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/serialization.hpp"

namespace kasoku::fuzz {

inline const ckks::Context& context() {
    static const ckks::ContextPtr ctx = ckks::Context::create(ckks::Parameters{.log_n = 4,
                                                                               .first_bits = 60,
                                                                               .scale_bits = 40,
                                                                               .levels = 2,
                                                                               .special_bits = 60,
                                                                               .special_primes = 2,
                                                                               .security = std::nullopt},
                                                              1);
    return *ctx;
}

// Header (magic, version, kind, flags, fingerprint, length) + payload + digest, as serialize writes them.
inline ckks::Bytes seal(std::uint8_t kind, std::uint8_t flags, std::uint64_t fingerprint, const std::uint8_t* payload,
                        std::size_t size) {
    ckks::Bytes b(24 + size + SHA256_DIGEST_LENGTH);
    std::memcpy(b.data(), "KSKU", 4);
    const std::uint16_t version = ckks::kFormatVersion;
    const std::uint64_t len = size;
    std::memcpy(b.data() + 4, &version, 2);
    b[6] = kind;
    b[7] = flags;
    std::memcpy(b.data() + 8, &fingerprint, 8);
    std::memcpy(b.data() + 16, &len, 8);
    if (size) std::memcpy(b.data() + 24, payload, size);
    SHA256(b.data(), 24 + size, b.data() + 24 + size);
    return b;
}

}  // namespace kasoku::fuzz
