#include <cstdlib>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <string>

#include "kasoku/arith/kernels.hpp"
#include "kasoku/support/error.hpp"
#include "kernels_internal.hpp"

namespace kasoku::arith {

const char* simd_name(SimdLevel level) {
    switch (level) {
        case SimdLevel::scalar: return "scalar";
        case SimdLevel::avx2: return "avx2";
        case SimdLevel::avx512: return "avx512";
        case SimdLevel::ifma: return "ifma";
    }
    return "?";
}

SimdLevel parse_simd(const std::string& name) {
    for (SimdLevel l : {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512, SimdLevel::ifma})
        if (name == simd_name(l)) return l;
    throw ParameterError("unknown SIMD body '" + name + "': expected scalar, avx2, avx512, ifma or auto");
}

bool simd_compiled(SimdLevel level) {
#ifdef KASOKU_HAVE_AVX2
    constexpr bool avx2 = true;
#else
    constexpr bool avx2 = false;
#endif
#ifdef KASOKU_HAVE_AVX512
    constexpr bool avx512 = true;  // and IFMA: both bodies come with the AVX-512 build
#else
    constexpr bool avx512 = false;
#endif
    return level == SimdLevel::scalar || (level == SimdLevel::avx2 && avx2) ||
           ((level == SimdLevel::avx512 || level == SimdLevel::ifma) && avx512);
}

bool simd_cpu_supports(SimdLevel level) {
    __builtin_cpu_init();
    switch (level) {
        case SimdLevel::scalar: return true;
        case SimdLevel::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");  // FMA: the NTT
        case SimdLevel::avx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
        case SimdLevel::ifma:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512ifma");
    }
    return false;
}

std::vector<SimdLevel> simd_available() {
    std::vector<SimdLevel> out;
    for (SimdLevel l : {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512, SimdLevel::ifma})
        if (simd_compiled(l) && simd_cpu_supports(l)) out.push_back(l);
    return out;
}

const KernelTable& kernel_table(SimdLevel level) {
    if (!simd_compiled(level))
        throw ParameterError(std::string("SIMD body '") + simd_name(level) + "' is not compiled into this build");
    if (!simd_cpu_supports(level))
        throw ParameterError(std::string("this CPU cannot run the SIMD body '") + simd_name(level) + "'");
    switch (level) {
#ifdef KASOKU_HAVE_AVX2
        case SimdLevel::avx2: return detail::kAvx2Kernels;
#endif
#ifdef KASOKU_HAVE_AVX512
        case SimdLevel::avx512: return detail::native::kAvx512Kernels;
        case SimdLevel::ifma: return detail::native::kIfmaKernels;
#endif
        default: return detail::kScalarKernels;
    }
}

namespace {
SimdLevel choose_level() {
    const char* env = std::getenv("KASOKU_SIMD");
    std::string want = env ? env : "auto";
    if (want.empty() || want == "auto") return simd_available().back();
    SimdLevel l = parse_simd(want);
    if (!simd_compiled(l) || !simd_cpu_supports(l))
        throw ParameterError("KASOKU_SIMD=" + want + " is not available here; available: " + [] {
            std::string s;
            for (SimdLevel a : simd_available()) s += std::string(s.empty() ? "" : ", ") + simd_name(a);
            return s;
        }());
    return l;
}
}  // namespace

SimdLevel active_simd() {
    static const SimdLevel level = choose_level();
    return level;
}

const KernelTable& active_kernels() {
    static const KernelTable& table = kernel_table(active_simd());
    return table;
}

void add_mod(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) { active_kernels().add(a, b, n, q, out); }
void sub_mod(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) { active_kernels().sub(a, b, n, q, out); }
void negate_mod(const u64* a, std::size_t n, u64 q, u64* out) { active_kernels().negate(a, n, q, out); }
void mul_mod(const u64* a, const u64* b, std::size_t n, const Modulus& m, u64* out) {
    active_kernels().mul(a, b, n, m, out);
}
void mul_scalar_mod(const u64* a, u64 w, u64 wp, std::size_t n, u64 q, u64* out) {
    active_kernels().mul_scalar(a, w, wp, n, q, out);
}
void fma_mod(const u64* a, const u64* b, const u64* c, std::size_t n, const Modulus& m, u64* out) {
    active_kernels().fma(a, b, c, n, m, out);
}
void permute(const u64* src, const std::uint32_t* perm, std::size_t n, u64* out) {
#if defined(__x86_64__)
    if (n * sizeof(u64) >= detail::kStreamBytes) {  // movnti is baseline x86-64 (SSE2)
        for (std::size_t k = 0; k < n; ++k)
            _mm_stream_si64(reinterpret_cast<long long*>(out + k), static_cast<long long>(src[perm[k]]));
        _mm_sfence();
        return;
    }
#endif
    for (std::size_t k = 0; k < n; ++k) out[k] = src[perm[k]];
}

void dot_const_mod(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& t, u64* out,
                   const std::uint8_t* index, const u64* table, bool small_sources) {
    const KernelTable& k = active_kernels();
    (small_sources ? k.dot_const_small : k.dot_const)(y, f, s, n, t, out, index, table);
}

void dot_mod(const u64* const* a, const u64* const* b, std::size_t k, std::size_t n, const Modulus& m, u64* out,
             bool accumulate) {
    active_kernels().dot(a, b, k, n, m, out, accumulate);
}

}  // namespace kasoku::arith
