// Launching the kernels of kernels.hpp, and batches as one launch sequence (Takao et al.'s "one kernel launch for many
// ciphertexts"). Host code includes this header without CUDA's.
//
// issue<K>(mem, shared, items, count) runs kernel K over the items on the device that holds `mem` (kernels.cu: one
// checked, counted CUDA launch per chunk of items that fits the kernel arguments) or as CPU loops (launch_host.cpp, the
// emulated backend). run<K> is what the backend calls: it issues, unless the calling thread is recording a batch.
//
// A batch (Backend::for_each of the GPU backend) records its operations one after the other: every launch of
// operation i is kept, with its kernel, shared arguments and items, and memory that operation i frees is not reused
// until the batch is issued. Then the k-th launches of all operations go as one launch where they are the same kernel
// with the same shared arguments (their items concatenated), else one after the other; operations whose launch
// sequences differ in length are issued one after the other. Memory written from the host during recording (uploads of
// fresh polynomials) is written at once; reading device memory back while recording is a bug (InternalError).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "gpu/kernels.hpp"
#include "kasoku/rns/rns_poly.hpp"

// The GPU backend's code is built twice (CMakeLists.txt): for CUDA and emulated on the host. Its symbols live in an
// inline namespace named after the build, so that both can be linked into one program.
#ifndef KASOKU_GPU_VARIANT
#define KASOKU_GPU_VARIANT cuda
#endif

namespace kasoku::gpu {
inline namespace KASOKU_GPU_VARIANT {
namespace launch {

using rns::PolyMemory;

template <class K>
void issue(const PolyMemory& mem, const typename K::Shared& s, const typename K::Item* items, std::size_t count);

// The launches of a batch being recorded on this thread.
class Recorder {
public:
    using IssueFn = void (*)(const PolyMemory&, const void* shared, const void* items, std::size_t count);
    struct Launch {
        IssueFn fn;  // also the kernel's identity
        const PolyMemory* mem;
        std::vector<char> shared, items;
        std::size_t item_size;
    };
    Recorder();
    ~Recorder();  // issues what is left (and releases the deferred memory)
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;

    static Recorder* active();
    void next_operation() { ops_.emplace_back(); }
    void record(Launch l) { ops_.back().push_back(std::move(l)); }
    // Memory freed while recording: freed after the batch is issued.
    void defer(const PolyMemory* mem, std::uint64_t* p, std::size_t words) { deferred_.push_back({mem, p, words}); }
    // Issues every recorded launch (merged where it can) and releases the deferred memory; recording stops.
    void issue();

private:
    struct Deferred {
        const PolyMemory* mem;
        std::uint64_t* p;
        std::size_t words;
    };
    std::vector<std::vector<Launch>> ops_;
    std::vector<Deferred> deferred_;
    Recorder* outer_;
};

// The bytes and multiplications of one launch (counters.hpp): its items', plus the tables read once per prime.
template <class K>
void launch_cost(const typename K::Shared& s, const typename K::Item* items, std::size_t count, std::size_t& bytes,
                 std::size_t& mults) {
    for (std::size_t i = 0; i < count; ++i) K::cost(s, items[i], bytes, mults);
    if constexpr (requires { K::table_bytes(s); }) {
        std::vector<bool> seen;
        std::size_t primes = 0;
        for (std::size_t i = 0; i < count; ++i)
            for (std::size_t p = items[i].prime; p < items[i].prime + items[i].limbs; ++p) {
                if (p >= seen.size()) seen.resize(p + 1);
                if (!seen[p]) ++primes;
                seen[p] = true;
            }
        bytes += primes * K::table_bytes(s);
    }
    if constexpr (requires { K::launch_table_bytes(s); }) bytes += K::launch_table_bytes(s);
}

template <class K>
void issue_erased(const PolyMemory& mem, const void* shared, const void* items, std::size_t count) {
    issue<K>(mem, *static_cast<const typename K::Shared*>(shared), static_cast<const typename K::Item*>(items), count);
}

template <class K>
void run(const PolyMemory& mem, const typename K::Shared& s, const std::vector<typename K::Item>& items) {
    if (items.empty()) return;
    if (Recorder* r = Recorder::active()) {
        Recorder::Launch l{&issue_erased<K>, &mem, std::vector<char>(sizeof(s)),
                           std::vector<char>(items.size() * sizeof(typename K::Item)), sizeof(typename K::Item)};
        std::memcpy(l.shared.data(), &s, sizeof(s));
        std::memcpy(l.items.data(), items.data(), l.items.size());
        r->record(std::move(l));
        return;
    }
    issue<K>(mem, s, items.data(), items.size());
}

}  // namespace launch
}  // namespace KASOKU_GPU_VARIANT
}  // namespace kasoku::gpu

// Every kernel, for the explicit instantiations of issue<K> in kernels.cu and launch_host.cpp.
// clang-format off
#define KASOKU_GPU_KERNELS(X)                                                                                   \
    X(kern::Ewise<kern::Op::add>) X(kern::Ewise<kern::Op::sub>) X(kern::Ewise<kern::Op::neg>)                   \
    X(kern::Ewise<kern::Op::mul>) X(kern::Ewise<kern::Op::fma>) X(kern::Ewise<kern::Op::mul_const>)             \
    X(kern::Ewise<kern::Op::add_const>) X(kern::Ewise<kern::Op::add_mul_const>) X(kern::Ewise<kern::Op::copy>)  \
    X(kern::Ewise<kern::Op::fill>) X(kern::Ewise<kern::Op::permute>) X(kern::Ntt<true>) X(kern::Ntt<false>)     \
    X(kern::ConvertUp) X(kern::ConvertDown) X(kern::ModUpColumns) X(kern::ModDownColumns) X(kern::KeySwitchRows) X(kern::Dot) X(kern::RoundLast) X(kern::SumProducts)                \
    X(kern::LinearCombination) X(kern::Tensor) X(kern::FromSigned) X(kern::Sample) X(kern::Subring)                 \
    X(kern::FftStage) X(kern::FftTile) X(kern::RoundSlots) X(kern::ComposeSlots)
// clang-format on
