#include "kasoku/mp/multiparty.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numbers>
#include <set>
#include <string>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::mp {

using ckks::Ciphertext;
using ckks::Context;
using ckks::flooding_noise;
using ckks::flooding_precision_bits;
using ckks::flooding_sigma;
using ckks::rounding_noise_bound;
using rns::RnsPoly;

const char* protocol_name(Protocol p) {
    switch (p) {
        case Protocol::public_key: return "public-key generation (CKG)";
        case Protocol::relin_round1: return "relinearisation-key generation, round 1 (RKG)";
        case Protocol::relin_round2: return "relinearisation-key generation, round 2 (RKG)";
        case Protocol::galois_key: return "Galois-key generation (GKG)";
        case Protocol::decryption: return "collective decryption";
        case Protocol::key_switch: return "public-key switching (PCKS)";
        case Protocol::shamir: return "Shamir sharing";
        case Protocol::refresh: return "refresh";
    }
    return "an unknown protocol";
}

namespace {

// SHA-256 of the pieces, first 8 bytes.
class Digest {
public:
    Digest() : c_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
        if (!c_ || EVP_DigestInit_ex(c_.get(), EVP_sha256(), nullptr) != 1) throw Error("SHA-256 failed to start");
    }
    template <class T>
    Digest& add(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        return bytes(&v, sizeof v);
    }
    Digest& bytes(const void* p, std::size_t n) {
        EVP_DigestUpdate(c_.get(), p, n);
        return *this;
    }
    Digest& poly(const rns::Backend& be, const RnsPoly& p) {
        add(p.num_q()).add(p.num_p());
        be.download(p, [&](const std::uint64_t* const* limbs) {
            for (std::size_t l = 0; l < p.limbs(); ++l) bytes(limbs[l], p.n() * sizeof(std::uint64_t));
        });
        return *this;
    }
    // The whole digest (32 bytes).
    Seed seed() {
        Seed d;
        unsigned len = 0;
        EVP_DigestFinal_ex(c_.get(), d.data(), &len);
        return d;
    }
    std::uint64_t value() {
        const Seed d = seed();
        std::uint64_t v;
        std::memcpy(&v, d.data(), sizeof v);
        return v;
    }

private:
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> c_;
};

// The tag of a decryption or key-switching share: the ciphertext's c_1, level and scale, the group (empty: N-of-N)
// and the receiver's key.
std::uint64_t ciphertext_tag(const Context& ctx, const Ciphertext& ct, const std::vector<std::uint32_t>& group,
                             const ckks::PublicKey* to) {
    Digest d;
    d.add(ct.scale).add(ct.key_id).poly(ctx.backend(), ct.polys.at(1));
    for (std::uint32_t g : group) d.add(g);
    if (to) d.add(to->key_id).poly(ctx.backend(), to->b);
    return d.value();
}

// A polynomial whose limb over prime q is the constant c(q) (NTT form: every word c(q)).
template <class F>
RnsPoly constant_poly(const Context& ctx, std::size_t nq, std::size_t np, F&& c) {
    const auto& r = ctx.rns();
    RnsPoly p = ctx.backend().poly(nq, np, true);
    ctx.backend().upload(p, [&](std::size_t l, std::uint64_t* d) {
        const std::uint64_t v = c(r.prime(r.prime_index(l, nq)));
        std::fill(d, d + ctx.n(), v);
    });
    return p;
}

// Lagrange coefficient of x_j at 0 over the group's points, mod q: prod_{m != j} x_m / (x_m - x_j).
std::uint64_t lagrange(std::uint32_t j, const std::vector<std::uint32_t>& group, std::uint64_t q) {
    const arith::Modulus m(q);
    std::uint64_t num = 1, den = 1;
    for (std::uint32_t x : group) {
        if (x == j) continue;
        num = arith::mul_mod(num, x % q, m);
        den = arith::mul_mod(den, (x + q - j % q) % q, m);
    }
    return arith::mul_mod(num, arith::inv_mod(den, m), m);
}

// A multiword integer (little-endian 64-bit words) mod p, Horner from the top word: the refresh's masks.
std::uint64_t mod_small(const std::vector<std::uint64_t>& a, std::uint64_t p) {
    unsigned __int128 r = 0;
    for (std::size_t i = a.size(); i-- > 0;) r = ((r << 64) | a[i]) % p;
    return static_cast<std::uint64_t>(r);
}

// A group of parties: sorted, distinct ids of the session, at least the threshold.
void check_group(const Session& session, const std::vector<std::uint32_t>& group, const char* op) {
    if (group.empty()) return;
    if (session.threshold == 0)
        throw ParameterError(std::string(op) +
                             ": a group of parties needs a threshold session (Session.threshold = t "
                             "and every party's shamir_shares exchanged first)");
    if (!std::is_sorted(group.begin(), group.end()) || std::adjacent_find(group.begin(), group.end()) != group.end())
        throw ParameterError(std::string(op) + ": the group must list distinct party ids in increasing order");
    if (group.front() < 1 || group.back() > session.parties)
        throw ParameterError(std::string(op) + ": the group names a party outside 1.." +
                             std::to_string(session.parties));
    if (group.size() < session.threshold)
        throw ParameterError(std::string(op) + ": a group of " + std::to_string(group.size()) +
                             " parties is below the threshold " + std::to_string(session.threshold) +
                             "; at least t parties must take part");
}

