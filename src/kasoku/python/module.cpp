// nanobind module kasoku._kasoku: the Python API of README.md. NumPy in and out; heavy calls release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <random>

#include "kasoku/algo/matmul.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/arith/simd.hpp"
#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/ckks/serialization.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/threads.hpp"
#include "bindings_internal.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kasoku;
using namespace kasoku::ckks;
using cvec = std::vector<std::complex<double>>;
using namespace kasoku_py;

namespace {

struct KSecretKey { OwnerPtr owner; std::shared_ptr<const SecretKey> key; };
struct KPublicKey { OwnerPtr owner; std::shared_ptr<const PublicKey> key; };
struct KSwitchKey { OwnerPtr owner; std::shared_ptr<const SwitchKey> key; };
struct KEvaluationKeys { OwnerPtr owner; std::shared_ptr<const EvaluationKeys> keys; };
struct KKeyPair {
    KSecretKey secret;
    KPublicKey public_;
    std::optional<KSwitchKey> relin;
    std::map<std::uint64_t, KSwitchKey> galois;
    std::shared_ptr<const EvaluationKeys> eval;
};
struct KPlaintext { OwnerPtr owner; Plaintext pt; };
struct KDecomposition { OwnerPtr owner; std::shared_ptr<const Decomposition> d; };
struct KLazy { OwnerPtr owner; LazyCiphertext x; };
struct KLinearTransform { OwnerPtr owner; std::shared_ptr<const algo::LinearTransform> lt; };
struct KMatrixEncoder { OwnerPtr owner; std::shared_ptr<const algo::MatrixEncoder> enc; };
struct KMatrix { OwnerPtr owner; algo::EncryptedMatrix m; };

// A 2-D array, a 3-D array or a list of 2-D arrays -> row-major matrices of one shape (rows x cols).
std::vector<std::vector<double>> to_matrices(nb::handle obj, std::size_t& rows, std::size_t& cols) {
    nb::module_ np = nb::module_::import_("numpy");
    nb::object arr;
    try {
        arr = np.attr("ascontiguousarray")(obj, "dtype"_a = np.attr("float64"));
    } catch (nb::python_error& e) {
        throw ParameterError(std::string("matrices must be real numbers of one shape (a 2-D array, a 3-D array or a list of "
                                         "2-D arrays): ") + e.what());
    }
    const int ndim = nb::cast<int>(arr.attr("ndim"));
    if (ndim == 2) arr = arr.attr("reshape")(1, arr.attr("shape")[0], arr.attr("shape")[1]);
    else if (ndim != 3) throw ParameterError("matrices must be a 2-D array, a 3-D array or a list of 2-D arrays");
    auto a = nb::cast<nb::ndarray<const double, nb::ndim<3>, nb::c_contig, nb::device::cpu>>(arr);
    rows = a.shape(1);
    cols = a.shape(2);
    std::vector<std::vector<double>> out;
    for (std::size_t i = 0; i < a.shape(0); ++i)
        out.emplace_back(a.data() + i * rows * cols, a.data() + (i + 1) * rows * cols);
    return out;
}

nb::ndarray<nb::numpy, double, nb::ndim<2>> to_numpy_matrix(std::vector<double> v, std::size_t rows, std::size_t cols) {
    auto* heap = new std::vector<double>(std::move(v));
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
    return nb::ndarray<nb::numpy, double, nb::ndim<2>>(heap->data(), {rows, cols}, owner);
}

nb::dict counts_dict(const algo::OpCounts& c) {
    nb::dict d;
    d["add"] = c.add; d["cmult"] = c.cmult; d["rot"] = c.rot; d["mult"] = c.mult;
    d["decompose"] = c.decompose; d["mod_down"] = c.mod_down; d["rescale"] = c.rescale;
    return d;
}

std::vector<KCiphertext> wrap_all(const OwnerPtr& o, std::vector<Ciphertext> v) {
    std::vector<KCiphertext> out;
    for (auto& c : v) out.push_back(KCiphertext{o, std::move(c)});
    return out;
}

int threads_arg(std::optional<int> t) { return t ? resolve_threads(*t) : 0; }

// Any 1-D array-like of numbers -> complex values (NumPy does the conversion).
cvec to_values(nb::handle obj) {
    nb::module_ np = nb::module_::import_("numpy");
    nb::object arr;
    try {
        arr = np.attr("ascontiguousarray")(obj, "dtype"_a = np.attr("complex128"));
    } catch (nb::python_error& e) {
        throw ParameterError(std::string("values must be numbers (a NumPy array, a list or a scalar): ") + e.what());
    }
    if (nb::cast<int>(arr.attr("ndim")) > 1)
        throw ParameterError("values must be one-dimensional; flatten the array (x.ravel()) or encode rows separately");
    arr = arr.attr("ravel")();
    auto a = nb::cast<nb::ndarray<const std::complex<double>, nb::ndim<1>, nb::c_contig, nb::device::cpu>>(arr);
    return cvec(a.data(), a.data() + a.shape(0));
}

bool is_scalar(nb::handle obj) {
    if (nb::isinstance<nb::float_>(obj) || nb::isinstance<nb::int_>(obj) || PyComplex_Check(obj.ptr())) return true;
    nb::module_ np = nb::module_::import_("numpy");
    return nb::cast<int>(np.attr("ndim")(obj)) == 0;
}

std::complex<double> to_scalar(nb::handle obj) {
    return nb::cast<std::complex<double>>(nb::module_::import_("builtins").attr("complex")(obj));
}

nb::ndarray<nb::numpy, std::complex<double>, nb::ndim<1>> to_numpy(cvec v) {
    auto* heap = new cvec(std::move(v));
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<cvec*>(p); });
    return nb::ndarray<nb::numpy, std::complex<double>, nb::ndim<1>>(heap->data(), {heap->size()}, owner);
}

nb::bytes to_py_bytes(const Bytes& b) { return nb::bytes(reinterpret_cast<const char*>(b.data()), b.size()); }

void same_owner(const OwnerPtr& a, const OwnerPtr& ctx_owner, const char* what) {
    if (a->ctx->uid() != ctx_owner->ctx->uid())
        throw ParameterError(std::string(what) + " belongs to another context");
}

const Evaluator& ops_evaluator(const KCiphertext& c, bool needs_keys) {
    if (c.owner->evaluator) return *c.owner->evaluator;
    if (needs_keys)
        throw MissingKeyError("this operator needs evaluation keys: call ctx.evaluator(keys.evaluation()) once, "
                              "then ciphertexts of that context support * and rotations");
    return *c.owner->keyless;
}

