// The CPU backend: host memory, the run-time dispatched SIMD kernels of arith, OpenMP teams of Exec::threads.
// Every multi-step operation is a limb-by-limb pipeline: each limb is transformed, converted, combined and permuted
// while it is in cache, and the limbs are spread over the team.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <thread>

#include "kasoku/arith/kernels.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/rns/backend.hpp"
#include "kasoku/rns/base_conv.hpp"
#include "kasoku/rns/scaling_tables.hpp"
#include "kasoku/support/aligned.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/random.hpp"
#include "kasoku/support/threads.hpp"

namespace kasoku::rns {

namespace {

using arith::Modulus;

u64* limb(RnsPoly& p, std::size_t i) { return PolyAccess::data(p) + i * p.n(); }
const u64* limb(const RnsPoly& p, std::size_t i) { return PolyAccess::data(p) + i * p.n(); }

// Columns c..c+len of limb t of plaintext y over n words a limb: its own words, or for a subring plaintext (fewer
// words, each standing for a block of n / y.n() equal ones) the block's words written into buf (len words).
const u64* plain_columns(const RnsPoly& y, std::size_t t, std::size_t n, std::size_t c, std::size_t len, u64* buf) {
    const u64* yt = limb(y, t);
    if (y.n() == n) return yt + c;
    const std::size_t f = n / y.n(), block = std::min(f, len);
    for (std::size_t w = 0; w < len; w += block) std::fill_n(buf + w, block, yt[(c + w) / f]);
    return buf;
}

// Element-wise work on `limbs` limbs of n words: fn(i, c, len) on columns [c, c + len) of limb i. When the limbs do
// not share evenly over the threads, each limb is cut into `threads` pieces (of whole cache lines), so that each thread
// takes the same number of consecutive words: whole limbs left one thread idle for one limb of every odd count on two.
template <class F>
void for_columns(int threads, std::size_t limbs, std::size_t n, F&& fn) {
    const std::size_t t = threads > 1 ? static_cast<std::size_t>(threads) : 1;
    const std::size_t pieces = limbs % t ? t : 1, len = (n / pieces + 7) / 8 * 8;
    parallel_for(threads, limbs * pieces, [&](std::size_t job) {
        const std::size_t c = job % pieces * len;
        if (c < n) fn(job / pieces, c, std::min(len, n - c));
    });
}

// x += d * f mod q over n words (f < q, fs = shoup(f, q)), in blocks of the product that stay in L1; the block is
// wiped at the end, since d may be a secret key (key generation's P s).
void add_scaled(const u64* d, u64 f, u64 fs, std::size_t n, u64 q, u64* x) {
    constexpr std::size_t kBlock = 2048;
    alignas(64) u64 t[kBlock];
    for (std::size_t c = 0; c < n; c += kBlock) {
        const std::size_t len = std::min(kBlock, n - c);
        arith::mul_scalar_mod(d + c, f, fs, len, q, t);
        arith::add_mod(x + c, t, len, q, x + c);
    }
    secure_wipe(t, sizeof t);
}

// Indices 0 .. count - 1 by decreasing cost(i), ties in index order: the order Schedule::dynamic wants.
template <class F>
std::vector<std::size_t> by_decreasing(std::size_t count, F&& cost) {
    std::vector<std::size_t> c(count), order(count);
    for (std::size_t i = 0; i < count; ++i) c[i] = cost(i);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return c[x] > c[y]; });
    return order;
}

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(std::shared_ptr<const RnsContext> ring);
    const char* name() const override { return "cpu"; }
    bool draws_key_limbs() const override { return true; }
    void for_each(std::size_t count, Exec exec, const std::function<void(std::size_t, Exec)>& fn) const override {
        if (count < static_cast<std::size_t>(exec.threads)) return Backend::for_each(count, exec, fn);
        parallel_for(exec.threads, count, [&](std::size_t i) { fn(i, Exec{1}); });
    }

protected:
    void do_upload(RnsPoly& out, const LimbWriter& fill, Exec) const override {
        for (std::size_t i = 0; i < out.limbs(); ++i) fill(i, limb(out, i));
    }
    void do_download(const RnsPoly& a, const LimbReader& read, std::size_t limbs, Exec) const override {
        std::vector<const u64*> ptrs(limbs);
        for (std::size_t i = 0; i < limbs; ++i) ptrs[i] = limb(a, i);
        read(ptrs.data());
    }
    void do_from_signed(const std::int64_t* coeffs, RnsPoly& out, Exec exec) const override;
    void do_from_signed(const __int128* coeffs, RnsPoly& out, Exec exec) const override;
    void do_add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const override;
    void do_sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const override;
    void do_copy(const RnsPoly& a, RnsPoly& out, Exec exec) const override;
    void do_negate(const RnsPoly& a, RnsPoly& out, Exec exec) const override;
    void do_mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const override;
    void do_fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, Exec exec) const override;
    void do_tensor(const RnsPoly& a0, const RnsPoly& a1, const RnsPoly& b0, const RnsPoly& b1, RnsPoly& d0, RnsPoly& d1,
                   RnsPoly& d2, Exec exec) const override;
    void do_mul_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec exec) const override;
    void do_add_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec exec) const override;
    void do_linear_combination(const std::vector<const RnsPoly*>& x, const std::vector<std::vector<u64>>& c,
                               RnsPoly& out, Exec exec) const override;
    void do_sum_of_products(const std::vector<std::vector<const RnsPoly*>>& x, const std::vector<const RnsPoly*>& y,
                            const std::vector<RnsPoly*>& out, bool accumulate, Exec exec) const override;
    void do_horner(const std::vector<const RnsPoly*>& c, const RnsPoly& x, RnsPoly& out, Exec exec) const override;
    void do_to_subring(const RnsPoly& a, RnsPoly& out, Exec exec) const override;
    void do_from_signed_subring(const __int128* coeffs, RnsPoly& out, Exec exec) const override;
    void do_to_ntt(RnsPoly& a, Exec exec) const override;
    void do_from_ntt(RnsPoly& a, Exec exec) const override;
    void do_automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, Exec exec) const override;
    void do_rescale(RnsPoly& a, Exec exec) const override;
    void do_rescale_all(std::vector<RnsPoly>& polys, Exec exec) const override;
    void do_divide_round_by_p0(RnsPoly& a, const std::int64_t* addend, Exec exec) const override;
    void do_mod_down(const RnsPoly& b, const RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a, u64 galois_elt,
                     RnsPoly& out_b, RnsPoly& out_a, Exec exec) const override;
    void do_mod_down_rescale(RnsPoly& b, RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a,
                             Exec exec) const override;
    void do_add_times_p(const RnsPoly& d, RnsPoly& x, std::size_t first, std::size_t count, Exec exec) const override;
    std::vector<RnsPoly> do_mod_up(const RnsPoly& d, Exec exec) const override;
    void do_key_switch(const RnsPoly& d, const GadgetKey& key, RnsPoly& b, RnsPoly& a, Exec exec) const override;
    void do_inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, RnsPoly& b, RnsPoly& a,
                          const RnsPoly* c0, RnsPoly* c0_out, Exec exec) const override;
    void do_key_switch_sum_mod_down(const RnsPoly& d, const std::vector<KeyTerm>& terms, const RnsPoly& c0,
                                    RnsPoly& out_b, RnsPoly& out_a, Exec exec) const override;
    void do_inner_product_sums(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, const RnsPoly& c0,
                               const std::vector<std::vector<ProductTerm>>& groups,
                               const std::vector<std::array<RnsPoly*, 3>>& out, Exec exec) const override;

