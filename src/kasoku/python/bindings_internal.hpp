// Types shared by the binding sources (named namespace: nanobind tells types apart by their C++ identity), and the
// type casters that turn Python objects into C++ values (and back) while the GIL is held, so that every heavy
// binding can run with the GIL released by a call guard (nb::call_guard<nb::gil_scoped_release>).
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <complex>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kasoku/algo/bootstrap.hpp"
#include "kasoku/algo/matmul.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/ckks/serialization.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku_py {

namespace nb = nanobind;
using cvec = std::vector<std::complex<double>>;
using TArg = std::optional<int>;  // threads=None: the context's default
using ReleaseGil = nb::call_guard<nb::gil_scoped_release>;

// State shared by a Python Context and every object it makes: the C++ context and the evaluator that the ciphertext
// operators (+, -, *) use. ctx.evaluator(...) may replace that evaluator while another thread runs an operator, so
// it is read and written under a lock and the operator keeps its own reference for the whole operation.
struct Owner;
using OwnerPtr = std::shared_ptr<Owner>;

struct Owner {
    kasoku::ckks::ContextPtr ctx;
    std::shared_ptr<const kasoku::ckks::Evaluator> keyless;  // add/sub/negate without keys (set once)
    std::string device;                                      // "cpu" or "cuda"

    // A context of these parameters on `device` (the C++ backend: "cpu" or "cuda"), threads as this one's.
    static OwnerPtr make(const kasoku::ckks::Parameters& params, int threads, const std::string& device);
    // The same parameters on another device: one context per context and device while any of its objects lives, so
    // that objects moved there and back meet their own context again (Ciphertext.to, Context.on).
    static OwnerPtr on(const OwnerPtr& self, const std::string& device);

    void set_operators(std::shared_ptr<const kasoku::ckks::Evaluator> ev) {
        std::lock_guard<std::mutex> lock(mu_);
        operators_ = std::move(ev);
    }
    // The evaluator of the operators; without evaluation keys the keyless one, or MissingKeyError when the
    // operation needs keys.
    std::shared_ptr<const kasoku::ckks::Evaluator> operators(bool needs_keys) const;
    // The bootstrapper of the default config, made on first use (Evaluator.bootstrap without one).
    std::shared_ptr<const kasoku::algo::Bootstrapper> default_bootstrapper() const;

private:
    mutable std::mutex mu_;
    std::shared_ptr<const kasoku::ckks::Evaluator> operators_;  // set by Context.evaluator(...)
    mutable std::mutex boot_mu_;  // apart from mu_: making a bootstrapper takes seconds, operators must not wait
    mutable std::shared_ptr<const kasoku::algo::Bootstrapper> bootstrapper_;
    std::mutex twins_mu_;
    std::map<std::string, std::weak_ptr<Owner>> twins_;
};

// The progress callback of a long call (key generation, a bootstrapper's plan, matmul) from its `progress` argument
// (kasoku._progress.reporter: None, True, False or a callable(done, total); a null handle is None): a tqdm bar on
// stderr, the caller's callback, or none. Each step takes the GIL for the report, then checks for Ctrl-C and throws
// (KeyboardInterrupt) if it came, so the call ends at that step. May be called with the GIL released.
kasoku::Progress python_progress(nanobind::handle progress, const char* what, const char* unit);

struct KContext {
    OwnerPtr owner;
};
struct KCiphertext {
    OwnerPtr owner;
    kasoku::ckks::Ciphertext ct;
};
struct KEvaluator {
    OwnerPtr owner;
    std::shared_ptr<const kasoku::ckks::Evaluator> ev;
};
struct KSecretKey {
    OwnerPtr owner;
    std::shared_ptr<const kasoku::ckks::SecretKey> key;
};
struct KPublicKey {
    OwnerPtr owner;
    std::shared_ptr<const kasoku::ckks::PublicKey> key;
};
struct KSwitchKey {
    OwnerPtr owner;
    std::shared_ptr<const kasoku::ckks::SwitchKey> key;
};
struct KEvaluationKeys {
    OwnerPtr owner;
    std::shared_ptr<const kasoku::ckks::EvaluationKeys> keys;
};
struct KPlaintext {
    OwnerPtr owner;
    kasoku::ckks::Plaintext pt;
};
struct KLinearTransform {
    OwnerPtr owner;
    std::shared_ptr<const kasoku::algo::LinearTransform> lt;
};
struct KBootstrapper {
    OwnerPtr owner;
    std::shared_ptr<const kasoku::algo::Bootstrapper> boot;
};

// ---- values converted from Python by the casters below (under the GIL); a conversion that fails keeps its message
// and raises ParameterError when the binding reads the value (with the GIL released).

// One number, or a 1-D array-like of numbers (whatever NumPy turns into complex128).
struct Values {
    cvec v;
    bool scalar = false;
    std::string error;
    const cvec& get() const;
    std::complex<double> scalar_value() const { return get().front(); }
};
// Real matrices of one shape: a 2-D array, a 3-D array or a list of 2-D arrays (row major each).
struct Matrices {
    std::vector<std::vector<double>> mats;
    std::size_t rows = 0, cols = 0;
    std::string error;
    const std::vector<std::vector<double>>& get() const;
};
// A square 2-D array of complex numbers (row major).
struct ComplexMatrix {
    cvec data;
    std::size_t dim = 0;
    std::string error;
    const cvec& get() const;
};
// The bytes of a Python bytes object, read while the call holds it.
struct BytesIn {
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
};