KCiphertext wrap(const OwnerPtr& o, Ciphertext ct) { return KCiphertext{o, std::move(ct)}; }

// Values (array or scalar) encoded at `level` (default: top) and `scale` (default: the level's canonical scale).
Plaintext encode_values(const ContextPtr& ctx, nb::handle values, std::optional<int> level, std::optional<double> scale,
                        int threads) {
    cvec v = is_scalar(values) ? cvec{to_scalar(values)} : to_values(values);
    const int lvl = level ? *level : ctx->max_level();
    if (lvl < 0 || lvl > ctx->max_level())
        throw LevelError("level must be in 0.." + std::to_string(ctx->max_level()) + ", got " + std::to_string(lvl));
    const double sc = scale ? *scale : ctx->scale_at(lvl);
    nb::gil_scoped_release r;
    return Encoder(ctx).encode(v, sc, lvl, threads);
}

// a + sign * b for a scalar or an array b (encoded at a's level and scale).
KCiphertext add_any(const Evaluator& ev, const OwnerPtr& o, const Ciphertext& a, nb::handle b, double sign, int threads) {
    if (is_scalar(b)) return wrap(o, ev.add_scalar(a, sign * to_scalar(b), threads));
    cvec v = to_values(b);
    if (sign < 0)
        for (auto& x : v) x = -x;
    nb::gil_scoped_release r;
    return wrap(o, ev.add_plain(a, v, threads));
}

// a * b for a scalar or an array b.
KCiphertext mul_any(const Evaluator& ev, const OwnerPtr& o, const Ciphertext& a, nb::handle b, bool rescale, int threads) {
    if (is_scalar(b)) return wrap(o, ev.multiply_scalar(a, to_scalar(b), rescale, threads));
    cvec v = to_values(b);
    nb::gil_scoped_release r;
    return wrap(o, ev.multiply_plain(a, v, rescale, threads));
}

}  // namespace