private:
    // What ModUp starts from (d in NTT form over Q_l): its limbs back in coefficient form, each scaled for its digit's
    // base conversion, from which any limb of ModUp(digit j) is produced when a fused pipeline reads it.
    struct ModUpSources {
        std::size_t num_q = 0;
        const RnsPoly* ntt = nullptr;  // d itself: the ModUp limbs inside a digit are d's own
        RnsPoly scaled;                // y_i = [d]_{q_i} (Q_j/q_i)^-1 mod q_i, coefficient form
    };
    ModUpSources mod_up_sources(const RnsPoly& d, int threads) const;
    // Limb `limb` (of the Q_l * P basis) of ModUp(digit j), NTT form: d's own limb when it is one of the digit's,
    // else computed into scratch[0..n); returns where it is.
    const u64* mod_up_limb(const ModUpSources& dec, std::size_t digit, std::size_t limb_index, u64* scratch) const;
    // Limb l of a pair (b, a) over Q_l * P_k (num_q q-limbs): pointers to its words, or the words written into the two
    // buffers given (n each) and pointers to those.
    using PairLimbs = std::function<void(std::size_t l, u64* b_buf, u64* a_buf, const u64*& b, const u64*& a)>;
    // (out_b, out_a) = round((b, a) / R) (+ the addends times add_factor, null: 1; then permuted by perm) on the first
    // `keep` q-limbs, R = the product of the primes of src_limbs, inv its inverses mod the q-primes. The source limbs
    // are taken first; then the output limbs in groups of up to 4, each group converted column chunk by column chunk,
    // then each of its limbs transformed, combined and permuted while it is in cache. The outputs may be b and a.
    // split: `limbs` only points into memory (the pair is held), so that the two polynomials of a limb may be taken by
    // two threads. order: the output limbs in the order the threads take them, consecutive ones grouped, each thread
    // taking the next group when done with one (the costliest first; null: 0 .. keep - 1).
    void divide_exact(const PairLimbs& limbs, bool split, std::size_t num_q, const std::vector<std::size_t>& src_limbs,
                      const BaseConverter& conv, const u64* inv, std::size_t keep, RnsPoly& out_b, RnsPoly& out_a,
                      int threads, const RnsPoly* add_b = nullptr, const RnsPoly* add_a = nullptr,
                      const u64* add_factor = nullptr, const std::uint32_t* perm = nullptr,
                      const std::vector<std::size_t>* order = nullptr) const;
    // round((a + addend) / r) on the first `keep` q-limbs of each of `count` polynomials over the same limbs, r the
    // prime of their last limb.
    void divide_round_by_last(RnsPoly* const* polys, std::size_t count, std::size_t keep, const u64* inv,
                              const u64* inv_shoup, const u64* half_mod, int threads,
                              const std::int64_t* addend = nullptr) const;
    const BaseConverter& digit_converter(std::size_t digit, std::size_t num_q) const {
        return t_.digit_converter(ring(), digit, num_q);
    }
    std::size_t pidx(std::size_t limb_index, std::size_t num_q) const { return ring().prime_index(limb_index, num_q); }
    // The work of limb t (of Q_l * P, nq q-limbs) of digit j's ModUp, in source limbs read: 0 when t is one of the
    // digit's own limbs, else the digit's size (a conversion from its limbs, then a transform).
    std::size_t conversion_cost(std::size_t t, std::size_t j, std::size_t nq) const {
        const std::size_t begin = ring().digit_begin(j), m = ring().digit_size(j, nq);
        return t >= begin && t < begin + m ? 0 : m;
    }
    // Limbs 0 .. count - 1 by decreasing work of every digit's ModUp at them (the order Schedule::dynamic wants):
    // the limbs of a short last digit convert more source limbs than the others, and the special primes' most.
    std::vector<std::size_t> by_mod_up_cost(std::size_t count, std::size_t nq) const;
    // Limbs 0 .. count - 1 of an inner product with the keys by decreasing cost (the order Schedule::dynamic wants):
    // wider primes first (their products run on slower kernels: a bootstrapping chain's 60-bit primes beside its
    // 40-bit user primes), and among equals the q-limbs, which also carry c0's images where there is a c0.
    std::vector<std::size_t> by_product_cost(std::size_t count, std::size_t nq) const;
    using Permutation = std::shared_ptr<const std::vector<std::uint32_t>>;
    // Each term's permutation (null for g = 1), kept alive by `owned`.
    std::vector<const std::uint32_t*> permutations(const std::vector<KeyTerm>& terms,
                                                   std::vector<Permutation>& owned) const;
    // The limbs at t of every digit's ModUp (mod_up_limb), made in scratch (digits * n words) where they must be.
    std::vector<const u64*> mod_up_limbs(const ModUpSources& dec, std::size_t t, u64* scratch) const;
    // Limb t (of Q_l * P_k) of the pair <ModUp(d), key>, written to b and a; scratch as for mod_up_limbs.
    void key_switch_limb(const ModUpSources& dec, const GadgetKey& key, std::size_t t, u64* b, u64* a,
                         u64* scratch) const;
    // Limb t (of Q_l * P, nq q-limbs) of b = sum_e psi_{g_e}(<digits, key_e.b>) and a likewise, from the digits' limbs
    // at t (perms[e]: g_e's permutation, null for 1); with c0 (its limb t) also c0_out = sum_e psi_{g_e}(c0).
    void inner_product_limb(std::size_t t, std::size_t nq, const std::vector<const u64*>& dt,
                            const std::vector<KeyTerm>& terms, const std::vector<const std::uint32_t*>& perms, u64* b,
                            u64* a, const u64* c0, u64* c0_out) const;

    std::size_t n_;
    std::vector<std::unique_ptr<arith::NttTables>> ntt_;
    ScalingTables t_;  // rescale, ModUp and ModDown constants
};

CpuBackend::CpuBackend(std::shared_ptr<const RnsContext> r)
    : Backend(std::move(r), host_memory()), n_(ring().n()), t_(ring()) {
    for (std::size_t i = 0; i < ring().q_count() + ring().p_count(); ++i)
        ntt_.push_back(std::make_unique<arith::NttTables>(ring().prime(i), n_));
}

// ---------------------------------------------------------------- host transfers and element-wise operations

void CpuBackend::do_from_signed(const std::int64_t* coeffs, RnsPoly& out, Exec exec) const {
    const bool ntt = out.ntt_form();
    parallel_for(exec.threads, out.limbs(), [&](std::size_t i) {
        const std::size_t idx = pidx(i, out.num_q());
        const u64 q = ring().prime(idx);
        u64* d = limb(out, i);
        for (std::size_t c = 0; c < n_; ++c) d[c] = signed_residue(coeffs[c], q);
        if (ntt) arith::ntt_forward(d, *ntt_[idx]);
    });
}

