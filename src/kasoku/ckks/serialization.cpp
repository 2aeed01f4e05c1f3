#include "kasoku/ckks/serialization.hpp"

#include <openssl/sha.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

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
    evaluation_keys = 6,
    record = 7
};

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::parameters: return "Parameters";
        case Kind::ciphertext: return "Ciphertext";
        case Kind::public_key: return "PublicKey";
        case Kind::secret_key: return "SecretKey";
        case Kind::switch_key: return "SwitchKey";
        case Kind::evaluation_keys: return "EvaluationKeys";
        case Kind::record: return "record (a multiparty share or another object of the layers above)";
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
// A key-switching key's shape: over Q * P (every digit), the one-digit key over q_0 * p_0 (bootstrapping's switch to
// its sparse secret), or over Q_m * P with the digits of Q_m for some m (a Galois key made for the lower levels).
enum class KeyShape : std::uint8_t { full, small, any_level };
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

using Parts = std::vector<const rns::RnsPoly*>;

// Pointers to parts[from..].
template <class V>
Parts parts_of(V& parts, std::size_t from = 0) {
    Parts out;
    for (std::size_t i = from; i < parts.size(); ++i) out.push_back(&parts[i]);
    return out;
}

// Each object's layout is one field list, `template <class Io, class T> void ..._fields(Io& io, T& object)`, run by
// the Writer on a const object and by the Reader on an empty one, so that the bytes are described once. Both offer
// the same field primitives; the Writer's take const references and write them, the Reader's read into them and
// check what the layout requires (`check`: a condition every stored object meets). What each side does around the
// list (the seed's expansion, shape checks) follows it in serialize / deserialize.
class Writer {
public:
    static constexpr bool reading = false;
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
    const Context& context() const { return *ctx_; }

