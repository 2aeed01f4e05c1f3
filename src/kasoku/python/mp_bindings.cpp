// kasoku._kasoku.multiparty: sessions, parties, shares and their aggregation (python/kasoku/multiparty.py wraps them).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "bindings_internal.hpp"
#include "kasoku/mp/multiparty.hpp"
#include "kasoku/support/error.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kasoku;

namespace kasoku_py {

namespace {

struct KSession {
    mp::Session s;
};
struct KShare {
    OwnerPtr owner;
    mp::Share share;
};
struct KParty {
    OwnerPtr owner;
    std::unique_ptr<mp::Party> party;
};

mp::Shares shares_of(const OwnerPtr& owner, const std::vector<const KShare*>& in) {
    mp::Shares out;
    for (const KShare* s : in) {
        if (!s) throw ParameterError("shares: None is not a share");
        same_owner(s->owner, owner, "share");
        out.push_back(&s->share);
    }
    return out;
}

std::vector<std::uint32_t> group_of(std::optional<std::vector<std::uint32_t>> g) {
    std::vector<std::uint32_t> v = g ? std::move(*g) : std::vector<std::uint32_t>{};
    std::sort(v.begin(), v.end());
    return v;
}

mp::Smudging smudging(int statistical_security, std::uint64_t queries, double noise_bound) {
    return {.statistical_security = statistical_security, .queries = queries, .noise_bound = noise_bound};
}

constexpr const char* kSmudgingDoc =
    " statistical_security (s bits, default 40), queries (decryptions the bound covers) and noise_bound (a bound on "
    "the ciphertext's noise coefficients; 0: default_noise_bound) size the smudging noise: sigma = noise_bound sqrt(n) "
    "sqrt(queries / 2) 2^(s/2) (docs/MULTIPARTY.md). group: the ids of the t or more parties decrypting together in a "
    "threshold session (None: all N with their additive shares).";

const std::string kDecryptionShareDoc =
    std::string("Its share of the collective decryption of ct (relinearised): s c_1 plus smudging noise.") +
    kSmudgingDoc + " Raises ParameterError when the noise would leave the values less than a bit.";
const std::string kKeySwitchShareDoc =
    std::string("Its share of switching ct to the receiver's public key `to` (PCKS).") + kSmudgingDoc;

}  // namespace

void bind_multiparty(nb::module_& root) {
    nb::module_ m = root.def_submodule("multiparty", "Multiparty CKKS (python/kasoku/multiparty.py).");

    nb::class_<KSession>(m, "Session",
                         "A multiparty session: its common reference string (a public random seed), the number of "
                         "parties N and the threshold t (0: N-of-N). Every party and the aggregator use the same one.")
        .def(
            "__init__",
            [](KSession* self, std::uint32_t parties, std::uint32_t threshold, std::optional<nb::bytes> crs) {
                mp::Session s = mp::Session::random(parties, threshold);
                if (crs) {
                    if (crs->size() != s.crs.size())
                        throw ParameterError("crs must be " + std::to_string(s.crs.size()) + " bytes");
                    std::memcpy(s.crs.data(), crs->c_str(), s.crs.size());
                }
                new (self) KSession{s};
            },
            "parties"_a, "threshold"_a = 0, "crs"_a = nb::none(),
            "A session of `parties` parties, threshold t (2..parties; 0: all must take part), with a fresh CRS or the "
            "32 bytes `crs` (to rebuild the session every party was given).")
        .def_prop_ro(
            "parties", [](const KSession& s) { return s.s.parties; }, "N.")
        .def_prop_ro(
            "threshold", [](const KSession& s) { return s.s.threshold; }, "t (0: N-of-N).")
        .def_prop_ro(
            "crs", [](const KSession& s) { return nb::bytes(reinterpret_cast<const char*>(s.s.crs.data()), 32); },
            "The common reference string (32 public bytes).")
        .def_prop_ro(
            "key_id", [](const KSession& s) { return s.s.key_id(); },
            "The key id of the collective keys and of every ciphertext under them.");

    nb::class_<KShare>(m, "Share",
                       "One party's message in one protocol round, bound to its context, session, party, protocol "
                       "and object. Holds no secret (a Shamir share excepted: it is for one other party only).")
        .def_prop_ro(
            "party", [](const KShare& s) { return s.share.party; }, "The sending party's id (0: a sum).")
        .def_prop_ro(
            "session", [](const KShare& s) { return s.share.session; }, "The key id of its session (Session.key_id).")
        .def_prop_ro(
            "tag", [](const KShare& s) { return s.share.tag; },
            "What it is about: the Galois element of a Galois-key share, a digest of the ciphertext (and group) of a "
            "decryption, key-switching or refresh share, the recipient of a Shamir share; 0 otherwise.")
        .def_prop_ro(
            "nbytes",
            [](const KShare& s) {
                std::size_t words = 0;
                for (const auto& p : s.share.polys) words += p.limbs() * p.n();
                return words * sizeof(std::uint64_t);
            },
            "Bytes of its polynomials in memory (8 per residue; bit-packed on a wire, about 5/8 of it for 40-bit "
            "primes).")
        .def(
            "to_bytes",
            [](const KShare& s, std::optional<std::string> c) {
                return BytesOut{mp::to_bytes(*s.owner->ctx, s.share, compression_arg(c))};
            },
            "compression"_a = nb::none(),
            "The share in the integrity-checked wire format (docs/SERIALIZATION.md), to send to the aggregator (a "
            "Shamir share: to its recipient only); compression: None or \"zstd\".",
            ReleaseGil())
        .def_static(
            "from_bytes",
            [](const KContext& c, BytesIn b) {
                return KShare{c.owner, mp::share_from_bytes(*c.owner->ctx, b.data, b.size)};
            },
            "ctx"_a, "data"_a,
            "The share of to_bytes in the context ctx (SerializationError for damaged bytes or other parameters).",
            ReleaseGil())
        .def_prop_ro(
            "protocol", [](const KShare& s) { return std::string(mp::protocol_name(s.share.protocol)); },
            "The protocol and round it belongs to.")
        .def_prop_ro(
            "recipient",
            [](const KShare& s) {
                if (s.share.protocol != mp::Protocol::shamir)
                    throw ParameterError("only a Shamir share has a recipient");
                return static_cast<std::uint32_t>(s.share.tag);
            },
            "The party a Shamir share is for.");

    nb::class_<KParty>(m, "Party",
                       "One party of a session, run where its data lives: it draws its secret share, which never "
                       "leaves it, and makes the shares it sends.")
        .def(
            "__init__",
            [](KParty* self, const KContext& c, const KSession& s, std::uint32_t id, TArg t) {
                new (self) KParty{c.owner, std::make_unique<mp::Party>(c.owner->ctx, s.s, id, threads_arg(t))};
            },
            "ctx"_a, "session"_a, "id"_a, "threads"_a = nb::none(), ReleaseGil(),
            "Party `id` (1..N) of the session: draws its secret share.")
        .def_prop_ro(
            "id", [](const KParty& p) { return p.party->id(); }, "This party's id.")
        .def_prop_ro(
            "has_threshold_share", [](const KParty& p) { return p.party->has_threshold_share(); },
            "Whether the Shamir shares were received (receive_shamir_shares).")
        .def(
            "public_key_share",
            [](const KParty& p, TArg t) {
                return KShare{p.owner, p.party->public_key_share(threads_arg(t))};
            },
            "threads"_a = nb::none(), ReleaseGil(), "Its share of the collective public key (CKG).")
        .def(
            "relin_round1",
            [](KParty& p, TArg t) {
                return KShare{p.owner, p.party->relin_round1(threads_arg(t))};
            },
            "threads"_a = nb::none(), ReleaseGil(),
            "Round 1 of the collective relinearisation key (RKG); the party keeps an ephemeral secret for round 2.")
        .def(
            "relin_round2",
            [](KParty& p, const KShare& sum, TArg t) {
                same_owner(sum.owner, p.owner, "round-1 sum");
                return KShare{p.owner, p.party->relin_round2(sum.share, threads_arg(t))};
            },
            "round1_sum"_a, "threads"_a = nb::none(), ReleaseGil(),
            "Round 2 of RKG, from aggregate_relin_round1 of every party's round 1.")
        .def(
            "galois_key_share",
            [](const KParty& p, std::uint64_t galois_elt, TArg t) {
                return KShare{p.owner, p.party->galois_key_share(galois_elt, threads_arg(t))};
            },
            "galois_element"_a, "threads"_a = nb::none(), ReleaseGil(),
            "Its share of the collective Galois key of an element (ctx.galois_element(step) for a rotation).")
        .def(
            "decryption_share",
            [](const KParty& p, const KCiphertext& ct, int s, std::uint64_t q, double b,
               std::optional<std::vector<std::uint32_t>> group, TArg t) {
                same_owner(ct.owner, p.owner, "ciphertext");
                return KShare{p.owner, p.party->decryption_share(ct.ct, smudging(s, q, b), group_of(std::move(group)),
                                                                 threads_arg(t))};
            },
            "ct"_a, "statistical_security"_a = 40, "queries"_a = 1, "noise_bound"_a = 0.0, "group"_a = nb::none(),
            "threads"_a = nb::none(), ReleaseGil(), kDecryptionShareDoc.c_str())
        .def(
            "key_switch_share",
            [](const KParty& p, const KCiphertext& ct, const KPublicKey& to, int s, std::uint64_t q, double b,
               std::optional<std::vector<std::uint32_t>> group, TArg t) {
                same_owner(ct.owner, p.owner, "ciphertext");
                same_owner(to.owner, p.owner, "receiver's public key");
                return KShare{p.owner, p.party->key_switch_share(ct.ct, *to.key, smudging(s, q, b),
                                                                 group_of(std::move(group)), threads_arg(t))};
            },
            "ct"_a, "to"_a, "statistical_security"_a = 40, "queries"_a = 1, "noise_bound"_a = 0.0,
            "group"_a = nb::none(), "threads"_a = nb::none(), ReleaseGil(), kKeySwitchShareDoc.c_str())
        .def(
            "refresh_share",
            [](const KParty& p, const KCiphertext& ct, int s, std::uint64_t q, double b, double value_bound,
               std::optional<std::vector<std::uint32_t>> group, TArg t) {
                same_owner(ct.owner, p.owner, "ciphertext");
                return KShare{p.owner, p.party->refresh_share(ct.ct, smudging(s, q, b), value_bound,
                                                              group_of(std::move(group)), threads_arg(t))};
            },
            "ct"_a, "statistical_security"_a = 40, "queries"_a = 1, "noise_bound"_a = 0.0, "value_bound"_a = 1.0,
            "group"_a = nb::none(), "threads"_a = nb::none(), ReleaseGil(),
            "Its share of refreshing ct (relinearised) to the top level in one round, instead of a bootstrap: ct's "
            "values (abs <= value_bound) masked over Q_l and re-encrypted over Q_L. Raises ParameterError when ct's "
            "level leaves the masks too few bits to hide the values (refresh at a higher level).")
        .def(
            "shamir_shares",
            [](const KParty& p, TArg t) {
                std::vector<KShare> out;
                for (auto& s : p.party->shamir_shares(threads_arg(t))) out.push_back(KShare{p.owner, std::move(s)});
                return out;
            },
            "threads"_a = nb::none(), ReleaseGil(),
            "Thresholdizing: Shamir shares of its secret share, one per party (share.recipient), each to be sent to "
            "that party only.")
        .def(
            "receive_shamir_shares",
            [](KParty& p, const std::vector<const KShare*>& received, TArg t) {
                p.party->receive_shamir_shares(shares_of(p.owner, received), threads_arg(t));
            },
            "shares"_a, "threads"_a = nb::none(),
            "Keeps the sum of the Shamir shares every party sent it: its share of the collective secret, with which "
            "any t parties decrypt (group=...).");

    m.def(
        "aggregate_public_key",
        [](const KContext& c, const KSession& s, const std::vector<const KShare*>& shares) {
            return KPublicKey{c.owner, std::make_shared<const ckks::PublicKey>(
                                           mp::aggregate_public_key(c.owner->ctx, s.s, shares_of(c.owner, shares)))};
        },
        "ctx"_a, "session"_a, "shares"_a, "The collective public key from every party's public_key_share.");
    m.def(
        "aggregate_relin_round1",
        [](const KContext& c, const KSession& s, const std::vector<const KShare*>& shares) {
            return KShare{c.owner, mp::aggregate_relin_round1(c.owner->ctx, s.s, shares_of(c.owner, shares))};
        },
        "ctx"_a, "session"_a, "shares"_a,
        "The sum of every party's relin_round1 (each party's relin_round2 takes it).");
    m.def(
        "aggregate_relin_key",
        [](const KContext& c, const KSession& s, const KShare& sum, const std::vector<const KShare*>& shares) {
            same_owner(sum.owner, c.owner, "round-1 sum");
            return KSwitchKey{c.owner, std::make_shared<const ckks::SwitchKey>(mp::aggregate_relin_key(
                                           c.owner->ctx, s.s, sum.share, shares_of(c.owner, shares)))};
        },
        "ctx"_a, "session"_a, "round1_sum"_a, "shares"_a,
        "The collective relinearisation key from the round-1 sum and every party's relin_round2.");
    m.def(
        "aggregate_galois_key",
        [](const KContext& c, const KSession& s, std::uint64_t galois_elt, const std::vector<const KShare*>& shares) {
            return KSwitchKey{c.owner, std::make_shared<const ckks::SwitchKey>(mp::aggregate_galois_key(
                                           c.owner->ctx, s.s, galois_elt, shares_of(c.owner, shares)))};
        },
        "ctx"_a, "session"_a, "galois_element"_a, "shares"_a,
        "The collective Galois key of an element from every party's galois_key_share.");
    m.def(
        "evaluation_keys",
        [](const KContext& c, const KSession& s, std::optional<KSwitchKey> relin,
           const std::map<std::uint64_t, KSwitchKey>& galois) {
            std::optional<ckks::SwitchKey> r;
            if (relin) {
                same_owner(relin->owner, c.owner, "relinearisation key");
                r = *relin->key;
            }
            std::vector<std::pair<std::uint64_t, ckks::SwitchKey>> galois_keys;
            for (const auto& [galois_elt, k] : galois) {
                same_owner(k.owner, c.owner, "Galois key");
                galois_keys.emplace_back(galois_elt, *k.key);
            }
            return KEvaluationKeys{c.owner, std::make_shared<const ckks::EvaluationKeys>(mp::evaluation_keys(
                                                c.owner->ctx, s.s, std::move(r), std::move(galois_keys)))};
        },
        "ctx"_a, "session"_a, "relin"_a = nb::none(), "galois"_a = std::map<std::uint64_t, KSwitchKey>{},
        "The evaluation keys a server needs (ctx.evaluator(keys)) from the collective relinearisation key and "
        "Galois keys {element: key}.");
    m.def(
        "decrypt",
        [](const KContext& c, const KSession& s, const KCiphertext& ct, const std::vector<const KShare*>& shares,
           TArg t) {
            same_owner(ct.owner, c.owner, "ciphertext");
            return ComplexArray{mp::decrypt(c.owner->ctx, s.s, ct.ct, shares_of(c.owner, shares), threads_arg(t))};
        },
        "ctx"_a, "session"_a, "ct"_a, "shares"_a, "threads"_a = nb::none(),
        "The slots of ct (complex128 array) from every party's decryption_share, or those of a group of t or more.");
    m.def(
        "refresh",
        [](const KContext& c, const KSession& s, const KCiphertext& ct, const std::vector<const KShare*>& shares,
           TArg t) {
            same_owner(ct.owner, c.owner, "ciphertext");
            return wrap(c.owner, mp::refresh(c.owner->ctx, s.s, ct.ct, shares_of(c.owner, shares), threads_arg(t)));
        },
        "ctx"_a, "session"_a, "ct"_a, "shares"_a, "threads"_a = nb::none(),
        "ct's message again at the top level (ctx.max_level), on its scale, from every party's refresh_share or a "
        "group's: multiparty circuits of any depth without bootstrapping keys.");
    m.def(
        "key_switch",
        [](const KContext& c, const KSession& s, const KCiphertext& ct, const KPublicKey& to,
           const std::vector<const KShare*>& shares, TArg t) {
            same_owner(ct.owner, c.owner, "ciphertext");
            same_owner(to.owner, c.owner, "receiver's public key");
            return wrap(c.owner,
                        mp::key_switch(c.owner->ctx, s.s, ct.ct, *to.key, shares_of(c.owner, shares), threads_arg(t)));
        },
        "ctx"_a, "session"_a, "ct"_a, "to"_a, "shares"_a, "threads"_a = nb::none(),
        "ct under the receiver's key `to`, from the parties' key_switch_share (the receiver alone decrypts it).");
    m.def(
        "decryption_precision_bits",
        [](const KContext& c, const KSession& s, double scale, std::size_t group, int sec, std::uint64_t q, double b) {
            return mp::decryption_precision_bits(*c.owner->ctx, s.s, smudging(sec, q, b), scale, group);
        },
        "ctx"_a, "session"_a, "scale"_a, "group"_a, "statistical_security"_a = 40, "queries"_a = 1,
        "noise_bound"_a = 0.0,
        "log2(scale / (sigma sqrt(group n))): the bits the smudging leaves to the slots of a ciphertext at `scale` "
        "decrypted by `group` parties (the worst of many slots is 2-3 bits below).");
    m.def(
        "default_noise_bound",
        [](const KContext& c, const KSession& s) { return mp::default_noise_bound(*c.owner->ctx, s.s); }, "ctx"_a,
        "session"_a, "The smudging's default bound on a ciphertext's noise coefficients (docs/MULTIPARTY.md).");
}

}  // namespace kasoku_py