void CpuBackend::do_from_signed(const __int128* coeffs, RnsPoly& out, Exec exec) const {
    // Magnitudes and signs once, then per limb a reduction without branches on the sign (random signs would
    // mispredict), of one word when every magnitude fits one (encoded messages at scales below 2^64).
    std::vector<u64> lo(n_), hi(n_), neg(n_);
    u64 any_hi = 0, all_lo = 0;
    for (std::size_t c = 0; c < n_; ++c) {
        const bool minus = coeffs[c] < 0;
        const auto mag = static_cast<arith::u128>(minus ? -coeffs[c] : coeffs[c]);
        lo[c] = static_cast<u64>(mag);
        hi[c] = static_cast<u64>(mag >> 64);
        neg[c] = minus ? ~u64{0} : 0;
        any_hi |= hi[c];
        all_lo |= lo[c];
    }
    // Magnitudes below 2^50 (a message at a scale up to about 2^49, an error): reduced by a product by 1 in the
    // kernels.
    const bool small = any_hi == 0 && all_lo < (u64{1} << 50);
    const bool ntt = out.ntt_form();
    parallel_for(exec.threads, out.limbs(), [&](std::size_t i) {
        const std::size_t idx = pidx(i, out.num_q());
        const Modulus& m = ring().modulus(idx);
        u64* d = limb(out, i);
        if (small) arith::mul_scalar_mod(lo.data(), 1, arith::shoup(1, m.value), n_, m.value, d);
        for (std::size_t c = 0; c < n_; ++c) {
            const u64 r = small    ? d[c]
                          : any_hi ? arith::reduce_128((static_cast<arith::u128>(hi[c]) << 64) | lo[c], m)
                                   : arith::reduce_64(lo[c], m);
            const u64 minus = r == 0 ? 0 : m.value - r;
            d[c] = r ^ ((r ^ minus) & neg[c]);
        }
        if (ntt) arith::ntt_forward(d, *ntt_[idx]);
    });
}

void CpuBackend::do_from_signed_subring(const __int128* coeffs, RnsPoly& out, Exec exec) const {
    parallel_for(exec.threads, out.limbs(), [&](std::size_t i) {
        const std::size_t idx = pidx(i, out.num_q());
        const Modulus& m = ring().modulus(idx);
        u64* d = limb(out, i);
        for (std::size_t c = 0; c < out.n(); ++c) d[c] = arith::reduce_signed(coeffs[c], m);
        arith::ntt_forward_prefix(d, out.n(), *ntt_[idx]);
    });
}

void CpuBackend::do_add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const {
    for_columns(exec.threads, a.limbs(), n_, [&](std::size_t i, std::size_t c, std::size_t len) {
        arith::add_mod(limb(a, i) + c, limb(b, i) + c, len, ring().prime(pidx(i, a.num_q())), limb(out, i) + c);
    });
}

void CpuBackend::do_sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const {
    for_columns(exec.threads, a.limbs(), n_, [&](std::size_t i, std::size_t c, std::size_t len) {
        arith::sub_mod(limb(a, i) + c, limb(b, i) + c, len, ring().prime(pidx(i, a.num_q())), limb(out, i) + c);
    });
}

void CpuBackend::do_copy(const RnsPoly& a, RnsPoly& out, Exec exec) const {
    for_columns(exec.threads, out.limbs(), n_, [&](std::size_t i, std::size_t c, std::size_t len) {
        const std::size_t from = i < out.num_q() ? i : i - out.num_q() + a.num_q();  // special limbs after a's q-limbs
        std::memcpy(limb(out, i) + c, limb(a, from) + c, len * sizeof(u64));
    });
}

void CpuBackend::do_negate(const RnsPoly& a, RnsPoly& out, Exec exec) const {
    for_columns(exec.threads, a.limbs(), n_, [&](std::size_t i, std::size_t c, std::size_t len) {
        arith::negate_mod(limb(a, i) + c, len, ring().prime(pidx(i, a.num_q())), limb(out, i) + c);
    });
}

void CpuBackend::do_mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const {
    for_columns(exec.threads, a.limbs(), n_, [&](std::size_t i, std::size_t c, std::size_t len) {
        arith::mul_mod(limb(a, i) + c, limb(b, i) + c, len, ring().modulus(pidx(i, a.num_q())), limb(out, i) + c);
    });
}

void CpuBackend::do_fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, Exec exec) const {
    for_columns(exec.threads, a.limbs(), n_, [&](std::size_t i, std::size_t k, std::size_t len) {
        arith::fma_mod(limb(a, i) + k, limb(b, i) + k, limb(c, i) + k, len, ring().modulus(pidx(i, a.num_q())),
                       limb(out, i) + k);
    });
}

// Limb by limb (or piece by piece): the four operand limbs stay in cache for the three products.
void CpuBackend::do_tensor(const RnsPoly& a0, const RnsPoly& a1, const RnsPoly& b0, const RnsPoly& b1, RnsPoly& d0,
                           RnsPoly& d1, RnsPoly& d2, Exec exec) const {
    for_columns(exec.threads, a0.limbs(), n_, [&](std::size_t i, std::size_t c, std::size_t len) {
        const Modulus& m = ring().modulus(pidx(i, a0.num_q()));
        const u64 *x0 = limb(a0, i) + c, *x1 = limb(a1, i) + c, *y0 = limb(b0, i) + c, *y1 = limb(b1, i) + c;
        u64* z1 = limb(d1, i) + c;
        arith::mul_mod(x0, y0, len, m, limb(d0, i) + c);
        arith::mul_mod(x0, y1, len, m, z1);
        arith::fma_mod(x1, y0, z1, len, m, z1);
        arith::mul_mod(x1, y1, len, m, limb(d2, i) + c);
    });
}

void CpuBackend::do_mul_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec exec) const {
    for_columns(exec.threads, a.limbs(), n_, [&](std::size_t i, std::size_t c, std::size_t len) {
        const std::size_t idx = pidx(i, a.num_q());
        const u64 q = ring().prime(idx), w = residues[idx] % q;
        arith::mul_scalar_mod(limb(a, i) + c, w, arith::shoup(w, q), len, q, limb(out, i) + c);
    });
}

void CpuBackend::do_linear_combination(const std::vector<const RnsPoly*>& x, const std::vector<std::vector<u64>>& c,
                                       RnsPoly& out, Exec exec) const {
    for_columns(exec.threads, out.num_q(), n_, [&](std::size_t i, std::size_t k, std::size_t len) {
        std::vector<const u64*> src(x.size());
        std::vector<u64> f(x.size());
        for (std::size_t t = 0; t < x.size(); ++t) {
            src[t] = limb(*x[t], i) + k;  // q-limb i is limb i whatever the term's level
            f[t] = c[t][i] % ring().prime(i);
        }
        // the terms' residues are below q_i: below 2^48 when q_i is
        arith::dot_const_mod(src.data(), f.data(), x.size(), len, ring().modulus(i), limb(out, i) + k, nullptr, nullptr,
                             ring().prime(i) < (u64{1} << 48));
    });
}

void CpuBackend::do_add_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec exec) const {
    for_columns(exec.threads, a.limbs(), n_, [&](std::size_t i, std::size_t c, std::size_t len) {
        const std::size_t idx = pidx(i, a.num_q());
        const u64 q = ring().prime(idx), w = residues[idx] % q;
        const u64* src = limb(a, i) + c;
        u64* dst = limb(out, i) + c;
        for (std::size_t k = 0; k < len; ++k) dst[k] = arith::add_mod(src[k], w, q);
    });
}

