// What every kernel family of the GPU backend shares (kernels.hpp lists them): the launch arguments, the ring's tables
// in device memory, the integer types.
#pragma once
#include <cstddef>
#include <cstdint>

#include "gpu/bodies.hpp"
#include "kasoku/arith/modarith.hpp"

namespace kasoku::gpu::kern {

using arith::Modulus;
using arith::u128;
using arith::u64;
using u32 = std::uint32_t;

// A launch's arguments: what its items share, and its items (at most Cap), passed by value. Three sizes, so that a
// single operation's launch carries a few hundred bytes and a batch's up to kParamBytes (CUDA's kernel argument space
// is 32,764 bytes on sm_70 and later since CUDA 12.1).
inline constexpr std::size_t kParamBytes = 30 * 1024;
template <class K, int Cap>
struct Params {
    typename K::Shared s;
    u32 count;
    typename K::Item items[Cap];
};
template <class K>
inline constexpr int kLargeCap = static_cast<int>((kParamBytes - sizeof(typename K::Shared) - 8) /
                                                  sizeof(typename K::Item));
inline constexpr int kSmallCap = 4, kMediumCap = 24;

// The ring's tables in device memory (gpu_backend.cpp uploads them once), by prime index: q_0.., then p_0...
struct Ring {
    const u64* q;
    const Modulus* m;
    const u64* fw;  // forward roots and their Shoup constants, n per prime (arith's bit-reversed order)
    const u64* fwp;
    const u64* iw;  // inverse roots
    const u64* iwp;
    const u64* ninv;  // n^-1 and its Shoup constant per prime
    const u64* ninvp;
    u32 n, log_n;
    u32 first_special;  // prime index of p_0 (the number of q-primes)
};

// What the items of a kernel share when it is the ring's tables alone.
struct RingOnly {
    Ring r;
};

}  // namespace kasoku::gpu::kern
