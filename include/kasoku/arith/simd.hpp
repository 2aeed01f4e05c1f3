// Run-time SIMD dispatch (Intel HEXL style): one kernel, several ISA bodies, a table per body.
// The body is chosen once from CPUID and the environment variable KASOKU_SIMD
// (scalar | avx2 | avx512 | ifma | auto); tests call every body through kernel_table().
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "kasoku/arith/modarith.hpp"

namespace kasoku::arith {

class NttTables;

enum class SimdLevel { scalar = 0, avx2 = 1, avx512 = 2, ifma = 3 };

struct KernelTable {
    SimdLevel level;
    const char* name;
    void (*add)(const u64*, const u64*, std::size_t, u64, u64*);
    void (*sub)(const u64*, const u64*, std::size_t, u64, u64*);
    void (*negate)(const u64*, std::size_t, u64, u64*);
    void (*mul)(const u64*, const u64*, std::size_t, const Modulus&, u64*);
    void (*mul_scalar)(const u64*, u64, u64, std::size_t, u64, u64*);
    void (*fma)(const u64*, const u64*, const u64*, std::size_t, const Modulus&, u64*);
    void (*dot_const)(const u64* const*, const u64*, std::size_t, std::size_t, const Modulus&, u64*,
                      const std::uint8_t*, const u64*);
    // The same for sources y[i][c] < 2^50 (kSmallSourceBits): a body's faster path where it has one (AVX2: double
    // precision for t < 2^50; IFMA: two products a source), else its dot_const.
    void (*dot_const_small)(const u64* const*, const u64*, std::size_t, std::size_t, const Modulus&, u64*,
                            const std::uint8_t*, const u64*);
    void (*dot)(const u64* const*, const u64* const*, std::size_t, std::size_t, const Modulus&, u64*, bool);
    void (*ntt_forward)(u64*, const NttTables&);
    void (*ntt_inverse)(u64*, const NttTables&);
};

const char* simd_name(SimdLevel level);
// Parses "scalar", "avx2", "avx512", "ifma".
// @throws ParameterError for another name
SimdLevel parse_simd(const std::string& name);
// Whether this build has the body compiled in.
bool simd_compiled(SimdLevel level);
// Whether this CPU (and OS) can run the body.
bool simd_cpu_supports(SimdLevel level);
// Bodies that are compiled and runnable here, lowest first.
std::vector<SimdLevel> simd_available();
// The body used by the dispatching functions (from KASOKU_SIMD, default: best available).
// @throws ParameterError if KASOKU_SIMD names no body, or one this build or CPU does not have (the message lists the
//     available ones)
SimdLevel active_simd();
// Table of a given body.
// @throws ParameterError if the body is not compiled in or not runnable here
const KernelTable& kernel_table(SimdLevel level);
// kernel_table(active_simd()).
// @throws ParameterError as active_simd
const KernelTable& active_kernels();

}  // namespace kasoku::arith
