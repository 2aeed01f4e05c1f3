// 64-byte aligned storage for polynomial limbs (one cache line, one AVX-512 register).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace kasoku {

template <class T, std::size_t Align = 64>
struct AlignedAllocator {
    using value_type = T;
    AlignedAllocator() noexcept = default;
    template <class U> AlignedAllocator(const AlignedAllocator<U, Align>&) noexcept {}
    template <class U> struct rebind { using other = AlignedAllocator<U, Align>; };
    T* allocate(std::size_t n) {
        std::size_t bytes = (n * sizeof(T) + Align - 1) / Align * Align;
        void* p = std::aligned_alloc(Align, bytes == 0 ? Align : bytes);
        if (!p) throw std::bad_alloc();
        return static_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t) noexcept { std::free(p); }
    template <class U> bool operator==(const AlignedAllocator<U, Align>&) const noexcept { return true; }
};

using AlignedWords = std::vector<std::uint64_t, AlignedAllocator<std::uint64_t>>;

}  // namespace kasoku
