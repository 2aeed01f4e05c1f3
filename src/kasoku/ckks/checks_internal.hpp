// Cheap metadata checks shared by the ckks classes (thrown before any data is touched).
#pragma once
#include <cmath>
#include <string>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/objects.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::ckks::detail {

// Scales whose relative difference is below 2^-30 are treated as equal.
inline bool same_scale(double a, double b) { return std::fabs(a / b - 1.0) <= 1.0 / (1ull << 30); }

inline void check_key(const Context& ctx, std::uint64_t uid, const char* what) {
    if (uid != ctx.uid())
        throw ParameterError(std::string(what) +
                             " belongs to another context; use keys made by this context's keygen, "
                             "or load them with from_bytes(ctx, ...)");
}

inline void check_plain(const Context& ctx, const Plaintext& pt) {
    if (pt.context_uid != ctx.uid()) throw ParameterError("plaintext belongs to another context");
    if (pt.poly.empty() || pt.level() > ctx.max_level()) throw ParameterError("plaintext is empty or malformed");
}

inline void check_ciphertext(const Context& ctx, const Ciphertext& ct, const char* what) {
    if (ct.context_uid != ctx.uid())
        throw ParameterError(std::string(what) +
                             " belongs to another context; load it with Ciphertext.from_bytes(ctx, ...) "
                             "into this context, or use the context that made it");
    if (ct.size() < 2 || ct.size() > 3 || ct.level() < 0 || ct.level() > ctx.max_level())
        throw ParameterError(std::string(what) + " is empty or malformed");
}

// A result's metadata, made one way: `like`'s context and key, and its own scale (Ciphertext and LazyCiphertext).
template <class Out, class Like>
void stamp(Out& out, const Like& like, double scale) {
    out.scale = scale;
    out.context_uid = like.context_uid;
    out.key_id = like.key_id;
}

// Key switching (rotations, the encapsulation switches) takes (c0, c1) only.
inline void check_relinearised(const Ciphertext& ct, const char* op) {
    if (ct.size() != 2)
        throw ParameterError(std::string(op) + " needs a relinearised (size-2) ciphertext; relinearize it first");
}

}  // namespace kasoku::ckks::detail
