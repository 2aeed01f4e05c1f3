#include "kasoku/ckks/serialization.hpp"

#include <openssl/sha.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "checks_internal.hpp"
#include "kasoku/support/error.hpp"
#include "sampling_internal.hpp"

namespace kasoku::ckks {

namespace {

enum class Kind : std::uint8_t {
    parameters = 1,
    ciphertext = 2,
    public_key = 3,
    secret_key = 4,
    switch_key = 5,
    evaluation_keys = 6
};

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::parameters: return "Parameters";
        case Kind::ciphertext: return "Ciphertext";
        case Kind::public_key: return "PublicKey";
        case Kind::secret_key: return "SecretKey";
        case Kind::switch_key: return "SwitchKey";
        case Kind::evaluation_keys: return "EvaluationKeys";
    }
    return "unknown object";
}

// Header: magic, version (u16), kind (u8), flags (u8), parameter fingerprint (u64), stored payload length (u64).
constexpr std::size_t kHeader = 4 + 2 + 1 + 1 + 8 + 8, kDigest = SHA256_DIGEST_LENGTH;
constexpr std::uint8_t kFlagZstd = 1;
// Compressed payloads expand at most this much (packed residues do not compress; the rest is small).
constexpr std::size_t kMaxExpansion = 16, kMinExpansionBytes = std::size_t{1} << 20;
// A limb's tag: its residues bit-packed, or all zero (not stored).
constexpr std::uint8_t kLimbPacked = 0, kLimbZero = 1;
// A secret key's form: an RNS polynomial, or its ternary coefficients (2 bits each: 0, 1, or 2 for -1).
constexpr std::uint8_t kSecretPoly = 0, kSecretTernary = 1;

unsigned bit_width(std::uint64_t q) { return 64u - static_cast<unsigned>(__builtin_clzll(q - 1)); }  // residues < q

// Uniform parts shaped like `like`, part j of `seed` for the j-th (how key generation and encryption drew them).
std::vector<rns::RnsPoly> expand(const rns::Backend& be, const Seed& seed,
                                 const std::vector<const rns::RnsPoly*>& like) {
    std::vector<rns::RnsPoly> out;
    for (const rns::RnsPoly* l : like) {
        out.push_back(be.poly(l->num_q(), l->num_p(), true));
        detail::sample_uniform(be, seed, out.size() - 1, out.back());
    }
    return out;
}

// A seeded key's a-parts, drawn from its seed beside its b-parts.
void expand_a(const Context& ctx, SwitchKey& k) {
    std::vector<const rns::RnsPoly*> like;
    for (const auto& b : k.b) like.push_back(&b);
    k.a = expand(ctx.backend(), *k.seed, like);
}

// Whether `parts`, in order, are the expansion of `seed`, so that the seed can stand for them.
bool expands_to(const rns::Backend& be, const Seed& seed, const std::vector<const rns::RnsPoly*>& parts) {
    if (!std::all_of(parts.begin(), parts.end(), [](const rns::RnsPoly* p) { return p->ntt_form(); })) return false;
    const std::vector<rns::RnsPoly> fresh = expand(be, seed, parts);
    for (std::size_t i = 0; i < parts.size(); ++i)
        if (!(fresh[i] == *parts[i])) return false;
    return true;
}

// The secret's coefficients when every one is in {-1, 0, 1} and the RNS polynomial is exactly their residues (empty
// otherwise). Secret data: the caller wipes it.
std::vector<std::int64_t> ternary_coefficients(const Context& ctx, const SecretKey& sk) {
    const auto& be = ctx.backend();
    std::vector<__int128> c = rns::centered_q0(be, sk.poly(), {});
    std::vector<std::int64_t> t(c.size());
    bool ternary = true;
    for (std::size_t i = 0; i < c.size(); ++i) {
        ternary = ternary && c[i] >= -1 && c[i] <= 1;
        t[i] = static_cast<std::int64_t>(c[i]);
    }
    secure_wipe(c.data(), c.size() * sizeof c[0]);
    if (ternary) {
        rns::RnsPoly again = be.poly(sk.poly().num_q(), sk.poly().num_p(), true);
        be.from_signed(t.data(), again, {});
        ternary = again == sk.poly();
        again.wipe();
    }
    if (!ternary) {
        secure_wipe(t.data(), t.size() * sizeof t[0]);
        t.clear();
    }
    return t;
}