// The shares of one protocol round: the same context, session, protocol and tag, distinct parties of the session.
// Returns the parties, sorted.
std::vector<std::uint32_t> check_shares(const Context& ctx, const Session& session, const Shares& shares, Protocol p,
                                        std::optional<std::uint64_t> tag, const char* op) {
    session.check();
    if (shares.empty()) throw ParameterError(std::string(op) + ": no shares given");
    std::vector<std::uint32_t> ids;
    for (const Share* sp : shares) {
        if (!sp) throw ParameterError(std::string(op) + ": a share is missing (null)");
        const Share& s = *sp;
        if (s.fingerprint != ctx.fingerprint())
            throw ParameterError(std::string(op) + ": the share of party " + std::to_string(s.party) +
                                 " was made with other parameters (another context)");
        if (s.session != session.key_id())
            throw ParameterError(std::string(op) + ": the share of party " + std::to_string(s.party) +
                                 " belongs to another session (another CRS)");
        if (s.protocol != p)
            throw ParameterError(std::string(op) + ": the share of party " + std::to_string(s.party) + " is of " +
                                 protocol_name(s.protocol) + ", not of " + protocol_name(p));
        if (tag && s.tag != *tag)
            throw ParameterError(std::string(op) + ": the share of party " + std::to_string(s.party) +
                                 " was made for another " + (p == Protocol::galois_key ? "Galois element" : "object"));
        if (s.party < 1 || s.party > session.parties)
            throw ParameterError(std::string(op) + ": party " + std::to_string(s.party) + " is not one of the " +
                                 std::to_string(session.parties) + " parties");
        ids.push_back(s.party);
    }
    std::sort(ids.begin(), ids.end());
    const auto twice = std::adjacent_find(ids.begin(), ids.end());
    if (twice != ids.end())
        throw ParameterError(std::string(op) + ": party " + std::to_string(*twice) + " sent two shares");
    return ids;
}

void require_all(const Session& session, const std::vector<std::uint32_t>& ids, const char* op) {
    if (ids.size() != session.parties)
        throw ParameterError(std::string(op) + ": every one of the " + std::to_string(session.parties) +
                             " parties must send a share; " + std::to_string(ids.size()) + " did");
}

// The sum of the shares' polynomials (all of one shape, checked).
std::vector<RnsPoly> sum_polys(const Context& ctx, const Shares& shares, const char* op) {
    std::vector<RnsPoly> sum = shares[0]->polys;
    for (std::size_t i = 1; i < shares.size(); ++i) {
        if (shares[i]->polys.size() != sum.size())
            throw ParameterError(std::string(op) + ": the shares have different numbers of polynomials");
        for (std::size_t k = 0; k < sum.size(); ++k) {
            if (!shares[i]->polys[k].same_shape(sum[k]) || !shares[i]->polys[k].ntt_form())
                throw ParameterError(std::string(op) + ": the shares' polynomials have different shapes");
            ctx.backend().add(sum[k], shares[i]->polys[k], sum[k], {});
        }
    }
    return sum;
}

// `count` polynomials over nq q-limbs and np special limbs of this ring, in NTT form: what a key's sum of shares must
// be before it is read as one (a share from another party is untrusted input).
void require_key_shape(const Context& ctx, const std::vector<RnsPoly>& polys, std::size_t count, std::size_t nq,
                       std::size_t np, const std::string& what) {
    if (polys.size() != count)
        throw ParameterError(what + " has " + std::to_string(polys.size()) + " polynomials, not the " +
                             std::to_string(count) + " of this context's key");
    for (const RnsPoly& x : polys)
        if (x.n() != ctx.n() || x.num_q() != nq || x.num_p() != np || !x.ntt_form())
            throw ParameterError(what + " has polynomials of the wrong shape (" + std::to_string(x.num_q()) + " + " +
                                 std::to_string(x.num_p()) + " limbs; this context's key has " + std::to_string(nq) +
                                 " + " + std::to_string(np) + ")");
}

// Which decryption or key-switching shares these are: N-of-N (tag of the empty group) or of the group of their
// parties (at least t).
void check_group_shares(const Context& ctx, const Session& session, const Shares& shares, const Ciphertext& ct,
                        const ckks::PublicKey* to, Protocol p, const char* op) {
    const std::vector<std::uint32_t> ids = check_shares(ctx, session, shares, p, std::nullopt, op);
    if (shares[0]->tag == ciphertext_tag(ctx, ct, {}, to)) {
        for (const Share* s : shares)
            if (s->tag != shares[0]->tag)
                throw ParameterError(std::string(op) + ": the shares were made for different ciphertexts or groups");
        require_all(session, ids, op);
        return;
    }
    const std::uint64_t tag = ciphertext_tag(ctx, ct, ids, to);
    for (const Share* s : shares)
        if (s->tag != tag)
            throw ParameterError(std::string(op) + ": the share of party " + std::to_string(s->party) +
                                 " was made for another ciphertext" + (to ? " or receiver" : "") +
                                 ", or for another group than the parties whose shares are here");
    check_group(session, ids, op);
}

