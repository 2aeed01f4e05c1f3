// The launchers of launch.hpp, written once over `run(mem, count, f, kernel, bytes, mults)`, which kernels.cu defines as
// a checked CUDA launch of f over [0, count) and launch_host.cpp as a CPU loop; both count the launch (counters.hpp)
// with the bytes its kernel reads and writes and its 64-bit multiplications, given here per kernel.
// KASOKU_LAMBDA is a device lambda under CUDA. (Included by those two files only.)

void add(const PolyMemory& mem, const u64* a, const u64* b, u64* out, const u64* q, std::size_t n, std::size_t words) {
    run(mem, words, KASOKU_LAMBDA(std::size_t w) { body::add(a, b, out, q, n, w); }, "add", 24 * words, 0);
}
void sub(const PolyMemory& mem, const u64* a, const u64* b, u64* out, const u64* q, std::size_t n, std::size_t words) {
    run(mem, words, KASOKU_LAMBDA(std::size_t w) { body::sub(a, b, out, q, n, w); }, "sub", 24 * words, 0);
}
void negate(const PolyMemory& mem, const u64* a, u64* out, const u64* q, std::size_t n, std::size_t words) {
    run(mem, words, KASOKU_LAMBDA(std::size_t w) { body::negate(a, out, q, n, w); }, "negate", 16 * words, 0);
}
void mul(const PolyMemory& mem, const u64* a, const u64* b, u64* out, const Modulus* m, std::size_t n, std::size_t words) {
    run(mem, words, KASOKU_LAMBDA(std::size_t w) { body::mul(a, b, out, m, n, w); }, "mul", 24 * words, 3 * words);
}
void fma(const PolyMemory& mem, const u64* a, const u64* b, const u64* c, u64* out, const Modulus* m, std::size_t n,
         std::size_t words) {
    run(mem, words, KASOKU_LAMBDA(std::size_t w) { body::fma(a, b, c, out, m, n, w); }, "fma", 32 * words, 4 * words);
}
void mul_constant(const PolyMemory& mem, const u64* a, const u64* r, const u64* rp, u64* out, const u64* q, std::size_t n,
                  std::size_t words) {
    run(mem, words, KASOKU_LAMBDA(std::size_t w) { body::mul_constant(a, r, rp, out, q, n, w); }, "mul_constant", 16 * words, 2 * words);
}

void add_constant(const PolyMemory& mem, const u64* a, const u64* r, u64* out, const u64* q, std::size_t n, std::size_t words) {
    run(mem, words, KASOKU_LAMBDA(std::size_t w) { body::add_constant(a, r, out, q, n, w); }, "add_constant", 16 * words, 0);
}

void linear_combination(const PolyMemory& mem, const u64* const* x, const u64* f, std::size_t terms, const Modulus* m,
                        std::size_t n, std::size_t limbs, u64* out) {
    run(mem, limbs * n, KASOKU_LAMBDA(std::size_t w) { out[w] = body::linear_combination(x, f, terms, limbs, m, n, w); },
        "linear_combination", 8 * (terms + 1) * limbs * n, (terms + 3 * ((terms + 31) / 32)) * limbs * n);
}

void ntt_forward(const PolyMemory& mem, u64* a, const u64* w, const u64* wp, const u64* q, std::size_t n, std::size_t limbs) {
    const std::size_t half = n / 2;
    for (std::size_t m = 1; m < n; m <<= 1)
        run(mem, limbs * half,
            KASOKU_LAMBDA(std::size_t i) { body::ntt_forward_butterfly(a, w, wp, q, n, m, i / half, i % half); },
            "ntt_forward", 16 * limbs * n + 16 * limbs * m, limbs * n);
    run(mem, limbs * n, KASOKU_LAMBDA(std::size_t i) { body::ntt_forward_finish(a, q, n, i); }, "ntt_forward_finish", 16 * limbs * n, 0);
}