void CpuBackend::do_sum_of_products(const std::vector<std::vector<const RnsPoly*>>& x,
                                    const std::vector<const RnsPoly*>& y, const std::vector<RnsPoly*>& out,
                                    bool accumulate, Exec exec) const {
    // One job per limb t and chunk of columns: those columns of limb t of every out[k] are written once, as one sum of
    // products over every term (one reduction per column, arith::dot_mod) while the chunk's operands stay in cache.
    // The terms' components share their q-limbs (Backend::sum_of_products), so limb t is the same prime in each, and a
    // subring plaintext (its words repeated in blocks of f) is expanded once per chunk for all of them.
    constexpr std::size_t kChunk = 1024, kGroup = 8;
    std::size_t limbs = 0, subring = 0;
    for (const RnsPoly* o : out) limbs = std::max(limbs, o->limbs());
    for (const RnsPoly* yi : y) subring += yi->n() != n_;
    const std::size_t chunks = (n_ + kChunk - 1) / kChunk;
    const auto sum_chunk = [&](std::size_t job) {
        const std::size_t t = job / chunks, c = job % chunks * kChunk, len = std::min(kChunk, n_ - c);
        const Modulus& m = ring().modulus(pidx(t, out[0]->num_q()));
        std::vector<const u64*> a(x.size()), b(x.size());
        AlignedWords buf(subring * kChunk);
        u64* next = buf.data();
        for (std::size_t i = 0; i < x.size(); ++i) {  // limb t of a term is limb t of its plaintext
            b[i] = plain_columns(*y[i], t, n_, c, len, next);
            if (b[i] == next) next += kChunk;
        }
        for (std::size_t k = 0; k < out.size(); ++k) {
            if (t >= out[k]->limbs()) continue;
            for (std::size_t i = 0; i < x.size(); ++i) a[i] = limb(*x[i][k], t) + c;
            u64* dst = limb(*out[k], t) + c;
            for (std::size_t g = 0; g < x.size(); g += kGroup)
                arith::dot_mod(a.data() + g, b.data() + g, std::min(kGroup, x.size() - g), len, m, dst,
                               accumulate || g > 0);
        }
    };
    parallel_for(exec.threads, limbs * chunks, sum_chunk, Schedule::contiguous);
}

void CpuBackend::do_to_subring(const RnsPoly& a, RnsPoly& out, Exec exec) const {
    const std::size_t f = n_ / out.n();
    parallel_for(exec.threads, out.limbs(), [&](std::size_t i) {
        const u64* src = limb(a, i);
        u64* dst = limb(out, i);
        for (std::size_t j = 0; j < out.n(); ++j) dst[j] = src[j * f];
    });
}

void CpuBackend::do_horner(const std::vector<const RnsPoly*>& c, const RnsPoly& x, RnsPoly& out, Exec exec) const {
    for_columns(exec.threads, out.num_q(), n_, [&](std::size_t i, std::size_t w, std::size_t len) {
        const Modulus& m = ring().modulus(i);
        u64* acc = limb(out, i) + w;
        std::copy(limb(*c.back(), i) + w, limb(*c.back(), i) + w + len, acc);
        for (std::size_t k = c.size() - 1; k-- > 0;)
            arith::fma_mod(acc, limb(x, i) + w, limb(*c[k], i) + w, len, m, acc);
    });
}

// ---------------------------------------------------------------- transforms

void CpuBackend::do_to_ntt(RnsPoly& a, Exec exec) const {
    parallel_for(exec.threads, a.limbs(),
                 [&](std::size_t i) { arith::ntt_forward(limb(a, i), *ntt_[pidx(i, a.num_q())]); });
    a.set_ntt_form(true);
}

void CpuBackend::do_from_ntt(RnsPoly& a, Exec exec) const {
    parallel_for(exec.threads, a.limbs(),
                 [&](std::size_t i) { arith::ntt_inverse(limb(a, i), *ntt_[pidx(i, a.num_q())]); });
    a.set_ntt_form(false);
}

void CpuBackend::do_automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, Exec exec) const {
    const auto perm = ring().automorphism_permutation(galois_elt);
    const std::uint32_t* p = perm->data();
    parallel_for(exec.threads, a.limbs(), [&](std::size_t i) { arith::permute(limb(a, i), p, n_, limb(out, i)); });
}

// ---------------------------------------------------------------- scaling

void CpuBackend::divide_round_by_last(RnsPoly* const* polys, std::size_t count, std::size_t keep, const u64* inv,
                                      const u64* inv_shoup, const u64* half_mod, int threads,
                                      const std::int64_t* addend) const {
    // The small coefficient-form addend joins the correction polynomial before its NTT, so it costs no transform of
    // its own. Every polynomial's last limb first (one thread each), then every kept limb of all of them in one team:
    // two polynomials of an odd number of limbs share evenly over two threads where one alone does not.
    const std::size_t last_limb = polys[0]->limbs() - 1, idx = pidx(last_limb, polys[0]->num_q());
    const u64 r = ring().prime(idx), half = r >> 1;
    std::vector<AlignedWords> last(count);
    const AlignedWords halves(n_, half);  // the kernels take vectors: a constant as one
    parallel_for(threads, count, [&](std::size_t k) {
        last[k].assign(limb(*polys[k], last_limb), limb(*polys[k], last_limb) + n_);
        arith::ntt_inverse(last[k].data(), *ntt_[idx]);
        if (addend)
            for (std::size_t c = 0; c < n_; ++c)
                last[k][c] = arith::add_mod(last[k][c], signed_residue(addend[c], r), r);
        arith::add_mod(last[k].data(), halves.data(), n_, r, last[k].data());  // round instead of floor
    });
    std::vector<RnsPoly> out;  // written limb by limb: no copy of the kept limbs afterwards
    for (std::size_t k = 0; k < count; ++k) out.push_back(poly(keep, 0, true));
    parallel_for(threads, count * keep, [&](std::size_t job) {
        const std::size_t k = job / keep, i = job % keep;
        u64* t = limb(out[k], i);
        const u64* lk = last[k].data();
        const Modulus& mi = ring().modulus(i);
        const u64 qi = mi.value, h = half_mod[i];
        if (r < (u64{1} << 50)) {  // lk < 2^50: a product by 1 reduces it (arith::mul_scalar_mod)
            arith::mul_scalar_mod(lk, 1, arith::shoup(1, qi), n_, qi, t);
            const AlignedWords hs(n_, h);
            arith::sub_mod(t, hs.data(), n_, qi, t);
        } else {
            for (std::size_t c = 0; c < n_; ++c) t[c] = arith::sub_mod(arith::reduce_64(lk[c], mi), h, qi);
        }
        if (addend)  // a + e - t = a - (t - e)
            for (std::size_t c = 0; c < n_; ++c) t[c] = arith::sub_mod(t[c], signed_residue(addend[c], qi), qi);
        arith::ntt_forward(t, *ntt_[i]);
        arith::sub_mod(limb(*polys[k], i), t, n_, qi, t);
        arith::mul_scalar_mod(t, inv[i], inv_shoup[i], n_, qi, t);
    });
    for (std::size_t k = 0; k < count; ++k) *polys[k] = std::move(out[k]);
}

void CpuBackend::do_rescale(RnsPoly& a, Exec exec) const {
    const std::size_t l = a.num_q() - 1;
    RnsPoly* p = &a;
    divide_round_by_last(&p, 1, l, t_.rescale_inv[l].data(), t_.rescale_inv_shoup[l].data(), t_.rescale_half[l].data(),
                         exec.threads);
}

void CpuBackend::do_rescale_all(std::vector<RnsPoly>& polys, Exec exec) const {
    std::vector<RnsPoly*> p;
    for (RnsPoly& a : polys) {
        if (a.num_q() != polys[0].num_q()) return Backend::do_rescale_all(polys, exec);
        p.push_back(&a);
    }
    if (p.empty()) return;
    const std::size_t l = polys[0].num_q() - 1;
    divide_round_by_last(p.data(), p.size(), l, t_.rescale_inv[l].data(), t_.rescale_inv_shoup[l].data(),
                         t_.rescale_half[l].data(), exec.threads);
}

