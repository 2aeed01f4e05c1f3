// The compact wire format (version 5): seeded uniform parts, bit-packed residues, zero limbs, ternary secret keys,
// zstd; each form against the object it came from, and the parsers' own checks on bytes whose digest is valid.
#include <gtest/gtest.h>
#include <openssl/sha.h>
#include <zstd.h>

#include <cstring>
#include <functional>
#include <memory>

#include "kasoku/ckks/serialization.hpp"
#include "kasoku/support/error.hpp"
#include "test_env.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using test::cvec;
using test::Env;
using test::precision_bits;

namespace {

constexpr std::size_t kHeader = 24, kDigest = 32;

// Bytes of one polynomial's packed residues (every limb nonzero).
std::size_t packed_bytes(const Context& ctx, std::size_t nq, std::size_t np) {
    std::size_t bits = 0;
    const auto& r = ctx.rns();
    for (std::size_t l = 0; l < nq + np; ++l)
        bits += 64 - static_cast<std::size_t>(__builtin_clzll(r.prime(r.prime_index(l, nq)) - 1));
    return ctx.n() * bits / 8;
}

// The bytes with a valid digest and length again after `edit` changed the payload (the parsers' checks behind the digest).
Bytes resealed(Bytes b, const std::function<void(Bytes&)>& edit) {
    b.resize(b.size() - kDigest);
    edit(b);
    const std::uint64_t len = b.size() - kHeader;
    std::memcpy(b.data() + 16, &len, 8);
    std::uint8_t d[kDigest];
    SHA256(b.data(), b.size(), d);
    b.insert(b.end(), d, d + kDigest);
    return b;
}

bool zero(const std::uint64_t* limb, std::size_t n) {
    return std::all_of(limb, limb + n, [](std::uint64_t x) { return x == 0; });
}

// Where a packed limb begins: after key id (8), scale (8), count (4), seed flag (1), shape (9) and the limb tags.
std::size_t first_limb_of_ciphertext(const Ciphertext& ct) { return kHeader + 8 + 8 + 4 + 1 + 9 + ct.polys[0].limbs(); }

Env& small_env() {
    static Env e(test::research_params(11, 60, 40, 3, 60, 2), {1}, {}, 7, 1);
    return e;
}

}  // namespace

TEST(Serialization, SecretKeyCiphertextIsItsFirstPartAndASeed) {
    Env& e = small_env();
    const cvec v = e.random(true);
    const Plaintext pt = e.enc.encode(v, e.ctx->default_scale(), e.ctx->user_level());
    const Ciphertext sym = e.encryptor.encrypt_symmetric(pt, e.sk), pub = e.encryptor.encrypt(pt, e.pk);
    const std::size_t nq = sym.polys[0].num_q(), one = 9 + nq + packed_bytes(*e.ctx, nq, 0);
    const Bytes bs = serialize(*e.ctx, sym), bp = serialize(*e.ctx, pub);
    EXPECT_EQ(bs.size(), kHeader + 21 + one + 32 + kDigest);
    EXPECT_EQ(bp.size(), kHeader + 21 + 2 * one + kDigest);
    const Ciphertext back = deserialize_ciphertext(*e.ctx, bs.data(), bs.size());
    EXPECT_EQ(back.polys[0], sym.polys[0]);
    EXPECT_EQ(back.polys[1], sym.polys[1]);
    EXPECT_EQ(back.seed, sym.seed);
    EXPECT_EQ(serialize(*e.ctx, back), bs);
    EXPECT_GT(precision_bits(e.decrypt(back), v), 20);
    // A ciphertext whose second part is no longer the seed's expansion is written in full (the seed is checked).
    Ciphertext changed = e.ev.add(sym, sym);
    changed.seed = sym.seed;
    const Bytes bc = serialize(*e.ctx, changed);
    EXPECT_EQ(bc.size(), bp.size());
    EXPECT_EQ(deserialize_ciphertext(*e.ctx, bc.data(), bc.size()).polys[1], changed.polys[1]);
    // Another seed in valid bytes gives another ciphertext (no error, no crash: the seed is data).
    const Bytes other = resealed(bs, [](Bytes& b) { b[b.size() - 1] ^= 1; });
    EXPECT_NE(deserialize_ciphertext(*e.ctx, other.data(), other.size()).polys[1], sym.polys[1]);
}