class Writer {
public:
    // ctx may be null for Parameters (no polynomials).
    Writer(Kind kind, const Context* ctx) : ctx_(ctx) {
        const std::uint64_t fingerprint = ctx ? ctx->fingerprint() : 0;
        out_.resize(kHeader);
        std::memcpy(out_.data(), "KSKU", 4);
        const std::uint16_t v = kFormatVersion;
        std::memcpy(out_.data() + 4, &v, 2);
        out_[6] = static_cast<std::uint8_t>(kind);
        out_[7] = 0;
        std::memcpy(out_.data() + 8, &fingerprint, 8);
    }
    ~Writer() { secure_wipe(out_.data(), out_.size()); }  // a secret key's bytes, when finish() did not take them
    template <class T>
    void put(T v) {
        static_assert(std::is_trivially_copyable_v<T>);
        const std::size_t at = out_.size();
        out_.resize(at + sizeof(T));
        std::memcpy(out_.data() + at, &v, sizeof(T));
    }
    void bytes(const std::uint8_t* p, std::size_t count) { out_.insert(out_.end(), p, p + count); }
    void seed(const Seed& s) { bytes(s.data(), s.size()); }
    // Shape, one tag per limb, then the residues of each nonzero limb packed to its prime's width, little-endian
    // (n * width bits: whole bytes, n being a multiple of 8).
    void poly(const rns::RnsPoly& p) {
        const auto& r = ctx_->rns();
        put<std::uint32_t>(static_cast<std::uint32_t>(p.num_q()));
        put<std::uint32_t>(static_cast<std::uint32_t>(p.num_p()));
        put<std::uint8_t>(p.ntt_form() ? 1 : 0);
        const std::size_t n = p.n();
        ctx_->backend().download(p, [&](const std::uint64_t* const* limbs) {
            std::vector<std::uint8_t> tag(p.limbs());
            for (std::size_t l = 0; l < p.limbs(); ++l)
                tag[l] = std::all_of(limbs[l], limbs[l] + n, [](std::uint64_t v) { return v == 0; }) ? kLimbZero
                                                                                                     : kLimbPacked;
            bytes(tag.data(), tag.size());
            for (std::size_t l = 0; l < p.limbs(); ++l) {
                if (tag[l] == kLimbZero) continue;
                const unsigned w = bit_width(r.prime(r.prime_index(l, p.num_q())));
                std::size_t at = out_.size();
                out_.resize(at + n * w / 8);
                unsigned __int128 acc = 0;
                unsigned bits = 0;
                for (std::size_t c = 0; c < n; ++c) {
                    acc |= static_cast<unsigned __int128>(limbs[l][c]) << bits;
                    bits += w;
                    if (bits >= 64) {
                        const auto word = static_cast<std::uint64_t>(acc);
                        std::memcpy(out_.data() + at, &word, 8);
                        at += 8;
                        acc >>= 64;
                        bits -= 64;
                    }
                }
                for (; bits > 0; bits -= 8, acc >>= 8) out_[at++] = static_cast<std::uint8_t>(acc);
            }
        });
    }
    // The digits' b_j, each followed by its a_j, or after the seed that stands for every a_j.
    void switch_key(const SwitchKey& k) {
        put<std::uint32_t>(static_cast<std::uint32_t>(k.b.size()));
        std::vector<const rns::RnsPoly*> a;
        for (const auto& x : k.a) a.push_back(&x);
        const bool seeded = k.seed && expands_to(ctx_->backend(), *k.seed, a);
        put<std::uint8_t>(seeded ? 1 : 0);
        if (seeded) seed(*k.seed);
        for (std::size_t j = 0; j < k.b.size(); ++j) {
            poly(k.b[j]);
            if (!seeded) poly(k.a[j]);
        }
    }
    Bytes finish(Compression compression) {
        if (compression == Compression::zstd) {
            const std::size_t raw = out_.size() - kHeader, bound = ZSTD_compressBound(raw);
            Bytes z(kHeader + bound);
            std::memcpy(z.data(), out_.data(), kHeader);
            // With the frame's own checksum, so that a corrupted frame behind a valid digest is refused, not misread.
            const std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
            if (!cctx) throw Error("zstd compression failed: no memory for its context");
            ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, 3);
            ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
            const std::size_t got = ZSTD_compress2(cctx.get(), z.data() + kHeader, bound, out_.data() + kHeader, raw);
            if (ZSTD_isError(got)) throw Error(std::string("zstd compression failed: ") + ZSTD_getErrorName(got));
            z.resize(kHeader + got);
            z[7] |= kFlagZstd;
            secure_wipe(out_.data(), out_.size());
            out_ = std::move(z);
        }
        const std::uint64_t len = out_.size() - kHeader;
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
    // Checks the envelope and decompresses the payload; ctx may be null for Parameters.
    Reader(const std::uint8_t* data, std::size_t size, Kind want, const Context* ctx) : ctx_(ctx) {
        if (!data || size < kHeader + kDigest)
            fail("too short to be a kasoku object (" + std::to_string(size) + " bytes)");
        if (std::memcmp(data, "KSKU", 4) != 0) fail("not a kasoku object (bad magic)");
        std::uint16_t version;
        std::uint64_t fp, len;
        std::memcpy(&version, data + 4, 2);
        const std::uint8_t kind = data[6], flags = data[7];
        std::memcpy(&fp, data + 8, 8);
        std::memcpy(&len, data + 16, 8);
        if (version != kFormatVersion)
            fail("format version " + std::to_string(version) + " is not supported by this build (it reads version " +
                 std::to_string(kFormatVersion) + "); save the object again with this version of kasoku");
        if (len != size - kHeader - kDigest) fail("length field does not match the data: truncated or corrupted bytes");
        std::uint8_t digest[kDigest];
        SHA256(data, size - kDigest, digest);
        if (std::memcmp(digest, data + size - kDigest, kDigest) != 0)
            fail("integrity check failed: the bytes are corrupted");
        if (kind != static_cast<std::uint8_t>(want))
            fail(std::string("expected a ") + kind_name(want) + ", found a " + kind_name(static_cast<Kind>(kind)));
        if (flags & ~kFlagZstd) fail("unknown flags in the header (made by a newer kasoku?)");
        if (ctx_ && fp != ctx_->fingerprint())
            fail(
                "these bytes were made with other parameters (fingerprint mismatch); load them into a context created "
                "with the same parameters");
        p_ = data + kHeader;
        end_ = data + size - kDigest;
        if (flags & kFlagZstd) decompress();
    }
    ~Reader() { secure_wipe(plain_.data(), plain_.size()); }
    [[noreturn]] static void fail(const std::string& m) { throw SerializationError("cannot load: " + m); }
    template <class T>
    T get() {
        T v;
        std::memcpy(&v, take(sizeof(T)), sizeof(T));
        return v;
    }
    const std::uint8_t* take(std::size_t count) {
        if (static_cast<std::size_t>(end_ - p_) < count) fail("unexpected end of data");
        const std::uint8_t* at = p_;
        p_ += count;
        return at;
    }
    Seed seed() {
        Seed s;
        std::memcpy(s.data(), take(s.size()), s.size());
        return s;
    }
    rns::RnsPoly poly(bool allow_p) {
        const auto& r = ctx_->rns();
        const std::uint32_t nq = get<std::uint32_t>(), np = get<std::uint32_t>();
        const std::uint8_t ntt = get<std::uint8_t>();
        if (nq == 0 || nq > r.q_count() || np > r.p_count() || (np != 0 && !allow_p) || ntt > 1)
            fail("polynomial shape does not fit the parameters");
        const std::size_t n = ctx_->n(), limbs = nq + np;
        const std::uint8_t* tag = take(limbs);
        std::vector<const std::uint8_t*> at(limbs, nullptr);
        for (std::size_t l = 0; l < limbs; ++l) {
            if (tag[l] > kLimbZero) fail("unknown limb encoding");
            if (tag[l] == kLimbPacked) at[l] = take(n * bit_width(r.prime(r.prime_index(l, nq))) / 8);
        }
        rns::RnsPoly p = ctx_->backend().poly(nq, np, ntt == 1);
        ctx_->backend().upload(p, [&](std::size_t l, std::uint64_t* d) {
            if (!at[l]) {
                std::fill(d, d + n, std::uint64_t{0});
                return;
            }
            const std::uint64_t q = r.prime(r.prime_index(l, nq));
            const unsigned w = bit_width(q);
            const std::uint64_t mask = w == 64 ? ~0ull : (1ull << w) - 1;
            const std::uint8_t* in = at[l];
            unsigned __int128 acc = 0;
            unsigned bits = 0;
            for (std::size_t c = 0; c < n; ++c) {
                for (; bits < w; bits += 8) acc |= static_cast<unsigned __int128>(*in++) << bits;
                d[c] = static_cast<std::uint64_t>(acc) & mask;
                acc >>= w;
                bits -= w;
                if (d[c] >= q) fail("coefficient out of range for its modulus");
            }
        });
        return p;
    }
    // A key of `digits` pairs over nq q-limbs and np p-limbs (defaults: dnum pairs over Q_L * P; the encapsulation
    // key to the sparse secret is one pair over q_0 * p_0).
    // draw_a = false: a seeded key stays compact (its a-parts drawn at each use: KeyGenerator::evaluation_keys).
    SwitchKey switch_key(std::uint64_t key_id, bool small = false, bool draw_a = true) {
        const auto& r = ctx_->rns();
        const std::size_t digits = small ? 1 : r.dnum(), nq = small ? 1 : r.q_count(), np = small ? 1 : r.p_count();
        SwitchKey k;
        k.context_uid = ctx_->uid();
        k.key_id = key_id;
        const std::uint32_t count = get<std::uint32_t>();
        if (count != digits) fail("key-switching key has the wrong number of digits");
        const std::uint8_t seeded = get<std::uint8_t>();
        if (seeded > 1) fail("bad seed flag");
        if (seeded) k.seed = seed();
        for (std::uint32_t j = 0; j < count; ++j) {
            k.b.push_back(poly(true));
            if (!seeded) k.a.push_back(poly(true));
        }
        for (const auto& parts : {&k.b, &k.a})
            for (const auto& p : *parts)
                if (p.num_q() != nq || p.num_p() != np || !p.ntt_form())
                    fail("key-switching key polynomial has the wrong shape");
        if (seeded && draw_a) expand_a(*ctx_, k);
        return k;
    }
    void done() {
        if (p_ != end_) fail("trailing bytes after the object");
    }

private:
    // The zstd frame [p_, end_) into plain_, which the object is then read from.
    void decompress() {
        const std::size_t stored = static_cast<std::size_t>(end_ - p_);
        const unsigned long long raw = ZSTD_getFrameContentSize(p_, stored);
        if (raw == ZSTD_CONTENTSIZE_ERROR || raw == ZSTD_CONTENTSIZE_UNKNOWN)
            fail("the compressed payload is not a zstd frame");
        if (raw > std::max(kMaxExpansion * stored, kMinExpansionBytes))
            fail("the compressed payload claims " + std::to_string(raw) +
                 " bytes, more than a kasoku object of this size holds");
        plain_.resize(static_cast<std::size_t>(raw));
        const std::size_t got = ZSTD_decompress(plain_.data(), plain_.size(), p_, stored);
        if (ZSTD_isError(got) || got != raw) fail("the compressed payload is corrupted");
        p_ = plain_.data();
        end_ = plain_.data() + plain_.size();
    }