void check_ciphertext(const Context& ctx, const Session& session, const Ciphertext& ct, const char* op) {
    if (ct.context_uid != ctx.uid() || ct.polys.empty() || ct.level() > ctx.max_level())
        throw ParameterError(std::string(op) + ": the ciphertext belongs to another context or is malformed");
    if (ct.size() != 2)
        throw ParameterError(std::string(op) + ": relinearize the ciphertext first (it has " +
                             std::to_string(ct.size()) + " parts)");
    if (ct.key_id != session.key_id())
        throw ParameterError(std::string(op) +
                             ": the ciphertext is not under this session's collective key (another key id)");
}

}  // namespace

// ---- Shares as bytes

ckks::Bytes to_bytes(const Context& ctx, const Share& share, ckks::Compression compression) {
    if (share.fingerprint != ctx.fingerprint())
        throw ParameterError("to_bytes: the share was made with other parameters than this context's");
    ckks::Record r;
    r.type = kShareRecord;
    r.words = {share.session, share.party, static_cast<std::uint64_t>(share.protocol), share.tag};
    r.polys = share.polys;
    return ckks::serialize(ctx, r, compression);
}

Share share_from_bytes(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    // The most polynomials a share holds: RKG's two per digit.
    ckks::Record r = ckks::deserialize_record(ctx, data, size, kShareRecord, 2 * ctx.rns().dnum());
    const auto bad = [](const std::string& what) { throw SerializationError("cannot load a share: " + what); };
    if (r.words.size() != 4) bad("it has " + std::to_string(r.words.size()) + " metadata words, not 4");
    if (r.words[1] > 0xffffffffull) bad("party id out of range");
    if (r.words[2] < static_cast<std::uint64_t>(Protocol::public_key) ||
        r.words[2] > static_cast<std::uint64_t>(Protocol::refresh))
        bad("unknown protocol " + std::to_string(r.words[2]));
    for (const RnsPoly& p : r.polys)
        if (!p.ntt_form()) bad("a share's polynomials are in NTT form");
    Share s;
    s.fingerprint = ctx.fingerprint();
    s.session = r.words[0];
    s.party = static_cast<std::uint32_t>(r.words[1]);
    s.protocol = static_cast<Protocol>(r.words[2]);
    s.tag = r.words[3];
    s.polys = std::move(r.polys);
    return s;
}

// ---- Session

Session Session::random(std::uint32_t parties, std::uint32_t threshold) {
    Session s{random_seed(), parties, threshold};
    s.check();
    return s;
}

void Session::check() const {
    if (parties < 2)
        throw ParameterError("a multiparty session needs at least 2 parties, not " + std::to_string(parties));
    if (threshold != 0 && (threshold < 2 || threshold > parties))
        throw ParameterError("the threshold t must be 0 (N-of-N) or in 2.." + std::to_string(parties) + ", not " +
                             std::to_string(threshold));
}

Seed Session::common(Protocol p, std::uint64_t tag) const {
    const char label[] = "kasoku multiparty CRS";
    return Digest().bytes(label, sizeof label).bytes(crs.data(), crs.size()).add(p).add(tag).seed();
}

std::uint64_t Session::key_id() const {
    Digest d;
    const char label[] = "kasoku multiparty key id";
    return d.bytes(label, sizeof label).bytes(crs.data(), crs.size()).add(parties).value();
}

// ---- Smudging

double default_noise_bound(const Context& ctx, const Session& session) {
    return rounding_noise_bound(ctx.n(), 2.0 / 3.0 * session.parties);
}

double Smudging::sigma(const Context& ctx, const Session& session) const {
    if (!(noise_bound >= 0) || !std::isfinite(noise_bound))
        throw ParameterError("noise_bound must be a finite number >= 0 (0: the default)");
    return flooding_sigma(ctx.n(), noise_bound > 0 ? noise_bound : default_noise_bound(ctx, session),
                          statistical_security, queries);
}

double decryption_precision_bits(const Context& ctx, const Session& session, const Smudging& smudging, double scale,
                                 std::size_t group) {
    return flooding_precision_bits(ctx.n(), smudging.sigma(ctx, session), scale, group);
}

namespace {
// The shares that reveal a ciphertext's values (decryption, key switch to a receiver, refresh) carry the smudging
// noise of every member: refused where it would leave less than one bit of the values.
void check_not_drowned(const Context& ctx, const Session& session, const Smudging& smudging, const Ciphertext& ct,
                       const std::vector<std::uint32_t>& group, const char* op) {
    const std::size_t members = group.empty() ? session.parties : group.size();
    if (decryption_precision_bits(ctx, session, smudging, ct.scale, members) >= 1.0) return;
    throw ParameterError(
        std::string(op) + ": the smudging noise (sigma = 2^" + std::to_string(std::log2(smudging.sigma(ctx, session))) +
        " per party) would drown the values of a ciphertext at scale 2^" + std::to_string(std::log2(ct.scale)) +
        "; use a ciphertext on a larger scale (e.g. before its last rescale), or lower "
        "statistical_security or queries");
}
}  // namespace