    // Field primitives.
    template <class T>
    void value(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        const std::size_t at = out_.size();
        out_.resize(at + sizeof(T));
        std::memcpy(out_.data() + at, &v, sizeof(T));
    }
    void check(bool, const char*) {}
    bool flag(bool b, const char*) {
        value<std::uint8_t>(b ? 1 : 0);
        return b;
    }
    // A count (u32) of parts[...], which the Reader checks to lie in [lo, hi] and makes room for.
    template <class V>
    void size(const V& parts, std::size_t, std::size_t, const char*) {
        value(static_cast<std::uint32_t>(parts.size()));
    }
    template <class V>
    void resize(const V&, std::size_t) {}  // the Reader makes room for parts the layout does not count
    void optional(const std::optional<int>& v) { value<std::int32_t>(v.value_or(0)); }  // 0: none
    void text(const std::string& t, std::size_t, const char*) {
        value(static_cast<std::uint32_t>(t.size()));
        bytes(reinterpret_cast<const std::uint8_t*>(t.data()), t.size());
    }
    void bytes(const std::vector<std::uint8_t>& v, std::size_t) { bytes(v.data(), v.size()); }
    // Whether the seed stands for `parts` (their expansion, in order): written as a flag, then the seed in its place.
    bool seeded(const std::optional<Seed>& seed, const Parts& parts) {
        return flag(seed && expands_to(ctx_->backend(), *seed, parts), "seed flag");
    }
    void seed(const std::optional<Seed>& s) { bytes(s->data(), s->size()); }
    // Shape, one tag per limb, then the residues of each nonzero limb packed to its prime's width, little-endian
    // (n * width bits: whole bytes, n being a multiple of 8).
    void poly(const rns::RnsPoly& p, bool) {
        const auto& r = ctx_->rns();
        value(static_cast<std::uint32_t>(p.num_q()));
        value(static_cast<std::uint32_t>(p.num_p()));
        value<std::uint8_t>(p.ntt_form() ? 1 : 0);
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
    // A key-switching key of a key set (its KeyShape; the Reader's draw_a: whether a seeded key's a-parts are drawn at
    // once).
    void key(const std::shared_ptr<const SwitchKey>& k, std::uint64_t, KeyShape shape, bool);
    template <class Map, class Fn>
    void entries(const Map& m, const char*, Fn&& fn) {  // a count, then fn(key, value) for each entry
        value(static_cast<std::uint32_t>(m.size()));
        for (const auto& [k, v] : m) fn(k, v);
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
    void bytes(const std::uint8_t* p, std::size_t count) { out_.insert(out_.end(), p, p + count); }

    const Context* ctx_;
    Bytes out_;
};

class Reader {
public:
    static constexpr bool reading = true;
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
    const Context& context() const { return *ctx_; }

    // Field primitives (the Writer's, reading).
    template <class T>
    void value(T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        std::memcpy(&v, take(sizeof(T)), sizeof(T));
    }
    void check(bool ok, const char* what) {
        if (!ok) fail(what);
    }
    bool flag(bool, const char* what) {
        std::uint8_t f;
        value(f);
        if (f > 1) fail(std::string("bad ") + what);
        return f == 1;
    }
    template <class V>
    void size(V& parts, std::size_t lo, std::size_t hi, const char* what) {
        std::uint32_t n;
        value(n);
        if (n < lo || n > hi) fail(what);
        parts.resize(n);
    }
    template <class V>
    void resize(V& parts, std::size_t n) {
        parts.resize(n);
    }
    void optional(std::optional<int>& v) {
        std::int32_t x;
        value(x);
        v = x ? std::optional<int>(x) : std::nullopt;
    }
    void text(std::string& t, std::size_t max, const char* what) {
        std::uint32_t len;
        value(len);
        if (len > max) fail(what);
        const std::uint8_t* at = take(len);
        t.assign(at, at + len);
    }
    void bytes(std::vector<std::uint8_t>& v, std::size_t count) {
        const std::uint8_t* at = take(count);
        v.assign(at, at + count);
    }
    bool seeded(const std::optional<Seed>&, const Parts&) { return flag(false, "seed flag"); }
    void seed(std::optional<Seed>& s) {
        s.emplace();
        std::memcpy(s->data(), take(s->size()), s->size());
    }
    // allow_p: whether the polynomial may have special limbs (keys); ciphertexts may not.
    void poly(rns::RnsPoly& out, bool allow_p) {
        const auto& r = ctx_->rns();
        std::uint32_t nq, np;
        std::uint8_t ntt;
        value(nq);
        value(np);
        value(ntt);
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
        out = std::move(p);
    }
    // A key of a key set; draw_a = false: a seeded key stays compact until expand_compact_keys (its a-parts drawn at
    // each use: KeyGenerator::evaluation_keys' compact keys).
    void key(std::shared_ptr<const SwitchKey>& k, std::uint64_t key_id, KeyShape shape, bool draw_a);
    // The keys of the last argument read compact: their a-parts drawn now.
    void expand_compact_keys() {
        for (const auto& k : compact_) expand_a(*ctx_, *k);
        compact_.clear();
    }
    template <class Map, class Fn>
    void entries(Map& m, const char* what, Fn&& fn) {
        std::uint32_t count;
        value(count);
        for (std::uint32_t i = 0; i < count; ++i) {
            typename Map::key_type k{};
            typename Map::mapped_type v{};
            fn(k, v);
            if (!m.emplace(k, std::move(v)).second) fail(std::string(what) + " appears twice");
        }
    }
    void done() {
        if (p_ != end_) fail("trailing bytes after the object");
    }

private:
    const std::uint8_t* take(std::size_t count) {
        if (static_cast<std::size_t>(end_ - p_) < count) fail("unexpected end of data");
        const std::uint8_t* at = p_;
        p_ += count;
        return at;
    }
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
    Bytes plain_;                                      // the decompressed payload
    std::vector<std::shared_ptr<SwitchKey>> compact_;  // keys read compact
};

// ---- The layouts ----

static_assert(sizeof(int) == 4, "Parameters' fields are stored as 32-bit integers");

template <class Io, class P>
void parameter_fields(Io& io, P& p) {
    io.value(p.log_n);
    io.value(p.first_bits);
    io.value(p.scale_bits);
    io.value(p.levels);
    io.value(p.special_bits);
    io.value(p.special_primes);
    io.optional(p.security);
    io.value(p.dnum);
    io.value(p.hamming_weight);
    io.value(p.boot_levels);
    io.value(p.boot_bits);
    io.value(p.boot_secret_weight);
    io.text(p.name, 64, "parameter name too long");
}

// Key id, scale, the polynomials (c_1 as the seed it was drawn from when it still is its expansion).
template <class Io, class C>
void ciphertext_fields(Io& io, C& ct) {
    io.value(ct.key_id);
    io.value(ct.scale);
    io.check(ct.scale > 0 && std::isfinite(ct.scale), "invalid scale");
    io.size(ct.polys, 2, 3, "a ciphertext has 2 or 3 polynomials");
    const bool seeded = io.seeded(ct.size() == 2 ? ct.seed : std::nullopt, parts_of(ct.polys, 1));
    io.check(!seeded || ct.size() == 2, "bad seed flag");
    io.poly(ct.polys[0], false);
    if (seeded) io.seed(ct.seed);
    else
        for (std::size_t k = 1; k < ct.size(); ++k) io.poly(ct.polys[k], false);
}

template <class Io, class K>
void public_key_fields(Io& io, K& pk) {
    io.value(pk.key_id);
    const bool seeded = io.seeded(pk.seed, {&pk.a});
    io.poly(pk.b, true);
    if (seeded) io.seed(pk.seed);
    else io.poly(pk.a, true);
}

// The digits' b_j, each followed by its a_j, or after the seed that stands for every a_j.
template <class Io, class K>
void switch_key_fields(Io& io, K& k, KeyShape shape) {
    const std::size_t dnum = io.context().rns().dnum();
    io.size(k.b, shape == KeyShape::full ? dnum : 1, shape == KeyShape::small ? 1 : dnum,
            "key-switching key has the wrong number of digits");
    const bool seeded = io.seeded(k.seed, parts_of(k.a));
    if (seeded) io.seed(k.seed);
    io.resize(k.a, seeded ? 0 : k.b.size());
    for (std::size_t j = 0; j < k.b.size(); ++j) {
        io.poly(k.b[j], true);
        if (!seeded) io.poly(k.a[j], true);
    }
}

template <class Io, class K>
void evaluation_key_fields(Io& io, K& keys) {
    io.value(keys.key_id);
    if (io.flag(keys.relin != nullptr, "relinearisation-key flag"))
        io.key(keys.relin, keys.key_id, KeyShape::full, true);
    io.entries(keys.galois, "a Galois key", [&](auto& galois_elt, auto& key) {
        io.value(galois_elt);
        io.check(galois_elt % 2 == 1 && galois_elt < 2 * io.context().n(), "invalid Galois element");
        io.key(key, keys.key_id, KeyShape::any_level, false);
    });
    if (io.flag(keys.to_sparse && keys.from_sparse, "encapsulation-key flag")) {
        io.key(keys.to_sparse, keys.key_id, KeyShape::small, true);
        io.key(keys.from_sparse, keys.key_id, KeyShape::full, true);
    }
}

// A record: its type, its words, its polynomials (every one may have special limbs).
template <class Io, class R>
void record_fields(Io& io, R& r, std::size_t max_polys) {
    io.value(r.type);
    io.size(r.words, 0, kMaxRecordWords, "a record holds too many words");
    for (auto& w : r.words) io.value(w);
    io.size(r.polys, 0, max_polys, "a record holds too many polynomials");
    for (auto& p : r.polys) io.poly(p, true);
}

// A secret key as stored: its ternary coefficients, 2 bits each (0, 1, or 2 for -1), when it is ternary, as kasoku's
// keys are; else its residues. Wiped on destruction.
struct StoredSecret {
    std::uint64_t key_id = 0;
    std::uint8_t form = kSecretPoly;
    rns::RnsPoly poly;                  // kSecretPoly
    std::vector<std::uint8_t> ternary;  // kSecretTernary: n / 4 bytes
    StoredSecret() = default;
    StoredSecret(const StoredSecret&) = delete;
    StoredSecret& operator=(const StoredSecret&) = delete;
    ~StoredSecret() {
        poly.wipe();
        secure_wipe(ternary.data(), ternary.size());
    }
};

template <class Io, class S>
void secret_key_fields(Io& io, S& s) {
    io.value(s.key_id);
    io.value(s.form);
    io.check(s.form == kSecretPoly || s.form == kSecretTernary, "unknown secret-key form");
    if (s.form == kSecretPoly) io.poly(s.poly, true);
    else io.bytes(s.ternary, io.context().n() / 4);
}

void Writer::key(const std::shared_ptr<const SwitchKey>& k, std::uint64_t, KeyShape shape, bool) {
    switch_key_fields(*this, *k, shape);
}

// Shape checks after a key's fields; a seeded key's a-parts drawn now or (compact) kept for later.
void finish_key(const Context& ctx, SwitchKey& k, KeyShape shape, bool draw_a) {
    const auto& r = ctx.rns();
    const bool small = shape == KeyShape::small;
    std::size_t nq = small ? 1 : r.q_count();
    std::size_t np = small ? 1 : r.p_count();
    if (shape == KeyShape::any_level) {  // over Q_m * P_k with the digits of Q_m (KeyGenerator::galois_key's max_level)
        nq = k.b.empty() ? 0 : k.b[0].num_q();
        if (nq == 0 || k.b.size() != r.digits_at(nq))
            Reader::fail("key-switching key has the wrong number of digits for its levels");
        // the special primes its levels need (RnsContext::special_for), or all of them (keys of earlier versions)
        if (k.b[0].num_p() == r.special_for(nq)) np = r.special_for(nq);
    }
    for (const auto& parts : {&k.b, &k.a})
        for (const auto& p : *parts)
            if (p.num_q() != nq || p.num_p() != np || !p.ntt_form())
                Reader::fail("key-switching key polynomial has the wrong shape");
    if (k.seed && draw_a) expand_a(ctx, k);
}

void Reader::key(std::shared_ptr<const SwitchKey>& k, std::uint64_t key_id, KeyShape shape, bool draw_a) {
    auto fresh = std::make_shared<SwitchKey>();
    fresh->context_uid = ctx_->uid();
    fresh->key_id = key_id;
    switch_key_fields(*this, *fresh, shape);
    finish_key(*ctx_, *fresh, shape, draw_a);
    if (fresh->seed && !draw_a) compact_.push_back(fresh);
    k = std::move(fresh);
}

}  // namespace

Bytes serialize(const Parameters& p, Compression compression) {
    Writer w(Kind::parameters, nullptr);
    parameter_fields(w, p);
    return w.finish(compression);
}

Parameters deserialize_parameters(const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::parameters, nullptr);
    Parameters p;
    parameter_fields(r, p);
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
    ciphertext_fields(w, ct);
    return w.finish(compression);
}