void ntt_inverse(const PolyMemory& mem, u64* a, const u64* w, const u64* wp, const u64* ninv, const u64* ninvp, const u64* q,
                 std::size_t n, std::size_t limbs) {
    const std::size_t half = n / 2;
    for (std::size_t m = half; m >= 1; m >>= 1)
        run(mem, limbs * half,
            KASOKU_LAMBDA(std::size_t i) { body::ntt_inverse_butterfly(a, w, wp, q, n, m, i / half, i % half); },
            "ntt_inverse", 16 * limbs * n + 16 * limbs * m, limbs * n);
    run(mem, limbs * n, KASOKU_LAMBDA(std::size_t i) { body::ntt_inverse_finish(a, ninv, ninvp, q, n, i); },
        "ntt_inverse_finish", 16 * limbs * n, 2 * limbs * n);
}

void permute(const PolyMemory& mem, const u64* a, const std::uint32_t* perm, u64* out, std::size_t n, std::size_t limbs) {
    run(mem, limbs * n, KASOKU_LAMBDA(std::size_t w) { body::permute(a, perm, out, n, w); }, "permute", 16 * limbs * n + 4 * n, 0);
}

void overflow_count(const PolyMemory& mem, const u64* y, std::size_t s, std::size_t n, const double* inv_q, std::uint8_t* v) {
    run(mem, n, KASOKU_LAMBDA(std::size_t c) { v[c] = body::overflow_count(y, s, n, inv_q, c); }, "overflow_count", 8 * s * n + n, 0);
}

void convert(const PolyMemory& mem, const u64* y, std::size_t s, std::size_t n, const u64* f, const Modulus* m,
             std::size_t targets, const std::uint8_t* v, const u64* qv, u64* out) {
    run(mem, targets * n,
        KASOKU_LAMBDA(std::size_t w) {
            const std::size_t t = w / n;
            out[w] = body::convert(y, s, n, f + t * s, m[t], w % n, v, qv ? qv + t * (s + 1) : nullptr);
        },
        "convert", 8 * s * n + 8 * targets * n + (v ? n : 0), (s + 3 * ((s + 31) / 32)) * targets * n);
}

void dot(const PolyMemory& mem, const u64* const* d, const u64* const* k, const std::uint32_t* key_limb, std::size_t digits,
         const Modulus* m, std::size_t n, std::size_t limbs, bool accumulate, u64* out) {
    run(mem, limbs * n,
        KASOKU_LAMBDA(std::size_t w) {
            const std::size_t t = w / n, c = w % n;
            out[w] = body::dot(d, w, k, key_limb[t] * n + c, digits, m[key_limb[t]], accumulate ? out[w] : 0);
        },
        "dot", 8 * (2 * digits + (accumulate ? 2 : 1)) * limbs * n, (digits + 3) * limbs * n);
}

void round_prepare(const PolyMemory& mem, u64* last, const std::int64_t* addend, u64 r, std::size_t n) {
    run(mem, n, KASOKU_LAMBDA(std::size_t c) { body::round_prepare(last, addend, r, c); }, "round_prepare", (addend ? 24 : 16) * n, 0);
}

void round_correction(const PolyMemory& mem, const u64* last, const u64* half_mod, const std::int64_t* addend, const Modulus* m,
                      std::size_t n, std::size_t words, u64* t) {
    run(mem, words, KASOKU_LAMBDA(std::size_t w) { t[w] = body::round_correction(last, half_mod, addend, m, n, w); },
        "round_correction", 8 * n + 8 * words + (addend ? 8 * n : 0), 3 * words);
}

void divide_exact(const PolyMemory& mem, const u64* a, const u64* t, const u64* inv, const u64* invp, const u64* q,
                  const u64* addend, std::size_t n, std::size_t words, u64* out) {
    run(mem, words,
        KASOKU_LAMBDA(std::size_t w) {
            const std::size_t l = w / n;
            out[w] = body::divide_exact_word(a[w], t[w], inv[l], invp[l], q[l], addend, w);
        },
        "divide_exact", 8 * (addend ? 4 : 3) * words, 2 * words);
}