TEST(Serialization, ResiduesArePackedToTheirPrimesWidth) {
    Env& e = small_env();
    const Ciphertext ct = e.encrypt(e.random());
    const Bytes b = serialize(*e.ctx, ct);
    const std::size_t nq = ct.polys[0].num_q();
    // 60 + 40 + 40 + 40 bits per coefficient instead of 4 x 64
    EXPECT_EQ(packed_bytes(*e.ctx, nq, 0), e.ctx->n() * (60 + 3 * 40) / 8);
    EXPECT_EQ(deserialize_ciphertext(*e.ctx, b.data(), b.size()).polys[0], ct.polys[0]);
    // The parsers' checks behind the digest: a residue >= its prime, an unknown limb tag, a bad seed flag, a shape that
    // does not fit, trailing bytes.
    const std::size_t limb0 = first_limb_of_ciphertext(ct);
    const auto rejects = [&](const std::function<void(Bytes&)>& edit, const char* what) {
        const Bytes bad = resealed(b, edit);
        EXPECT_THROW(deserialize_ciphertext(*e.ctx, bad.data(), bad.size()), SerializationError) << what;
    };
    rejects([&](Bytes& x) { std::memset(x.data() + limb0, 0xff, 8); }, "residue >= q");
    rejects([&](Bytes& x) { x[limb0 - 1] = 7; }, "limb tag");
    rejects([&](Bytes& x) { x[kHeader + 20] = 2; }, "seed flag");
    rejects([&](Bytes& x) { x[kHeader + 20] = 1; }, "seed flag on a public-key ciphertext: the seed is missing");
    rejects([&](Bytes& x) { x[kHeader + 21] = 99; }, "shape");
    rejects([&](Bytes& x) { x.push_back(0); }, "trailing byte");
    rejects([&](Bytes& x) { x.resize(x.size() - 3); }, "cut");
    // A zero limb is one tag byte.
    Ciphertext z = ct;
    e.ctx->backend().upload(z.polys[1], [&](std::size_t l, std::uint64_t* d) {
        e.ctx->backend().download(ct.polys[1], [&](const std::uint64_t* const* limbs) {
            for (std::size_t i = 0; i < e.ctx->n(); ++i) d[i] = l == 1 ? 0 : limbs[l][i];
        });
    });
    const Bytes bz = serialize(*e.ctx, z);
    EXPECT_EQ(b.size() - bz.size(), e.ctx->n() * 40 / 8);
    EXPECT_EQ(deserialize_ciphertext(*e.ctx, bz.data(), bz.size()).polys[1], z.polys[1]);
}