    const Context* ctx_;
    const std::uint8_t* p_ = nullptr;
    const std::uint8_t* end_ = nullptr;
    Bytes plain_;  // the decompressed payload
};

}  // namespace

Bytes serialize(const Parameters& p, Compression compression) {
    Writer w(Kind::parameters, nullptr);
    for (int v :
         {p.log_n, p.first_bits, p.scale_bits, p.levels, p.special_bits, p.special_primes, p.security ? *p.security : 0,
          p.dnum, p.hamming_weight, p.boot_levels, p.boot_bits, p.boot_secret_weight})
        w.put<std::int32_t>(v);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(p.name.size()));
    for (char c : p.name) w.put<char>(c);
    return w.finish(compression);
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

Bytes serialize(const Context& ctx, const Ciphertext& ct, Compression compression) {
    detail::check_ciphertext(ctx, ct, "ciphertext");
    Writer w(Kind::ciphertext, &ctx);
    w.put<std::uint64_t>(ct.key_id);
    w.put<double>(ct.scale);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(ct.polys.size()));
    const bool seeded = ct.size() == 2 && ct.seed && expands_to(ctx.backend(), *ct.seed, {&ct.polys[1]});
    w.put<std::uint8_t>(seeded ? 1 : 0);
    w.poly(ct.polys[0]);
    if (seeded) w.seed(*ct.seed);
    else
        for (std::size_t k = 1; k < ct.size(); ++k) w.poly(ct.polys[k]);
    return w.finish(compression);
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
    const std::uint8_t seeded = r.get<std::uint8_t>();
    if (seeded > 1 || (seeded && count != 2)) Reader::fail("bad seed flag");
    ct.polys.push_back(r.poly(false));
    if (seeded) {
        ct.seed = r.seed();
        if (!ct.polys[0].ntt_form()) Reader::fail("ciphertext polynomials must be in NTT form");
        ct.polys.push_back(std::move(expand(ctx.backend(), *ct.seed, {&ct.polys[0]})[0]));
    }
    while (ct.polys.size() < count) ct.polys.push_back(r.poly(false));
    for (const auto& p : ct.polys)
        if (p.num_q() != ct.polys[0].num_q() || !p.ntt_form())
            Reader::fail("ciphertext polynomials disagree in level or form");
    r.done();
    return ct;
}