void CpuBackend::do_divide_round_by_p0(RnsPoly& a, const std::int64_t* addend, Exec exec) const {
    RnsPoly* p = &a;
    divide_round_by_last(&p, 1, a.num_q(), t_.p_inv[1].data(), t_.p_inv_shoup[1].data(), t_.p0_half.data(),
                         exec.threads, addend);
}

void CpuBackend::divide_exact(const PairLimbs& limbs, bool split, std::size_t num_q,
                              const std::vector<std::size_t>& src_limbs, const BaseConverter& conv, const u64* inv,
                              std::size_t keep, RnsPoly& out_b, RnsPoly& out_a, int threads, const RnsPoly* add_b,
                              const RnsPoly* add_a, const u64* add_factor, const std::uint32_t* perm,
                              const std::vector<std::size_t>* order) const {
    // round(x / R): x - [x]_R (exact, centered conversion) is divisible by R. A job is a limb of both polynomials, or
    // (split) of one: 2 s jobs share evenly over two threads where s may not.
    const std::size_t s = src_limbs.size(), halves = split ? 2 : 1;
    RnsPoly y[2] = {poly(0, s, false), poly(0, s, false)};
    parallel_for(threads, s * halves, [&](std::size_t job) {
        const std::size_t j = job / halves, l = src_limbs[j], h0 = halves == 2 ? job % 2 : 0,
                          h1 = halves == 2 ? h0 + 1 : 2;
        u64* buf[2] = {limb(y[0], j), limb(y[1], j)};
        const u64* x[2];
        limbs(l, buf[0], buf[1], x[0], x[1]);
        for (std::size_t h = h0; h < h1; ++h) {
            if (x[h] != buf[h]) std::copy(x[h], x[h] + n_, buf[h]);
            arith::ntt_inverse(buf[h], *ntt_[pidx(l, num_q)]);
        }
    });
    std::vector<u64*> yp[2];
    std::vector<std::uint8_t> v[2];
    for (int h = 0; h < 2; ++h) {
        for (std::size_t j = 0; j < s; ++j) yp[h].push_back(limb(y[h], j));
        v[h].resize(n_);
    }
    // The scaling and the overflow counts, coefficient-wise, in chunks of both polynomials across the threads (on one
    // thread of the team they were a tenth of a key switch, which capped its speed-up on two threads).
    const std::size_t chunk = std::min<std::size_t>(n_, 4096), chunks = n_ / chunk;
    const auto scale_chunk = [&](std::size_t job) {
        const std::size_t h = job / chunks, c0 = (job % chunks) * chunk;
        std::vector<u64*> part(s);
        for (std::size_t j = 0; j < s; ++j) part[j] = yp[h][j] + c0;
        conv.scale_source(part.data(), chunk, part.data());
        conv.overflow_count(part.data(), chunk, v[h].data() + c0);
    };
    parallel_for(threads, 2 * chunks, scale_chunk, Schedule::contiguous);
    RnsPoly result[2] = {poly(keep, 0, true), poly(keep, 0, true)};  // written limb by limb
    const RnsPoly* add[2] = {add_b, add_a};
    const std::vector<u64>& q = ring().q_primes();
    const std::size_t out_halves = split ? 2 : 1;
    // A job is a group of up to 4 output limbs (of one half, or both): their conversions column chunk by column chunk,
    // so that each chunk of the s source limbs is read once for the group while it stays in cache, then each limb's
    // transform and the rest. Groups only while there are four jobs a thread (at two, BOOT16's lower levels left
    // the threads uneven). H16 on one Zen 5 thread and two, four alternated rounds against one limb a job: ModDown
    // with the rescale 14.5 -> 13.7 and 8.0 -> 7.4 ms, ModDown with the automorphism 12.3 -> 11.9 and 6.8 -> 6.3 ms.
    const std::size_t group = std::clamp<std::size_t>(keep * out_halves / (4 * std::max(threads, 1)), 1, 4),
                      groups = (keep + group - 1) / group;
    const auto output_group = [&](std::size_t job) {
        const std::size_t g = job / out_halves, h0 = out_halves == 2 ? job % 2 : 0, h1 = out_halves == 2 ? h0 + 1 : 2;
        const std::size_t first = g * group, count = std::min(group, keep - first);
        auto limb_at = [&](std::size_t k) { return order ? (*order)[first + k] : first + k; };
        AlignedWords scratch(2 * n_), converted(perm ? count * (h1 - h0) * n_ : 0);
        auto target = [&](std::size_t k, std::size_t h) {
            return perm ? converted.data() + ((h - h0) * count + k) * n_ : limb(result[h], limb_at(k));
        };
        constexpr std::size_t kColumns = 2048;
        std::vector<const u64*> part(s);
        for (std::size_t h = h0; h < h1; ++h)
            for (std::size_t c = 0; c < n_; c += kColumns) {
                const std::size_t len = std::min(kColumns, n_ - c);
                for (std::size_t j = 0; j < s; ++j) part[j] = yp[h][j] + c;
                for (std::size_t k = 0; k < count; ++k)
                    conv.convert_to(limb_at(k), part.data(), len, target(k, h) + c, v[h].data() + c);
            }
        for (std::size_t k = 0; k < count; ++k) {
            const std::size_t i = limb_at(k);
            const u64* x[2];
            limbs(i, scratch.data(), scratch.data() + n_, x[0], x[1]);
            for (std::size_t h = h0; h < h1; ++h) {
                u64* t = target(k, h);
                arith::ntt_forward(t, *ntt_[i]);
                if (add[h] && add_factor && q[i] < (u64{1} << 50)) {
                    // (x - t) inv + add f as x inv + t (q - inv) + add f, one pass (the IFMA and double-precision
                    // bodies' sums; for larger primes the passes below are faster)
                    const u64* y[3] = {x[h], t, limb(*add[h], i)};
                    const u64 f[3] = {inv[i], q[i] - inv[i], add_factor[i]};
                    arith::dot_const_mod(y, f, 3, n_, ring().modulus(i), t, nullptr, nullptr, q[i] < (u64{1} << 48));
                } else {  // passes in cache: faster than a dot of three sources for factor 1 and primes of 50+ bits
                    arith::sub_mod(x[h], t, n_, q[i], t);
                    arith::mul_scalar_mod(t, inv[i], arith::shoup(inv[i], q[i]), n_, q[i], t);
                    if (add[h] && add_factor) {
                        add_scaled(limb(*add[h], i), add_factor[i], arith::shoup(add_factor[i], q[i]), n_, q[i], t);
                    } else if (add[h]) {
                        arith::add_mod(t, limb(*add[h], i), n_, q[i], t);
                    }
                }
                if (perm) arith::permute(t, perm, n_, limb(result[h], i));
            }
        }
    };
    parallel_for(threads, groups * out_halves, output_group, Schedule::dynamic);
    out_b = std::move(result[0]);
    out_a = std::move(result[1]);
}

// The limbs of a pair held in memory.
auto own_limbs(const RnsPoly& b, const RnsPoly& a) {
    return [&b, &a](std::size_t l, u64*, u64*, const u64*& xb, const u64*& xa) {
        xb = limb(b, l);
        xa = limb(a, l);
    };
}
// The source limbs of ModDown over Q_l * P_k (the special primes), and of ModDown with a rescale (those and q_l).
std::vector<std::size_t> special_limbs(std::size_t nq, std::size_t np, bool and_last_q) {
    std::vector<std::size_t> src;
    for (std::size_t j = 0; j < np; ++j) src.push_back(nq + j);
    if (and_last_q) src.push_back(nq - 1);
    return src;
}

