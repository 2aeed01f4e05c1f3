// Typed errors of kasoku (docs/CONVENTIONS.md "Errors"). Python sees the same classes.
#pragma once
#include <stdexcept>
#include <string>

namespace kasoku {

// Base class of every error kasoku raises on misuse. Messages say what failed, what was
// expected, what was found and what to do.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
// Invalid or insecure parameters, or a bad argument (length, NaN, wrong object).
class ParameterError : public Error {
public:
    using Error::Error;
};
// An operation needs a level the ciphertext no longer has.
class LevelError : public Error {
public:
    using Error::Error;
};
// Scales do not match, or a scale no longer fits the modulus.
class ScaleError : public Error {
public:
    using Error::Error;
};
// An evaluation key (relinearisation, rotation, conjugation) is missing.
class MissingKeyError : public Error {
public:
    using Error::Error;
};
// Bytes that cannot be read back: corrupted, truncated, wrong kind or other parameters.
class SerializationError : public Error {
public:
    using Error::Error;
};
// A device (GPU) failure.
class DeviceError : public Error {
public:
    using Error::Error;
};

// A broken internal invariant: a bug in kasoku, not a misuse (Python: RuntimeError). Raised by the layers below ckks
// when they are called with shapes that ckks never produces; the message says which invariant broke.
class InternalError : public std::logic_error {
public:
    explicit InternalError(const std::string& what)
        : std::logic_error("kasoku internal error (a bug; please report it with this message): " + what) {}
};

}  // namespace kasoku