TEST(Serialization, KeysAreSeededAndTheSecretKeyTernary) {
    Env& e = small_env();
    const auto& r = e.ctx->rns();
    const std::size_t nq = r.q_count(), np = r.p_count();
    // Public key: b over Q * p_0 and a seed.
    const Bytes pkb = serialize(*e.ctx, e.pk);
    EXPECT_EQ(pkb.size(), kHeader + 9 + 9 + nq + 1 + packed_bytes(*e.ctx, nq, 1) + 32 + kDigest);
    const PublicKey pk = deserialize_public_key(*e.ctx, pkb.data(), pkb.size());
    EXPECT_EQ(pk.a, e.pk.a);
    EXPECT_EQ(pk.b, e.pk.b);
    // A key-switching key: its b_j and one seed for every a_j.
    const SwitchKey& g = *e.ek->galois.begin()->second;
    const Bytes kb = serialize(*e.ctx, g);
    EXPECT_EQ(kb.size(), kHeader + 8 + 4 + 1 + 32 + r.dnum() * (9 + nq + np + packed_bytes(*e.ctx, nq, np)) + kDigest);
    const SwitchKey k = deserialize_switch_key(*e.ctx, kb.data(), kb.size());
    for (std::size_t j = 0; j < r.dnum(); ++j) {
        EXPECT_EQ(k.a[j], g.a[j]);
        EXPECT_EQ(k.b[j], g.b[j]);
    }
    // Not the seed's expansion any more: both parts in full.
    SwitchKey changed = g;
    std::swap(changed.a[0], changed.a[1]);
    const Bytes cb = serialize(*e.ctx, changed);
    EXPECT_EQ(cb.size(), kb.size() - 32 + r.dnum() * (9 + nq + np + packed_bytes(*e.ctx, nq, np)));
    EXPECT_EQ(deserialize_switch_key(*e.ctx, cb.data(), cb.size()).a[0], g.a[1]);
    // Secret key: 2 bits per coefficient.
    const Bytes sb = serialize(*e.ctx, e.sk);
    EXPECT_EQ(sb.size(), kHeader + 8 + 1 + e.ctx->n() / 4 + kDigest);
    const SecretKey sk = deserialize_secret_key(*e.ctx, sb.data(), sb.size());
    EXPECT_EQ(sk.poly(), e.sk.poly());
    const Bytes code3 = resealed(sb, [](Bytes& x) { x[kHeader + 9] |= 3; });
    EXPECT_THROW(deserialize_secret_key(*e.ctx, code3.data(), code3.size()), SerializationError);
    const Bytes form = resealed(sb, [](Bytes& x) { x[kHeader + 8] = 5; });
    EXPECT_THROW(deserialize_secret_key(*e.ctx, form.data(), form.size()), SerializationError);
    // Evaluation keys round trip and still rotate.
    const Bytes ekb = serialize(*e.ctx, *e.ek);
    auto ek = std::make_shared<const EvaluationKeys>(deserialize_evaluation_keys(*e.ctx, ekb.data(), ekb.size()));
    Evaluator ev(e.ctx, ek);
    const cvec v = e.random();
    cvec want(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) want[i] = v[(i + 1) % v.size()];
    EXPECT_GT(precision_bits(e.decrypt(ev.rotate(e.encrypt(v), 1)), want), 20);
    // A Galois key stored twice is refused: a set of one Galois key (key id 8, relinearisation flag 1, count 4, the
    // entry, encapsulation flag 1) with its entry repeated.
    EvaluationKeys one = *e.ek;
    one.relin = nullptr;
    one.galois = {*e.ek->galois.begin()};
    const Bytes ob = serialize(*e.ctx, one);
    EXPECT_EQ(deserialize_evaluation_keys(*e.ctx, ob.data(), ob.size()).galois.size(), 1u);
    const Bytes twice = resealed(ob, [](Bytes& x) {
        const Bytes entry(x.begin() + kHeader + 13, x.end() - 1);
        x[kHeader + 9] = 2;
        x.insert(x.end() - 1, entry.begin(), entry.end());
    });
    try {
        deserialize_evaluation_keys(*e.ctx, twice.data(), twice.size());
        ADD_FAILURE() << "a repeated Galois key was loaded";
    } catch (const SerializationError& err) {
        EXPECT_NE(std::string(err.what()).find("a Galois key appears twice"), std::string::npos) << err.what();
    }
}

// b_j rounded to a multiple of the first prime q_0 where that error is negligible: its limb there is zero (one tag byte on
// the wire) and key switching keeps its precision; where a digit is too large for P (T12, or three digits of 100 bits
// under P = 120 bits), not.
TEST(Serialization, KeysDropTheirFirstLimbWhereTheErrorIsNegligible) {
    Env rounded(test::with_dnum(test::research_params(10, 60, 40, 3, 60, 3), 4), {1}, {}, 3, 1);
    const auto& r = rounded.ctx->rns();
    const SwitchKey& g = *rounded.ek->galois.begin()->second;
    for (const SwitchKey* k : {&g, rounded.ek->relin.get()})
        for (const auto& b : k->b)
            rounded.ctx->backend().download(b, [&](const std::uint64_t* const* limbs) {
                EXPECT_TRUE(zero(limbs[0], r.n()));
                for (std::size_t l = 1; l < b.limbs(); ++l) EXPECT_FALSE(zero(limbs[l], r.n())) << l;
            });
    const Bytes kb = serialize(*rounded.ctx, g);
    const std::size_t q0_bytes = r.n() * 60 / 8;
    EXPECT_EQ(kb.size(), kHeader + 13 + 32 +
                             r.dnum() * (9 + r.q_count() + r.p_count() +
                                         packed_bytes(*rounded.ctx, r.q_count(), r.p_count()) - q0_bytes) +
                             kDigest);
    const cvec v = rounded.random(true);
    cvec rot(v.size()), sq(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        rot[i] = v[(i + 1) % v.size()];
        sq[i] = v[i] * v[i];
    }
    const Ciphertext ct = rounded.encrypt(v);
    EXPECT_GT(precision_bits(rounded.decrypt(rounded.ev.rotate(ct, 1)), rot), 20);
    EXPECT_GT(precision_bits(rounded.decrypt(rounded.ev.multiply(ct, ct)), sq), 20);
    std::vector<std::unique_ptr<Env>> others;
    others.push_back(std::make_unique<Env>(Parameters::named("T12"), std::vector<std::int64_t>{1},
                                           std::vector<std::uint64_t>{}, 3, 1));
    others.push_back(std::make_unique<Env>(test::research_params(11, 60, 40, 3, 60, 2), std::vector<std::int64_t>{1},
                                           std::vector<std::uint64_t>{}, 3, 1));
    for (const auto& other : others) {
        const auto& b = other->ek->galois.begin()->second->b[0];
        other->ctx->backend().download(
            b, [&](const std::uint64_t* const* limbs) { EXPECT_FALSE(zero(limbs[0], other->ctx->n())); });
    }
}