void CpuBackend::do_mod_down(const RnsPoly& b, const RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a,
                             u64 galois_elt, RnsPoly& out_b, RnsPoly& out_a, Exec exec) const {
    const auto perm = galois_elt == 1 ? nullptr : ring().automorphism_permutation(galois_elt);
    const std::size_t nq = b.num_q(), np = b.num_p();
    divide_exact(own_limbs(b, a), true, nq, special_limbs(nq, np, false), t_.p_to_q[np], t_.p_inv[np].data(), nq, out_b,
                 out_a, exec.threads, add_b, add_a, nullptr, perm ? perm->data() : nullptr);
}

void CpuBackend::do_mod_down_rescale(RnsPoly& b, RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a,
                                     Exec exec) const {
    // round((x + P e) / (P q_l)) = round((x' - [x']_{P q_l}) / (P q_l)) + e q_l^-1 with x' = x + P e on the source
    // limbs alone (P e vanishes mod the special primes): only limb l takes P e before, the kept limbs e q_l^-1 in
    // the combine (a pass over both polynomials fewer).
    const std::size_t nq = b.num_q(), l = nq - 1;
    if (add_b) do_add_times_p(*add_b, b, l, 1, exec);
    if (add_a) do_add_times_p(*add_a, a, l, 1, exec);
    divide_exact(own_limbs(b, a), true, nq, special_limbs(nq, b.num_p(), true), t_.pq_to_q[l], t_.pq_inv[l].data(), l,
                 b, a, exec.threads, add_b, add_a, t_.rescale_inv[l].data());
}

void CpuBackend::do_add_times_p(const RnsPoly& d, RnsPoly& x, std::size_t first, std::size_t count, Exec exec) const {
    parallel_for(exec.threads, count, [&](std::size_t k) {
        const std::size_t i = first + k;
        add_scaled(limb(d, i), t_.p_mod_q[i], t_.p_mod_q_shoup[i], n_, ring().prime(i), limb(x, i));
    });
}

// ---------------------------------------------------------------- key switching

std::vector<std::size_t> CpuBackend::by_mod_up_cost(std::size_t count, std::size_t nq) const {
    return by_decreasing(count, [&](std::size_t t) {
        std::size_t c = 0;
        for (std::size_t j = 0; j < ring().digits_at(nq); ++j) c += conversion_cost(t, j, nq);
        return c;
    });
}

std::vector<std::size_t> CpuBackend::by_product_cost(std::size_t count, std::size_t nq) const {
    return by_decreasing(count, [&](std::size_t t) {
        return static_cast<std::size_t>(ring().modulus(pidx(t, nq)).bits) * 2 + (t < nq);
    });
}

CpuBackend::ModUpSources CpuBackend::mod_up_sources(const RnsPoly& d, int threads) const {
    ModUpSources dec;
    dec.num_q = d.num_q();
    dec.ntt = &d;
    dec.scaled = poly(d.num_q(), d.num_p(), false);  // each limb copied by the thread that transforms it
    // One loop: each limb's inverse transform, digit by digit, then each digit's scaling in chunks of coefficients,
    // so that the threads share the work evenly (three digits on two threads would leave one idle a third of the
    // time, and an odd number of limbs one transform). A dynamic loop hands its jobs out in index order: a thread
    // that takes a digit's chunk finds every transform of that digit taken, and waits only for one still running
    // (rare: the digits' transforms are handed out first to last, their chunks likewise).
    const std::size_t nq = d.num_q(), limbs = d.limbs(), digits = ring().digits_at(nq),
                      chunk = std::min<std::size_t>(n_, 4096), chunks = n_ / chunk;
    const std::unique_ptr<std::atomic<std::size_t>[]> transformed(new std::atomic<std::size_t>[digits]);
    for (std::size_t j = 0; j < digits; ++j) transformed[j].store(0, std::memory_order_relaxed);
    const auto job = [&](std::size_t k) {
        if (k < limbs) {
            std::copy(limb(d, k), limb(d, k) + n_, limb(dec.scaled, k));
            arith::ntt_inverse(limb(dec.scaled, k), *ntt_[pidx(k, nq)]);
            if (k < nq) transformed[k / ring().alpha()].fetch_add(1, std::memory_order_release);
            return;
        }
        const std::size_t j = (k - limbs) / chunks, c0 = (k - limbs) % chunks * chunk;
        const std::size_t begin = ring().digit_begin(j), m = ring().digit_size(j, nq);
        while (transformed[j].load(std::memory_order_acquire) < m) std::this_thread::yield();
        u64* y[kMaxDigitPrimes];
        for (std::size_t i = 0; i < m; ++i) y[i] = limb(dec.scaled, begin + i) + c0;
        digit_converter(j, nq).scale_source(y, chunk, y);
    };
    parallel_for(threads, limbs + digits * chunks, job, Schedule::dynamic);
    return dec;
}

const u64* CpuBackend::mod_up_limb(const ModUpSources& dec, std::size_t digit, std::size_t t, u64* out) const {
    const std::size_t begin = ring().digit_begin(digit), m = ring().digit_size(digit, dec.num_q);
    if (t >= begin && t < begin + m) return limb(*dec.ntt, t);  // a limb of the digit itself
    const u64* y[kMaxDigitPrimes];                              // m <= alpha <= kMaxDigitPrimes (RnsContext)
    for (std::size_t i = 0; i < m; ++i) y[i] = limb(dec.scaled, begin + i);
    const std::size_t idx = pidx(t, dec.num_q);
    digit_converter(digit, dec.num_q).convert_to(idx, y, n_, out);
    arith::ntt_forward(out, *ntt_[idx]);
    return out;
}

std::vector<RnsPoly> CpuBackend::do_mod_up(const RnsPoly& d, Exec exec) const {
    const std::size_t nq = d.num_q(), np = ring().p_count(), digits = ring().digits_at(nq);
    const ModUpSources dec = mod_up_sources(d, exec.threads);
    std::vector<RnsPoly> out;
    out.reserve(digits);
    for (std::size_t j = 0; j < digits; ++j) out.push_back(poly(nq, np, true));
    const std::vector<std::size_t> jobs =  // (digit, limb): the largest conversions first, copies last
        by_decreasing(digits * (nq + np),
                      [&](std::size_t i) { return conversion_cost(i % (nq + np), i / (nq + np), nq); });
    const auto convert = [&](std::size_t k) {
        const std::size_t i = jobs[k], j = i / (nq + np), t = i % (nq + np);
        u64* dst = limb(out[j], t);
        const u64* src = mod_up_limb(dec, j, t, dst);
        if (src != dst) std::copy(src, src + n_, dst);
    };
    parallel_for(exec.threads, jobs.size(), convert, Schedule::dynamic);
    return out;
}