Ciphertext deserialize_ciphertext(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::ciphertext, &ctx);
    Ciphertext ct;
    ct.context_uid = ctx.uid();
    ciphertext_fields(r, ct);
    r.done();
    if (ct.seed) {
        if (!ct.polys[0].ntt_form()) Reader::fail("ciphertext polynomials must be in NTT form");
        ct.polys[1] = std::move(expand(ctx.backend(), *ct.seed, {&ct.polys[0]})[0]);
    }
    for (const auto& p : ct.polys)
        if (p.num_q() != ct.polys[0].num_q() || !p.ntt_form())
            Reader::fail("ciphertext polynomials disagree in level or form");
    return ct;
}

Bytes serialize(const Context& ctx, const PublicKey& pk, Compression compression) {
    detail::check_key(ctx, pk.context_uid, "public key");
    Writer w(Kind::public_key, &ctx);
    public_key_fields(w, pk);
    return w.finish(compression);
}

PublicKey deserialize_public_key(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::public_key, &ctx);
    PublicKey pk;
    pk.context_uid = ctx.uid();
    public_key_fields(r, pk);
    r.done();
    if (pk.seed) pk.a = std::move(expand(ctx.backend(), *pk.seed, {&pk.b})[0]);
    for (const auto* p : {&pk.b, &pk.a})
        if (p->num_q() != ctx.rns().q_count() || p->num_p() != 1 || !p->ntt_form())
            Reader::fail("public key has the wrong shape");
    return pk;
}

