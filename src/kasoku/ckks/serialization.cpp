#include "kasoku/ckks/serialization.hpp"

#include <openssl/sha.h>

#include <cmath>
#include <cstring>
#include <string>

#include "checks_internal.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::ckks {

namespace {

enum class Kind : std::uint16_t { parameters = 1, ciphertext = 2, public_key = 3, secret_key = 4, switch_key = 5, evaluation_keys = 6 };

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::parameters: return "Parameters";
        case Kind::ciphertext: return "Ciphertext";
        case Kind::public_key: return "PublicKey";
        case Kind::secret_key: return "SecretKey";
        case Kind::switch_key: return "SwitchKey";
        case Kind::evaluation_keys: return "EvaluationKeys";
    }
    return "?";
}

constexpr std::size_t kHeader = 4 + 2 + 2 + 8 + 8, kDigest = SHA256_DIGEST_LENGTH;

class Writer {
public:
    // ctx may be null for Parameters (no polynomials).
    Writer(Kind kind, const Context* ctx) : ctx_(ctx) {
        const std::uint64_t fingerprint = ctx ? ctx->fingerprint() : 0;
        out_.resize(kHeader);
        std::memcpy(out_.data(), "KSKU", 4);
        std::uint16_t v = kFormatVersion, k = static_cast<std::uint16_t>(kind);
        std::memcpy(out_.data() + 4, &v, 2);
        std::memcpy(out_.data() + 6, &k, 2);
        std::memcpy(out_.data() + 8, &fingerprint, 8);
    }
    template <class T> void put(T v) {
        static_assert(std::is_trivially_copyable_v<T>);
        const std::size_t at = out_.size();
        out_.resize(at + sizeof(T));
        std::memcpy(out_.data() + at, &v, sizeof(T));
    }
    void poly(const rns::RnsPoly& p) {
        put<std::uint32_t>(static_cast<std::uint32_t>(p.num_q()));
        put<std::uint32_t>(static_cast<std::uint32_t>(p.num_p()));
        put<std::uint8_t>(p.ntt_form() ? 1 : 0);
        const std::size_t at = out_.size(), limb_bytes = p.n() * sizeof(std::uint64_t);
        out_.resize(at + p.limbs() * limb_bytes);
        ctx_->backend().download(p, [&](const std::uint64_t* const* limbs) {
            for (std::size_t l = 0; l < p.limbs(); ++l) std::memcpy(out_.data() + at + l * limb_bytes, limbs[l], limb_bytes);
        });
    }
    void switch_key(const SwitchKey& k) {
        put<std::uint32_t>(static_cast<std::uint32_t>(k.b.size()));
        for (std::size_t j = 0; j < k.b.size(); ++j) { poly(k.b[j]); poly(k.a[j]); }
    }
    Bytes finish() {
        std::uint64_t len = out_.size() - kHeader;
        std::memcpy(out_.data() + 16, &len, 8);
        std::uint8_t digest[kDigest];
        SHA256(out_.data(), out_.size(), digest);
        out_.insert(out_.end(), digest, digest + kDigest);
        return std::move(out_);
    }

private:
    const Context* ctx_;
    Bytes out_;
};

