// Scalar reference bodies: the simplest correct code, against which every SIMD body is tested.
#include <vector>

#include "kernels_internal.hpp"

namespace kasoku::arith::detail {

namespace {

void add_scalar(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = add_mod(a[i], b[i], q);
}
void sub_scalar(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = sub_mod(a[i], b[i], q);
}
void negate_scalar(const u64* a, std::size_t n, u64 q, u64* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = neg_mod(a[i], q);
}
void mul_scalar_body(const u64* a, const u64* b, std::size_t n, const Modulus& m, u64* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i], m);
}
void mul_by_scalar(const u64* a, u64 w, u64 wp, std::size_t n, u64 q, u64* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = mul_shoup(a[i], w, wp, q);
}
// a*b + c with one reduction: a*b by one-word Barrett (mu = floor(2^(2 bits) / q), shifts by bits -/+ 1) to
// [0, 3q), plus c, then two conditional subtractions (4q < 2^63). Three multiplies where mul_mod's two-word
// reduction takes four, and one pass instead of mul's and add's two.
void fma_scalar(const u64* a, const u64* b, const u64* c, std::size_t n, const Modulus& m, u64* out) {
    const u64 q = m.value, two_q = 2 * q;
    const int bits = m.bits;
    const u128 mu = (static_cast<u128>(1) << (2 * bits)) / q;  // < 2^(bits + 1)
    for (std::size_t i = 0; i < n; ++i) {
        const u128 p = static_cast<u128>(a[i]) * b[i];
        const u128 qhat = ((p >> (bits - 1)) * mu) >> (bits + 1);
        u64 r = static_cast<u64>(p) - static_cast<u64>(qhat) * q + c[i];  // [0, 4q)
        r -= (r >= two_q) ? two_q : 0;
        r -= (r >= q) ? q : 0;
        out[i] = r;
    }
}

template <std::size_t S>
void dot_fixed(const u64* const* y, const u64* f, std::size_t n, const Modulus& m, u64* out) {
    for (std::size_t c = 0; c < n; ++c) {
        u128 acc = 0;
        for (std::size_t i = 0; i < S; ++i) acc += static_cast<u128>(y[i][c]) * f[i];
        out[c] = reduce_128(acc, m);
    }
}

}  // namespace

// Sums of up to 32 products of two 61-bit values fit in 128 bits; longer sums are reduced in chunks.
void dot_const_scalar(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& m, u64* out,
                      const std::uint8_t* index, const u64* table) {
    switch (s) {  // unrolled bodies for the common digit sizes
        case 1: dot_fixed<1>(y, f, n, m, out); break;
        case 2: dot_fixed<2>(y, f, n, m, out); break;
        case 3: dot_fixed<3>(y, f, n, m, out); break;
        case 4: dot_fixed<4>(y, f, n, m, out); break;
        case 5: dot_fixed<5>(y, f, n, m, out); break;
        case 6: dot_fixed<6>(y, f, n, m, out); break;
        case 7: dot_fixed<7>(y, f, n, m, out); break;
        case 8: dot_fixed<8>(y, f, n, m, out); break;
        default:
            for (std::size_t c = 0; c < n; ++c) {
                u64 r = 0;
                for (std::size_t i0 = 0; i0 < s; i0 += 32) {
                    u128 acc = 0;
                    for (std::size_t i = i0; i < s && i < i0 + 32; ++i) acc += static_cast<u128>(y[i][c]) * f[i];
                    r = add_mod(r, reduce_128(acc, m), m.value);
                }
                out[c] = r;
            }
    }
    if (index)
        for (std::size_t c = 0; c < n; ++c) out[c] = sub_mod(out[c], table[index[c]], m.value);
}

void dot_const_tail(const u64* const* y, const u64* f, std::size_t s, std::size_t c, std::size_t n, const Modulus& m,
                    u64* out, const std::uint8_t* index, const u64* table) {
    if (c >= n) return;
    std::vector<const u64*> tail(s);
    for (std::size_t i = 0; i < s; ++i) tail[i] = y[i] + c;
    dot_const_scalar(tail.data(), f, s, n - c, m, out + c, index ? index + c : nullptr, table);
}

