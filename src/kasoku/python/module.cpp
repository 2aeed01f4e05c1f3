// nanobind module kasoku._kasoku: the Python API of README.md. This file: the module, the error translation, and the
// conversions every area shares (bindings_internal.hpp). The classes are bound by area in *_bindings.cpp.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/complex.h>

#include <unistd.h>
#include "bindings_internal.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "gpu/backends.hpp"
#include "kasoku/gpu/cuda.hpp"
#include "kasoku/support/threads.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kasoku;
using namespace kasoku::ckks;

namespace kasoku_py {

std::shared_ptr<const Evaluator> Owner::operators(bool needs_keys) const {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (operators_) return operators_;
    }
    if (needs_keys)
        throw MissingKeyError(
            "this operator needs evaluation keys: call ctx.evaluator(keys.evaluation()) once, "
            "then ciphertexts of that context support * and rotations");
    return keyless;
}

OwnerPtr Owner::make(const Parameters& params, int threads, const std::string& device) {
    rns::BackendFactory factory;
    if (device == "cpu") factory = rns::make_cpu_backend;
    else if (device == "cuda") factory = gpu::make_cuda_backend;
    else if (device == "gpu-emulated") factory = gpu::make_emulated_gpu_backend;
    else throw ParameterError("device must be \"cpu\", \"cuda\" or \"gpu-emulated\" (got \"" + device + "\")");
    auto o = std::make_shared<Owner>();
    o->ctx = Context::create(params, threads, factory);
    o->keyless = std::make_shared<const Evaluator>(o->ctx, nullptr);
    o->device = device;
    return o;
}

OwnerPtr Owner::on(const OwnerPtr& self, const std::string& device) {
    if (device == self->device) return self;
    std::lock_guard<std::mutex> lock(self->twins_mu_);
    if (OwnerPtr twin = self->twins_[device].lock()) return twin;
    OwnerPtr twin = make(self->ctx->params(), self->ctx->threads(), device);
    twin->twins_[self->device] = self;  // the way back (twin's mutex: nobody else knows it yet)
    self->twins_[device] = twin;
    return twin;
}

std::shared_ptr<const kasoku::algo::Bootstrapper> Owner::default_bootstrapper() const {
    std::lock_guard<std::mutex> lock(boot_mu_);
    if (!bootstrapper_)
        bootstrapper_ = std::make_shared<const kasoku::algo::Bootstrapper>(
            ctx, kasoku::algo::BootstrapConfig{}, kasoku::Exec{},
            python_progress(nb::handle(), "bootstrapping plan", "transform"));
    return bootstrapper_;
}

kasoku::Progress python_progress(nb::handle progress, const char* what, const char* unit) {
    nb::gil_scoped_acquire gil;  // the binding may have released it
    nb::object fn = nb::module_::import_("kasoku._progress")
                        .attr("reporter")(progress.ptr() ? nb::borrow(progress) : nb::none(), what, unit);
    if (fn.is_none()) return {};
    // Released with the GIL held, wherever the last copy of the callback goes.
    std::shared_ptr<nb::object> held(new nb::object(std::move(fn)), [](nb::object* o) {
        nb::gil_scoped_acquire g;
        delete o;
    });
    return [held](std::size_t done, std::size_t total) {
        nb::gil_scoped_acquire g;
        (*held)(done, total);                                     // an exception of the callback ends the call
        if (PyErr_CheckSignals() != 0) throw nb::python_error();  // Ctrl-C: KeyboardInterrupt at this step
    };
}

const cvec& Values::get() const {
    if (!error.empty()) throw ParameterError(error);
    return v;
}
const std::vector<std::vector<double>>& Matrices::get() const {
    if (!error.empty()) throw ParameterError(error);
    return mats;
}
const cvec& ComplexMatrix::get() const {
    if (!error.empty()) throw ParameterError(error);
    return data;
}

int threads_arg(TArg t) { return t ? resolve_threads(*t) : 0; }

void same_owner(const OwnerPtr& a, const OwnerPtr& ctx_owner, const char* what) {
    if (a->ctx->uid() != ctx_owner->ctx->uid()) throw ParameterError(std::string(what) + " belongs to another context");
}

std::vector<KCiphertext> wrap_all(const OwnerPtr& o, std::vector<Ciphertext> v) {
    std::vector<KCiphertext> out;
    for (auto& c : v) out.push_back(KCiphertext{o, std::move(c)});
    return out;
}

