// The CUDA kernels: grid-stride loops over the bodies of bodies.hpp (the same code the CPU tests run). Compiled with
// --fmad=false, so that the floating-point overflow count rounds each product and sum as the host does.
#include "gpu/bodies.hpp"
#include "gpu/launch.hpp"
#include "gpu/runtime_internal.hpp"

namespace kasoku::gpu::launch {

namespace {

constexpr int kThreads = 256;

template <class F>
__global__ void each(std::size_t count, F f) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) f(i);
}

// One launch of f over [0, count) on mem's stream, checked.
template <class F>
void run(const PolyMemory& mem, std::size_t count, F f, const char* what) {
    if (count == 0) return;
    const std::size_t blocks = (count + kThreads - 1) / kThreads;
    const unsigned grid = static_cast<unsigned>(blocks < 65535 * 32 ? blocks : 65535 * 32);
    each<<<grid, kThreads, 0, stream_of(mem)>>>(count, f);
    check(cudaGetLastError(), what);
}

}  // namespace

void add(const PolyMemory& mem, const u64* a, const u64* b, u64* out, const u64* q, std::size_t n, std::size_t words) {
    run(mem, words, [=] __device__(std::size_t w) { body::add(a, b, out, q, n, w); }, "add kernel");
}
void sub(const PolyMemory& mem, const u64* a, const u64* b, u64* out, const u64* q, std::size_t n, std::size_t words) {
    run(mem, words, [=] __device__(std::size_t w) { body::sub(a, b, out, q, n, w); }, "sub kernel");
}
void negate(const PolyMemory& mem, const u64* a, u64* out, const u64* q, std::size_t n, std::size_t words) {
    run(mem, words, [=] __device__(std::size_t w) { body::negate(a, out, q, n, w); }, "negate kernel");
}
void mul(const PolyMemory& mem, const u64* a, const u64* b, u64* out, const Modulus* m, std::size_t n, std::size_t words) {
    run(mem, words, [=] __device__(std::size_t w) { body::mul(a, b, out, m, n, w); }, "mul kernel");
}
void fma(const PolyMemory& mem, const u64* a, const u64* b, const u64* c, u64* out, const Modulus* m, std::size_t n,
         std::size_t words) {
    run(mem, words, [=] __device__(std::size_t w) { body::fma(a, b, c, out, m, n, w); }, "fma kernel");
}
void mul_constant(const PolyMemory& mem, const u64* a, const u64* r, const u64* rp, u64* out, const u64* q, std::size_t n,
                  std::size_t words) {
    run(mem, words, [=] __device__(std::size_t w) { body::mul_constant(a, r, rp, out, q, n, w); }, "mul_constant kernel");
}

void ntt_forward(const PolyMemory& mem, u64* a, const u64* w, const u64* wp, const u64* q, std::size_t n, std::size_t limbs) {
    const std::size_t half = n / 2;
    for (std::size_t m = 1; m < n; m <<= 1)
        run(mem, limbs * half,
            [=] __device__(std::size_t i) { body::ntt_forward_butterfly(a, w, wp, q, n, m, i / half, i % half); },
            "NTT stage kernel");
    run(mem, limbs * n, [=] __device__(std::size_t i) { body::ntt_forward_finish(a, q, n, i); }, "NTT finish kernel");
}

void ntt_inverse(const PolyMemory& mem, u64* a, const u64* w, const u64* wp, const u64* ninv, const u64* ninvp, const u64* q,
                 std::size_t n, std::size_t limbs) {
    const std::size_t half = n / 2;
    for (std::size_t m = half; m >= 1; m >>= 1)
        run(mem, limbs * half,
            [=] __device__(std::size_t i) { body::ntt_inverse_butterfly(a, w, wp, q, n, m, i / half, i % half); },
            "INTT stage kernel");
    run(mem, limbs * n, [=] __device__(std::size_t i) { body::ntt_inverse_finish(a, ninv, ninvp, q, n, i); },
        "INTT finish kernel");
}

void permute(const PolyMemory& mem, const u64* a, const std::uint32_t* perm, u64* out, std::size_t n, std::size_t limbs) {
    run(mem, limbs * n, [=] __device__(std::size_t w) { body::permute(a, perm, out, n, w); }, "automorphism kernel");
}

void overflow_count(const PolyMemory& mem, const u64* y, std::size_t s, std::size_t n, const double* inv_q, std::uint8_t* v) {
    run(mem, n, [=] __device__(std::size_t c) { v[c] = body::overflow_count(y, s, n, inv_q, c); }, "overflow count kernel");
}

void convert(const PolyMemory& mem, const u64* y, std::size_t s, std::size_t n, const u64* f, const Modulus* m,
             std::size_t targets, const std::uint8_t* v, const u64* qv, u64* out) {
    run(mem, targets * n,
        [=] __device__(std::size_t w) {
            const std::size_t t = w / n;
            out[w] = body::convert(y, s, n, f + t * s, m[t], w % n, v, qv + t * (s + 1));
        },
        "base conversion kernel");
}

void dot(const PolyMemory& mem, const u64* const* d, const u64* const* k, const std::uint32_t* key_limb, std::size_t digits,
         const Modulus* m, std::size_t n, std::size_t limbs, bool accumulate, u64* out) {
    run(mem, limbs * n,
        [=] __device__(std::size_t w) {
            const std::size_t t = w / n, c = w % n;
            out[w] = body::dot(d, w, k, key_limb[t] * n + c, digits, m[t], accumulate ? out[w] : 0);
        },
        "key-switching inner product kernel");
}

}  // namespace kasoku::gpu::launch
