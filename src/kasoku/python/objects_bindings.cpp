// Parameters, keys, plaintexts, ciphertexts (with their operators) and Context.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <map>
#include <variant>

#include "bindings_internal.hpp"
#include "kasoku/algo/matmul.hpp"
#include "kasoku/algo/polynomial.hpp"
#include "kasoku/ckks/crypto.hpp"
#include "kasoku/gpu/cuda.hpp"
#include "kasoku/support/random.hpp"
#include "kasoku/support/threads.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kasoku;
using namespace kasoku::ckks;

namespace kasoku_py {

namespace {

struct KKeyPair {
    KSecretKey secret;
    KPublicKey public_;
    std::optional<KSwitchKey> relin;
    std::map<std::uint64_t, KSwitchKey> galois;
    std::shared_ptr<const EvaluationKeys> eval;
};

using AnyKey = std::variant<KPublicKey, KSecretKey>;

KCiphertext encrypt_with(const KContext& c, const Plaintext& pt, const AnyKey& key, int threads) {
    if (const auto* pk = std::get_if<KPublicKey>(&key)) {
        same_owner(pk->owner, c.owner, "public key");
        return wrap(c.owner, Encryptor(c.owner->ctx).encrypt(pt, *pk->key, threads));
    }
    const auto& sk = std::get<KSecretKey>(key);
    same_owner(sk.owner, c.owner, "secret key");
    return wrap(c.owner, Encryptor(c.owner->ctx).encrypt_symmetric(pt, *sk.key, threads));
}

// A key of one context in ctx.on(device), through its bytes (the same bits; a secret key's bytes are wiped after).
template <class K, class Value, class Load>
K moved(const OwnerPtr& from, const std::string& device, const Value& v, Load load) {
    const OwnerPtr to = Owner::on(from, device);
    Bytes b = serialize(*from->ctx, v);
    K out{to, load(*to->ctx, b)};
    secure_wipe(b.data(), b.size());
    return out;
}

std::string describe_ct(const Ciphertext& ct) {
    return "Ciphertext(level=" + std::to_string(ct.level()) + ", scale=2^" + std::to_string(std::log2(ct.scale)) +
           ", size=" + std::to_string(ct.size()) + ")";
}

}  // namespace

// to_bytes(compression=None | "zstd").
Compression compression_arg(const std::optional<std::string>& c) {
    if (!c || *c == "none") return Compression::none;
    if (*c == "zstd") return Compression::zstd;
    throw ParameterError("compression must be None or \"zstd\" (got \"" + *c + "\")");
}

namespace {
// to_bytes(compression) of every wire object, written once: the bytes of what value(object) gives.
template <class K, class Value>
void def_to_bytes(nb::class_<K>& cls, Value value) {
    cls.def(
        "to_bytes",
        [value](const K& k, std::optional<std::string> c) {
            return BytesOut{serialize(*k.owner->ctx, value(k), compression_arg(c))};
        },
        "compression"_a = nb::none(),
        "The object as bytes in the wire format (docs/SERIALIZATION.md); compression: None or \"zstd\".", ReleaseGil());
}
// from_bytes(ctx, data) and to(device) of a key kind read back by `read`, written once.
template <class K, class T>
void def_from_bytes_and_to(nb::class_<K>& cls, T (*read)(const Context&, const std::uint8_t*, std::size_t),
                           const char* to_doc) {
    cls.def_static(
           "from_bytes",
           [read](const KContext& c, BytesIn b) {
               return K{c.owner, std::make_shared<const T>(read(*c.owner->ctx, b.data, b.size))};
           },
           "ctx"_a, "data"_a,
           "The object of to_bytes in the context ctx (SerializationError for bytes that are not one).", ReleaseGil())
        .def(
            "to",
            [read](const K& k, const std::string& device) {
                return moved<K>(k.owner, device, *k.key, [read](const Context& c, const Bytes& b) {
                    return std::make_shared<const T>(read(c, b.data(), b.size()));
                });
            },
            "device"_a, to_doc, ReleaseGil());
}
const auto key_of = [](const auto& k) -> const auto& { return *k.key; };
}  // namespace

void bind_objects(nb::module_& m) {
    // ---------------------------------------------------------------- Parameters
    nb::class_<Parameters>(m, "Parameters", "Validated CKKS parameters (docs/PARAMS.md lists the named sets).")
        .def(
            "__init__",
            [](Parameters* p, int log_n, int first_bits, int scale_bits, int levels, int special_bits,
               int special_primes, std::optional<int> security, int dnum, int hamming_weight, int boot_levels,
               int boot_bits, int boot_secret_weight) {
                Parameters v{.log_n = log_n,
                             .first_bits = first_bits,
                             .scale_bits = scale_bits,
                             .levels = levels,
                             .special_bits = special_bits,
                             .special_primes = special_primes,
                             .security = security,
                             .dnum = dnum,
                             .hamming_weight = hamming_weight,
                             .boot_levels = boot_levels,
                             .boot_bits = boot_bits,
                             .boot_secret_weight = boot_secret_weight};
                v.validate();
                new (p) Parameters(v);
            },
            "log_n"_a = 13, "first_bits"_a = 60, "scale_bits"_a = 40, "levels"_a = 2, "special_bits"_a = 60,
            "special_primes"_a = 1, "security"_a.none() = 128, "dnum"_a = 0, "hamming_weight"_a = 0,
            "boot_levels"_a = 0, "boot_bits"_a = 0, "boot_secret_weight"_a = 0,
            "security=None allows parameters outside the 128-bit HE Standard table (research use). boot_levels primes "
            "of boot_bits above the user's `levels` are bootstrapping's (ciphertexts start at user_level = levels); "
            "boot_secret_weight > 0 makes bootstrapping switch to an ephemeral sparse secret of that weight around "
            "ModRaise, so the main secret can be dense. Raises ParameterError for invalid or insecure parameters, "
            "saying what to change.")
        .def_static(
            "named", &Parameters::named, "name"_a,
            "One of the named sets: T12, T13, H15, H16, B13, M14, SCHED, BOOT15, BOOT16, BOOT16L, and the tests' "
            "bootstrapping sets TB10 and TS10 (docs/PARAMS.md).")
        .def_static("names", &Parameters::names, "The names Parameters.named accepts.")
        .def(
            "replace",
            [](const Parameters& p, const nb::kwargs& changes) {
                Parameters v = p;
                v.name.clear();
                v.rationale.clear();
                std::map<std::string, int*> fields{{"log_n", &v.log_n},
                                                   {"first_bits", &v.first_bits},
                                                   {"scale_bits", &v.scale_bits},
                                                   {"levels", &v.levels},
                                                   {"special_bits", &v.special_bits},
                                                   {"special_primes", &v.special_primes},
                                                   {"dnum", &v.dnum},
                                                   {"hamming_weight", &v.hamming_weight},
                                                   {"boot_levels", &v.boot_levels},
                                                   {"boot_bits", &v.boot_bits},
                                                   {"boot_secret_weight", &v.boot_secret_weight}};
                for (const auto& [key, value] : changes) {
                    const std::string field = nb::cast<std::string>(key);
                    if (field == "security") {
                        v.security = value.is_none() ? std::nullopt : std::optional<int>(nb::cast<int>(value));
                        continue;
                    }
                    const auto it = fields.find(field);
                    if (it == fields.end()) {
                        std::string all = "security";
                        for (const auto& f : fields) all += ", " + f.first;
                        throw ParameterError("Parameters.replace: no field '" + field + "'; the fields are " + all);
                    }
                    *it->second = nb::cast<int>(value);
                }
                v.validate();
                return v;
            },
            "changes"_a,
            "A copy with the given fields changed (keywords as the constructor's), validated; it has no name. "
            "Parameters.named('TB10').replace(levels=4): the tests' bootstrapping set with four user levels. "
            "ParameterError for an unknown field or invalid result.")
        .def_static(
            "for_circuit",
            [](int depth, int precision_bits, std::optional<std::uint64_t> slots, std::optional<int> security,
               std::optional<int> dnum, int integer_bits) {
                return Parameters::for_circuit(depth, precision_bits, slots.value_or(0), security, dnum.value_or(0),
                                               integer_bits);
            },
            "depth"_a, "precision_bits"_a = 20, "slots"_a = nb::none(), "security"_a.none() = 128,
            "dnum"_a = nb::none(), "integer_bits"_a = 20,
            "The smallest secure set for a circuit of `depth` rescalings with about `precision_bits` bits of precision "
            "and at least `slots` slots, whose results stay below 2^integer_bits in magnitude; repr() says what each "
            "choice is for. ParameterError says what cannot be had. The precision is that of each product of values "
            "up to 1 in magnitude: a sum of terms with coefficients c_i loses about log2(sum |c_i|) bits more (a "
            "degree-31 series with sum |c_i| = 16 keeps about 16.6 of 20 bits); for_polynomial adds them.")
        .def_static(
            "for_polynomial",
            [](const algo::Polynomial& poly, int precision_bits, std::optional<std::uint64_t> slots,
               std::optional<int> security, std::optional<int> dnum) {
                double sum = 0;
                for (const auto& c : poly.coeffs) sum += std::abs(c);
                // The error of the evaluation grows with the coefficients' sum (measured: 1.4, 3.3 and 5.4 bits lost at
                // sums 4, 16 and 64 for degree 31) and with the depth, and varies by 2 bits from one key to the next
                // (a degree-63 series with sum 2 on 22-bit parameters: 19.2-21.1 bits over 12 keys).
                const int extra =
                    (sum > 1 ? static_cast<int>(std::ceil(std::log2(sum))) : 0) + (poly.depth() + 1) / 2 + 1;
                return Parameters::for_circuit(poly.depth(), precision_bits + extra, slots.value_or(0), security,
                                               dnum.value_or(0));
            },
            "poly"_a, "precision_bits"_a = 20, "slots"_a = nb::none(), "security"_a.none() = 128, "dnum"_a = nb::none(),
            "for_circuit for evaluating `poly` (Evaluator.evaluate_polynomial) with `precision_bits` bits at its "
            "output: its depth, and ceil(log2(sum |c_i|)) + ceil(depth / 2) + 1 bits more than precision_bits for "
            "the growth of the error with the coefficients and the depth, and its spread from one key to the next.")
        .def_ro("rationale", &Parameters::rationale,
                "Why for_circuit chose each value (empty for sets made otherwise).")
        .def_ro("log_n", &Parameters::log_n, "log2 of the ring degree N.")
        .def_ro("first_bits", &Parameters::first_bits,
                "Bits of the first prime q_0 (holds the integer part of results).")
        .def_ro("scale_bits", &Parameters::scale_bits, "log2 of the scale: the bits of each rescaling prime.")
        .def_ro("levels", &Parameters::levels, "The user's levels: rescalings a fresh ciphertext allows.")
        .def_ro("special_bits", &Parameters::special_bits, "Bits of each special prime (key switching).")
        .def_ro("special_primes", &Parameters::special_primes, "Number of special primes.")
        .def_ro("security", &Parameters::security, "Security level checked (128), or None for research parameters.")
        .def_ro("hamming_weight", &Parameters::hamming_weight,
                "Nonzero coefficients of the secret; 0: uniform ternary (dense).")
        .def_ro("boot_levels", &Parameters::boot_levels, "Bootstrapping's own levels above the user's.")
        .def_ro("boot_bits", &Parameters::boot_bits, "Bits of each bootstrapping prime.")
        .def_ro("boot_secret_weight", &Parameters::boot_secret_weight,
                "Weight of the ephemeral sparse secret bootstrapping switches to; 0: none.")
        .def_ro("name", &Parameters::name, "The named set's name (T12, H16, BOOT16, ...), empty for custom sets.")
        .def_prop_ro("n", &Parameters::n, "The ring degree N = 2^log_n.")
        .def_prop_ro("slots", &Parameters::slots, "Complex values per ciphertext: N / 2.")
        .def_prop_ro("dnum", &Parameters::digits, "Digits of hybrid key switching.")
        .def_prop_ro("alpha", &Parameters::alpha, "Primes per key-switching digit.")
        .def_prop_ro("log_qp", &Parameters::log_qp_bits,
                     "Bits of the whole modulus Q P (the security bound applies to it).")
        .def(
            "to_bytes",
            [](const Parameters& p, std::optional<std::string> c) {
                return BytesOut{serialize(p, compression_arg(c))};
            },
            "compression"_a = nb::none(), "The parameters as bytes (compression: None or \"zstd\").")
        .def_static(
            "from_bytes", [](BytesIn b) { return deserialize_parameters(b.data, b.size); }, "data"_a,
            "Parameters from to_bytes (SerializationError for bytes that are not).")
        .def("__repr__", [](const Parameters& p) {
            return "Parameters(" + p.describe() + ")" + (p.rationale.empty() ? "" : "\n  " + p.rationale);
        });

    // ---------------------------------------------------------------- keys and plaintexts
    nb::class_<KSecretKey> secret_key(m, "SecretKey",
                                      "The secret key: stays on the client; wiped from memory when released.");
    def_to_bytes(secret_key, key_of);
    def_from_bytes_and_to(secret_key, &deserialize_secret_key,
                          "The key in ctx.on(device) (it stays on this machine: a GPU of the client's).");
    secret_key.def("__repr__", [](const KSecretKey&) { return std::string("SecretKey(<hidden>)"); });

    nb::class_<KPlaintext>(m, "Plaintext", "Encoded values (NTT form) at a level and scale; made by Context.encode.")
        .def_prop_ro(
            "level", [](const KPlaintext& p) { return p.pt.level(); }, "Its level (q-primes minus one).")
        .def_prop_ro(
            "scale", [](const KPlaintext& p) { return p.pt.scale; }, "The scale its values were encoded at.");

    nb::class_<KPublicKey> public_key(m, "PublicKey", "The public key: anyone may encrypt with it (Context.encrypt).");
    def_to_bytes(public_key, key_of);
    def_from_bytes_and_to(public_key, &deserialize_public_key, "The key in ctx.on(device).");

    nb::class_<KSwitchKey> switch_key(m, "SwitchKey", "A key-switching key (relinearisation or one Galois element).");
    def_to_bytes(switch_key, key_of);
    switch_key.def_prop_ro(
        "digits", [](const KSwitchKey& k) { return k.key->b.size(); }, "Its digits (dnum of the parameters).");

    nb::class_<KEvaluationKeys> evaluation_keys(m, "EvaluationKeys",
                                                "Relinearisation and Galois keys: everything an evaluator needs, no "
                                                "secret.");
    def_to_bytes(evaluation_keys, [](const KEvaluationKeys& k) -> const EvaluationKeys& { return *k.keys; });
    evaluation_keys
        .def_prop_ro(
            "galois_count", [](const KEvaluationKeys& k) { return k.keys->galois.size(); }, "Number of Galois keys.")
        .def_static(
            "from_bytes",
            [](const KContext& c, BytesIn b, std::optional<bool> compact_keys) {
                return KEvaluationKeys{c.owner, std::make_shared<const EvaluationKeys>(deserialize_evaluation_keys(
                                                    *c.owner->ctx, b.data, b.size, compact_keys))};
            },
            "ctx"_a, "data"_a, "compact_keys"_a = nb::none(),
            "The keys of to_bytes. compact_keys=True keeps the Galois keys compact (their "
            "a-parts drawn from their seeds at each key switch, as Context.keygen's compact keys); None (default): "
            "compact for a set with the encapsulation keys of bootstrapping (the BOOT presets) on the CPU, whole "
            "otherwise.",
            ReleaseGil())
        .def_prop_ro(
            "galois_elements",
            [](const KEvaluationKeys& k) {
                std::vector<std::uint64_t> galois_elts;
                for (auto& [galois_elt, _] : k.keys->galois) galois_elts.push_back(galois_elt);
                return galois_elts;
            },
            "The Galois elements it has keys for (Context.galois_element turns a rotation step into one).")
        .def_prop_ro(
            "galois_levels",
            [](const KEvaluationKeys& k) {
                std::map<std::uint64_t, int> levels;
                for (auto& [elt, key] : k.keys->galois) levels[elt] = static_cast<int>(key->b.at(0).num_q()) - 1;
                return levels;
            },
            "dict: Galois element -> the highest level its key serves (the top, or keygen's galois_levels).")
        .def_prop_ro(
            "nbytes",
            [](const KEvaluationKeys& k) {
                std::size_t words = 0;
                const auto add = [&](const std::shared_ptr<const SwitchKey>& key) {
                    if (!key) return;
                    for (const auto& p : key->b) words += p.words();
                    for (const auto& p : key->a) words += p.words();
                };
                add(k.keys->relin);
                for (auto& [e, key] : k.keys->galois) add(key);
                add(k.keys->to_sparse);
                add(k.keys->from_sparse);
                return words * sizeof(std::uint64_t);
            },
            "The memory the keys hold (8 bytes a residue; a compact key's b-parts only).")
        .def_prop_ro(
            "has_relin", [](const KEvaluationKeys& k) { return static_cast<bool>(k.keys->relin); },
            "Whether the relinearisation key is there (products need it).")
        .def(
            "to",
            [](const KEvaluationKeys& k, const std::string& device) {
                return moved<KEvaluationKeys>(k.owner, device, *k.keys, [](const Context& c, const Bytes& b) {
                    return std::make_shared<const EvaluationKeys>(deserialize_evaluation_keys(c, b.data(), b.size()));
                });
            },
            "device"_a, "The keys in ctx.on(device): ctx.on(\"cuda\").evaluator(keys.evaluation().to(\"cuda\")).",
            ReleaseGil());

    nb::class_<KKeyPair>(m, "KeyPair", "Keys made by Context.keygen: secret, public, relin, galois.")
        .def_ro("secret", &KKeyPair::secret, "The SecretKey: keep it on the client.")
        .def_ro("public", &KKeyPair::public_, "The PublicKey.")
        .def_ro("relin", &KKeyPair::relin, "The relinearisation SwitchKey, or None.")
        .def_ro("galois", &KKeyPair::galois, "dict: Galois element -> SwitchKey")
        .def(
            "evaluation",
            [](const KKeyPair& k) {
                return KEvaluationKeys{k.secret.owner, k.eval};
            },
            "The evaluation keys (relinearisation + Galois) to hand to a server.");

    // ---------------------------------------------------------------- ciphertexts and their operators
    auto ct_cls = nb::class_<KCiphertext>(
        m, "Ciphertext",
        "Encrypted values at a level and scale; +, -, * and ** with ciphertexts, arrays and numbers use the "
        "context's evaluator (Context.evaluator).");
    // NumPy arrays on the left of + - * defer to the ciphertext's reflected operators.
    ct_cls.attr("__array_ufunc__") = nb::none();
    // The operators use the context's evaluator (Context.evaluator sets it): each takes its own reference to it, so
    // that another thread may replace it meanwhile.
    ct_cls
        .def_prop_ro(
            "level", [](const KCiphertext& c) { return c.ct.level(); }, "Rescalings it still allows.")
        .def_prop_ro(
            "scale", [](const KCiphertext& c) { return c.ct.scale; }, "The scale of its values.")
        .def_prop_ro(
            "size", [](const KCiphertext& c) { return c.ct.size(); }, "Its polynomials: 2, or 3 after tensor.")
        .def(
            "to_bytes",
            [](const KCiphertext& c, std::optional<std::string> z) {
                return BytesOut{serialize(*c.owner->ctx, c.ct, compression_arg(z))};
            },
            "compression"_a = nb::none(),
            "The object as bytes in the wire format (docs/SERIALIZATION.md); compression: None or \"zstd\".",
            ReleaseGil())
        .def_static(
            "from_bytes",
            [](const KContext& c, BytesIn b) {
                return wrap(c.owner, deserialize_ciphertext(*c.owner->ctx, b.data, b.size));
            },
            "ctx"_a, "data"_a,
            "The object of to_bytes in the context ctx (SerializationError for bytes that are not one).", ReleaseGil())
        .def(
            "copy", [](const KCiphertext& c) { return c; }, "An independent copy.", ReleaseGil())
        .def(
            "to",
            [](const KCiphertext& c, const std::string& device) {
                const OwnerPtr to = Owner::on(c.owner, device);
                if (to == c.owner) return c;
                const Bytes b = serialize(*c.owner->ctx, c.ct);
                return wrap(to, deserialize_ciphertext(*to->ctx, b.data(), b.size()));
            },
            "device"_a,
            "The ciphertext in ctx.on(device) (\"cpu\" or \"cuda\"), the same bits: ct.to(\"cuda\") computes on the "
            "GPU with ctx.on(\"cuda\")'s evaluator, .to(\"cpu\") brings it back to ctx.",
            ReleaseGil())
        .def_prop_ro(
            "device", [](const KCiphertext& c) { return c.owner->device; }, "Where it lives: \"cpu\" or \"cuda\".")
        .def("__repr__", [](const KCiphertext& c) { return describe_ct(c.ct); })
        .def(
            "__neg__", [](const KCiphertext& a) { return wrap(a.owner, a.owner->operators(false)->negate(a.ct)); },
            ReleaseGil())
        .def(
            "__add__",
            [](const KCiphertext& a, const KCiphertext& b) {
                return wrap(a.owner, a.owner->operators(false)->add(a.ct, b.ct));
            },
            ReleaseGil())
        .def(
            "__sub__",
            [](const KCiphertext& a, const KCiphertext& b) {
                return wrap(a.owner, a.owner->operators(false)->sub(a.ct, b.ct));
            },
            ReleaseGil())
        .def(
            "__mul__",
            [](const KCiphertext& a, const KCiphertext& b) {
                return wrap(a.owner, a.owner->operators(true)->multiply(a.ct, b.ct));
            },
            ReleaseGil())
        .def(
            "__add__",
            [](const KCiphertext& a, const Values& b) {
                return add_values(*a.owner->operators(false), a.owner, a.ct, b, 1, 0);
            },
            ReleaseGil())
        .def(
            "__radd__",
            [](const KCiphertext& a, const Values& b) {
                return add_values(*a.owner->operators(false), a.owner, a.ct, b, 1, 0);
            },
            ReleaseGil())
        .def(
            "__sub__",
            [](const KCiphertext& a, const Values& b) {
                return add_values(*a.owner->operators(false), a.owner, a.ct, b, -1, 0);
            },
            ReleaseGil())
        .def(
            "__rsub__",
            [](const KCiphertext& a, const Values& b) {
                const auto ev = a.owner->operators(false);
                return add_values(*ev, a.owner, ev->negate(a.ct), b, 1, 0);
            },
            ReleaseGil())
        .def(
            "__mul__",
            [](const KCiphertext& a, const Values& b) {
                return mul_values(*a.owner->operators(false), a.owner, a.ct, b, true, 0);
            },
            ReleaseGil())
        .def(
            "__rmul__",
            [](const KCiphertext& a, const Values& b) {
                return mul_values(*a.owner->operators(false), a.owner, a.ct, b, true, 0);
            },
            ReleaseGil());

    // ---------------------------------------------------------------- Context
    nb::class_<Flooding>(m, "Flooding",
                         "Noise flooding for a decryption safe to share (Context.decrypt(..., flood=)): a discrete "
                         "Gaussian of sigma = noise_bound sqrt(n) sqrt(queries / 2) 2^(statistical_security / 2) added "
                         "before decoding (docs/SECURITY.md). noise_bound 0: estimated from the ciphertext.")
        .def(
            "__init__",
            [](Flooding* f, int s, std::uint64_t q, double b, double bits) {
                new (f) Flooding{.statistical_security = s, .queries = q, .noise_bound = b, .min_precision_bits = bits};
            },
            "statistical_security"_a = 40, "queries"_a = 1, "noise_bound"_a = 0.0, "min_precision_bits"_a = 1.0)
        .def_rw("statistical_security", &Flooding::statistical_security)
        .def_rw("queries", &Flooding::queries)
        .def_rw("noise_bound", &Flooding::noise_bound)
        .def_rw("min_precision_bits", &Flooding::min_precision_bits)
        .def("__repr__", [](const Flooding& f) {
            return "Flooding(statistical_security=" + std::to_string(f.statistical_security) +
                   ", queries=" + std::to_string(f.queries) + ", noise_bound=" + std::to_string(f.noise_bound) +
                   ", min_precision_bits=" + std::to_string(f.min_precision_bits) + ")";
        });
    nb::class_<FloodedDecryption>(
        m, "FloodedDecryption",
        "A flooded decryption: values (complex128), the noise_bound and flood sigma used, and "
        "the precision_bits the flood leaves (a slot error's standard deviation, in bits "
        "below 1).")
        .def_prop_ro("values", [](const FloodedDecryption& d) { return ComplexArray{d.values}; })
        .def_ro("noise_bound", &FloodedDecryption::noise_bound)
        .def_ro("sigma", &FloodedDecryption::sigma)
        .def_ro("precision_bits", &FloodedDecryption::precision_bits)
        .def("__repr__", [](const FloodedDecryption& d) {
            return "FloodedDecryption(" + std::to_string(d.values.size()) + " values, sigma=2^" +
                   std::to_string(std::log2(d.sigma)) + ", precision_bits=" + std::to_string(d.precision_bits) + ")";
        });
    m.def("flooding_sigma", &flooding_sigma, "n"_a, "noise_bound"_a, "statistical_security"_a = 40, "queries"_a = 1,
          "The flooding standard deviation noise_bound sqrt(n) sqrt(queries / 2) 2^(statistical_security / 2), the one "
          "sizing of single-key and multiparty decryption.");
    m.def("flooding_precision_bits", &flooding_precision_bits, "n"_a, "sigma"_a, "scale"_a, "shares"_a = 1,
          "log2(scale / (sigma sqrt(shares n))): the bits a flood leaves to the slots.");
    nb::class_<KContext>(m, "Context",
                         "Parameters plus every precomputed table; makes keys, ciphertexts and evaluators.")
        .def(
            "__init__",
            [](KContext* self, const Parameters& p, TArg threads, const std::string& device) {
                new (self) KContext{Owner::make(p, threads ? resolve_threads(*threads) : 0, device)};
            },
            "params"_a, "threads"_a = nb::none(), "device"_a = "cpu",
            "threads=None uses all cores. device=\"cuda\" computes on the first CUDA GPU (keys, ciphertexts and "
            "plaintexts live there; key generation and encryption randomness stay on the host); DeviceError when there "
            "is none (ks.cuda_info() says why). device=\"gpu-emulated\": the GPU backend's logic on the host, each "
            "kernel a CPU loop (slow; the same bits as the GPU, and its device memory counted: device_memory(), "
            "ks.GpuKernelsSkipped).",
            ReleaseGil())
        .def_prop_ro(
            "params", [](const KContext& c) { return c.owner->ctx->params(); }, "Its Parameters.")
        .def_prop_ro(
            "n", [](const KContext& c) { return c.owner->ctx->n(); }, "The ring degree N.")
        .def_prop_ro(
            "slots", [](const KContext& c) { return c.owner->ctx->slots(); }, "Values per ciphertext: N / 2.")
        .def_prop_ro(
            "max_level", [](const KContext& c) { return c.owner->ctx->max_level(); },
            "The top of the chain (user and bootstrapping levels).")
        .def_prop_ro(
            "user_level", [](const KContext& c) { return c.owner->ctx->user_level(); },
            "The top level for data: where encode/encrypt put it by default and bootstrapping returns it "
            "(max_level without bootstrapping levels).")
        .def_prop_ro(
            "threads", [](const KContext& c) { return c.owner->ctx->threads(); }, "Threads its operations use.")
        .def_prop_ro(
            "default_scale", [](const KContext& c) { return c.owner->ctx->default_scale(); },
            "The scale fresh encryptions use: 2^scale_bits.")
        .def_prop_ro(
            "backend", [](const KContext& c) { return std::string(c.owner->ctx->backend().name()); },
            "The polynomial backend the context computes on (\"cpu\" or \"cuda\").")
        .def_prop_ro(
            "device", [](const KContext& c) { return c.owner->device; },
            "Where the context's polynomials live: \"cpu\" or \"cuda\".")
        .def(
            "on", [](const KContext& c, const std::string& device) { return KContext{Owner::on(c.owner, device)}; },
            "device"_a,
            "This context's parameters on `device` (\"cpu\" or \"cuda\"): the same context for the same device while "
            "any of its objects lives, so that ciphertexts and keys moved there with .to(device) and back meet their "
            "own context again. DeviceError without that device.",
            ReleaseGil())
        .def(
            "device_memory",
            [](const KContext& c, bool reset_peak) {
                const auto& memory = *c.owner->ctx->backend().memory();
                const rns::PolyMemory::Held h = memory.held();
                if (reset_peak) memory.reset_peak();
                nb::dict d;
                d["held_bytes"] = h.bytes;
                d["peak_bytes"] = h.peak_bytes;
                return d;
            },
            "reset_peak"_a = false,
            "dict: held_bytes (the device memory this context's backend holds from the device's allocator now, its "
            "arena's kept blocks included) and peak_bytes (the most since the context was made or the last "
            "reset_peak=True, which then starts a new peak from now); both 0 on the CPU (the process's resident memory "
            "gives that). The same counting for \"cuda\" and \"gpu-emulated\".")
        .def(
            "release_device_memory",
            [](const KContext& c) {
                const auto& memory = *c.owner->ctx->backend().memory();
                const std::uint64_t before = memory.held().bytes;
                memory.release_kept();  // freed in stream order (cudaFreeAsync): after their last users
                return before - memory.held().bytes;
            },
            "Gives the device memory this context's backend keeps for reuse (its arena's free blocks: an operation in "
            "steady state allocates nothing) back to the device, and returns its bytes; 0 on the CPU. Between phases "
            "that use other sizes (compiling, then running) it lowers the peak; the next operations allocate again.",
            ReleaseGil())
        .def(
            "synchronize", [](const KContext& c) { c.owner->ctx->backend().memory()->synchronize(); },
            "Waits for the device's queued work (a no-op on the CPU): time GPU operations up to this call.",
            ReleaseGil())
        .def(
            "scale_at", [](const KContext& c, int level) { return c.owner->ctx->scale_at(level); }, "level"_a,
            "Canonical scale of a level: s_L = 2^scale_bits at the user level L, s_{l-1} = s_l^2 / q_l (bootstrapping "
            "levels: from 2^boot_bits at max_level down to L + 1). LevelError outside 0..max_level.")
        .def_prop_ro(
            "q_primes", [](const KContext& c) { return c.owner->ctx->rns().q_primes(); },
            "The ciphertext primes q_0, ..., q_L.")
        .def_prop_ro(
            "p_primes", [](const KContext& c) { return c.owner->ctx->rns().p_primes(); },
            "The special primes of key switching.")
        .def(
            "special_primes_at",
            [](const KContext& c, int level) {
                return c.owner->ctx->rns().special_for(c.owner->ctx->check_level(level) + 1);
            },
            "level"_a,
            "The special primes of a Galois key made for levels up to `level` (keygen's galois_levels): the fewest "
            "whose product is at least each key-switching digit of that level, so that keys for low levels are "
            "smaller. LevelError outside 0..max_level.")
        .def(
            "galois_element", [](const KContext& c, std::int64_t step) { return c.owner->ctx->galois_element(step); },
            "step"_a, "Galois element 5^step mod 2n of the rotation by `step` slots to the left.")
        .def_prop_ro(
            "conjugation_element", [](const KContext& c) { return c.owner->ctx->conjugation_element(); },
            "The Galois element of complex conjugation (2N - 1).")
        .def(
            "keygen",
            [](const KContext& c, std::vector<std::int64_t> rotations, bool conjugation, bool relin,
               std::vector<std::uint64_t> galois_elements, bool sum_slots,
               std::optional<std::vector<std::size_t>> matmul, std::variant<bool, const KBootstrapper*> bootstrapping,
               TArg t, nb::handle progress, std::optional<bool> compact_keys,
               std::map<std::uint64_t, int> galois_levels) {
                const auto& ctx = c.owner->ctx;
                const bool boot =
                    std::holds_alternative<const KBootstrapper*>(bootstrapping) || std::get<bool>(bootstrapping);
                const int th = threads_arg(t);
                std::map<std::uint64_t, int> boot_levels;  // each bootstrapping key for the levels it serves
                if (const auto* b = std::get_if<const KBootstrapper*>(&bootstrapping)) {
                    if (!*b) throw ParameterError("bootstrapping: pass True or a Bootstrapper");
                    same_owner((*b)->owner, c.owner, "bootstrapper");
                    boot_levels = (*b)->boot->galois_levels();
                } else if (std::get<bool>(bootstrapping)) {
                    boot_levels = algo::Bootstrapper::galois_levels(*ctx, {});
                }
                if (matmul) {
                    if (matmul->size() < 1 || matmul->size() > 3)
                        throw ParameterError(
                            "matmul=(d, g) or (d, g, rows): the shape of the matrix products to make keys for");
                    const std::size_t d = (*matmul)[0], g = matmul->size() > 1 ? (*matmul)[1] : 1,
                                      rows = matmul->size() > 2 ? (*matmul)[2] : 0;
                    for (auto galois_elt : algo::MatrixEncoder(ctx, d, g, rows).galois_elements())
                        galois_elements.push_back(galois_elt);
                }
                for (std::uint64_t galois_elt : galois_elements) ctx->check_galois_element(galois_elt, "keygen");
                const int top = static_cast<int>(ctx->rns().q_count()) - 1;
                for (const auto& [galois_elt, level] : galois_levels) {
                    ctx->check_galois_element(galois_elt, "keygen");
                    if (level < 0 || level > top)
                        throw ParameterError("galois_levels: level " + std::to_string(level) + " of element " +
                                             std::to_string(galois_elt) + " is outside 0.." + std::to_string(top));
                }
                for (const auto& [galois_elt, level] : boot_levels) {
                    int& at = galois_levels.try_emplace(galois_elt, level).first->second;
                    at = std::max(at, level);
                }
                if (sum_slots) {  // the keys of sum_slots(count=None, h=None) at the user level
                    const std::size_t M = static_cast<std::size_t>(ctx->params().log_n - 1);
                    const std::size_t h =
                        best_trace_h(Evaluator(ctx, nullptr).keyswitch_costs(ctx->user_level(), th), M);
                    for (std::uint64_t galois_elt : trace_galois_elements(ctx->params(), M, h))
                        galois_elements.push_back(galois_elt);
                }
                // An element asked for otherwise (rotations, elements, bootstrapping, ...) gets a key for every level.
                for (std::uint64_t galois_elt : galois_elements) galois_levels.erase(galois_elt);
                for (std::int64_t step : rotations) galois_levels.erase(ctx->galois_element(step));
                if (conjugation) galois_levels.erase(ctx->conjugation_element());
                for (const auto& [galois_elt, level] : galois_levels) galois_elements.push_back(galois_elt);
                KeyGenerator kg(ctx);
                auto sk = std::make_shared<const SecretKey>(kg.secret_key(th));
                KKeyPair kp;
                kp.secret = KSecretKey{c.owner, sk};
                kp.public_ = KPublicKey{c.owner, std::make_shared<const PublicKey>(kg.public_key(*sk, th))};
                EvaluationKeys keys =
                    kg.evaluation_keys(*sk, relin, rotations, conjugation, galois_elements, th,
                                       python_progress(progress, "key generation", "key"),
                                       compact_keys.value_or(boot && ctx->backend().draws_key_limbs()), galois_levels);
                if (boot && ctx->params().boot_secret_weight > 0) kg.encapsulation_keys(*sk, keys, th);
                auto shared = std::make_shared<const EvaluationKeys>(std::move(keys));
                if (shared->relin) kp.relin = KSwitchKey{c.owner, shared->relin};
                for (auto& [galois_elt, k] : shared->galois) kp.galois.emplace(galois_elt, KSwitchKey{c.owner, k});
                kp.eval = shared;
                return kp;
            },
            "rotations"_a = std::vector<std::int64_t>{}, "conjugation"_a = false, "relin"_a = true,
            "galois_elements"_a = std::vector<std::uint64_t>{}, "sum_slots"_a = false, "matmul"_a = nb::none(),
            "bootstrapping"_a = false, "threads"_a = nb::none(), "progress"_a = nb::none(),
            "compact_keys"_a = nb::none(), "galois_levels"_a = std::map<std::uint64_t, int>{},
            "Makes a secret key, a public key, the relinearisation key and Galois keys for the rotation steps, "
            "conjugation and Galois elements given; sum_slots=True adds the keys Evaluator.sum_slots needs with its "
            "default h at the user level; matmul=(d, g) (or (d, g, rows)) adds the keys of ks.matmul for that packing; "
            "bootstrapping=True (or a Bootstrapper) adds the keys of Evaluator.bootstrap (its default config, or that "
            "one's; each for the levels a bootstrap uses it at, Bootstrapper.galois_levels(); with boot_secret_weight, "
            "the encapsulation keys too). progress: None (a bar on stderr when it is a "
            "terminal and key generation takes over a second), True (a bar), False (none) or a callable(done, total) "
            "called after each key; Ctrl-C ends it at the next key (KeyboardInterrupt), with no key returned. "
            "compact_keys=True: the Galois keys keep their b-parts "
            "only and each key switch draws the a-parts of its level from their seed (half the memory and about half "
            "the key generation time, key switches some 10 % slower; docs/BOOTSTRAPPING.md); None (default): compact "
            "for bootstrapping key sets on the CPU, whole otherwise (a GPU would draw them on the host at each use). "
            "galois_levels={element: level}: adds the key of each element for the levels up to `level` only, over "
            "Q_level * P_k with the digits of Q_level and the special primes they need (ctx.special_primes_at(level)): "
            "a key a computation uses low in the chain is that much smaller, and its key switches cheaper; "
            "rotating a ciphertext above it raises LevelError. An element also asked for otherwise gets a key for "
            "every level.",
            ReleaseGil())
        .def(
            "encode",
            [](const KContext& c, const Values& values, std::optional<int> level, std::optional<double> scale,
               std::optional<std::size_t> slots, TArg t) {
                return KPlaintext{c.owner, encode_values(c.owner->ctx, values, level, scale, slots, threads_arg(t))};
            },
            "values"_a, "level"_a = nb::none(), "scale"_a = nb::none(), "slots"_a = nb::none(),
            "threads"_a = nb::none(),
            "Encodes up to ctx.slots values (zero padded); default: the user level at its canonical scale. slots=s (a "
            "power of two): sparse packing, the values (up to s) repeated every s slots, as a sparse-slot "
            "Bootstrapper(slots=s) expects.",
            ReleaseGil())
        .def(
            "encrypt",
            [](const KContext& c, const KPlaintext& pt, const AnyKey& key, TArg t) {
                same_owner(pt.owner, c.owner, "plaintext");
                return encrypt_with(c, pt.pt, key, threads_arg(t));
            },
            "values"_a, "key"_a, "threads"_a = nb::none(),
            "Encrypts a Plaintext with keys.public (or keys.secret: secret-key encryption, smaller noise).",
            ReleaseGil())
        .def(
            "encrypt",
            [](const KContext& c, const Values& values, const AnyKey& key, std::optional<int> level,
               std::optional<double> scale, std::optional<std::size_t> slots, TArg t) {
                const int th = threads_arg(t);
                return encrypt_with(c, encode_values(c.owner->ctx, values, level, scale, slots, th), key, th);
            },
            "values"_a, "key"_a, "level"_a = nb::none(), "scale"_a = nb::none(), "slots"_a = nb::none(),
            "threads"_a = nb::none(),
            "Encrypts up to ctx.slots real or complex values (zero padded), by default at the user level; slots=s: "
            "sparse packing (see encode).",
            ReleaseGil())
        .def(
            "decrypt",
            [](const KContext& c, const KCiphertext& ct, const KSecretKey& sk, std::optional<std::size_t> slots, TArg t,
               nb::object flood) -> nb::object {
                same_owner(ct.owner, c.owner, "ciphertext");
                same_owner(sk.owner, c.owner, "secret key");
                if (slots && (*slots == 0 || *slots > c.owner->ctx->slots()))
                    throw ParameterError("slots must be in 1.." + std::to_string(c.owner->ctx->slots()) + ", got " +
                                         std::to_string(*slots));
                const int th = threads_arg(t);
                if (flood.is_none() || (nb::isinstance<nb::bool_>(flood) && !nb::cast<bool>(flood))) {
                    cvec v;
                    {
                        nb::gil_scoped_release release;
                        v = Decryptor(c.owner->ctx).decrypt(ct.ct, *sk.key, th);
                    }
                    if (slots) v.resize(*slots);
                    return nb::cast(ComplexArray{std::move(v)});
                }
                Flooding f;
                if (nb::isinstance<nb::bool_>(flood)) f = Flooding{};
                else if (nb::isinstance<Flooding>(flood)) f = nb::cast<Flooding>(flood);
                else throw ParameterError("flood must be None, True, False or a kasoku.Flooding");
                FloodedDecryption d;
                {
                    nb::gil_scoped_release release;
                    d = Decryptor(c.owner->ctx).decrypt(ct.ct, *sk.key, f, th);
                }
                if (slots) d.values.resize(*slots);
                return nb::cast(std::move(d));
            },
            "ct"_a, "secret_key"_a, "slots"_a = nb::none(), "threads"_a = nb::none(), "flood"_a = nb::none(),
            "Decrypts and decodes: complex128 array of length ctx.slots (slots=s: the first s, for sparse packing). "
            "Exact by default, which is for the key holder's eyes only: anyone who sees the values beside the "
            "ciphertext can solve for the secret key (docs/SECURITY.md). flood=True or a Flooding: values safe to "
            "share (noise flooding sized for the Flooding's statistical security, queries and noise bound), returned "
            "as a FloodedDecryption (values, noise_bound, sigma, precision_bits); raises ParameterError when the "
            "flood would leave fewer than its min_precision_bits at the ciphertext's scale.")
        .def(
            "noise",
            [](const KContext& c, const KCiphertext& ct, const KSecretKey& sk, std::optional<Values> expected, TArg t) {
                same_owner(ct.owner, c.owner, "ciphertext");
                same_owner(sk.owner, c.owner, "secret key");
                return Decryptor(c.owner->ctx)
                    .noise(ct.ct, *sk.key, expected ? expected->get() : cvec{}, threads_arg(t));
            },
            "ct"_a, "secret_key"_a, "expected"_a = nb::none(), "threads"_a = nb::none(),
            "The root mean square of the ciphertext's noise coefficients, given the values it should hold (None: "
            "zero, e.g. the computation run once on an encryption of zero): a noise_bound for Flooding.",
            ReleaseGil())
        .def(
            "estimate_noise_bound",
            [](const KContext& c, const KCiphertext& ct, const KSecretKey& sk, TArg t) {
                same_owner(ct.owner, c.owner, "ciphertext");
                same_owner(sk.owner, c.owner, "secret key");
                return Decryptor(c.owner->ctx).estimate_noise_bound(ct.ct, *sk.key, threads_arg(t));
            },
            "ct"_a, "secret_key"_a, "threads"_a = nb::none(),
            "The noise bound flood=True uses: 8 times the noise's root mean square as the imaginary parts of the "
            "decoded slots show it (exact for real values, an overestimate for complex ones), at least a rescale's "
            "rounding noise.",
            ReleaseGil())
        .def(
            "evaluator",
            [](const KContext& c, std::optional<KEvaluationKeys> keys) {
                std::shared_ptr<const EvaluationKeys> ek;
                if (keys) {
                    same_owner(keys->owner, c.owner, "evaluation keys");
                    ek = keys->keys;
                }
                auto ev = std::make_shared<const Evaluator>(c.owner->ctx, ek);
                c.owner->set_operators(ev);  // ciphertext operators of this context use it from now on
                return KEvaluator{c.owner, ev};
            },
            "keys"_a = nb::none(),
            "An evaluator holding only evaluation keys; also enables * on this context's ciphertexts.", ReleaseGil())
        .def("__repr__", [](const KContext& c) { return "Context(" + c.owner->ctx->params().describe() + ")"; });
}

}  // namespace kasoku_py