Plaintext encode_values(const ContextPtr& ctx, const Values& values, std::optional<int> level,
                        std::optional<double> scale, std::optional<std::size_t> slots, int threads) {
    const cvec& v = values.get();
    const int lvl = level ? *level : ctx->user_level();
    if (lvl < 0 || lvl > ctx->max_level())
        throw LevelError("level must be in 0.." + std::to_string(ctx->max_level()) + ", got " + std::to_string(lvl));
    const Encoder enc(ctx);
    return enc.encode(slots ? enc.replicate(v, *slots) : v, scale ? *scale : ctx->scale_at(lvl), lvl, threads);
}

KCiphertext add_values(const Evaluator& ev, const OwnerPtr& o, const Ciphertext& a, const Values& b, double sign,
                       int threads) {
    if (b.scalar) return wrap(o, ev.add_scalar(a, sign * b.scalar_value(), threads));
    cvec v = b.get();
    if (sign < 0)
        for (auto& x : v) x = -x;
    return wrap(o, ev.add_plain(a, v, threads));
}

KCiphertext mul_values(const Evaluator& ev, const OwnerPtr& o, const Ciphertext& a, const Values& b, bool rescale,
                       int threads) {
    if (b.scalar) return wrap(o, ev.multiply_scalar(a, b.scalar_value(), rescale, threads));
    return wrap(o, ev.multiply_plain(a, b.get(), rescale, threads));
}

namespace {
// NumPy's conversion of `obj` (dtype given), or the message of its failure.
nb::object as_array(nb::handle obj, const char* dtype, std::string& error, const char* what) {
    try {
        nb::module_ np = nb::module_::import_("numpy");
        return np.attr("ascontiguousarray")(obj, "dtype"_a = np.attr(dtype));
    } catch (const std::exception& e) {
        error = std::string(what) + ": " + e.what();
        return nb::object();
    }
}
}  // namespace

}  // namespace kasoku_py

namespace nanobind::detail {

using namespace kasoku_py;

bool type_caster<Values>::from_python(handle src, uint8_t, cleanup_list*) noexcept {
    value = Values{};
    try {
        const bool scalar = nb::isinstance<nb::float_>(src) || nb::isinstance<nb::int_>(src) ||
                            PyComplex_Check(src.ptr()) ||
                            nb::cast<int>(nb::module_::import_("numpy").attr("ndim")(src)) == 0;
        if (scalar) {
            value.scalar = true;
            value.v = {nb::cast<std::complex<double>>(nb::module_::import_("builtins").attr("complex")(src))};
            return true;
        }
        nb::object arr =
            as_array(src, "complex128", value.error, "values must be numbers (a NumPy array, a list or a scalar)");
        if (!arr.is_valid()) return true;
        if (nb::cast<int>(arr.attr("ndim")) > 1) {
            value.error = "values must be one-dimensional; flatten the array (x.ravel()) or encode rows separately";
            return true;
        }
        arr = arr.attr("ravel")();
        auto a = nb::cast<nb::ndarray<const std::complex<double>, nb::ndim<1>, nb::c_contig, nb::device::cpu>>(arr);
        value.v.assign(a.data(), a.data() + a.shape(0));
    } catch (const std::exception& e) {
        value.error = std::string("values must be numbers (a NumPy array, a list or a scalar): ") + e.what();
    }
    return true;
}

bool type_caster<Matrices>::from_python(handle src, uint8_t, cleanup_list*) noexcept {
    value = Matrices{};
    const char* what = "matrices must be real numbers of one shape (a 2-D array, a 3-D array or a list of 2-D arrays)";
    try {
        nb::object arr = as_array(src, "float64", value.error, what);
        if (!arr.is_valid()) return true;
        const int ndim = nb::cast<int>(arr.attr("ndim"));
        if (ndim == 2) arr = arr.attr("reshape")(1, arr.attr("shape")[0], arr.attr("shape")[1]);
        else if (ndim != 3) {
            value.error = what;
            return true;
        }
        auto a = nb::cast<nb::ndarray<const double, nb::ndim<3>, nb::c_contig, nb::device::cpu>>(arr);
        value.rows = a.shape(1);
        value.cols = a.shape(2);
        for (std::size_t i = 0; i < a.shape(0); ++i)
            value.mats.emplace_back(a.data() + i * value.rows * value.cols,
                                    a.data() + (i + 1) * value.rows * value.cols);
    } catch (const std::exception& e) {
        value.error = std::string(what) + ": " + e.what();
    }
    return true;
}

bool type_caster<ComplexMatrix>::from_python(handle src, uint8_t, cleanup_list*) noexcept {
    value = ComplexMatrix{};
    const char* what = "LinearTransform takes a square 2-D matrix (dim <= slots) or a dict {offset: diagonal}";
    try {
        nb::object arr = as_array(src, "complex128", value.error, what);
        if (!arr.is_valid()) return true;
        if (nb::cast<int>(arr.attr("ndim")) != 2 ||
            nb::cast<std::size_t>(arr.attr("shape")[0]) != nb::cast<std::size_t>(arr.attr("shape")[1])) {
            value.error = what;
            return true;
        }
        auto a = nb::cast<nb::ndarray<const std::complex<double>, nb::ndim<2>, nb::c_contig, nb::device::cpu>>(arr);
        value.dim = a.shape(0);
        value.data.assign(a.data(), a.data() + a.shape(0) * a.shape(1));
    } catch (const std::exception& e) {
        value.error = std::string(what) + ": " + e.what();
    }
    return true;
}

bool type_caster<BytesIn>::from_python(handle src, uint8_t, cleanup_list*) noexcept {
    if (!PyBytes_Check(src.ptr())) return false;
    value.data = reinterpret_cast<const std::uint8_t*>(PyBytes_AS_STRING(src.ptr()));
    value.size = static_cast<std::size_t>(PyBytes_GET_SIZE(src.ptr()));
    return true;
}

handle type_caster<ComplexArray>::from_cpp(ComplexArray&& a, rv_policy, cleanup_list*) noexcept {
    try {
        auto* heap = new cvec(std::move(a.v));
        nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<cvec*>(p); });
        return nb::ndarray<nb::numpy, std::complex<double>, nb::ndim<1>>(heap->data(), {heap->size()}, owner)
            .cast()
            .release();
    } catch (...) {
        return handle();
    }
}