// The key-switching inner product, written once: for each key half H (the b and/or a limbs of one key's digits on
// one prime), acc_H = sum_j D_j * H_j (onto acc_H when `add`), D_j = d[j] a limb of digit j after ModUp. One reduction
// per column (arith::dot_mod). With two halves the columns go in blocks, so that the digits' block stays in L1 for
// the second half; one half reads whole limbs (long streams prefetch best).
template <std::size_t H>
void dot_digits(const std::vector<const u64*>& d, const std::array<const u64* const*, H>& halves,
                const std::array<u64*, H>& acc, bool add, std::size_t n, const Modulus& m) {
    const std::size_t k = d.size(), block = H > 1 ? std::min<std::size_t>(n, 2048) : n;
    std::vector<const u64*> db(k), kb(k);
    for (std::size_t c = 0; c < n; c += block) {
        const std::size_t len = std::min(block, n - c);
        for (std::size_t j = 0; j < k; ++j) db[j] = d[j] + c;
        for (std::size_t h = 0; h < H; ++h) {
            for (std::size_t j = 0; j < k; ++j) kb[j] = halves[h][j] + c;
            arith::dot_mod(db.data(), kb.data(), k, len, m, acc[h] + c, add);
        }
    }
}

// The limbs of half h (0: b, 1: a) of a key's first `digits` digits that meet limb t of an operand over Q_l * P (nq
// q-limbs), on the prime of index `prime`: b from its b-parts, a from its a-parts or, for a compact key, drawn into
// `drawn` (n words a digit).
void key_half_limbs(const GadgetKey& key, int h, std::size_t t, std::size_t nq, std::size_t prime, std::size_t digits,
                    std::size_t n, AlignedWords& drawn, std::vector<const u64*>& out) {
    const std::size_t kl = key.limb_of(t, nq);
    out.resize(digits);
    const bool draw = h == 1 && key.compact();
    if (draw && drawn.size() < digits * n) drawn.resize(digits * n);
    for (std::size_t j = 0; j < digits; ++j) {
        if (h == 0) {
            out[j] = limb(key.b_parts()[j], kl);
        } else if (draw) {
            key.a_limb(j, prime, drawn.data() + j * n);
            out[j] = drawn.data() + j * n;
        } else {
            out[j] = limb(key.a[j], kl);
        }
    }
}
void key_limbs(const GadgetKey& key, std::size_t t, std::size_t nq, std::size_t prime, std::size_t digits,
               std::size_t n, AlignedWords& drawn, std::vector<const u64*>& kb, std::vector<const u64*>& ka) {
    key_half_limbs(key, 0, t, nq, prime, digits, n, drawn, kb);
    key_half_limbs(key, 1, t, nq, prime, digits, n, drawn, ka);
}

void CpuBackend::do_key_switch(const RnsPoly& d, const GadgetKey& key, RnsPoly& b, RnsPoly& a, Exec exec) const {
    // Over Q_l * P_k, the key's special primes (all of P, or a prefix).
    const std::size_t nq = d.num_q(), np = key.b_parts()[0].num_p(), digits = ring().digits_at(nq);
    const ModUpSources dec = mod_up_sources(d, exec.threads);
    const std::vector<std::size_t> order = by_mod_up_cost(nq + np, nq);
    const auto switch_limb = [&](std::size_t k) {
        const std::size_t t = order[k];
        AlignedWords tmp(digits * n_);
        key_switch_limb(dec, key, t, limb(b, t), limb(a, t), tmp.data());
    };
    parallel_for(exec.threads, nq + np, switch_limb, Schedule::dynamic);
}

std::vector<const u64*> CpuBackend::mod_up_limbs(const ModUpSources& dec, std::size_t t, u64* scratch) const {
    std::vector<const u64*> dt(ring().digits_at(dec.num_q));
    for (std::size_t j = 0; j < dt.size(); ++j) dt[j] = mod_up_limb(dec, j, t, scratch + j * n_);
    return dt;
}

void CpuBackend::key_switch_limb(const ModUpSources& dec, const GadgetKey& key, std::size_t t, u64* b, u64* a,
                                 u64* scratch) const {
    const std::size_t nq = dec.num_q;
    const std::vector<const u64*> dt = mod_up_limbs(dec, t, scratch);
    AlignedWords drawn;
    std::vector<const u64*> kb, ka;
    key_limbs(key, t, nq, pidx(t, nq), dt.size(), n_, drawn, kb, ka);
    dot_digits<2>(dt, {kb.data(), ka.data()}, {b, a}, false, n_, ring().modulus(pidx(t, nq)));
}

std::vector<const std::uint32_t*> CpuBackend::permutations(const std::vector<KeyTerm>& terms,
                                                           std::vector<Permutation>& owned) const {
    std::vector<const std::uint32_t*> perms;
    for (const KeyTerm& e : terms) {
        owned.push_back(e.galois_elt == 1 ? nullptr : ring().automorphism_permutation(e.galois_elt));
        perms.push_back(owned.back() ? owned.back()->data() : nullptr);
    }
    return perms;
}

void CpuBackend::inner_product_limb(std::size_t t, std::size_t nq, const std::vector<const u64*>& dt,
                                    const std::vector<KeyTerm>& terms, const std::vector<const std::uint32_t*>& perms,
                                    u64* b, u64* a, const u64* c0, u64* c0_out) const {
    const Modulus& m = ring().modulus(pidx(t, nq));
    const u64 q = m.value;
    // dst (+)= src[p] (no p: src itself): the first key writes, the others add (branch-free, values < q < 2^63).
    auto permute_into = [&](u64* dst, const u64* src, const std::uint32_t* p, bool first) {
        if (first && p) {
            for (std::size_t k = 0; k < n_; ++k) dst[k] = src[p[k]];
        } else if (first) {
            std::copy(src, src + n_, dst);
        } else if (p) {
            for (std::size_t k = 0; k < n_; ++k) {
                const u64 v = dst[k] + src[p[k]];
                dst[k] = v - (q & (0 - static_cast<u64>(v >= q)));
            }
        } else {
            arith::add_mod(dst, src, n_, q, dst);
        }
    };
    AlignedWords tmp, drawn;
    std::vector<const u64*> kb, ka;
    // Each product limb is permuted while still in cache. (Done in blocks, which an automorphism maps onto blocks,
    // the products would stay in L1, but the short streams prefetch worse: sum_slots was ~14% slower at H16.)
    for (std::size_t e = 0; e < terms.size(); ++e) {
        key_limbs(*terms[e].key, t, nq, pidx(t, nq), dt.size(), n_, drawn, kb, ka);
        const std::uint32_t* p = perms[e];
        if (!p) {  // the product is the result: accumulate it in place
            dot_digits<1>(dt, {kb.data()}, {b}, e > 0, n_, m);
            dot_digits<1>(dt, {ka.data()}, {a}, e > 0, n_, m);
        } else {
            if (tmp.empty()) tmp.resize(n_);
            dot_digits<1>(dt, {kb.data()}, {tmp.data()}, false, n_, m);
            permute_into(b, tmp.data(), p, e == 0);
            dot_digits<1>(dt, {ka.data()}, {tmp.data()}, false, n_, m);
            permute_into(a, tmp.data(), p, e == 0);
        }
        if (c0) permute_into(c0_out, c0, p, e == 0);
    }
}

