// Trace plans, SIMD and build information, and the kernel timing of `python -m kasoku bench`.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>

#include "bindings_internal.hpp"
#include "gpu/backends.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/arith/simd.hpp"
#include "kasoku/ckks/trace.hpp"
#include "kasoku/gpu/cuda.hpp"
#include "kasoku/support/aligned.hpp"
#include "kasoku/support/threads.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kasoku;
using namespace kasoku::ckks;

namespace kasoku_py {

namespace {
constexpr arith::SimdLevel kAllBodies[] = {arith::SimdLevel::scalar, arith::SimdLevel::avx2, arith::SimdLevel::avx512,
                                           arith::SimdLevel::ifma};

struct GpuKernelsSkipped {
    std::unique_ptr<gpu::KernelsSkipped> skipped;
};
}  // namespace

void bind_info(nb::module_& m) {
    nb::class_<GpuKernelsSkipped>(
        m, "GpuKernelsSkipped",
        "with ks.GpuKernelsSkipped(): the \"gpu-emulated\" backend's kernels on this thread are counted but not run "
        "(their outputs are garbage): what a computation would ask of a GPU, its device memory included "
        "(Context.device_memory), at sizes where running every kernel on the CPU would take long. The counts do not "
        "depend on the data. No effect on \"cpu\" and \"cuda\" contexts.")
        .def(nb::init<>())
        .def(
            "__enter__",
            [](GpuKernelsSkipped& s) -> GpuKernelsSkipped& {
                s.skipped = std::make_unique<gpu::KernelsSkipped>();
                return s;
            },
            nb::rv_policy::reference)
        .def(
            "__exit__", [](GpuKernelsSkipped& s, nb::handle, nb::handle, nb::handle) { s.skipped.reset(); },
            "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none());
    m.def(
        "trace_galois_elements",
        [](const Parameters& p, std::size_t M, std::size_t h) { return trace_galois_elements(p, M, h); }, "params"_a,
        "M"_a, "h"_a,
        "Exactly the Galois elements that M doubling steps over rotations by 1, 2, ..., 2^(M-1) with h iterations need "
        "(M = log_n: the last step is conjugation, the full trace of the source).");
    m.def(
        "trace_doubling_steps", [](const Parameters& p, std::size_t M) { return trace_doubling_steps(M, 2 * p.n()); },
        "params"_a, "M"_a,
        "Galois elements of the M doubling steps: rotations by 2^i (i < log2 slots), then "
        "conjugation when M = log_n.");
    m.def("trace_group_sizes", &trace_group_sizes, "M"_a, "h"_a,
          "Sizes of the h groups the M doubling steps are split into.");
    m.def(
        "simd_active", [] { return std::string(arith::simd_name(arith::active_simd())); },
        "The kernel body in use (KASOKU_SIMD, default: the best this CPU runs).");
    m.def(
        "simd_available",
        [] {
            std::vector<std::string> out;
            for (auto l : arith::simd_available()) out.push_back(arith::simd_name(l));
            return out;
        },
        "Kernel bodies this build has and this CPU runs.");
    m.def(
        "simd_cpu_supports",
        [] {
            std::vector<std::string> out;
            for (auto l : kAllBodies)
                if (arith::simd_cpu_supports(l)) out.push_back(arith::simd_name(l));
            return out;
        },
        "Kernel bodies this CPU runs (compiled in or not).");
    m.def("hardware_threads", &hardware_threads, "Threads this machine runs at once (what threads=None uses).");
    m.def(
        "set_memory_pool_limit", [](std::size_t max_bytes) { set_memory_pool_limit(max_bytes); }, "max_bytes"_a,
        "Keep at most max_bytes of freed polynomial buffers per thread for reuse (default 256 MiB). More spares the "
        "kernel's clearing of fresh pages in long loops of large operations (a BOOT16 bootstrap at 2^13 slots: "
        "3.9-4.1 -> 3.6 s at 2 GiB on one Zen 5 thread) and adds up to that much to the peak resident memory.");
    m.def("memory_pool_limit", &memory_pool_limit, "The per-thread limit of kept buffers (set_memory_pool_limit).");
    m.def(
        "cuda_info",
        [] {
            const gpu::CudaInfo c = gpu::cuda_info();
            nb::dict d;
            d["compiled"] = c.compiled;
            d["available"] = c.available;
            d["reason"] = c.reason;
            d["devices"] = c.devices;
            d["name"] = c.name;
            d["memory_bytes"] = c.memory_bytes;
            d["compute_capability"] = std::to_string(c.compute_major) + "." + std::to_string(c.compute_minor);
            d["runtime_version"] = c.runtime_version;
            d["driver_version"] = c.driver_version;
            d["architectures"] = c.architectures;
            return d;
        },
        "What this build and machine have of CUDA: compiled, available (a device can be used now), reason (why not), "
        "devices, name, memory_bytes and compute_capability of device 0, runtime_version and driver_version (CUDA's "
        "1000 * major + 10 * minor), architectures (what the kernels were compiled for). Never raises.");
    m.def(
        "build_info",
        [] {
            std::map<std::string, std::string> info;
            info["compiler"] = __VERSION__;
            info["cxx_standard"] = std::to_string(__cplusplus);
#ifdef KASOKU_BUILD_TYPE
            info["build_type"] = KASOKU_BUILD_TYPE;
#endif
            std::string compiled;
            for (auto l : kAllBodies)
                if (arith::simd_compiled(l))
                    compiled += (compiled.empty() ? "" : ",") + std::string(arith::simd_name(l));
            info["simd_compiled"] = compiled;
#ifdef _OPENMP
            info["openmp"] = std::to_string(_OPENMP);
#else
            info["openmp"] = "off (one thread per operation)";
#endif
            info["randomness"] = "OpenSSL RAND_bytes seed + ChaCha20 stream";
            info["backends"] = "cpu";
            return info;
        },
        "What this build has: compiler, C++ standard, build type, the SIMD bodies compiled, OpenMP, randomness, "
        "backends.");
    m.def(
        "bench_ntt",
        [](int log_n, int bits, int reps) {
            // Times the forward NTT of one prime with the active SIMD body; returns seconds per call.
            std::vector<double> out;
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
        },
        "log_n"_a, "bits"_a = 60, "reps"_a = 10, "Seconds per forward NTT of one prime, `reps` timings.", ReleaseGil());
}

}  // namespace kasoku_py