NB_MODULE(_kasoku, m) {
    m.doc() = "kasoku: RNS-CKKS homomorphic encryption (C++ core)";

    // Error classes (CONVENTIONS.md): kasoku.Error and its subclasses. ParameterError is also a ValueError.
    static nb::object err_base = nb::borrow(PyErr_NewExceptionWithDoc("kasoku.Error", "Base class of kasoku errors.", PyExc_Exception, nullptr));
    m.attr("Error") = err_base;
    auto make_err = [&](const char* name, PyObject* extra) {
        nb::object bases = extra ? nb::make_tuple(err_base, nb::handle(extra)) : nb::make_tuple(err_base);
        std::string full = std::string("kasoku.") + name;
        nb::object t = nb::steal(PyErr_NewException(full.c_str(), bases.ptr(), nullptr));
        m.attr(name) = t;
        return t;
    };
    static nb::object e_param = make_err("ParameterError", PyExc_ValueError);
    static nb::object e_level = make_err("LevelError", nullptr);
    static nb::object e_scale = make_err("ScaleError", nullptr);
    static nb::object e_key = make_err("MissingKeyError", nullptr);
    static nb::object e_ser = make_err("SerializationError", nullptr);
    static nb::object e_dev = make_err("DeviceError", nullptr);
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const ParameterError& e) { PyErr_SetString(e_param.ptr(), e.what()); }
        catch (const LevelError& e) { PyErr_SetString(e_level.ptr(), e.what()); }
        catch (const ScaleError& e) { PyErr_SetString(e_scale.ptr(), e.what()); }
        catch (const MissingKeyError& e) { PyErr_SetString(e_key.ptr(), e.what()); }
        catch (const SerializationError& e) { PyErr_SetString(e_ser.ptr(), e.what()); }
        catch (const DeviceError& e) { PyErr_SetString(e_dev.ptr(), e.what()); }
        catch (const Error& e) { PyErr_SetString(err_base.ptr(), e.what()); }
    });

    // ---------------------------------------------------------------- Parameters
    nb::class_<Parameters>(m, "Parameters", "Validated CKKS parameters (see PARAMS.md for the named sets).")
        .def("__init__",
             [](Parameters* p, int log_n, int first_bits, int scale_bits, int levels, int special_bits, int special_primes,
                std::optional<int> security, int dnum, int hamming_weight) {
                 Parameters v;
                 v.log_n = log_n; v.first_bits = first_bits; v.scale_bits = scale_bits; v.levels = levels;
                 v.special_bits = special_bits; v.special_primes = special_primes; v.security = security;
                 v.dnum = dnum; v.hamming_weight = hamming_weight;
                 v.validate();
                 new (p) Parameters(v);
             },
             "log_n"_a = 13, "first_bits"_a = 60, "scale_bits"_a = 40, "levels"_a = 2, "special_bits"_a = 60,
             "special_primes"_a = 1, "security"_a.none() = 128, "dnum"_a = 0, "hamming_weight"_a = 0,
             "security=None allows parameters outside the 128-bit HE Standard table (research use).")
        .def_static("named", &Parameters::named, "name"_a, "One of the named sets: T12, T13, H15, H16, B13, M14, SCHED.")
        .def_static("names", &Parameters::names)
        .def_ro("log_n", &Parameters::log_n)
        .def_ro("first_bits", &Parameters::first_bits)
        .def_ro("scale_bits", &Parameters::scale_bits)
        .def_ro("levels", &Parameters::levels)
        .def_ro("special_bits", &Parameters::special_bits)
        .def_ro("special_primes", &Parameters::special_primes)
        .def_ro("security", &Parameters::security)
        .def_ro("hamming_weight", &Parameters::hamming_weight)
        .def_ro("name", &Parameters::name)
        .def_prop_ro("n", &Parameters::n)
        .def_prop_ro("slots", &Parameters::slots)
        .def_prop_ro("dnum", &Parameters::digits)
        .def_prop_ro("alpha", &Parameters::alpha)
        .def_prop_ro("log_qp", &Parameters::log_qp_bits)
        .def("to_bytes", [](const Parameters& p) { return to_py_bytes(serialize(p)); })
        .def_static("from_bytes", [](nb::bytes b) {
            return deserialize_parameters(reinterpret_cast<const std::uint8_t*>(b.c_str()), b.size());
        })
        .def("__repr__", [](const Parameters& p) { return "Parameters(" + p.describe() + ")"; });

    // ---------------------------------------------------------------- keys and ciphertexts
    nb::class_<KSecretKey>(m, "SecretKey", "The secret key: stays on the client; wiped from memory when released.")
        .def("to_bytes", [](const KSecretKey& k) { return to_py_bytes(serialize(*k.owner->ctx, *k.key)); })
        .def_static("from_bytes", [](const KContext& c, nb::bytes b) {
            auto k = deserialize_secret_key(*c.owner->ctx, reinterpret_cast<const std::uint8_t*>(b.c_str()), b.size());
            return KSecretKey{c.owner, std::make_shared<const SecretKey>(std::move(k))};
        }, "ctx"_a, "data"_a)
        .def("__repr__", [](const KSecretKey&) { return std::string("SecretKey(<hidden>)"); });

    nb::class_<KPlaintext>(m, "Plaintext", "Encoded values (NTT form) at a level and scale; made by Context.encode.")
        .def_prop_ro("level", [](const KPlaintext& p) { return p.pt.level(); })
        .def_prop_ro("scale", [](const KPlaintext& p) { return p.pt.scale; });

    nb::class_<KPublicKey>(m, "PublicKey")
        .def("to_bytes", [](const KPublicKey& k) { return to_py_bytes(serialize(*k.owner->ctx, *k.key)); })
        .def_static("from_bytes", [](const KContext& c, nb::bytes b) {
            auto k = deserialize_public_key(*c.owner->ctx, reinterpret_cast<const std::uint8_t*>(b.c_str()), b.size());
            return KPublicKey{c.owner, std::make_shared<const PublicKey>(std::move(k))};
        }, "ctx"_a, "data"_a);

    nb::class_<KSwitchKey>(m, "SwitchKey", "A key-switching key (relinearisation or one Galois element).")
        .def("to_bytes", [](const KSwitchKey& k) { return to_py_bytes(serialize(*k.owner->ctx, *k.key)); })
        .def_prop_ro("digits", [](const KSwitchKey& k) { return k.key->b.size(); });

    nb::class_<KEvaluationKeys>(m, "EvaluationKeys", "Relinearisation and Galois keys: everything an evaluator needs, no secret.")
        .def("to_bytes", [](const KEvaluationKeys& k) {
            Bytes b;
            {
                nb::gil_scoped_release r;
                b = serialize(*k.owner->ctx, *k.keys);
            }
            return to_py_bytes(b);
        })
        .def_static("from_bytes", [](const KContext& c, nb::bytes b) {
            auto k = deserialize_evaluation_keys(*c.owner->ctx, reinterpret_cast<const std::uint8_t*>(b.c_str()), b.size());
            return KEvaluationKeys{c.owner, std::make_shared<const EvaluationKeys>(std::move(k))};
        }, "ctx"_a, "data"_a)
        .def_prop_ro("galois_elements", [](const KEvaluationKeys& k) {
            std::vector<std::uint64_t> g;
            for (auto& [e, _] : k.keys->galois) g.push_back(e);
            return g;
        })
        .def_prop_ro("has_relin", [](const KEvaluationKeys& k) { return static_cast<bool>(k.keys->relin); });

    nb::class_<KKeyPair>(m, "KeyPair", "Keys made by Context.keygen: secret, public, relin, galois.")
        .def_ro("secret", &KKeyPair::secret)
        .def_ro("public", &KKeyPair::public_)
        .def_ro("relin", &KKeyPair::relin)
        .def_ro("galois", &KKeyPair::galois, "dict: Galois element -> SwitchKey")
        .def("evaluation", [](const KKeyPair& k) { return KEvaluationKeys{k.secret.owner, k.eval}; },
             "The evaluation keys (relinearisation + Galois) to hand to a server.");

    auto ct_cls = nb::class_<KCiphertext>(m, "Ciphertext");
    // NumPy arrays on the left of + - * defer to the ciphertext's reflected operators.
    ct_cls.attr("__array_ufunc__") = nb::none();
    ct_cls
        .def_prop_ro("level", [](const KCiphertext& c) { return c.ct.level(); })
        .def_prop_ro("scale", [](const KCiphertext& c) { return c.ct.scale; })
        .def_prop_ro("size", [](const KCiphertext& c) { return c.ct.size(); })
        .def("to_bytes", [](const KCiphertext& c) {
            Bytes b;
            {
                nb::gil_scoped_release r;
                b = serialize(*c.owner->ctx, c.ct);
            }
            return to_py_bytes(b);
        })
        .def_static("from_bytes", [](const KContext& c, nb::bytes b) {
            return wrap(c.owner, deserialize_ciphertext(*c.owner->ctx, reinterpret_cast<const std::uint8_t*>(b.c_str()), b.size()));
        }, "ctx"_a, "data"_a)
        .def("copy", [](const KCiphertext& c) { return c; })
        .def("__repr__", [](const KCiphertext& c) {
            return "Ciphertext(level=" + std::to_string(c.ct.level()) + ", scale=2^" + std::to_string(std::log2(c.ct.scale)) +
                   ", size=" + std::to_string(c.ct.size()) + ")";
        })
        .def("__neg__", [](const KCiphertext& a) {
            nb::gil_scoped_release r;
            return wrap(a.owner, ops_evaluator(a, false).negate(a.ct));
        })
        .def("__add__", [](const KCiphertext& a, const KCiphertext& b) {
            nb::gil_scoped_release r;
            return wrap(a.owner, ops_evaluator(a, false).add(a.ct, b.ct));
        })
        .def("__sub__", [](const KCiphertext& a, const KCiphertext& b) {
            nb::gil_scoped_release r;
            return wrap(a.owner, ops_evaluator(a, false).sub(a.ct, b.ct));
        })
        .def("__mul__", [](const KCiphertext& a, const KCiphertext& b) {
            const Evaluator& ev = ops_evaluator(a, true);
            nb::gil_scoped_release r;
            return wrap(a.owner, ev.multiply(a.ct, b.ct));
        })
        .def("__add__", [](const KCiphertext& a, nb::handle b) { return add_any(ops_evaluator(a, false), a.owner, a.ct, b, 1, 0); })
        .def("__radd__", [](const KCiphertext& a, nb::handle b) { return add_any(ops_evaluator(a, false), a.owner, a.ct, b, 1, 0); })
        .def("__sub__", [](const KCiphertext& a, nb::handle b) { return add_any(ops_evaluator(a, false), a.owner, a.ct, b, -1, 0); })
        .def("__rsub__", [](const KCiphertext& a, nb::handle b) {
            const Evaluator& ev = ops_evaluator(a, false);
            return add_any(ev, a.owner, ev.negate(a.ct), b, 1, 0);
        })
        .def("__mul__", [](const KCiphertext& a, nb::handle b) { return mul_any(ops_evaluator(a, false), a.owner, a.ct, b, true, 0); })
        .def("__rmul__", [](const KCiphertext& a, nb::handle b) { return mul_any(ops_evaluator(a, false), a.owner, a.ct, b, true, 0); });

    // ---------------------------------------------------------------- Evaluator
    using TArg = std::optional<int>;
    nb::class_<KEvaluator>(m, "Evaluator", "Homomorphic operations with evaluation keys only (no secret inside).")
        .def("add", [](const KEvaluator& e, const KCiphertext& a, const KCiphertext& b, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->add(a.ct, b.ct, threads_arg(t)));
        }, "a"_a, "b"_a, "threads"_a = nb::none())
        .def("sub", [](const KEvaluator& e, const KCiphertext& a, const KCiphertext& b, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->sub(a.ct, b.ct, threads_arg(t)));
        }, "a"_a, "b"_a, "threads"_a = nb::none())
        .def("negate", [](const KEvaluator& e, const KCiphertext& a, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->negate(a.ct, threads_arg(t)));
        }, "a"_a, "threads"_a = nb::none())
        .def("add_plain", [](const KEvaluator& e, const KCiphertext& a, nb::handle v, TArg t) {
            return add_any(*e.ev, e.owner, a.ct, v, 1, threads_arg(t));
        }, "a"_a, "values"_a, "threads"_a = nb::none(), "Adds an array (zero padded to the slots) or a scalar.")
        .def("multiply_plain", [](const KEvaluator& e, const KCiphertext& a, nb::handle v, bool rescale, TArg t) {
            return mul_any(*e.ev, e.owner, a.ct, v, rescale, threads_arg(t));
        }, "a"_a, "values"_a, "rescale"_a = true, "threads"_a = nb::none(),
           "Multiplies by an array or a scalar, encoded at scale q_level so that the rescale keeps the scale exactly.")
        .def("multiply", [](const KEvaluator& e, const KCiphertext& a, const KCiphertext& b, bool rescale, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->multiply(a.ct, b.ct, rescale, threads_arg(t)));
        }, "a"_a, "b"_a, "rescale"_a = true, "threads"_a = nb::none(),
           "Relinearised product; rescaled unless rescale=False. Operands at different levels are aligned.")
        .def("square", [](const KEvaluator& e, const KCiphertext& a, bool rescale, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->square(a.ct, rescale, threads_arg(t)));
        }, "a"_a, "rescale"_a = true, "threads"_a = nb::none())
        .def("relinearize", [](const KEvaluator& e, const KCiphertext& a, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->relinearize(a.ct, threads_arg(t)));
        }, "a"_a, "threads"_a = nb::none())
        .def("rescale", [](const KEvaluator& e, const KCiphertext& a, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->rescale(a.ct, threads_arg(t)));
        }, "a"_a, "threads"_a = nb::none())
        .def("drop_level", [](const KEvaluator& e, const KCiphertext& a, int level) {
            return wrap(e.owner, e.ev->drop_level(a.ct, level));
        }, "a"_a, "level"_a)
        .def("rotate", [](const KEvaluator& e, const KCiphertext& a, std::int64_t step, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->rotate(a.ct, step, threads_arg(t)));
        }, "a"_a, "step"_a, "threads"_a = nb::none(), "Left rotation: slot i of the result is slot i+step of a.")
        .def("conjugate", [](const KEvaluator& e, const KCiphertext& a, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->conjugate(a.ct, threads_arg(t)));
        }, "a"_a, "threads"_a = nb::none())
        // ---- hoisting and trace-type functions (seed 000)
        .def("rotate_hoisted", [](const KEvaluator& e, const KCiphertext& a, std::vector<std::int64_t> steps, bool conjugate, TArg t) {
            nb::gil_scoped_release r;
            return wrap_all(e.owner, e.ev->rotate_hoisted(a.ct, steps, conjugate, threads_arg(t)));
        }, "a"_a, "steps"_a, "conjugate"_a = false, "threads"_a = nb::none(),
           "Rotations of a by each step (then its conjugate if conjugate=True), sharing one ModUp. Returns a list.")
        .def("apply_galois_hoisted", [](const KEvaluator& e, const KCiphertext& a, std::vector<std::uint64_t> elts, TArg t) {
            nb::gil_scoped_release r;
            return wrap_all(e.owner, e.ev->apply_galois_hoisted(a.ct, elts, threads_arg(t)));
        }, "a"_a, "galois_elements"_a, "threads"_a = nb::none(), "psi_g(a) for each Galois element g, sharing one ModUp.")
        .def("rotate_sum_hoisted", [](const KEvaluator& e, const KCiphertext& a, std::vector<std::int64_t> steps,
                                      std::vector<std::uint64_t> elts, bool conjugate, TArg t) {
            const Context& ctx = *e.owner->ctx;
            for (std::int64_t s : steps) elts.push_back(ctx.galois_element(s));
            if (conjugate) elts.push_back(ctx.conjugation_element());
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->apply_galois_sum_hoisted(a.ct, elts, threads_arg(t)));
        }, "a"_a, "steps"_a = std::vector<std::int64_t>{}, "galois_elements"_a = std::vector<std::uint64_t>{},
           "conjugate"_a = false, "threads"_a = nb::none(),
           "Sum of the rotations of a by `steps` (and of psi_g(a) for `galois_elements`, and its conjugate if conjugate=True): "
           "one ModUp, the sum taken before ModDown, one ModDown.")
        .def("trace", [](const KEvaluator& e, const KCiphertext& a, std::vector<std::uint64_t> autos, std::optional<int> h, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->trace(a.ct, autos, h ? *h : 0, threads_arg(t)));
        }, "a"_a, "automorphisms"_a, "h"_a = nb::none(), "threads"_a = nb::none(),
           "Trace-type function over the doubling steps `automorphisms` (Galois elements): sum over all subsets S of "
           "psi_{prod S}(a). h = len(automorphisms) is repeated doubling, smaller h unrolls it into h hoisted sums; "
           "None picks the cheapest h whose keys exist, from the measured cost model.")
        .def("sum_slots", [](const KEvaluator& e, const KCiphertext& a, std::optional<std::size_t> count, std::optional<int> h, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->sum_slots(a.ct, count ? *count : 0, h ? *h : 0, threads_arg(t)));
        }, "a"_a, "count"_a = nb::none(), "h"_a = nb::none(), "threads"_a = nb::none(),
           "Slot i of the result is sum_{j < count} a[(i + j) mod slots]; count a power of two (None: all slots).")
        .def("choose_trace_h", [](const KEvaluator& e, std::vector<std::uint64_t> autos, std::optional<int> level, TArg t) {
            nb::gil_scoped_release r;
            return e.ev->choose_trace_h(autos, level ? *level : e.owner->ctx->max_level(), threads_arg(t));
        }, "automorphisms"_a, "level"_a = nb::none(), "threads"_a = nb::none(),
           "The h that trace(..., h=None) uses at this level (0: no h has all its keys).")
        .def("model_trace_h", [](const KEvaluator& e, std::size_t M, std::optional<int> level, TArg t) {
            nb::gil_scoped_release r;
            return best_trace_h(e.ev->keyswitch_costs(level ? *level : e.owner->ctx->max_level(), threads_arg(t)), M);
        }, "M"_a, "level"_a = nb::none(), "threads"_a = nb::none(),
           "The h in 1..M with the smallest modelled trace time, whether or not its keys exist.")
        .def("model_trace_ms", [](const KEvaluator& e, std::size_t M, std::size_t h, std::optional<int> level, TArg t) {
            nb::gil_scoped_release r;
            return trace_cost(e.ev->keyswitch_costs(level ? *level : e.owner->ctx->max_level(), threads_arg(t)), M, h);
        }, "M"_a, "h"_a, "level"_a = nb::none(), "threads"_a = nb::none(),
           "Modelled time (ms) of a trace with M doubling steps and h iterations: per group, decompose + "
           "(2^m - 1) inner products + mod_down + add, from keyswitch_costs.")
        .def("keyswitch_costs", [](const KEvaluator& e, std::optional<int> level, TArg t) {
            KeySwitchCosts c;
            {
                nb::gil_scoped_release r;
                c = e.ev->keyswitch_costs(level ? *level : e.owner->ctx->max_level(), threads_arg(t));
            }
            nb::dict d;
            d["level"] = c.level; d["threads"] = c.threads; d["decompose_ms"] = c.decompose_ms;
            d["inner_product_ms"] = c.inner_product_ms; d["mod_down_ms"] = c.mod_down_ms; d["add_ms"] = c.add_ms;
            return d;
        }, "level"_a = nb::none(), "threads"_a = nb::none(),
           "Measured ms of the key-switching steps at a level (the cost model behind h=None), cached per process.")
        .def("decompose", [](const KEvaluator& e, const KCiphertext& a, TArg t) {
            nb::gil_scoped_release r;
            return KDecomposition{e.owner, std::make_shared<const Decomposition>(e.ev->decompose(a.ct, threads_arg(t)))};
        }, "a"_a, "threads"_a = nb::none(), "Key-switching step 1: digit split and ModUp of a (hoistable).")
        .def("inner_product_lazy", [](const KEvaluator& e, const KDecomposition& d, std::uint64_t g, TArg t) {
            nb::gil_scoped_release r;
            return KLazy{e.owner, e.ev->inner_product_lazy(*d.d, g, threads_arg(t))};
        }, "decomposition"_a, "galois_element"_a, "threads"_a = nb::none(),
           "Key-switching step 2: psi_g(a) left in the Q*P basis (LazyCiphertext; lazy values add with +).")
        .def("mod_down", [](const KEvaluator& e, const KLazy& x, TArg t) {
            nb::gil_scoped_release r;
            return wrap(e.owner, e.ev->mod_down(x.x, threads_arg(t)));
        }, "lazy"_a, "threads"_a = nb::none(), "Key-switching step 3: ModDown of a LazyCiphertext to a Ciphertext.")
        .def("apply", [](const KEvaluator& e, const KLinearTransform& lt, const KCiphertext& a, TArg t) {
            same_owner(lt.owner, e.owner, "linear transform");
            nb::gil_scoped_release r;
            return wrap(e.owner, lt.lt->apply(*e.ev, a.ct, threads_arg(t)));
        }, "transform"_a, "a"_a, "threads"_a = nb::none(),
           "The linear transform of a (at transform.level), hoisted baby steps and lazy giant steps, rescaled once.");

    nb::class_<KDecomposition>(m, "Decomposition", "ModUp digits of a ciphertext (Evaluator.decompose).")
        .def_prop_ro("level", [](const KDecomposition& d) { return d.d->input.level(); })
        .def_prop_ro("digits", [](const KDecomposition& d) { return d.d->digits.size(); });
    nb::class_<KLazy>(m, "LazyCiphertext", "A key-switched ciphertext before ModDown (Evaluator.inner_product_lazy).")
        .def_prop_ro("level", [](const KLazy& x) { return x.x.level(); })
        .def("__add__", [](const KLazy& a, const KLazy& b) {
            const Evaluator& ev = *a.owner->keyless;
            KLazy r = a;
            nb::gil_scoped_release g;
            ev.add_lazy_inplace(r.x, b.x);
            return r;
        });

    // ---------------------------------------------------------------- linear transforms and matrix products
    nb::class_<KLinearTransform>(m, "LinearTransform",
        "A plaintext matrix times an encrypted vector (diagonal method, baby-step giant-step, hoisted baby steps); "
        "diagonals encoded once at `level`. Apply with Evaluator.apply(transform, ct).")
        .def("__init__", [](KLinearTransform* self, const KContext& c, nb::handle matrix_or_diagonals, std::optional<int> level,
                            std::optional<std::size_t> baby, TArg t) {
            const auto& ctx = c.owner->ctx;
            const int lvl = level ? *level : ctx->max_level();
            std::shared_ptr<const algo::LinearTransform> lt;
            if (nb::isinstance<nb::dict>(matrix_or_diagonals)) {
                std::map<std::int64_t, cvec> diags;
                for (auto [k, v] : nb::cast<nb::dict>(matrix_or_diagonals)) diags[nb::cast<std::int64_t>(k)] = to_values(v);
                nb::gil_scoped_release r;
                lt = std::make_shared<const algo::LinearTransform>(ctx, diags, lvl, baby ? *baby : 0, threads_arg(t));
            } else {
                nb::module_ np = nb::module_::import_("numpy");
                nb::object arr = np.attr("ascontiguousarray")(matrix_or_diagonals, "dtype"_a = np.attr("complex128"));
                if (nb::cast<int>(arr.attr("ndim")) != 2 ||
                    nb::cast<std::size_t>(arr.attr("shape")[0]) != nb::cast<std::size_t>(arr.attr("shape")[1]))
                    throw ParameterError("LinearTransform takes a square 2-D matrix (dim <= slots) or a dict {offset: diagonal}");
                auto a = nb::cast<nb::ndarray<const std::complex<double>, nb::ndim<2>, nb::c_contig, nb::device::cpu>>(arr);
                nb::gil_scoped_release r;
                lt = std::make_shared<const algo::LinearTransform>(
                    algo::LinearTransform::from_matrix(ctx, a.data(), a.shape(0), lvl, baby ? *baby : 0, threads_arg(t)));
            }
            new (self) KLinearTransform{c.owner, lt};
        }, "ctx"_a, "matrix_or_diagonals"_a, "level"_a = nb::none(), "baby"_a = nb::none(), "threads"_a = nb::none(),
           "matrix: dim x dim (dim <= slots) acting on slots 0..dim-1 (cyclic over all slots when dim = slots); or "
           "diagonals {r: values}: out[s] = sum_r values_r[s] * in[(s + r) mod slots]. level: the inputs' level (default top). "
           "baby: baby steps per giant step (default: the cheapest split).")
        .def_prop_ro("level", [](const KLinearTransform& l) { return l.lt->level(); })
        .def_prop_ro("diagonal_count", [](const KLinearTransform& l) { return l.lt->diagonal_count(); })
        .def_prop_ro("baby_steps", [](const KLinearTransform& l) { return l.lt->plan().babies; })
        .def_prop_ro("giant_steps", [](const KLinearTransform& l) { return l.lt->plan().giants; })
        .def("galois_elements", [](const KLinearTransform& l) { return l.lt->galois_elements(); },
             "Exactly the Galois elements apply needs: pass them to ctx.keygen(galois_elements=...).");

    nb::class_<KMatrix>(m, "EncryptedMatrix", "g encrypted matrices packed by a MatrixEncoder (one or more ciphertexts).")
        .def_prop_ro("ciphertexts", [](const KMatrix& x) { return wrap_all(x.owner, x.m.blocks); })
        .def_prop_ro("shape", [](const KMatrix& x) { return nb::make_tuple(x.m.rows, x.m.d()); })
        .def_prop_ro("g", [](const KMatrix& x) { return x.m.g(); })
        .def_prop_ro("grid", [](const KMatrix& x) { return x.m.grid(); })
        .def_prop_ro("level", [](const KMatrix& x) { return x.m.level(); })
        .def("__repr__", [](const KMatrix& x) {
            return "EncryptedMatrix(g=" + std::to_string(x.m.g()) + ", shape=(" + std::to_string(x.m.rows) + ", " +
                   std::to_string(x.m.d()) + "), ciphertexts=" + std::to_string(x.m.blocks.size()) + ", level=" +
                   std::to_string(x.m.level()) + ")";
        });

    nb::class_<KMatrixEncoder>(m, "MatrixEncoder",
        "Packs g d x d matrices per ciphertext (V[g*j + i] = M_i[j // d][j % d], tiled); larger matrices (g = 1, d*d > slots) "
        "become blocks. rows: the rows of rectangular left operands (rows | d), for galois_elements.")
        .def("__init__", [](KMatrixEncoder* self, const KContext& c, std::size_t d, std::size_t g, std::optional<std::size_t> rows) {
            new (self) KMatrixEncoder{c.owner, std::make_shared<const algo::MatrixEncoder>(c.owner->ctx, d, g, rows ? *rows : 0)};
        }, "ctx"_a, "d"_a, "g"_a = 1, "rows"_a = nb::none())
        .def_prop_ro("d", [](const KMatrixEncoder& e) { return e.enc->d(); })
        .def_prop_ro("g", [](const KMatrixEncoder& e) { return e.enc->g(); })
        .def_prop_ro("rows", [](const KMatrixEncoder& e) { return e.enc->rows(); })
        .def_prop_ro("block", [](const KMatrixEncoder& e) { return e.enc->block(); })
        .def_prop_ro("grid", [](const KMatrixEncoder& e) { return e.enc->grid(); })
        .def("galois_elements", [](const KMatrixEncoder& e) { return e.enc->galois_elements(); },
             "Exactly the Galois elements matmul needs (ctx.keygen(matmul=(d, g)) makes them).")
        .def("pack", [](const KMatrixEncoder& e, nb::handle mats) {
            std::size_t rows, cols;
            auto v = to_matrices(mats, rows, cols);
            if (cols != e.enc->d()) throw ParameterError("matrices must have d = " + std::to_string(e.enc->d()) + " columns");
            nb::list out;
            for (auto& b : e.enc->pack(v, rows)) out.append(to_numpy(std::move(b)));
            return out;
        }, "matrices"_a, "The slot vectors (one per block) that encrypt would encrypt.")
        .def("encrypt", [](const KMatrixEncoder& e, nb::handle mats, const KPublicKey& pk, std::optional<int> level, TArg t) {
            same_owner(pk.owner, e.owner, "public key");
            std::size_t rows, cols;
            auto v = to_matrices(mats, rows, cols);
            if (cols != e.enc->d()) throw ParameterError("matrices must have d = " + std::to_string(e.enc->d()) + " columns, got " +
                                                         std::to_string(cols));
            nb::gil_scoped_release r;
            return KMatrix{e.owner, e.enc->encrypt(v, rows, *pk.key, level ? *level : -1, threads_arg(t))};
        }, "matrices"_a, "public_key"_a, "level"_a = nb::none(), "threads"_a = nb::none(),
           "Encrypts g matrices (a list of 2-D arrays, a 3-D array, or one 2-D array when g = 1), each d x d or rows x d.")
        .def("decrypt", [](const KMatrixEncoder& e, const KMatrix& x, const KSecretKey& sk, TArg t) {
            same_owner(sk.owner, e.owner, "secret key");
            std::vector<std::vector<double>> mats;
            {
                nb::gil_scoped_release r;
                mats = e.enc->decrypt(x.m, *sk.key, threads_arg(t));
            }
            nb::list out;
            for (auto& v : mats) out.append(to_numpy_matrix(std::move(v), x.m.rows, e.enc->d()));
            return out;
        }, "m"_a, "secret_key"_a, "threads"_a = nb::none(), "The g matrices as a list of 2-D float64 arrays.")
        .def("transform", [](const KMatrixEncoder& e, const std::string& which, std::size_t k, std::optional<int> level, TArg t) {
            nb::gil_scoped_release r;
            return KLinearTransform{e.owner, std::make_shared<const algo::LinearTransform>(
                                                 e.enc->transform(which, k, level ? *level : -1, threads_arg(t)))};
        }, "which"_a, "k"_a = 0, "level"_a = nb::none(), "threads"_a = nb::none(),
           "sigma, tau, phi (k) or psi (k) of Jiang et al. on every packed matrix, as a LinearTransform.");

    m.def("matmul", [](const KEvaluator& e, const KMatrix& a, const KMatrix& b, TArg t, bool return_counts) -> nb::object {
        same_owner(a.owner, e.owner, "left operand");
        same_owner(b.owner, e.owner, "right operand");
        algo::OpCounts c;
        KMatrix out{e.owner, {}};
        {
            nb::gil_scoped_release r;
            out.m = algo::matmul(*e.ev, a.m, b.m, threads_arg(t), &c);
        }
        if (return_counts) return nb::make_tuple(nb::cast(std::move(out)), counts_dict(c));
        return nb::cast(std::move(out));
    }, "ev"_a, "a"_a, "b"_a, "threads"_a = nb::none(), "return_counts"_a = false,
       "The products A_i B_i of the packed pairs (depth 3). return_counts=True also returns the operations executed "
       "(add, cmult, rot, mult, decompose, mod_down, rescale).");
    m.def("matmul_schoolbook", [](const KEvaluator& e, const std::vector<KCiphertext>& a, const std::vector<KCiphertext>& b,
                                  std::size_t d, TArg t, bool return_counts) -> nb::object {
        std::vector<Ciphertext> ca, cb;
        for (auto& x : a) ca.push_back(x.ct);
        for (auto& x : b) cb.push_back(x.ct);
        algo::OpCounts c;
        std::vector<Ciphertext> out;
        {
            nb::gil_scoped_release r;
            out = algo::matmul_schoolbook(*e.ev, ca, cb, d, threads_arg(t), &c);
        }
        nb::object res = nb::cast(wrap_all(e.owner, std::move(out)));
        if (return_counts) return nb::make_tuple(res, counts_dict(c));
        return res;
    }, "ev"_a, "a"_a, "b"_a, "d"_a, "threads"_a = nb::none(), "return_counts"_a = false,
       "Baseline: one ciphertext per element (row major), d^3 tensor products, one relinearisation per element.");

    // ---------------------------------------------------------------- Context
    nb::class_<KContext>(m, "Context", "Parameters plus every precomputed table; makes keys, ciphertexts and evaluators.")
        .def("__init__", [](KContext* self, const Parameters& p, std::optional<int> threads) {
            ContextPtr ctx;
            {
                nb::gil_scoped_release r;
                ctx = Context::create(p, threads ? resolve_threads(*threads) : 0);
            }
            auto o = std::make_shared<Owner>();
            o->ctx = ctx;
            o->keyless = std::make_shared<const Evaluator>(ctx, nullptr);
            new (self) KContext{o};
        }, "params"_a, "threads"_a = nb::none(), "threads=None uses all cores.")
        .def_prop_ro("params", [](const KContext& c) { return c.owner->ctx->params(); })
        .def_prop_ro("n", [](const KContext& c) { return c.owner->ctx->n(); })
        .def_prop_ro("slots", [](const KContext& c) { return c.owner->ctx->slots(); })
        .def_prop_ro("max_level", [](const KContext& c) { return c.owner->ctx->max_level(); })
        .def_prop_ro("threads", [](const KContext& c) { return c.owner->ctx->threads(); })
        .def_prop_ro("default_scale", [](const KContext& c) { return c.owner->ctx->default_scale(); })
        .def("scale_at", [](const KContext& c, int level) {
            if (level < 0 || level > c.owner->ctx->max_level()) throw LevelError("no such level");
            return c.owner->ctx->scale_at(level);
        }, "level"_a, "Canonical scale of a level: s_L = 2^scale_bits, s_{l-1} = s_l^2 / q_l.")
        .def_prop_ro("q_primes", [](const KContext& c) { return c.owner->ctx->rns().q_primes(); })
        .def_prop_ro("p_primes", [](const KContext& c) { return c.owner->ctx->rns().p_primes(); })
        .def("galois_element", [](const KContext& c, std::int64_t step) { return c.owner->ctx->galois_element(step); }, "step"_a,
             "Galois element 5^step mod 2n of the rotation by `step` slots to the left.")
        .def_prop_ro("conjugation_element", [](const KContext& c) { return c.owner->ctx->conjugation_element(); })
        .def("keygen", [](const KContext& c, std::vector<std::int64_t> rotations, bool conjugation, bool relin,
                          std::vector<std::uint64_t> galois_elements, bool sum_slots, std::optional<std::vector<std::size_t>> matmul,
                          TArg t) {
            const auto& ctx = c.owner->ctx;
            if (matmul) {
                if (matmul->size() < 1 || matmul->size() > 3)
                    throw ParameterError("matmul=(d, g) or (d, g, rows): the shape of the matrix products to make keys for");
                const std::size_t d = (*matmul)[0], g = matmul->size() > 1 ? (*matmul)[1] : 1,
                                  rows = matmul->size() > 2 ? (*matmul)[2] : 0;
                for (auto e : algo::MatrixEncoder(ctx, d, g, rows).galois_elements()) galois_elements.push_back(e);
            }
            for (std::uint64_t g : galois_elements)
                if (g % 2 == 0 || g >= 2 * ctx->n())
                    throw ParameterError("Galois element " + std::to_string(g) + " must be odd and below 2n");
            KKeyPair kp;
            {
                nb::gil_scoped_release r;
                const int th = threads_arg(t);
                if (sum_slots) {  // the keys of sum_slots(count=None, h=None) at the top level
                    const std::size_t M = static_cast<std::size_t>(ctx->params().log_n - 1);
                    const std::size_t h = best_trace_h(Evaluator(ctx, nullptr).keyswitch_costs(ctx->max_level(), th), M);
                    for (std::uint64_t g : trace_galois_elements(ctx->params(), M, h)) galois_elements.push_back(g);
                }
                KeyGenerator kg(ctx);
                auto sk = std::make_shared<const SecretKey>(kg.secret_key(th));
                kp.secret = KSecretKey{c.owner, sk};
                kp.public_ = KPublicKey{c.owner, std::make_shared<const PublicKey>(kg.public_key(*sk, th))};
                EvaluationKeys ek = kg.evaluation_keys(*sk, relin, rotations, conjugation, galois_elements, th);
                auto shared = std::make_shared<const EvaluationKeys>(std::move(ek));
                if (shared->relin) kp.relin = KSwitchKey{c.owner, shared->relin};
                for (auto& [g, k] : shared->galois) kp.galois.emplace(g, KSwitchKey{c.owner, k});
                kp.eval = shared;
            }
            return kp;
        }, "rotations"_a = std::vector<std::int64_t>{}, "conjugation"_a = false, "relin"_a = true,
           "galois_elements"_a = std::vector<std::uint64_t>{}, "sum_slots"_a = false, "matmul"_a = nb::none(),
           "threads"_a = nb::none(),
           "Makes a secret key, a public key, the relinearisation key and Galois keys for the rotation steps, "
           "conjugation and Galois elements given; sum_slots=True adds the keys Evaluator.sum_slots needs with its "
           "default h at the top level; matmul=(d, g) (or (d, g, rows)) adds the keys of ks.matmul for that packing.")
        .def("encode", [](const KContext& c, nb::handle values, std::optional<int> level, std::optional<double> scale, TArg t) {
            return KPlaintext{c.owner, encode_values(c.owner->ctx, values, level, scale, threads_arg(t))};
        }, "values"_a, "level"_a = nb::none(), "scale"_a = nb::none(), "threads"_a = nb::none(),
           "Encodes up to ctx.slots values (zero padded); default: top level at its canonical scale.")
        .def("encrypt", [](const KContext& c, nb::handle values, nb::handle key, std::optional<int> level,
                           std::optional<double> scale, TArg t) {
            const auto& ctx = c.owner->ctx;
            Plaintext pt;
            if (nb::isinstance<KPlaintext>(values)) {
                const auto& kp = nb::cast<const KPlaintext&>(values);
                same_owner(kp.owner, c.owner, "plaintext");
                pt = kp.pt;
            } else {
                pt = encode_values(ctx, values, level, scale, threads_arg(t));
            }
            if (nb::isinstance<KPublicKey>(key)) {
                const auto& pk = nb::cast<const KPublicKey&>(key);
                same_owner(pk.owner, c.owner, "public key");
                nb::gil_scoped_release r;
                return wrap(c.owner, Encryptor(ctx).encrypt(pt, *pk.key, threads_arg(t)));
            }
            if (nb::isinstance<KSecretKey>(key)) {
                const auto& sk = nb::cast<const KSecretKey&>(key);
                same_owner(sk.owner, c.owner, "secret key");
                nb::gil_scoped_release r;
                return wrap(c.owner, Encryptor(ctx).encrypt_symmetric(pt, *sk.key, threads_arg(t)));
            }
            throw ParameterError("encrypt needs keys.public (or keys.secret for secret-key encryption)");
        }, "values"_a, "key"_a, "level"_a = nb::none(), "scale"_a = nb::none(), "threads"_a = nb::none(),
           "Encrypts a Plaintext, or up to ctx.slots real or complex values (zero padded) at the top level.")
        .def("decrypt", [](const KContext& c, const KCiphertext& ct, const KSecretKey& sk, TArg t) {
            same_owner(ct.owner, c.owner, "ciphertext");
            same_owner(sk.owner, c.owner, "secret key");
            cvec v;
            {
                nb::gil_scoped_release r;
                v = Decryptor(c.owner->ctx).decrypt(ct.ct, *sk.key, threads_arg(t));
            }
            return to_numpy(std::move(v));
        }, "ct"_a, "secret_key"_a, "threads"_a = nb::none(), "Decrypts and decodes: complex128 array of length ctx.slots.")
        .def("evaluator", [](const KContext& c, std::optional<KEvaluationKeys> keys) {
            std::shared_ptr<const EvaluationKeys> ek;
            if (keys) {
                same_owner(keys->owner, c.owner, "evaluation keys");
                ek = keys->keys;
            }
            auto ev = std::make_shared<const Evaluator>(c.owner->ctx, ek);
            c.owner->evaluator = ev;  // ciphertext operators of this context use it from now on
            return KEvaluator{c.owner, ev};
        }, "keys"_a = nb::none(), "An evaluator holding only evaluation keys; also enables * on this context's ciphertexts.")
        .def("__repr__", [](const KContext& c) { return "Context(" + c.owner->ctx->params().describe() + ")"; });

    // ---------------------------------------------------------------- build and machine information
    m.def("trace_galois_elements", [](const Parameters& p, std::size_t M, std::size_t h) {
        return trace_galois_elements(p, M, h);
    }, "params"_a, "M"_a, "h"_a,
       "Exactly the Galois elements that M doubling steps over rotations by 1, 2, ..., 2^(M-1) with h iterations need "
       "(M = log_n: the last step is conjugation, the full trace of the source).");
    m.def("trace_doubling_steps", [](const Parameters& p, std::size_t M) { return trace_doubling_steps(M, 2 * p.n()); },
          "params"_a, "M"_a, "Galois elements of the M doubling steps: rotations by 2^i (i < log2 slots), then "
          "conjugation when M = log_n.");
    m.def("trace_group_sizes", &trace_group_sizes, "M"_a, "h"_a, "Sizes of the h groups the M doubling steps are split into.");
    m.def("simd_active", [] { return std::string(arith::simd_name(arith::active_simd())); });
    m.def("simd_available", [] {
        std::vector<std::string> out;
        for (auto l : arith::simd_available()) out.push_back(arith::simd_name(l));
        return out;
    });
    m.def("simd_cpu_supports", [] {
        std::vector<std::string> out;
        for (auto l : {arith::SimdLevel::scalar, arith::SimdLevel::avx2, arith::SimdLevel::avx512, arith::SimdLevel::ifma})
            if (arith::simd_cpu_supports(l)) out.push_back(arith::simd_name(l));
        return out;
    });
    m.def("hardware_threads", &hardware_threads);
    m.def("build_info", [] {
        std::map<std::string, std::string> info;
        info["compiler"] = __VERSION__;
        info["cxx_standard"] = std::to_string(__cplusplus);
#ifdef KASOKU_BUILD_TYPE
        info["build_type"] = KASOKU_BUILD_TYPE;
#endif
        std::string compiled;
        for (auto l : {arith::SimdLevel::scalar, arith::SimdLevel::avx2, arith::SimdLevel::avx512, arith::SimdLevel::ifma})
            if (arith::simd_compiled(l)) compiled += (compiled.empty() ? "" : ",") + std::string(arith::simd_name(l));
        info["simd_compiled"] = compiled;
        info["openmp"] = std::to_string(_OPENMP);
        info["randomness"] = "OpenSSL RAND_bytes seed + ChaCha20 stream";
        return info;
    });
    m.def("bench_ntt", [](int log_n, int bits, int reps) {
        // Times the forward NTT of one prime with the active SIMD body; returns seconds per call.
        std::vector<double> out;
        nb::gil_scoped_release r;
        const std::size_t n = std::size_t{1} << log_n;
        arith::NttTables t(arith::generate_ntt_primes(bits, 1, n)[0], n);
        std::vector<std::uint64_t> a(n);
        std::mt19937_64 rng(1);
        for (auto& x : a) x = rng() % t.q();
        arith::ntt_forward(a.data(), t);
        for (int i = 0; i < reps; ++i) {
            auto t0 = std::chrono::steady_clock::now();
            arith::ntt_forward(a.data(), t);
            out.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return out;
    }, "log_n"_a, "bits"_a = 60, "reps"_a = 10);

    bind_sched(m);
}