Bytes serialize(const Context& ctx, const SecretKey& sk, Compression compression) {
    detail::check_key(ctx, sk.context_uid(), "secret key");
    Writer w(Kind::secret_key, &ctx);
    StoredSecret s;
    s.key_id = sk.key_id();
    std::vector<std::int64_t> t = ternary_coefficients(ctx, sk);
    if (t.empty()) {
        s.poly = sk.poly();
    } else {
        s.form = kSecretTernary;
        s.ternary.assign(t.size() / 4, 0);
        for (std::size_t i = 0; i < t.size(); ++i)
            s.ternary[i / 4] |= static_cast<std::uint8_t>((t[i] < 0 ? 2 : t[i]) << (2 * (i % 4)));
        secure_wipe(t.data(), t.size() * sizeof t[0]);
    }
    secret_key_fields(w, std::as_const(s));
    return w.finish(compression);
}

SecretKey deserialize_secret_key(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::secret_key, &ctx);
    StoredSecret s;
    secret_key_fields(r, s);
    r.done();
    if (s.form == kSecretPoly) {
        if (s.poly.num_q() != ctx.rns().q_count() || s.poly.num_p() != ctx.rns().p_count() || !s.poly.ntt_form())
            Reader::fail("secret key has the wrong shape");
        return SecretKey(std::move(s.poly), ctx.uid(), s.key_id);
    }
    const std::size_t n = ctx.n();
    std::vector<std::int64_t> t(n);
    bool valid = true;
    for (std::size_t i = 0; i < n; ++i) {
        const int code = (s.ternary[i / 4] >> (2 * (i % 4))) & 3;
        valid = valid && code != 3;
        t[i] = code == 2 ? -1 : code;
    }
    rns::RnsPoly poly;
    if (valid) {
        poly = ctx.backend().poly(ctx.rns().q_count(), ctx.rns().p_count(), true);
        ctx.backend().from_signed(t.data(), poly, {});
    }
    secure_wipe(t.data(), t.size() * sizeof t[0]);
    if (!valid) Reader::fail("a ternary secret key holds a coefficient code 3");
    return SecretKey(std::move(poly), ctx.uid(), s.key_id);
}