Bytes serialize(const Context& ctx, const PublicKey& pk, Compression compression) {
    detail::check_key(ctx, pk.context_uid, "public key");
    Writer w(Kind::public_key, &ctx);
    w.put<std::uint64_t>(pk.key_id);
    const bool seeded = pk.seed && expands_to(ctx.backend(), *pk.seed, {&pk.a});
    w.put<std::uint8_t>(seeded ? 1 : 0);
    w.poly(pk.b);
    if (seeded) w.seed(*pk.seed);
    else w.poly(pk.a);
    return w.finish(compression);
}

PublicKey deserialize_public_key(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::public_key, &ctx);
    PublicKey pk;
    pk.context_uid = ctx.uid();
    pk.key_id = r.get<std::uint64_t>();
    const std::uint8_t seeded = r.get<std::uint8_t>();
    if (seeded > 1) Reader::fail("bad seed flag");
    pk.b = r.poly(true);
    if (seeded) {
        pk.seed = r.seed();
        pk.a = std::move(expand(ctx.backend(), *pk.seed, {&pk.b})[0]);
    } else {
        pk.a = r.poly(true);
    }
    for (const auto* p : {&pk.b, &pk.a})
        if (p->num_q() != ctx.rns().q_count() || p->num_p() != 1 || !p->ntt_form())
            Reader::fail("public key has the wrong shape");
    r.done();
    return pk;
}