TEST(Serialization, ZstdRoundTripsAndRefusesBombs) {
    Env& e = small_env();
    const Ciphertext ct = e.encrypt(e.random());
    const Bytes plain = serialize(*e.ctx, ct), z = serialize(*e.ctx, ct, Compression::zstd);
    EXPECT_EQ(z[7], 1);
    EXPECT_EQ(deserialize_ciphertext(*e.ctx, z.data(), z.size()).polys[1], ct.polys[1]);
    EXPECT_LE(z.size(), plain.size() + 64);  // packed residues do not compress; the frame adds a few bytes
    const Bytes zp = serialize(Parameters::named("H16"), Compression::zstd);
    EXPECT_EQ(deserialize_parameters(zp.data(), zp.size()).levels, 20);
    const Bytes zk = serialize(*e.ctx, *e.ek, Compression::zstd);
    EXPECT_EQ(deserialize_evaluation_keys(*e.ctx, zk.data(), zk.size()).galois.size(), e.ek->galois.size());
    // Behind a valid digest: a frame that is not zstd, a corrupted frame, a frame claiming far more than its bytes can
    // hold (64 MiB of zeros in a few kB), an unknown flag.
    const auto rejects = [&](const Bytes& bad, const char* what) {
        EXPECT_THROW(deserialize_ciphertext(*e.ctx, bad.data(), bad.size()), SerializationError) << what;
    };
    rejects(resealed(z, [](Bytes& x) { x[kHeader] ^= 0xff; }), "magic of the frame");
    rejects(resealed(z, [](Bytes& x) { x[x.size() - 40] ^= 0x55; }), "frame body");
    rejects(resealed(z,
                     [](Bytes& x) {
                         std::vector<std::uint8_t> zeros(64u << 20), frame(ZSTD_compressBound(zeros.size()));
                         frame.resize(ZSTD_compress(frame.data(), frame.size(), zeros.data(), zeros.size(), 1));
                         x.resize(kHeader);
                         x.insert(x.end(), frame.begin(), frame.end());
                     }),
            "bomb");
    rejects(resealed(plain, [](Bytes& x) { x[7] = 2; }), "flag");
}

// The bound of the issue at H16: a secret-key ciphertext and a Galois key at most 0.35x the bytes of format 3 (8 bytes
// per residue, both parts).
TEST(Serialization, H16SecretKeyCiphertextAndGaloisKeyAtMostAThird) {
    auto ctx = Context::create(Parameters::named("H16"), 2);
    KeyGenerator kg(ctx);
    const SecretKey sk = kg.secret_key();
    const SwitchKey g = kg.galois_key(sk, ctx->galois_element(1));
    const auto& r = ctx->rns();
    const std::size_t n = ctx->n(), nq = r.q_count(), np = r.p_count();
    const std::size_t v3_key = 24 + 8 + 4 + r.dnum() * 2 * (9 + (nq + np) * n * 8) + 32;
    const std::size_t v3_ct = 24 + 20 + 2 * (9 + nq * n * 8) + 32;
    Encoder enc(ctx);
    const Ciphertext ct = Encryptor(ctx).encrypt_symmetric(
        enc.encode(cvec(ctx->slots(), 0.5), ctx->default_scale(), ctx->user_level()), sk);
    const double key_ratio = static_cast<double>(serialize(*ctx, g).size()) / static_cast<double>(v3_key);
    const double ct_ratio = static_cast<double>(serialize(*ctx, ct).size()) / static_cast<double>(v3_ct);
    EXPECT_EQ(v3_key, 88080506u);  // format 3's Galois key at H16, as measured then (docs/PERFORMANCE.md)
    EXPECT_LE(key_ratio, 0.35);
    EXPECT_LE(ct_ratio, 0.35);
    RecordProperty("galois_key_ratio", std::to_string(key_ratio));
    RecordProperty("ciphertext_ratio", std::to_string(ct_ratio));
}
