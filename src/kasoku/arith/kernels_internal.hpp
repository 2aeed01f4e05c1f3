// Declarations of the ISA bodies behind the dispatcher (never installed).
#pragma once
#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/simd.hpp"

namespace kasoku::arith::detail {

extern const KernelTable kScalarKernels;
#ifdef KASOKU_HAVE_AVX2
extern const KernelTable kAvx2Kernels;
#endif
// AVX-512DQ and IFMA bodies: native (in the library when KASOKU_HAVE_AVX512) and compiled against SIMDe
// (only into the tests, KASOKU_TEST_EMULATED), from the same sources.
namespace native {
extern const KernelTable kAvx512Kernels;
extern const KernelTable kIfmaKernels;
}  // namespace native
namespace emulated {
extern const KernelTable kAvx512Kernels;
extern const KernelTable kIfmaKernels;
}  // namespace emulated

// Element-wise kernels write outputs of at least this many bytes per call (one limb at N >= 2^15) with
// non-temporal stores when the output starts on a vector boundary and is not one of the inputs: such outputs do
// not stay in cache next to their inputs, and streaming saves reading every output line before overwriting it
// (~1.4x for an H16 add). In place, the lines are in cache already and often read again at once (the limb
// pipelines of ModDown), so they are stored normally.
inline constexpr std::size_t kStreamBytes = 256 * 1024;

// out[i] = vec(i) for whole vectors (streamed when large and not in place, see kStreamBytes), scalar(i) for the
// tail: the loop of every SIMD body's element-wise kernels, written once over the ISA's vector traits V (lanes words
// per vector; store, stream and fence).
template <class V, class Vec, class Scalar>
inline void elementwise(std::size_t n, u64* out, bool in_place, Vec vec, Scalar scalar) {
    constexpr std::size_t L = V::lanes;
    std::size_t i = 0;
    if (!in_place && n * sizeof(u64) >= kStreamBytes &&
        reinterpret_cast<std::uintptr_t>(out) % (L * sizeof(u64)) == 0) {
        for (; i + L <= n; i += L) V::stream(out + i, vec(i));
        V::fence();
    } else {
        for (; i + L <= n; i += L) V::store(out + i, vec(i));
    }
    for (; i < n; ++i) out[i] = scalar(i);
}

// Scalar dot product with constants (the SIMD bodies use it for their tails).
void dot_const_scalar(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& m, u64* out,
                      const std::uint8_t* index, const u64* table);
// The tail of a SIMD body's dot product: columns [c, n) by the scalar body.
void dot_const_tail(const u64* const* y, const u64* f, std::size_t s, std::size_t c, std::size_t n, const Modulus& m,
                    u64* out, const std::uint8_t* index, const u64* table);
// Scalar dot product of vectors (the SIMD bodies' tails call it with offset pointers).
void dot_scalar(const u64* const* a, const u64* const* b, std::size_t k, std::size_t n, const Modulus& m, u64* out,
                bool accumulate);
void dot_tail(const u64* const* a, const u64* const* b, std::size_t k, std::size_t c, std::size_t n, const Modulus& m,
              u64* out, bool accumulate);
// Scalar NTTs, used by the SIMD bodies for sizes below one vector block (n < 16).
void ntt_forward_scalar(u64* a, const NttTables& t);
void ntt_inverse_scalar(u64* a, const NttTables& t);

}  // namespace kasoku::arith::detail