// ---- Party

Party::Party(ckks::ContextPtr ctx, const Session& session, std::uint32_t id, Exec exec)
    : ctx_(std::move(ctx)), session_(session), id_(id) {
    session_.check();
    if (id < 1 || id > session.parties)
        throw ParameterError("a party's id must be in 1.." + std::to_string(session.parties) + ", not " +
                             std::to_string(id));
    s_ = ckks::KeyGenerator(ctx_).secret_key(exec);
}

Party::~Party() {
    if (u_) u_->wipe();
    if (shamir_) shamir_->wipe();
}

Share Party::make_share(Protocol p, std::uint64_t tag) const {
    Share s;
    s.fingerprint = ctx_->fingerprint();
    s.session = session_.key_id();
    s.party = id_;
    s.protocol = p;
    s.tag = tag;
    return s;
}

Share Party::public_key_share(Exec exec) const {
    Share out = make_share(Protocol::public_key, 0);
    ckks::PublicKey pk = ckks::KeyGenerator(ctx_).public_key(s_, session_.common(Protocol::public_key), exec);
    out.polys.push_back(std::move(pk.b));
    return out;
}

Share Party::relin_round1(Exec exec) {
    exec = ctx_->exec(exec);
    const auto& r = ctx_->rns();
    const auto& be = ctx_->backend();
    const std::size_t nq = r.q_count(), np = r.p_count();
    if (u_) u_->wipe();
    u_ = ckks::ternary_poly(*ctx_, nq, np, exec);
    const Seed common = session_.common(Protocol::relin_round1);
    Share out = make_share(Protocol::relin_round1, 0);
    for (std::size_t j = 0; j < r.digits_at(nq); ++j) {
        const RnsPoly a = ckks::uniform_poly(*ctx_, common, j, nq, np);
        RnsPoly h0, h1;
        be.mul(a, *u_, h0, exec);
        be.negate(h0, h0, exec);
        ctx_->keyswitcher().add_gadget(s_.poly(), j, h0, exec);  // -u a_j + P g_j s_i
        be.add(h0, ckks::error_poly(*ctx_, nq, np, exec), h0, exec);
        be.mul(a, s_.poly(), h1, exec);  // s_i a_j + e'
        be.add(h1, ckks::error_poly(*ctx_, nq, np, exec), h1, exec);
        out.polys.push_back(std::move(h0));
        out.polys.push_back(std::move(h1));
    }
    return out;
}

Share Party::relin_round2(const Share& round1_sum, Exec exec) {
    if (!u_) throw ParameterError("relin_round2: this party has not run relin_round1 (or already ran round 2 for it)");
    if (round1_sum.protocol != Protocol::relin_round1 || round1_sum.party != 0 ||
        round1_sum.session != session_.key_id() || round1_sum.fingerprint != ctx_->fingerprint())
        throw ParameterError(
            "relin_round2: give it the sum of every party's round 1 of this session "
            "(aggregate_relin_round1), not one party's share");
    exec = ctx_->exec(exec);
    const auto& r = ctx_->rns();
    const auto& be = ctx_->backend();
    const std::size_t nq = r.q_count(), np = r.p_count(), digits = r.digits_at(nq);
    require_key_shape(*ctx_, round1_sum.polys, 2 * digits, nq, np, "relin_round2: the round-1 sum");
    RnsPoly u_minus_s;
    be.sub(*u_, s_.poly(), u_minus_s, exec);
    Share out = make_share(Protocol::relin_round2, 0);
    for (std::size_t j = 0; j < digits; ++j) {
        const RnsPoly &h0 = round1_sum.polys[2 * j], &h1 = round1_sum.polys[2 * j + 1];
        RnsPoly g0, g1;
        be.mul(h0, s_.poly(), g0, exec);  // s_i h0_j + e
        be.add(g0, ckks::error_poly(*ctx_, nq, np, exec), g0, exec);
        be.mul(h1, u_minus_s, g1, exec);  // (u_i - s_i) h1_j + e'
        be.add(g1, ckks::error_poly(*ctx_, nq, np, exec), g1, exec);
        out.polys.push_back(std::move(g0));
        out.polys.push_back(std::move(g1));
    }
    u_minus_s.wipe();
    u_->wipe();
    u_.reset();
    return out;
}

Share Party::galois_key_share(std::uint64_t galois_elt, Exec exec) const {
    ctx_->check_galois_element(galois_elt, "galois_key_share", false);
    Share out = make_share(Protocol::galois_key, galois_elt);
    ckks::SwitchKey k =
        ckks::KeyGenerator(ctx_).galois_key(s_, galois_elt, session_.common(Protocol::galois_key, galois_elt), exec);
    out.polys = std::move(k.b);
    return out;
}