class Reader {
public:
    // Checks the envelope; ctx may be null for Parameters.
    Reader(const std::uint8_t* data, std::size_t size, Kind want, const Context* ctx) : ctx_(ctx) {
        if (!data || size < kHeader + kDigest) fail("too short to be a kasoku object (" + std::to_string(size) + " bytes)");
        if (std::memcmp(data, "KSKU", 4) != 0) fail("not a kasoku object (bad magic)");
        std::uint16_t version, kind;
        std::uint64_t fp, len;
        std::memcpy(&version, data + 4, 2);
        std::memcpy(&kind, data + 6, 2);
        std::memcpy(&fp, data + 8, 8);
        std::memcpy(&len, data + 16, 8);
        if (version != kFormatVersion)
            fail("format version " + std::to_string(version) + " is not supported by this build (it reads version " +
                 std::to_string(kFormatVersion) + ")");
        if (len != size - kHeader - kDigest) fail("length field does not match the data: truncated or corrupted bytes");
        std::uint8_t digest[kDigest];
        SHA256(data, size - kDigest, digest);
        if (std::memcmp(digest, data + size - kDigest, kDigest) != 0) fail("integrity check failed: the bytes are corrupted");
        if (kind != static_cast<std::uint16_t>(want))
            fail(std::string("expected a ") + kind_name(want) + ", found a " + kind_name(static_cast<Kind>(kind)));
        if (ctx_ && fp != ctx_->fingerprint())
            fail("these bytes were made with other parameters (fingerprint mismatch); load them into a context created "
                 "with the same parameters");
        p_ = data + kHeader;
        end_ = data + size - kDigest;
    }
    [[noreturn]] static void fail(const std::string& m) { throw SerializationError("cannot load: " + m); }
    template <class T> T get() {
        if (static_cast<std::size_t>(end_ - p_) < sizeof(T)) fail("unexpected end of data");
        T v;
        std::memcpy(&v, p_, sizeof(T));
        p_ += sizeof(T);
        return v;
    }
    rns::RnsPoly poly(bool allow_p) {
        const auto& r = ctx_->rns();
        const std::uint32_t nq = get<std::uint32_t>(), np = get<std::uint32_t>();
        const std::uint8_t ntt = get<std::uint8_t>();
        if (nq == 0 || nq > r.q_count() || np > r.p_count() || (np != 0 && !allow_p) || ntt > 1)
            fail("polynomial shape does not fit the parameters");
        rns::RnsPoly p = ctx_->backend().poly(nq, np, ntt == 1);
        const std::size_t n = ctx_->n(), bytes = p.words() * sizeof(std::uint64_t);
        if (static_cast<std::size_t>(end_ - p_) < bytes) fail("unexpected end of data");
        ctx_->backend().upload(p, [&](std::size_t l, std::uint64_t* d) {
            std::memcpy(d, p_ + l * n * sizeof(std::uint64_t), n * sizeof(std::uint64_t));
            const std::uint64_t q = r.prime(r.prime_index(l, nq));
            for (std::size_t c = 0; c < n; ++c)
                if (d[c] >= q) fail("coefficient out of range for its modulus");
        });
        p_ += bytes;
        return p;
    }
    // A key of `digits` pairs over nq q-limbs and np p-limbs (defaults: dnum pairs over Q_L * P; the encapsulation
    // key to the sparse secret is one pair over q_0 * p_0).
    SwitchKey switch_key(std::uint64_t key_id, bool small = false) {
        const auto& r = ctx_->rns();
        const std::size_t digits = small ? 1 : r.dnum(), nq = small ? 1 : r.q_count(), np = small ? 1 : r.p_count();
        SwitchKey k;
        k.context_uid = ctx_->uid();
        k.key_id = key_id;
        const std::uint32_t count = get<std::uint32_t>();
        if (count != digits) fail("key-switching key has the wrong number of digits");
        for (std::uint32_t j = 0; j < count; ++j) {
            k.b.push_back(poly(true));
            k.a.push_back(poly(true));
            for (const auto* p : {&k.b.back(), &k.a.back()})
                if (p->num_q() != nq || p->num_p() != np || !p->ntt_form()) fail("key-switching key polynomial has the wrong shape");
        }
        return k;
    }
    void done() {
        if (p_ != end_) fail("trailing bytes after the object");
    }

private:
    const Context* ctx_;
    const std::uint8_t* p_ = nullptr;
    const std::uint8_t* end_ = nullptr;
};

}  // namespace

Bytes serialize(const Parameters& p) {
    Writer w(Kind::parameters, nullptr);
    for (int v : {p.log_n, p.first_bits, p.scale_bits, p.levels, p.special_bits, p.special_primes, p.security ? *p.security : 0,
                  p.dnum, p.hamming_weight, p.boot_levels, p.boot_bits, p.boot_secret_weight})
        w.put<std::int32_t>(v);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(p.name.size()));
    for (char c : p.name) w.put<char>(c);
    return w.finish();
}

Parameters deserialize_parameters(const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::parameters, nullptr);
    Parameters p;
    p.log_n = r.get<std::int32_t>();
    p.first_bits = r.get<std::int32_t>();
    p.scale_bits = r.get<std::int32_t>();
    p.levels = r.get<std::int32_t>();
    p.special_bits = r.get<std::int32_t>();
    p.special_primes = r.get<std::int32_t>();
    const int sec = r.get<std::int32_t>();
    if (sec) p.security = sec;
    else p.security.reset();
    p.dnum = r.get<std::int32_t>();
    p.hamming_weight = r.get<std::int32_t>();
    p.boot_levels = r.get<std::int32_t>();
    p.boot_bits = r.get<std::int32_t>();
    p.boot_secret_weight = r.get<std::int32_t>();
    const std::uint32_t len = r.get<std::uint32_t>();
    if (len > 64) Reader::fail("parameter name too long");
    for (std::uint32_t i = 0; i < len; ++i) p.name.push_back(r.get<char>());
    r.done();
    try {
        p.validate();
    } catch (const ParameterError& e) {
        Reader::fail(std::string("the stored parameters are invalid: ") + e.what());
    }
    return p;
}

Bytes serialize(const Context& ctx, const Ciphertext& ct) {
    detail::check_ciphertext(ctx, ct, "ciphertext");
    Writer w(Kind::ciphertext, &ctx);
    w.put<std::uint64_t>(ct.key_id);
    w.put<double>(ct.scale);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(ct.polys.size()));
    for (const auto& p : ct.polys) w.poly(p);
    return w.finish();
}