// Sums of up to 32 products below 2^122 fit in 128 bits; longer sums are reduced in chunks.
void dot_scalar(const u64* const* a, const u64* const* b, std::size_t k, std::size_t n, const Modulus& m, u64* out,
                bool accumulate) {
    for (std::size_t c = 0; c < n; ++c) {
        u64 r = accumulate ? out[c] : 0;
        for (std::size_t j0 = 0; j0 < k; j0 += 32) {
            u128 acc = 0;
            for (std::size_t j = j0; j < k && j < j0 + 32; ++j) acc += static_cast<u128>(a[j][c]) * b[j][c];
            r = add_mod(r, reduce_128(acc, m), m.value);
        }
        out[c] = r;
    }
}

void dot_tail(const u64* const* a, const u64* const* b, std::size_t k, std::size_t c, std::size_t n, const Modulus& m,
              u64* out, bool accumulate) {
    if (c >= n) return;
    std::vector<const u64*> ta(k), tb(k);
    for (std::size_t j = 0; j < k; ++j) {
        ta[j] = a[j] + c;
        tb[j] = b[j] + c;
    }
    dot_scalar(ta.data(), tb.data(), k, n - c, m, out + c, accumulate);
}

void ntt_forward_scalar(u64* a, const NttTables& t) {
    const std::size_t n = t.n();
    const u64 q = t.q(), two_q = 2 * q;
    const u64* w = t.root_powers();
    const u64* wp = t.root_shoup();
    for (std::size_t m = 1, gap = n >> 1; m < n; m <<= 1, gap >>= 1) {
        for (std::size_t i = 0; i < m; ++i) {
            const u64 wi = w[m + i], wpi = wp[m + i];
            u64* x = a + 2 * i * gap;
            u64* y = x + gap;
            for (std::size_t j = 0; j < gap; ++j) {
                u64 u = x[j];
                if (u >= two_q) u -= two_q;                      // [0, 2q)
                const u64 v = mul_shoup_lazy(y[j], wi, wpi, q);  // [0, 2q)
                x[j] = u + v;                                    // [0, 4q)
                y[j] = u - v + two_q;                            // (0, 4q)
            }
        }
    }
    for (std::size_t j = 0; j < n; ++j) {
        u64 u = a[j];
        if (u >= two_q) u -= two_q;
        if (u >= q) u -= q;
        a[j] = u;
    }
}

void ntt_inverse_scalar(u64* a, const NttTables& t) {
    const std::size_t n = t.n();
    const u64 q = t.q(), two_q = 2 * q;
    const u64* w = t.inv_root_powers();
    const u64* wp = t.inv_root_shoup();
    for (std::size_t m = n >> 1, gap = 1; m >= 1; m >>= 1, gap <<= 1) {
        for (std::size_t i = 0; i < m; ++i) {
            const u64 wi = w[m + i], wpi = wp[m + i];
            u64* x = a + 2 * i * gap;
            u64* y = x + gap;
            for (std::size_t j = 0; j < gap; ++j) {
                const u64 u = x[j], v = y[j];  // [0, 2q)
                u64 s = u + v;
                if (s >= two_q) s -= two_q;
                x[j] = s;
                y[j] = mul_shoup_lazy(u - v + two_q, wi, wpi, q);
            }
        }
    }
    const u64 ni = t.n_inv(), nip = t.n_inv_shoup();
    for (std::size_t j = 0; j < n; ++j) a[j] = mul_shoup(a[j], ni, nip, q);
}

const KernelTable kScalarKernels = {
    .level = SimdLevel::scalar,
    .name = "scalar",
    .add = add_scalar,
    .sub = sub_scalar,
    .negate = negate_scalar,
    .mul = mul_scalar_body,
    .mul_scalar = mul_by_scalar,
    .fma = fma_scalar,
    .dot_const = dot_const_scalar,
    .dot_const_small = dot_const_scalar,
    .dot = dot_scalar,
    .ntt_forward = ntt_forward_scalar,
    .ntt_inverse = ntt_inverse_scalar,
};

}  // namespace kasoku::arith::detail