RnsPoly Party::secret_for(const std::vector<std::uint32_t>& group, std::size_t num_q, Exec exec) const {
    if (group.empty()) {
        RnsPoly s = s_.poly();
        s.truncate(num_q);
        return s;
    }
    if (!shamir_)
        throw ParameterError(
            "this party has no threshold share yet: exchange shamir_shares and call "
            "receive_shamir_shares first");
    if (!std::binary_search(group.begin(), group.end(), id_))
        throw ParameterError("party " + std::to_string(id_) + " is not in the group it was asked to act for");
    RnsPoly s = *shamir_;
    s.truncate(num_q);
    const RnsPoly lambda = constant_poly(*ctx_, num_q, 0, [&](std::uint64_t q) { return lagrange(id_, group, q); });
    ctx_->backend().mul(s, lambda, s, exec);
    return s;
}

Share Party::decryption_share(const Ciphertext& ct, const Smudging& smudging, const std::vector<std::uint32_t>& group,
                              Exec exec) const {
    check_ciphertext(*ctx_, session_, ct, "decryption_share");
    check_group(session_, group, "decryption_share");
    check_not_drowned(*ctx_, session_, smudging, ct, group, "decryption_share");
    exec = ctx_->exec(exec);
    const auto& be = ctx_->backend();
    const std::size_t nq = ct.polys[0].num_q();
    Prng prng;
    const RnsPoly s = secret_for(group, nq, exec);
    RnsPoly h;
    be.mul(ct.polys[1], s, h, exec);
    be.add(h, flooding_noise(*ctx_, smudging.sigma(*ctx_, session_), nq, prng, exec), h, exec);
    Share out = make_share(Protocol::decryption, ciphertext_tag(*ctx_, ct, group, nullptr));
    out.polys.push_back(std::move(h));
    return out;
}

Share Party::key_switch_share(const Ciphertext& ct, const ckks::PublicKey& to, const Smudging& smudging,
                              const std::vector<std::uint32_t>& group, Exec exec) const {
    check_ciphertext(*ctx_, session_, ct, "key_switch_share");
    check_group(session_, group, "key_switch_share");
    if (to.context_uid != ctx_->uid())
        throw ParameterError("key_switch_share: the receiver's key is of another context");
    check_not_drowned(*ctx_, session_, smudging, ct, group, "key_switch_share");
    exec = ctx_->exec(exec);
    const auto& be = ctx_->backend();
    const std::size_t nq = ct.polys[0].num_q();
    Prng prng;
    const RnsPoly s = secret_for(group, nq, exec);
    RnsPoly u = ckks::ternary_poly(*ctx_, nq, 0, exec);
    RnsPoly b = to.b, a = to.a;
    b.truncate(nq);
    a.truncate(nq);
    RnsPoly h0, ub, h1;
    be.mul(ct.polys[1], s, h0, exec);  // s c_1 + u b' + flood
    be.mul(u, b, ub, exec);
    be.add(h0, ub, h0, exec);
    be.add(h0, flooding_noise(*ctx_, smudging.sigma(*ctx_, session_), nq, prng, exec), h0, exec);
    be.mul(u, a, h1, exec);  // u a' + e
    be.add(h1, ckks::error_poly(*ctx_, nq, 0, exec), h1, exec);
    u.wipe();
    Share out = make_share(Protocol::key_switch, ciphertext_tag(*ctx_, ct, group, &to));
    out.polys.push_back(std::move(h0));
    out.polys.push_back(std::move(h1));
    return out;
}

