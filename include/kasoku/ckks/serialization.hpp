// Versioned binary format: header (magic "KSKU", version, kind, parameter fingerprint, payload length),
// payload, SHA-256 of header and payload. Loading checks all of it and throws SerializationError for
// corrupted or truncated bytes, another kind of object, or bytes made with other parameters. serialize throws
// ParameterError for an object of another context (or a malformed ciphertext).
#pragma once
#include <cstdint>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/objects.hpp"
#include "kasoku/ckks/parameters.hpp"

namespace kasoku::ckks {

using Bytes = std::vector<std::uint8_t>;

// Version 2: Galois keys switch s -> s(X^{g^-1}) (applied before the automorphism); version 1 keys did s(X^g) -> s.
inline constexpr std::uint16_t kFormatVersion = 3;

Bytes serialize(const Parameters& p);
Bytes serialize(const Context& ctx, const Ciphertext& ct);
Bytes serialize(const Context& ctx, const PublicKey& pk);
Bytes serialize(const Context& ctx, const SecretKey& sk);
Bytes serialize(const Context& ctx, const SwitchKey& key);
Bytes serialize(const Context& ctx, const EvaluationKeys& keys);

Parameters deserialize_parameters(const std::uint8_t* data, std::size_t size);
Ciphertext deserialize_ciphertext(const Context& ctx, const std::uint8_t* data, std::size_t size);
PublicKey deserialize_public_key(const Context& ctx, const std::uint8_t* data, std::size_t size);
SecretKey deserialize_secret_key(const Context& ctx, const std::uint8_t* data, std::size_t size);
SwitchKey deserialize_switch_key(const Context& ctx, const std::uint8_t* data, std::size_t size);
EvaluationKeys deserialize_evaluation_keys(const Context& ctx, const std::uint8_t* data, std::size_t size);

}  // namespace kasoku::ckks