Bytes serialize(const Context& ctx, const SwitchKey& key, Compression compression) {
    detail::check_key(ctx, key.context_uid, "key-switching key");
    Writer w(Kind::switch_key, &ctx);
    w.value(key.key_id);
    switch_key_fields(w, key, KeyShape::any_level);
    return w.finish(compression);
}

SwitchKey deserialize_switch_key(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    Reader r(data, size, Kind::switch_key, &ctx);
    SwitchKey k;
    k.context_uid = ctx.uid();
    r.value(k.key_id);
    switch_key_fields(r, k, KeyShape::any_level);
    r.done();
    finish_key(ctx, k, KeyShape::any_level, true);
    return k;
}

Bytes serialize(const Context& ctx, const Record& record, Compression compression) {
    Writer w(Kind::record, &ctx);
    record_fields(w, record, record.polys.size());
    return w.finish(compression);
}

Record deserialize_record(const Context& ctx, const std::uint8_t* data, std::size_t size, std::uint8_t type,
                          std::size_t max_polys) {
    Reader r(data, size, Kind::record, &ctx);
    Record rec;
    record_fields(r, rec, max_polys);
    r.done();
    if (rec.type != type)
        Reader::fail("expected a record of type " + std::to_string(type) + ", found one of type " +
                     std::to_string(rec.type));
    return rec;
}

Bytes serialize(const Context& ctx, const EvaluationKeys& keys, Compression compression) {
    detail::check_key(ctx, keys.context_uid, "evaluation keys");
    Writer w(Kind::evaluation_keys, &ctx);
    evaluation_key_fields(w, keys);
    return w.finish(compression);
}

EvaluationKeys deserialize_evaluation_keys(const Context& ctx, const std::uint8_t* data, std::size_t size,
                                           std::optional<bool> compact) {
    Reader r(data, size, Kind::evaluation_keys, &ctx);
    EvaluationKeys ek;
    ek.context_uid = ctx.uid();
    evaluation_key_fields(r, ek);  // the Galois keys read compact
    r.done();
    // Whether they stay so is known once the encapsulation keys' flag is read.
    if (!compact.value_or(ek.to_sparse && ctx.backend().draws_key_limbs())) r.expand_compact_keys();
    return ek;
}

}  // namespace kasoku::ckks