Share Party::refresh_share(const Ciphertext& ct, const Smudging& smudging, double value_bound,
                           const std::vector<std::uint32_t>& group, Exec exec) const {
    check_ciphertext(*ctx_, session_, ct, "refresh_share");
    check_group(session_, group, "refresh_share");
    if (!(value_bound > 0) || !std::isfinite(value_bound))
        throw ParameterError("refresh_share: value_bound must be a positive number");
    exec = ctx_->exec(exec);
    const auto& r = ctx_->rns();
    const auto& be = ctx_->backend();
    const std::size_t nq = ct.polys[0].num_q(), top = r.q_count(), n = ctx_->n();
    // The masks' bits k: 2^k <= Q_l / (4 N), so that N of them and the values stay below Q_l / 2.
    const int k = static_cast<int>(
        std::floor(ctx_->log_modulus(ct.level()) - 2.0 - std::log2(static_cast<double>(session_.parties))));
    // What the mask hides, per coefficient: the message (|coefficients| <= value_bound scale) and the parties' floods.
    const std::size_t members = group.empty() ? session_.parties : group.size();
    const double sigma = smudging.sigma(*ctx_, session_);
    const double hidden = std::log2(value_bound * ct.scale + 6.0 * sigma * std::sqrt(static_cast<double>(members)));
    const double room = (k - 1) - hidden - std::log2(static_cast<double>(n));
    if (room < smudging.statistical_security)
        throw ParameterError("refresh_share: the ciphertext's modulus at level " + std::to_string(ct.level()) +
                             " leaves the mask " + std::to_string(static_cast<int>(std::floor(room))) + " bits, " +
                             std::to_string(smudging.statistical_security) +
                             " needed to hide the values; refresh it at a higher level (about " +
                             std::to_string(static_cast<int>(std::ceil(smudging.statistical_security - room))) +
                             " more bits of modulus)");
    check_not_drowned(*ctx_, session_, smudging, ct, group, "refresh_share");
    // The mask M = X - 2^(k-1), X uniform in [0, 2^k): its residues mod every prime of Q_L (h0 takes the first l + 1).
    Prng prng;
    const std::size_t words = static_cast<std::size_t>(k) / 64 + 1;
    std::vector<std::uint64_t> half(words, 0);
    half[static_cast<std::size_t>(k - 1) / 64] = std::uint64_t{1} << ((k - 1) % 64);
    std::vector<std::uint64_t> half_mod(top);
    for (std::size_t i = 0; i < top; ++i) half_mod[i] = mod_small(half, r.q_primes()[i]);
    std::vector<std::vector<std::uint64_t>> mask(top, std::vector<std::uint64_t>(n));
    std::vector<std::uint64_t> x(words);
    for (std::size_t c = 0; c < n; ++c) {
        for (auto& w : x) w = prng.next_u64();
        if (k % 64) x.back() &= (std::uint64_t{1} << (k % 64)) - 1;  // k bits
        else x.back() = 0;
        for (std::size_t i = 0; i < top; ++i) {
            const std::uint64_t q = r.q_primes()[i], xm = mod_small(x, q);
            mask[i][c] = xm >= half_mod[i] ? xm - half_mod[i] : xm + q - half_mod[i];
        }
    }
    secure_wipe(x.data(), x.size() * sizeof x[0]);
    const auto upload_mask = [&](std::size_t limbs, bool negate) {
        RnsPoly m = be.poly(limbs, 0, false);
        be.upload(m, [&](std::size_t l, std::uint64_t* d) {
            const std::uint64_t q = r.q_primes()[l];
            for (std::size_t c = 0; c < n; ++c) d[c] = negate && mask[l][c] ? q - mask[l][c] : mask[l][c];
        });
        be.to_ntt(m, exec);
        return m;
    };
    const RnsPoly s = secret_for(group, nq, exec), s_top = secret_for(group, top, exec);
    RnsPoly h0, h1;
    be.mul(ct.polys[1], s, h0, exec);  // s c_1 + M + flood over Q_l
    be.add(h0, upload_mask(nq, false), h0, exec);
    be.add(h0, flooding_noise(*ctx_, sigma, nq, prng, exec), h0, exec);
    const RnsPoly a = ckks::uniform_poly(
        *ctx_, session_.common(Protocol::refresh, ciphertext_tag(*ctx_, ct, {}, nullptr)), 0, top, 0);
    be.mul(a, s_top, h1, exec);  // -s a - M + e over Q_L
    be.negate(h1, h1, exec);
    be.add(h1, upload_mask(top, true), h1, exec);
    be.add(h1, ckks::error_poly(*ctx_, top, 0, exec), h1, exec);
    for (auto& m : mask) secure_wipe(m.data(), m.size() * sizeof m[0]);
    Share out = make_share(Protocol::refresh, ciphertext_tag(*ctx_, ct, group, nullptr));
    out.polys.push_back(std::move(h0));
    out.polys.push_back(std::move(h1));
    return out;
}

std::vector<Share> Party::shamir_shares(Exec exec) const {
    if (session_.threshold == 0)
        throw ParameterError("shamir_shares: the session has no threshold (Session.threshold = t, 2 <= t <= N)");
    exec = ctx_->exec(exec);
    const auto& r = ctx_->rns();
    const auto& be = ctx_->backend();
    const std::size_t nq = r.q_count(), np = r.p_count();
    // s_i + r_1 x + ... + r_{t-1} x^{t-1}, r_k uniform from a fresh seed (secret: wiped with the seed)
    Seed seed = random_seed();
    std::vector<RnsPoly> coef;
    for (std::uint32_t k = 1; k < session_.threshold; ++k) coef.push_back(ckks::uniform_poly(*ctx_, seed, k, nq, np));
    secure_wipe(seed.data(), seed.size());
    std::vector<Share> out;
    for (std::uint32_t x = 1; x <= session_.parties; ++x) {
        const RnsPoly xs = constant_poly(*ctx_, nq, np, [&](std::uint64_t q) { return x % q; });
        RnsPoly acc = coef.empty() ? s_.poly() : coef.back();
        for (std::size_t k = coef.size(); k-- > 0;) {  // Horner: ((r_{t-1} x + r_{t-2}) x + ...) x + s_i
            be.mul(acc, xs, acc, exec);
            be.add(acc, k == 0 ? s_.poly() : coef[k - 1], acc, exec);
        }
        Share sh = make_share(Protocol::shamir, x);  // tag: the recipient
        sh.polys.push_back(std::move(acc));
        out.push_back(std::move(sh));
    }
    for (auto& c : coef) c.wipe();
    return out;
}