// The ternary coefficients (2 bits each, n / 4 bytes) when the key is ternary, as kasoku's keys are; else its residues.
Bytes serialize(const Context& ctx, const SecretKey& sk, Compression compression) {
    detail::check_key(ctx, sk.context_uid(), "secret key");
    Writer w(Kind::secret_key, &ctx);
    w.put<std::uint64_t>(sk.key_id());
    std::vector<std::int64_t> t = ternary_coefficients(ctx, sk);
    w.put<std::uint8_t>(t.empty() ? kSecretPoly : kSecretTernary);
    if (t.empty()) {
        w.poly(sk.poly());
    } else {
        std::vector<std::uint8_t> packed(t.size() / 4, 0);
        for (std::size_t i = 0; i < t.size(); ++i)
            packed[i / 4] |= static_cast<std::uint8_t>((t[i] < 0 ? 2 : t[i]) << (2 * (i % 4)));
        w.bytes(packed.data(), packed.size());
        secure_wipe(packed.data(), packed.size());
        secure_wipe(t.data(), t.size() * sizeof t[0]);
    }
    return w.finish(compression);
}

SecretKey deserialize_secret_key(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::secret_key, &ctx);
    const std::uint64_t id = r.get<std::uint64_t>();
    const std::uint8_t form = r.get<std::uint8_t>();
    rns::RnsPoly s;
    if (form == kSecretPoly) {
        s = r.poly(true);
        if (s.num_q() != ctx.rns().q_count() || s.num_p() != ctx.rns().p_count() || !s.ntt_form())
            Reader::fail("secret key has the wrong shape");
    } else if (form == kSecretTernary) {
        const std::size_t n = ctx.n();
        const std::uint8_t* packed = r.take(n / 4);
        std::vector<std::int64_t> t(n);
        bool valid = true;
        for (std::size_t i = 0; i < n; ++i) {
            const int code = (packed[i / 4] >> (2 * (i % 4))) & 3;
            valid = valid && code != 3;
            t[i] = code == 2 ? -1 : code;
        }
        if (valid) {
            s = ctx.backend().poly(ctx.rns().q_count(), ctx.rns().p_count(), true);
            ctx.backend().from_signed(t.data(), s, {});
        }
        secure_wipe(t.data(), t.size() * sizeof t[0]);
        if (!valid) Reader::fail("a ternary secret key holds a coefficient code 3");
    } else {
        Reader::fail("unknown secret-key form");
    }
    r.done();
    return SecretKey(std::move(s), ctx.uid(), id);
}