handle type_caster<RealMatrices>::from_cpp(RealMatrices&& m, rv_policy, cleanup_list*) noexcept {
    try {
        nb::list out;
        for (auto& v : m.mats) {
            auto* heap = new std::vector<double>(std::move(v));
            nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
            out.append(nb::ndarray<nb::numpy, double, nb::ndim<2>>(heap->data(), {m.rows, m.cols}, owner));
        }
        return out.release();
    } catch (...) {
        return handle();
    }
}

handle type_caster<BytesOut>::from_cpp(BytesOut&& b, rv_policy, cleanup_list*) noexcept {
    return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(b.b.data()), static_cast<Py_ssize_t>(b.b.size()));
}

}  // namespace nanobind::detail

NB_MODULE(_kasoku, m) {
    m.doc() = "kasoku: RNS-CKKS homomorphic encryption (C++ core)";
    // nanobind reports the objects still alive when the interpreter ends as leaks. With a daemon thread running at
    // exit (a progress sampler, a server's worker) Python leaves the main module's globals uncollected, and the report
    // would name a user's contexts and keys that nothing leaked. Off unless KASOKU_LEAK_WARNINGS is set
    // (tests/python/test_exit.py runs scripts with it, which must exit without a report).
    if (!std::getenv("KASOKU_LEAK_WARNINGS")) nb::set_leak_warnings(false);

    // The error classes live in kasoku.errors (plain Python, so that they type-check and print as kasoku.X); C++
    // exceptions become them here. Borrowed for the life of the process (the module keeps them).
    nb::module_ errors = nb::module_::import_("kasoku.errors");
    static PyObject* e_base = errors.attr("Error").ptr();
    static PyObject* e_param = errors.attr("ParameterError").ptr();
    static PyObject* e_level = errors.attr("LevelError").ptr();
    static PyObject* e_scale = errors.attr("ScaleError").ptr();
    static PyObject* e_key = errors.attr("MissingKeyError").ptr();
    static PyObject* e_ser = errors.attr("SerializationError").ptr();
    static PyObject* e_dev = errors.attr("DeviceError").ptr();
    static PyObject* e_internal = errors.attr("InternalError").ptr();
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const ParameterError& e) {
            PyErr_SetString(e_param, e.what());
        } catch (const LevelError& e) {
            PyErr_SetString(e_level, e.what());
        } catch (const ScaleError& e) {
            PyErr_SetString(e_scale, e.what());
        } catch (const MissingKeyError& e) {
            PyErr_SetString(e_key, e.what());
        } catch (const SerializationError& e) {
            PyErr_SetString(e_ser, e.what());
        } catch (const DeviceError& e) {
            PyErr_SetString(e_dev, e.what());
        } catch (const Error& e) {
            PyErr_SetString(e_base, e.what());
        } catch (const InternalError& e) {
            PyErr_SetString(e_internal, e.what());
        }
    });

    kasoku_py::bind_objects(m);
    kasoku_py::bind_functions(m);
    kasoku_py::bind_evaluator(m);
    kasoku_py::bind_algo(m);
    kasoku_py::bind_info(m);
    kasoku_py::bind_sched(m);
    kasoku_py::bind_multiparty(m);
    kasoku_py::bind_hls(m);
}