void Party::receive_shamir_shares(const Shares& received, Exec exec) {
    const std::vector<std::uint32_t> ids =
        check_shares(*ctx_, session_, received, Protocol::shamir, id_, "receive_shamir_shares");
    require_all(session_, ids, "receive_shamir_shares");
    std::vector<RnsPoly> sum = sum_polys(*ctx_, received, "receive_shamir_shares");
    if (sum.size() != 1 || !sum[0].same_shape(s_.poly()))
        throw ParameterError("receive_shamir_shares: the shares have the wrong shape");
    if (shamir_) shamir_->wipe();
    shamir_ = std::move(sum[0]);
}

// ---- Aggregation

ckks::PublicKey aggregate_public_key(const ckks::ContextPtr& ctxp, const Session& session, const Shares& shares) {
    const Context& ctx = *ctxp;
    require_all(session, check_shares(ctx, session, shares, Protocol::public_key, 0, "aggregate_public_key"),
                "aggregate_public_key");
    std::vector<RnsPoly> sum = sum_polys(ctx, shares, "aggregate_public_key");
    require_key_shape(ctx, sum, 1, ctx.rns().q_count(), 1, "aggregate_public_key: the shares' sum");
    ckks::PublicKey pk;
    pk.context_uid = ctx.uid();
    pk.key_id = session.key_id();
    pk.seed = session.common(Protocol::public_key);
    pk.b = std::move(sum[0]);
    pk.a = ckks::uniform_poly(ctx, *pk.seed, 0, ctx.rns().q_count(), 1);
    return pk;
}

Share aggregate_relin_round1(const ckks::ContextPtr& ctxp, const Session& session, const Shares& shares) {
    const Context& ctx = *ctxp;
    require_all(session, check_shares(ctx, session, shares, Protocol::relin_round1, 0, "aggregate_relin_round1"),
                "aggregate_relin_round1");
    Share out;
    out.fingerprint = shares[0]->fingerprint;
    out.session = shares[0]->session;
    out.protocol = Protocol::relin_round1;
    out.party = 0;  // the sum: no party's, accepted by relin_round2
    out.polys = sum_polys(ctx, shares, "aggregate_relin_round1");
    const auto& r = ctx.rns();
    require_key_shape(ctx, out.polys, 2 * r.digits_at(r.q_count()), r.q_count(), r.p_count(),
                      "aggregate_relin_round1: the shares' sum");
    return out;
}

ckks::SwitchKey aggregate_relin_key(const ckks::ContextPtr& ctxp, const Session& session, const Share& round1_sum,
                                    const Shares& round2) {
    const Context& ctx = *ctxp;
    require_all(session, check_shares(ctx, session, round2, Protocol::relin_round2, 0, "aggregate_relin_key"),
                "aggregate_relin_key");
    if (round1_sum.protocol != Protocol::relin_round1 || round1_sum.session != session.key_id() ||
        round1_sum.fingerprint != ctx.fingerprint())
        throw ParameterError("aggregate_relin_key: round1_sum is not this session's sum of round 1");
    std::vector<RnsPoly> sum = sum_polys(ctx, round2, "aggregate_relin_key");
    const auto& r = ctx.rns();
    const std::size_t count = 2 * r.digits_at(r.q_count());
    require_key_shape(ctx, round1_sum.polys, count, r.q_count(), r.p_count(), "aggregate_relin_key: round1_sum");
    require_key_shape(ctx, sum, count, r.q_count(), r.p_count(), "aggregate_relin_key: the round-2 shares' sum");
    ckks::SwitchKey k;
    k.context_uid = ctx.uid();
    k.key_id = session.key_id();
    for (std::size_t j = 0; 2 * j < sum.size(); ++j) {
        RnsPoly b;
        ctx.backend().add(sum[2 * j], sum[2 * j + 1], b, {});  // s^2 P g_j - s h1_j + noise
        k.b.push_back(std::move(b));
        k.a.push_back(round1_sum.polys[2 * j + 1]);  // h1_j = s a_j + e
    }
    return k;
}

ckks::SwitchKey aggregate_galois_key(const ckks::ContextPtr& ctxp, const Session& session, std::uint64_t galois_elt,
                                     const Shares& shares) {
    const Context& ctx = *ctxp;
    require_all(session, check_shares(ctx, session, shares, Protocol::galois_key, galois_elt, "aggregate_galois_key"),
                "aggregate_galois_key");
    ckks::SwitchKey k;
    k.context_uid = ctx.uid();
    k.key_id = session.key_id();
    k.seed = session.common(Protocol::galois_key, galois_elt);
    k.b = sum_polys(ctx, shares, "aggregate_galois_key");
    const auto& r = ctx.rns();
    require_key_shape(ctx, k.b, r.digits_at(r.q_count()), r.q_count(), r.p_count(),
                      "aggregate_galois_key: the shares' sum");
    for (std::size_t j = 0; j < k.b.size(); ++j)
        k.a.push_back(ckks::uniform_poly(ctx, *k.seed, j, k.b[j].num_q(), k.b[j].num_p()));
    return k;
}

