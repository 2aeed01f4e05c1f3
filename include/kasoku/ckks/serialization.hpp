// Versioned binary format: header (magic "KSKU", version, kind, flags, parameter fingerprint, payload length),
// payload, SHA-256 of header and payload. Loading checks all of it and throws SerializationError for
// corrupted or truncated bytes, another kind of object, or bytes made with other parameters. serialize throws
// ParameterError for an object of another context (or a malformed ciphertext).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/objects.hpp"
#include "kasoku/ckks/parameters.hpp"

namespace kasoku::ckks {

using Bytes = std::vector<std::uint8_t>;

// Version 5: residues bit-packed to their prime's width, a limb of zeros as one tag byte, uniform parts as the seed
// they were drawn from (secret-key ciphertexts, public and key-switching keys; one ChaCha20 stream per part and
// prime), ternary secret keys as 2 bits per coefficient, optional zstd. Version 4 drew a seed's parts from one
// sequential stream; version 3 wrote 8 bytes per residue; version 2 changed the Galois keys' direction.
inline constexpr std::uint16_t kFormatVersion = 5;

// zstd compresses the payload (level 3). Packed residues are uniform and do not compress: it pays only for objects
// with other content (docs/SERIALIZATION.md has the measured sizes).
enum class Compression : std::uint8_t { none = 0, zstd = 1 };

Bytes serialize(const Parameters& p, Compression compression = Compression::none);
Bytes serialize(const Context& ctx, const Ciphertext& ct, Compression compression = Compression::none);
Bytes serialize(const Context& ctx, const PublicKey& pk, Compression compression = Compression::none);
Bytes serialize(const Context& ctx, const SecretKey& sk, Compression compression = Compression::none);
Bytes serialize(const Context& ctx, const SwitchKey& key, Compression compression = Compression::none);
Bytes serialize(const Context& ctx, const EvaluationKeys& keys, Compression compression = Compression::none);

// A record: polynomials and a few words of metadata under a type byte, in the same envelope; how the layers above ckks
// store their objects (multiparty shares: kasoku/mp/multiparty.hpp). Loading checks the envelope, the type (another
// one is refused), at most kMaxRecordWords words and max_polys polynomials, each fitting the parameters.
struct Record {
    std::uint8_t type = 0;
    std::vector<std::uint64_t> words;
    std::vector<rns::RnsPoly> polys;
};
inline constexpr std::size_t kMaxRecordWords = 16;
Bytes serialize(const Context& ctx, const Record& record, Compression compression = Compression::none);
Record deserialize_record(const Context& ctx, const std::uint8_t* data, std::size_t size, std::uint8_t type,
                          std::size_t max_polys);

Parameters deserialize_parameters(const std::uint8_t* data, std::size_t size);
Ciphertext deserialize_ciphertext(const Context& ctx, const std::uint8_t* data, std::size_t size);
PublicKey deserialize_public_key(const Context& ctx, const std::uint8_t* data, std::size_t size);
SecretKey deserialize_secret_key(const Context& ctx, const std::uint8_t* data, std::size_t size);
SwitchKey deserialize_switch_key(const Context& ctx, const std::uint8_t* data, std::size_t size);
// compact: the Galois keys keep only their b-parts and seeds (KeyGenerator::evaluation_keys'
// compact keys); nullopt: compact for a bootstrapping key set (one with the encapsulation keys) on a backend that
// draws key limbs (rns::Backend::draws_key_limbs: the CPU's), as Python's keygen.
EvaluationKeys deserialize_evaluation_keys(const Context& ctx, const std::uint8_t* data, std::size_t size,
                                           std::optional<bool> compact = false);

}  // namespace kasoku::ckks