Bytes serialize(const Context& ctx, const SwitchKey& key, Compression compression) {
    detail::check_key(ctx, key.context_uid, "key-switching key");
    Writer w(Kind::switch_key, &ctx);
    w.put<std::uint64_t>(key.key_id);
    w.switch_key(key);
    return w.finish(compression);
}

SwitchKey deserialize_switch_key(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::switch_key, &ctx);
    SwitchKey k = r.switch_key(r.get<std::uint64_t>());
    r.done();
    return k;
}

Bytes serialize(const Context& ctx, const EvaluationKeys& keys, Compression compression) {
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
    return w.finish(compression);
}

EvaluationKeys deserialize_evaluation_keys(const Context& ctx, const std::uint8_t* data, std::size_t size,
                                           std::optional<bool> compact) {
    Reader r(data, size, Kind::evaluation_keys, &ctx);
    EvaluationKeys ek;
    ek.context_uid = ctx.uid();
    ek.key_id = r.get<std::uint64_t>();
    // The Galois keys are read compact; whether they stay so is known after the last flag.
    std::vector<std::pair<std::uint64_t, SwitchKey>> galois;
    const std::uint8_t has_relin = r.get<std::uint8_t>();
    if (has_relin > 1) Reader::fail("bad relinearisation-key flag");
    if (has_relin) ek.relin = std::make_shared<const SwitchKey>(r.switch_key(ek.key_id));
    const std::uint32_t count = r.get<std::uint32_t>();
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::uint64_t g = r.get<std::uint64_t>();
        if (g % 2 == 0 || g >= 2 * ctx.n()) Reader::fail("invalid Galois element");
        galois.emplace_back(g, r.switch_key(ek.key_id, false, false));
    }
    const std::uint8_t has_sparse = r.get<std::uint8_t>();
    if (has_sparse > 1) Reader::fail("bad encapsulation-key flag");
    if (has_sparse) {
        ek.to_sparse = std::make_shared<const SwitchKey>(r.switch_key(ek.key_id, true));
        ek.from_sparse = std::make_shared<const SwitchKey>(r.switch_key(ek.key_id));
    }
    r.done();
    const bool keep_compact = compact.value_or(has_sparse == 1 && ctx.backend().draws_key_limbs());
    for (auto& [g, k] : galois) {
        if (k.a.empty() && !keep_compact) expand_a(ctx, k);
        ek.galois[g] = std::make_shared<const SwitchKey>(std::move(k));
    }
    return ek;
}

}  // namespace kasoku::ckks