ckks::EvaluationKeys evaluation_keys(const ckks::ContextPtr& ctxp, const Session& session,
                                     std::optional<ckks::SwitchKey> relin,
                                     std::vector<std::pair<std::uint64_t, ckks::SwitchKey>> galois) {
    const Context& ctx = *ctxp;
    ckks::EvaluationKeys ek;
    ek.context_uid = ctx.uid();
    ek.key_id = session.key_id();
    const auto own = [&](const ckks::SwitchKey& k) {
        if (k.context_uid != ctx.uid() || k.key_id != session.key_id())
            throw ParameterError("evaluation_keys: a key is not this session's collective key");
    };
    if (relin) {
        own(*relin);
        ek.relin = std::make_shared<const ckks::SwitchKey>(std::move(*relin));
    }
    for (auto& [galois_elt, k] : galois) {
        ctx.check_galois_element(galois_elt, "evaluation_keys", false);
        own(k);
        ek.galois[galois_elt] = std::make_shared<const ckks::SwitchKey>(std::move(k));
    }
    return ek;
}

std::vector<std::complex<double>> decrypt(const ckks::ContextPtr& ctxp, const Session& session, const Ciphertext& ct,
                                          const Shares& shares, Exec exec) {
    const Context& ctx = *ctxp;
    check_ciphertext(ctx, session, ct, "decrypt");
    check_group_shares(ctx, session, shares, ct, nullptr, Protocol::decryption, "decrypt");
    exec = ctx.exec(exec);
    const auto& be = ctx.backend();
    std::vector<RnsPoly> sum = sum_polys(ctx, shares, "decrypt");
    if (sum.size() != 1 || !sum[0].same_shape(ct.polys[0]))
        throw ParameterError("decrypt: the shares do not have the ciphertext's shape");
    RnsPoly m;
    be.add(ct.polys[0], sum[0], m, exec);  // c_0 + s c_1 + smudging
    be.from_ntt(m, exec);
    const ckks::Encoder enc(ctxp);
    return enc.decode(m, m.num_q(), ct.scale);
}

Ciphertext refresh(const ckks::ContextPtr& ctxp, const Session& session, const Ciphertext& ct, const Shares& shares,
                   Exec exec) {
    const Context& ctx = *ctxp;
    check_ciphertext(ctx, session, ct, "refresh");
    check_group_shares(ctx, session, shares, ct, nullptr, Protocol::refresh, "refresh");
    exec = ctx.exec(exec);
    const auto& r = ctx.rns();
    const auto& be = ctx.backend();
    const std::size_t nq = ct.polys[0].num_q(), top = r.q_count(), n = ctx.n();
    std::vector<RnsPoly> sum = sum_polys(ctx, shares, "refresh");
    if (sum.size() != 2 || !sum[0].same_shape(ct.polys[0]) || sum[1].num_q() != top || sum[1].num_p() != 0)
        throw ParameterError("refresh: the shares do not have the shapes of a refresh of this ciphertext");
    RnsPoly v;
    be.add(ct.polys[0], sum[0], v, exec);  // m + e + masks + floods over Q_l: no wrap, by the masks' range
    be.from_ntt(v, exec);
    // The exact centered lift of v from Q_l to Q_L, on the host.
    std::vector<std::vector<std::uint64_t>> out(top, std::vector<std::uint64_t>(n));
    std::vector<std::uint64_t*> rows;
    for (auto& o : out) rows.push_back(o.data());
    be.download(v, [&](const std::uint64_t* const* limbs) { r.lift_centered(limbs, nq, top, rows.data()); });
    RnsPoly lifted = be.poly(top, 0, false);
    be.upload(lifted, [&](std::size_t l, std::uint64_t* d) { std::copy(out[l].begin(), out[l].end(), d); });
    be.to_ntt(lifted, exec);
    Ciphertext fresh;
    fresh.context_uid = ctx.uid();
    fresh.key_id = ct.key_id;
    fresh.scale = ct.scale;
    be.add(lifted, sum[1], lifted, exec);
    fresh.polys.push_back(std::move(lifted));
    fresh.polys.push_back(
        ckks::uniform_poly(ctx, session.common(Protocol::refresh, ciphertext_tag(ctx, ct, {}, nullptr)), 0, top, 0));
    return fresh;
}

Ciphertext key_switch(const ckks::ContextPtr& ctxp, const Session& session, const Ciphertext& ct,
                      const ckks::PublicKey& to, const Shares& shares, Exec exec) {
    const Context& ctx = *ctxp;
    check_ciphertext(ctx, session, ct, "key_switch");
    if (to.context_uid != ctx.uid()) throw ParameterError("key_switch: the receiver's key is of another context");
    check_group_shares(ctx, session, shares, ct, &to, Protocol::key_switch, "key_switch");
    exec = ctx.exec(exec);
    std::vector<RnsPoly> sum = sum_polys(ctx, shares, "key_switch");
    if (sum.size() != 2 || !sum[0].same_shape(ct.polys[0]))
        throw ParameterError("key_switch: the shares do not have the ciphertext's shape");
    Ciphertext out;
    out.context_uid = ctx.uid();
    out.key_id = to.key_id;
    out.scale = ct.scale;
    RnsPoly c0;
    ctx.backend().add(ct.polys[0], sum[0], c0, exec);
    out.polys = {std::move(c0), std::move(sum[1])};
    return out;
}

}  // namespace kasoku::mp
