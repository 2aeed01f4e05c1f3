// Versioned binary format: header (magic "KSKU", version, kind, flags, parameter fingerprint, payload length),
// payload, SHA-256 of header and payload. Loading checks all of it and throws SerializationError for
// corrupted or truncated bytes, another kind of object, or bytes made with other parameters. serialize throws
// ParameterError for an object of another context (or a malformed ciphertext). Seeded parts are expanded with
// OpenSSL's ChaCha20 and compression is zstd's: kasoku::Error when either fails.
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

// The parameters (no context: they are not checked here; deserialize_parameters validates them).
// @throws Error if zstd compression fails
Bytes serialize(const Parameters& p, Compression compression = Compression::none);
// An object of ctx.
// @throws ParameterError if the object belongs to another context than ctx, or (a ciphertext) is malformed
// @throws Error if zstd compression fails
Bytes serialize(const Context& ctx, const Ciphertext& ct, Compression compression = Compression::none);
// @throws ParameterError if the public key belongs to another context than ctx
// @throws Error if zstd compression fails
Bytes serialize(const Context& ctx, const PublicKey& pk, Compression compression = Compression::none);
// @throws ParameterError if the secret key belongs to another context than ctx
// @throws Error if zstd compression fails
Bytes serialize(const Context& ctx, const SecretKey& sk, Compression compression = Compression::none);
// @throws ParameterError if the key belongs to another context than ctx
// @throws Error if zstd compression fails
Bytes serialize(const Context& ctx, const SwitchKey& key, Compression compression = Compression::none);
// @throws ParameterError if the keys belong to another context than ctx
// @throws Error if zstd compression fails
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
// The record's polynomials must be of ctx's ring and backend (the layers above ckks make them so; nothing is checked).
// @throws Error if zstd compression fails
Bytes serialize(const Context& ctx, const Record& record, Compression compression = Compression::none);
// @throws SerializationError for corrupted or truncated bytes, another kind of object, other parameters, another
//     record type, more than kMaxRecordWords words or max_polys polynomials, or a polynomial that does not fit ctx
Record deserialize_record(const Context& ctx, const std::uint8_t* data, std::size_t size, std::uint8_t type,
                          std::size_t max_polys);

// @throws SerializationError for corrupted or truncated bytes, another kind of object, or parameters that
//     Parameters::validate refuses
Parameters deserialize_parameters(const std::uint8_t* data, std::size_t size);
// The deserialize_* below load into ctx.
// @throws SerializationError for corrupted or truncated bytes, another kind of object, bytes made with other
//     parameters (fingerprint), or contents that do not fit ctx (shapes, residues, scale)
Ciphertext deserialize_ciphertext(const Context& ctx, const std::uint8_t* data, std::size_t size);
// @throws SerializationError as deserialize_ciphertext
PublicKey deserialize_public_key(const Context& ctx, const std::uint8_t* data, std::size_t size);
// @throws SerializationError as deserialize_ciphertext
SecretKey deserialize_secret_key(const Context& ctx, const std::uint8_t* data, std::size_t size);
// @throws SerializationError as deserialize_ciphertext
SwitchKey deserialize_switch_key(const Context& ctx, const std::uint8_t* data, std::size_t size);
// compact: the Galois keys keep only their b-parts and seeds (KeyGenerator::evaluation_keys'
// compact keys); nullopt: compact for a bootstrapping key set (one with the encapsulation keys) on a backend that
// draws key limbs (rns::Backend::draws_key_limbs: the CPU's), as Python's keygen.
// @throws SerializationError as deserialize_ciphertext, and for a Galois element that is even or >= 2n or appears
//     twice
EvaluationKeys deserialize_evaluation_keys(const Context& ctx, const std::uint8_t* data, std::size_t size,
                                           std::optional<bool> compact = false);

}  // namespace kasoku::ckks
