// The GPU backend's kernels (Takao et al., issue "GPU kernels shaped for an H100"), each a struct K of:
//   K::Shared  what every item of a launch shares (the ring's tables, per-call constants);
//   K::Item    one unit of work (a run of limbs of one polynomial, one digit, one inner product ...);
//   K::word(s, item, w)  for word w < K::words(s, item) of an item (item kernels), or
//   K::phase(s, item, block, thread, p, smem) for the blocks and phases of a block kernel (the NTT), whose phases are
//   separated by a barrier and share `smem` (K::kSmemWords words);
//   K::cost(s, item)     the bytes it reads and writes and its 64-bit multiplications (counters.hpp).
// A launch runs one kernel over a list of items, so that the limbs of several polynomials, or the same step of every
// operation of a batch, go in one launch. kernels.cu runs them on a CUDA device (items on the grid's y axis, words or
// blocks on x, the Params as a __grid_constant__ argument); launch_host.cpp runs the very same functions as CPU loops,
// block by block, phase by phase, thread by thread, with the same shared-memory layout (the emulated backend, the
// tests). Everything is computed with arith's modular arithmetic in the CPU backend's order, so the results are the
// CPU backend's bits (tests/cpp/gpu). Nothing here allocates, checks or throws.
// The kernels by family: kernel_params.hpp (what they share), kernels_elementwise.hpp, kernels_ntt.hpp (the NTT and
// base conversions), kernels_keyswitch.hpp (conversions fused with their transforms, inner products, the key switch
// between the transforms' passes), kernels_slots.hpp (encoding and decoding).
#pragma once
#include "gpu/kernel_params.hpp"
#include "gpu/kernels_elementwise.hpp"
#include "gpu/kernels_keyswitch.hpp"
#include "gpu/kernels_ntt.hpp"
#include "gpu/kernels_slots.hpp"