void CpuBackend::do_inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, RnsPoly& b,
                                  RnsPoly& a, const RnsPoly* c0, RnsPoly* c0_out, Exec exec) const {
    // Over Q_l * P_k as shaped by the caller: the keys' special primes (the digits may have more).
    const std::size_t nq = digits[0].num_q(), np = b.num_p();
    std::vector<Permutation> owned;
    const std::vector<const std::uint32_t*> perms = permutations(terms, owned);
    // Loop over limbs (parallel) and, inside, over the keys: the two loops of Inoue 2022 Alg. 3.2.1. Each thread takes
    // the next limb when done with one, the costliest first (by_product_cost): with fixed shares (thread k: limbs k,
    // k + T, ...) one thread of two took every limb that starts a 2 MiB page of the fresh outputs (every fourth at
    // n = 2^16), whose first touch faults the page in: in one region of a BOOT16 bootstrap on two Zen 5 threads, limbs
    // of 9.4 and 0.3 ms and a span of 69.6 ms for 37.6 ms of work a thread (RegionRecorder's timings; 40.9 ms with the
    // limbs handed out so, the 50-bit-and-more primes first).
    const std::vector<std::size_t> order = by_product_cost(nq + np, nq);
    parallel_for(
        exec.threads, nq + np,
        [&](std::size_t k) {
            const std::size_t t = order[k];
            std::vector<const u64*> dt(digits.size());
            for (std::size_t j = 0; j < digits.size(); ++j) dt[j] = limb(digits[j], t);
            const bool with_c0 = c0 && t < nq;
            inner_product_limb(t, nq, dt, terms, perms, limb(b, t), limb(a, t), with_c0 ? limb(*c0, t) : nullptr,
                               with_c0 ? limb(*c0_out, t) : nullptr);
        },
        Schedule::dynamic);
}

// Limb by limb: the products of a batch of terms (their inner products, permuted, and c0's images) are made into
// per-thread buffers, and every group's sum takes its terms of the batch from there, column chunk by chunk
// (arith::dot_mod, one reduction per column and 8 terms), adding onto what the earlier batches left. Only the
// digits, the keys, the plaintexts and the sums go through memory, once each, where inner_product and
// sum_of_products write every product and read it again for each group that uses it.
void CpuBackend::do_inner_product_sums(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms,
                                       const RnsPoly& c0, const std::vector<std::vector<ProductTerm>>& groups,
                                       const std::vector<std::array<RnsPoly*, 3>>& out, Exec exec) const {
    // A batch's buffers: 3 limbs a term (4 terms: 6 MiB at n = 2^16, within a shared L3 for two threads).
    constexpr std::size_t kBatch = 4, kChunk = 1024, kGroup = 8;
    const std::size_t nq = c0.num_q(), kp = out[0][1]->num_p();
    std::vector<Permutation> owned;
    const std::vector<const std::uint32_t*> perms = permutations(terms, owned);
    std::vector<std::size_t> used;  // the terms some group reads, in order
    std::vector<std::size_t> slot(terms.size(), npos);
    for (const auto& g : groups)
        for (const ProductTerm& e : g)
            if (slot[e.term] == npos) {
                slot[e.term] = used.size();
                used.push_back(e.term);
            }
    // The limbs costliest first, each thread taking the next when done.
    const std::vector<std::size_t> order = by_product_cost(nq + kp, nq);
    const auto limb_sums = [&](std::size_t k) {
        const std::size_t t = order[k];
        const Modulus& m = ring().modulus(pidx(t, nq));
        const bool with_c0 = t < nq;
        std::vector<const u64*> dt(digits.size());
        for (std::size_t j = 0; j < digits.size(); ++j) dt[j] = limb(digits[j], t);
        const std::size_t batch = std::min(kBatch, used.size());
        AlignedWords prod(batch * 3 * n_), expanded(kGroup * kChunk);
        std::vector<bool> started(groups.size(), false);
        std::vector<const u64*> a, b;
        for (std::size_t u0 = 0; u0 < used.size(); u0 += batch) {
            const std::size_t u1 = std::min(used.size(), u0 + batch);
            for (std::size_t u = u0; u < u1; ++u) {
                u64* p = prod.data() + (u - u0) * 3 * n_;  // c0, b, a
                const std::size_t i = used[u];
                inner_product_limb(t, nq, dt, {terms[i]}, {perms[i]}, p + n_, p + 2 * n_,
                                   with_c0 ? limb(c0, t) : nullptr, with_c0 ? p : nullptr);
            }
            for (std::size_t j = 0; j < groups.size(); ++j) {
                std::vector<const ProductTerm*> now;  // the group's terms in this batch
                for (const ProductTerm& e : groups[j])
                    if (slot[e.term] >= u0 && slot[e.term] < u1) now.push_back(&e);
                if (now.empty()) continue;
                for (std::size_t c = 0; c < n_; c += kChunk) {
                    const std::size_t len = std::min(kChunk, n_ - c);
                    for (std::size_t g0 = 0; g0 < now.size(); g0 += kGroup) {
                        const std::size_t g1 = std::min(now.size(), g0 + kGroup);
                        b.assign(g1 - g0, nullptr);
                        for (std::size_t e = g0; e < g1; ++e)
                            b[e - g0] =
                                plain_columns(*now[e]->plain, t, n_, c, len, expanded.data() + (e - g0) * kChunk);
                        const bool add = started[j] || g0 > 0;
                        for (std::size_t k = with_c0 ? 0 : 1; k < 3; ++k) {
                            a.assign(g1 - g0, nullptr);
                            for (std::size_t e = g0; e < g1; ++e)
                                a[e - g0] = prod.data() + ((slot[now[e]->term] - u0) * 3 + k) * n_ + c;
                            arith::dot_mod(a.data(), b.data(), g1 - g0, len, m, limb(*out[j][k], t) + c, add);
                        }
                    }
                }
                started[j] = true;
            }
        }
    };
    parallel_for(exec.threads, nq + kp, limb_sums, Schedule::dynamic);
}

// The sum form in one pass: each limb of the sum over the keys is made (ModUp of every digit at that limb, then
// inner_product_limb) when divide_exact takes it, and the sum of c0's images with it, which that limb's ModDown adds.
void CpuBackend::do_key_switch_sum_mod_down(const RnsPoly& d, const std::vector<KeyTerm>& terms, const RnsPoly& c0,
                                            RnsPoly& out_b, RnsPoly& out_a, Exec exec) const {
    // Over Q_l * P_k, the keys' special primes (one prefix for all: Backend::key_switch_sum_mod_down).
    const std::size_t nq = d.num_q(), np = terms[0].key->b_parts()[0].num_p(), digits = ring().digits_at(nq);
    const ModUpSources dec = mod_up_sources(d, exec.threads);
    std::vector<Permutation> owned;
    const std::vector<const std::uint32_t*> perms = permutations(terms, owned);
    RnsPoly c0_sum = poly(nq, 0, true);  // written limb by limb, each before its ModDown reads it
    const PairLimbs limbs = [&](std::size_t t, u64* b_buf, u64* a_buf, const u64*& xb, const u64*& xa) {
        AlignedWords tmp(digits * n_);
        inner_product_limb(t, nq, mod_up_limbs(dec, t, tmp.data()), terms, perms, b_buf, a_buf,
                           t < nq ? limb(c0, t) : nullptr, t < nq ? limb(c0_sum, t) : nullptr);
        xb = b_buf;
        xa = a_buf;
    };
    const std::vector<std::size_t> order = by_mod_up_cost(nq, nq);
    divide_exact(limbs, false, nq, special_limbs(nq, np, false), t_.p_to_q[np], t_.p_inv[np].data(), nq, out_b, out_a,
                 exec.threads, &c0_sum, nullptr, nullptr, nullptr, &order);
}

}  // namespace

std::unique_ptr<const Backend> make_cpu_backend(std::shared_ptr<const RnsContext> ring) {
    return std::make_unique<const CpuBackend>(std::move(ring));
}

}  // namespace kasoku::rns