// ---- results converted to Python after the call (with the GIL held again)
struct ComplexArray {
    cvec v;
};  // -> 1-D complex128 ndarray
struct RealMatrices {
    std::vector<std::vector<double>> mats;
    std::size_t rows = 0, cols = 0;
};  // -> list of 2-D float64
// to_bytes(compression=None | "zstd"): ParameterError for anything else.
kasoku::ckks::Compression compression_arg(const std::optional<std::string>& c);
struct BytesOut {
    kasoku::ckks::Bytes b;
};  // -> bytes

int threads_arg(TArg t);
void same_owner(const OwnerPtr& a, const OwnerPtr& ctx_owner, const char* what);
inline KCiphertext wrap(const OwnerPtr& o, kasoku::ckks::Ciphertext ct) { return KCiphertext{o, std::move(ct)}; }
std::vector<KCiphertext> wrap_all(const OwnerPtr& o, std::vector<kasoku::ckks::Ciphertext> v);
// Values (array or scalar) encoded at `level` (default: the user level) and `scale` (default: the level's canonical
// scale); with `slots`, repeated every `slots` slots (Encoder::replicate).
kasoku::ckks::Plaintext encode_values(const kasoku::ckks::ContextPtr& ctx, const Values& values,
                                      std::optional<int> level, std::optional<double> scale,
                                      std::optional<std::size_t> slots, int threads);
// a + sign * b and a * b for a scalar or an array b (encoded at a's level).
KCiphertext add_values(const kasoku::ckks::Evaluator& ev, const OwnerPtr& o, const kasoku::ckks::Ciphertext& a,
                       const Values& b, double sign, int threads);
KCiphertext mul_values(const kasoku::ckks::Evaluator& ev, const OwnerPtr& o, const kasoku::ckks::Ciphertext& a,
                       const Values& b, bool rescale, int threads);

// Binders, one per area (module.cpp calls them in this order).
void bind_objects(nb::module_& m);    // parameters, keys, plaintexts, ciphertexts and their operators, Context
void bind_evaluator(nb::module_& m);  // Evaluator, Decomposition, LazyCiphertext
void bind_algo(nb::module_& m);       // linear transforms, matrix encoder, matrix products
void bind_functions(nb::module_& m);  // Polynomial, chebyshev(), depths of the functions
void bind_function_methods(nb::class_<KEvaluator>& ev);  // Evaluator.evaluate_polynomial, sigmoid, ...
void bind_info(nb::module_& m);                          // trace plans, SIMD and build information, kernel timing
void bind_sched(nb::module_& m);                         // kasoku._kasoku.sched
void bind_multiparty(nb::module_& m);                    // kasoku._kasoku.multiparty
void bind_hls(nb::module_& m);                           // big-integer multiplication through the NTT (Kawamura et al.)

}  // namespace kasoku_py

namespace nanobind::detail {

template <>
struct type_caster<kasoku_py::Values> {
    NB_TYPE_CASTER(kasoku_py::Values, const_name("complex | numpy.typing.ArrayLike"))
    bool from_python(handle src, uint8_t, cleanup_list*) noexcept;
};
template <>
struct type_caster<kasoku_py::Matrices> {
    NB_TYPE_CASTER(kasoku_py::Matrices,
                   const_name("numpy.typing.ArrayLike | collections.abc.Sequence[numpy.typing.ArrayLike]"))
    bool from_python(handle src, uint8_t, cleanup_list*) noexcept;
};
template <>
struct type_caster<kasoku_py::ComplexMatrix> {
    NB_TYPE_CASTER(kasoku_py::ComplexMatrix, const_name("numpy.typing.ArrayLike"))
    bool from_python(handle src, uint8_t, cleanup_list*) noexcept;
};
template <>
struct type_caster<kasoku_py::BytesIn> {
    NB_TYPE_CASTER(kasoku_py::BytesIn, const_name("bytes"))
    bool from_python(handle src, uint8_t, cleanup_list*) noexcept;
};
template <>
struct type_caster<kasoku_py::ComplexArray> {
    NB_TYPE_CASTER(kasoku_py::ComplexArray, const_name("numpy.typing.NDArray[numpy.complex128]"))
    static handle from_cpp(kasoku_py::ComplexArray&& a, rv_policy, cleanup_list*) noexcept;
};
template <>
struct type_caster<kasoku_py::RealMatrices> {
    NB_TYPE_CASTER(kasoku_py::RealMatrices, const_name("list[numpy.typing.NDArray[numpy.float64]]"))
    static handle from_cpp(kasoku_py::RealMatrices&& a, rv_policy, cleanup_list*) noexcept;
};
template <>
struct type_caster<kasoku_py::BytesOut> {
    NB_TYPE_CASTER(kasoku_py::BytesOut, const_name("bytes"))
    static handle from_cpp(kasoku_py::BytesOut&& b, rv_policy, cleanup_list*) noexcept;
};

}  // namespace nanobind::detail