Ciphertext deserialize_ciphertext(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::ciphertext, &ctx);
    Ciphertext ct;
    ct.context_uid = ctx.uid();
    ct.key_id = r.get<std::uint64_t>();
    ct.scale = r.get<double>();
    if (!(ct.scale > 0) || !std::isfinite(ct.scale)) Reader::fail("invalid scale");
    const std::uint32_t count = r.get<std::uint32_t>();
    if (count < 2 || count > 3) Reader::fail("a ciphertext has 2 or 3 polynomials");
    for (std::uint32_t k = 0; k < count; ++k) {
        ct.polys.push_back(r.poly(false));
        if (ct.polys.back().num_q() != ct.polys[0].num_q() || !ct.polys.back().ntt_form())
            Reader::fail("ciphertext polynomials disagree in level or form");
    }
    r.done();
    return ct;
}

Bytes serialize(const Context& ctx, const PublicKey& pk) {
    detail::check_key(ctx, pk.context_uid, "public key");
    Writer w(Kind::public_key, &ctx);
    w.put<std::uint64_t>(pk.key_id);
    w.poly(pk.b);
    w.poly(pk.a);
    return w.finish();
}

PublicKey deserialize_public_key(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::public_key, &ctx);
    PublicKey pk;
    pk.context_uid = ctx.uid();
    pk.key_id = r.get<std::uint64_t>();
    pk.b = r.poly(true);
    pk.a = r.poly(true);
    for (const auto* p : {&pk.b, &pk.a})
        if (p->num_q() != ctx.rns().q_count() || p->num_p() != 1) Reader::fail("public key has the wrong shape");
    r.done();
    return pk;
}

Bytes serialize(const Context& ctx, const SecretKey& sk) {
    detail::check_key(ctx, sk.context_uid(), "secret key");
    Writer w(Kind::secret_key, &ctx);
    w.put<std::uint64_t>(sk.key_id());
    w.poly(sk.poly());
    return w.finish();
}

SecretKey deserialize_secret_key(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::secret_key, &ctx);
    const std::uint64_t id = r.get<std::uint64_t>();
    rns::RnsPoly s = r.poly(true);
    if (s.num_q() != ctx.rns().q_count() || s.num_p() != ctx.rns().p_count()) Reader::fail("secret key has the wrong shape");
    r.done();
    return SecretKey(std::move(s), ctx.uid(), id);
}

Bytes serialize(const Context& ctx, const SwitchKey& key) {
    detail::check_key(ctx, key.context_uid, "key-switching key");
    Writer w(Kind::switch_key, &ctx);
    w.put<std::uint64_t>(key.key_id);
    w.switch_key(key);
    return w.finish();
}

SwitchKey deserialize_switch_key(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::switch_key, &ctx);
    SwitchKey k = r.switch_key(r.get<std::uint64_t>());
    r.done();
    return k;
}

Bytes serialize(const Context& ctx, const EvaluationKeys& keys) {
    detail::check_key(ctx, keys.context_uid, "evaluation keys");
    Writer w(Kind::evaluation_keys, &ctx);
    w.put<std::uint64_t>(keys.key_id);
    w.put<std::uint8_t>(keys.relin ? 1 : 0);
    if (keys.relin) w.switch_key(*keys.relin);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(keys.galois.size()));
    for (const auto& [g, k] : keys.galois) {
        w.put<std::uint64_t>(g);
        w.switch_key(*k);
    }
    w.put<std::uint8_t>(keys.to_sparse && keys.from_sparse ? 1 : 0);
    if (keys.to_sparse && keys.from_sparse) {
        w.switch_key(*keys.to_sparse);
        w.switch_key(*keys.from_sparse);
    }
    return w.finish();
}

EvaluationKeys deserialize_evaluation_keys(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::evaluation_keys, &ctx);
    EvaluationKeys ek;
    ek.context_uid = ctx.uid();
    ek.key_id = r.get<std::uint64_t>();
    const std::uint8_t has_relin = r.get<std::uint8_t>();
    if (has_relin > 1) Reader::fail("bad relinearisation-key flag");
    if (has_relin) ek.relin = std::make_shared<const SwitchKey>(r.switch_key(ek.key_id));
    const std::uint32_t count = r.get<std::uint32_t>();
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::uint64_t g = r.get<std::uint64_t>();
        if (g % 2 == 0 || g >= 2 * ctx.n()) Reader::fail("invalid Galois element");
        ek.galois[g] = std::make_shared<const SwitchKey>(r.switch_key(ek.key_id));
    }
    const std::uint8_t has_sparse = r.get<std::uint8_t>();
    if (has_sparse > 1) Reader::fail("bad encapsulation-key flag");
    if (has_sparse) {
        ek.to_sparse = std::make_shared<const SwitchKey>(r.switch_key(ek.key_id, true));
        ek.from_sparse = std::make_shared<const SwitchKey>(r.switch_key(ek.key_id));
    }
    r.done();
    return ek;
}

}  // namespace kasoku::ckks
