// The CPU backend's class and the helpers its two sources share (cpu_backend.cpp: transfers, element-wise
// operations, transforms and scaling; cpu_keyswitch.cpp: ModUp, the key switch and the inner products). Internal: the
// library's users reach it through rns::make_cpu_backend.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
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

namespace kasoku::rns::cpu {

using arith::Modulus;

inline u64* limb(RnsPoly& p, std::size_t i) { return PolyAccess::data(p) + i * p.n(); }
inline const u64* limb(const RnsPoly& p, std::size_t i) { return PolyAccess::data(p) + i * p.n(); }

// Columns c..c+len of limb t of plaintext y over n words a limb: its own words, or for a subring plaintext (fewer
// words, each standing for a block of n / y.n() equal ones) the block's words written into buf (len words).
inline const u64* plain_columns(const RnsPoly& y, std::size_t t, std::size_t n, std::size_t c, std::size_t len,
                                u64* buf) {
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
inline void add_scaled(const u64* d, u64 f, u64 fs, std::size_t n, u64 q, u64* x) {
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

// The source limbs of ModDown over Q_l * P_k (the special primes), and of ModDown with a rescale (those and q_l).
inline std::vector<std::size_t> special_limbs(std::size_t nq, std::size_t np, bool and_last_q) {
    std::vector<std::size_t> src;
    for (std::size_t j = 0; j < np; ++j) src.push_back(nq + j);
    if (and_last_q) src.push_back(nq - 1);
    return src;
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
    void do_divide_round_by_p0(RnsPoly& a, const SmallDraw* addend, Exec exec) const override;
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

    // The transform of size m of prime idx (ntt_[idx]->subring(m)), made at its first use and kept: at most log2 n
    // sizes a prime, together no larger than its own tables.
    const arith::NttTables& subring_ntt(std::size_t idx, std::size_t m) const;

    std::size_t n_;
    std::vector<std::unique_ptr<arith::NttTables>> ntt_;
    mutable std::mutex subring_mutex_;
    mutable std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<const arith::NttTables>> subring_ntt_;
    ScalingTables t_;  // rescale, ModUp and ModDown constants
};

}  // namespace kasoku::rns::cpu
