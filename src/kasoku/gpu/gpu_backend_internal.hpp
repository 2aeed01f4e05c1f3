// The GPU backend's class and the helpers its two sources share (gpu_backend.cpp: the tables, transfers, element-wise
// operations, transforms and scaling; gpu_keyswitch.cpp: ModUp, the key switch and the inner products). Internal: built
// twice, once per variant (KASOKU_GPU_VARIANT: the CUDA backend and the emulated one).
#pragma once
#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "gpu/backends.hpp"
#include "gpu/launch.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/rns/base_conv.hpp"
#include "kasoku/rns/scaling_tables.hpp"
#include "kasoku/support/aligned.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/random.hpp"

namespace kasoku::gpu {
inline namespace KASOKU_GPU_VARIANT {
namespace detail {

using arith::Modulus;
using arith::u64;
using kern::u32;
using rns::GadgetKey;
using rns::KeyTerm;
using rns::PolyAccess;
using rns::PolyMemory;
using rns::RnsPoly;

inline u64* words(RnsPoly& p) { return PolyAccess::data(p); }
inline const u64* words(const RnsPoly& p) { return PolyAccess::data(p); }

// Words in the backend's memory holding a host array of trivially copyable values (the ring's tables), freed with
// the object.
class Table {
public:
    Table() = default;
    template <class T>
    Table(std::shared_ptr<const PolyMemory> mem, const std::vector<T>& v) : mem_(std::move(mem)) {
        words_ = std::max<std::size_t>(1, (v.size() * sizeof(T) + 7) / 8);
        std::vector<u64> buf(words_, 0);
        if (!v.empty()) std::memcpy(buf.data(), v.data(), v.size() * sizeof(T));
        p_ = mem_->allocate(words_);
        try {
            mem_->from_host(buf.data(), words_, p_);
        } catch (...) {
            mem_->deallocate(p_, words_);
            throw;
        }
    }
    Table(Table&& o) noexcept : mem_(std::move(o.mem_)), p_(o.p_), words_(o.words_) { o.p_ = nullptr; }
    Table& operator=(Table&& o) noexcept {
        std::swap(mem_, o.mem_);
        std::swap(p_, o.p_);
        std::swap(words_, o.words_);
        return *this;
    }
    ~Table() {
        if (p_) mem_->deallocate(p_, words_);
    }
    template <class T>
    const T* as() const {
        return reinterpret_cast<const T*>(p_);
    }

private:
    std::shared_ptr<const PolyMemory> mem_;
    u64* p_ = nullptr;
    std::size_t words_ = 0;
};

// Per-limb constants with their Shoup constants.
struct Consts {
    Table v, p;
    Consts() = default;
    Consts(const std::shared_ptr<const PolyMemory>& mem, const std::vector<u64>& values, const std::vector<u64>& primes)
        : v(mem, values), p(mem, shoups(values, primes)) {}
    static std::vector<u64> shoups(const std::vector<u64>& values, const std::vector<u64>& primes) {
        std::vector<u64> s(values.size());
        for (std::size_t i = 0; i < values.size(); ++i) s[i] = arith::shoup(values[i], primes[i]);
        return s;
    }
};

// A base converter's tables in the backend's memory, and the factors that scale its sources after their inverse NTT
// (the converter's source inverses times n^-1: one Shoup product where the CPU backend has two).
struct Converter {
    Table factors, multiples, inv_q;
    Consts scale;
    Converter() = default;
    Converter(const std::shared_ptr<const PolyMemory>& mem, const rns::BaseConverter& c,
              const std::vector<u64>& source_primes, std::size_t n)
        : factors(mem, c.factors()), multiples(mem, c.q_multiples()), inv_q(mem, c.inverse_primes()) {
        std::vector<u64> s(source_primes.size());
        for (std::size_t i = 0; i < s.size(); ++i) {
            const Modulus m(source_primes[i]);
            s[i] = arith::mul_mod(c.source_inverses()[i], arith::inv_mod(n % m.value, m), m);
        }
        scale = Consts(mem, s, source_primes);
    }
};

// A run of `limbs` limbs of a polynomial from limb `limb`, over the primes from `prime`.
struct Run {
    std::size_t limb, prime, limbs;
};

// One transform of the NTT helper: src -> dst (in place when equal); `mid` holds the words between passes (dst by
// default); with the epilogues of kern::NtItem on the last pass.
struct Transform {
    const u64* src;
    u64* mid;
    u64* dst;
    std::size_t prime, limbs;
    const u64* a = nullptr;
    const u64* add = nullptr;
    const Consts* inv = nullptr;  // the exact division's per-limb constants (from limb 0)
    const u32* perm_inv = nullptr;
    const Consts* scale = nullptr;  // the inverse transform's per-limb factors (from its first limb), else n^-1
    std::size_t scale_offset = 0;
};

class GpuBackend final : public rns::Backend {
public:
    GpuBackend(std::shared_ptr<const rns::RnsContext> ring, std::shared_ptr<const PolyMemory> memory, const char* name);
    const char* name() const override { return name_; }
    // The operations of a batch are recorded and issued as one launch sequence (launch.hpp), in chunks that bound the
    // memory their temporaries hold at once.
    void for_each(std::size_t count, Exec exec, const std::function<void(std::size_t, Exec)>& fn) const override {
        constexpr std::size_t kChunk = 128;
        for (std::size_t first = 0; first < count; first += kChunk) {
            const std::size_t last = std::min(count, first + kChunk);
            if (last - first == 1) {
                fn(first, exec);
                continue;
            }
            launch::Recorder batch;
            for (std::size_t i = first; i < last; ++i) {
                batch.next_operation();
                fn(i, exec);
            }
            batch.issue();
        }
    }

protected:
    void do_upload(RnsPoly& out, const rns::LimbWriter& fill, Exec) const override;
    void do_download(const RnsPoly& a, const rns::LimbReader& read, std::size_t limbs, Exec) const override;
    void do_from_signed(const std::int64_t* coeffs, RnsPoly& out, Exec) const override { from_signed_any(coeffs, out); }
    void do_from_signed(const __int128* coeffs, RnsPoly& out, Exec) const override { from_signed_any(coeffs, out); }
    void do_raise_q0(const RnsPoly& a, RnsPoly& out, Exec) const override;
    void do_sample(const rns::SmallDraw& draw, RnsPoly& out, Exec) const override;
    void do_add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec) const override {
        ewise<kern::Op::add>(out, &a, &b);
    }
    void do_sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec) const override {
        ewise<kern::Op::sub>(out, &a, &b);
    }
    void do_negate(const RnsPoly& a, RnsPoly& out, Exec) const override { ewise<kern::Op::neg>(out, &a); }
    void do_mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec) const override {
        ewise<kern::Op::mul>(out, &a, &b);
    }
    void do_fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, Exec) const override {
        ewise<kern::Op::fma>(out, &a, &b, &c);
    }
    void do_tensor(const RnsPoly& a0, const RnsPoly& a1, const RnsPoly& b0, const RnsPoly& b1, RnsPoly& d0, RnsPoly& d1,
                   RnsPoly& d2, Exec) const override;
    void do_mul_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec) const override {
        with_constants<kern::Op::mul_const>(a, residues, out);
    }
    void do_add_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec) const override {
        with_constants<kern::Op::add_const>(a, residues, out);
    }
    void do_linear_combination(const std::vector<const RnsPoly*>& x, const std::vector<std::vector<u64>>& c,
                               RnsPoly& out, Exec) const override;
    void do_sum_of_products(const std::vector<std::vector<const RnsPoly*>>& x, const std::vector<const RnsPoly*>& y,
                            const std::vector<RnsPoly*>& out, bool accumulate, Exec) const override;
    void do_horner(const std::vector<const RnsPoly*>& c, const RnsPoly& x, RnsPoly& out, Exec) const override;
    void do_to_subring(const RnsPoly& a, RnsPoly& out, Exec) const override;
    void do_encode_slots(const std::complex<double>* values, std::size_t p, double scale, RnsPoly& out,
                         Exec) const override;
    std::vector<std::complex<double>> do_decode_slots(const RnsPoly& a, std::size_t t, double scale,
                                                      Exec exec) const override;
    void do_to_ntt(RnsPoly& a, Exec) const override;
    void do_from_ntt(RnsPoly& a, Exec) const override;
    void do_automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, Exec) const override;
    void do_rescale(RnsPoly& a, Exec) const override;
    void do_divide_round_by_p0(RnsPoly& a, const rns::SmallDraw* addend, Exec) const override;
    void do_mod_down(const RnsPoly& b, const RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a, u64 galois_elt,
                     RnsPoly& out_b, RnsPoly& out_a, Exec) const override;
    void do_mod_down_rescale(RnsPoly& b, RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a, Exec) const override;
    void do_add_times_p(const RnsPoly& d, RnsPoly& x, std::size_t first, std::size_t count, Exec) const override;
    std::vector<RnsPoly> do_mod_up(const RnsPoly& d, Exec) const override;
    void do_key_switch(const RnsPoly& d, const GadgetKey& key, RnsPoly& b, RnsPoly& a, Exec) const override;
    void do_key_switch_mod_down(const RnsPoly& d, const GadgetKey& key, const RnsPoly* add_b, const RnsPoly* add_a,
                                u64 galois_elt, bool rescale, RnsPoly& out_b, RnsPoly& out_a, Exec) const override;
    void do_inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, RnsPoly& b, RnsPoly& a,
                          const RnsPoly* c0, RnsPoly* c0_out, Exec) const override;

private:
    const PolyMemory& mem() const { return *memory(); }
    template <class T>
    Table table(const std::vector<T>& v) const {
        return Table(memory(), v);
    }
    // The runs of a polynomial's shape: its q-limbs, then its special limbs.
    std::vector<Run> runs(std::size_t num_q, std::size_t num_p) const {
        std::vector<Run> r;
        if (num_q) r.push_back({0, 0, num_q});
        if (num_p) r.push_back({num_q, L1_, num_p});
        return r;
    }
    template <kern::Op op>
    void ewise(RnsPoly& out, const RnsPoly* a, const RnsPoly* b = nullptr, const RnsPoly* c = nullptr) const;
    template <kern::Op op>
    void with_constants(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out) const;
    // The passes [first, last) of the transforms (every pass by default; kern::ntt_passes).
    void ntt(bool forward, const std::vector<Transform>& ts, int first = 0, int last = 2) const;
    // The shape of every division of the backend: the divisor's limbs to coefficient form, a per-coefficient kernel K
    // (ring tables only) that writes the corrections, and their forward transform ending in the exact division.
    template <class K>
    void divide(const std::vector<Transform>& inverse, const std::vector<typename K::Item>& step,
                const std::vector<Transform>& forward) const {
        ntt(false, inverse);
        launch::run<K>(mem(), kern::RingOnly{ring_}, step);
        ntt(true, forward);
    }
    template <class Int>
    void from_signed_any(const Int* coeffs, RnsPoly& out) const;
    // The special FFT's stages on the p points at (re, im) (rns::SlotFft): inverse from p points down to 2, forward
    // from 2 up to p; the stages of up to kern::kFftTile points in one launch (kern::FftTile).
    void fft(bool inverse, double* re, double* im, std::size_t p) const;
    // compose_centered's constants of t limbs in device memory (rns::RnsContext::crt_table), for every t that
    // ComposeSlots takes (uploaded with the other tables, so that decoding allocates no table: crts_[t - 1]).
    struct Crt {
        Table Q, half, qhat, qhat_inv, qhat_inv_shoup;
    };
    struct Perm {
        Table perm, inverse;
    };
    const Perm& permutation(u64 galois_elt) const;
    // The forward transform of corrections t (keep limbs, in place) that ends in the exact division of x's first keep
    // limbs into out: out = psi((x - t) inv + add) (kern::NtItem's epilogue).
    Transform division(u64* t, std::size_t keep, RnsPoly& out, const RnsPoly& x, const RnsPoly* add, const Consts& inv,
                       const Perm* perm) const {
        Transform f{t, t, words(out), 0, keep};
        f.a = words(x);
        f.add = add ? words(*add) : nullptr;
        f.inv = &inv;
        f.perm_inv = perm ? perm->inverse.as<u32>() : nullptr;
        return f;
    }
    // round((polys + e) / r) on their first `keep` q-limbs, r the prime of their last limb, e drawn by `addend` or
    // none (rescale, encryption).
    void divide_round_by_last(const std::vector<RnsPoly*>& polys, std::size_t keep, const Consts& inv,
                              const Table& half, const rns::SmallDraw* addend) const;
    // The draw's coefficients into the items' runs of limbs (limbs = 0: as signed words), in one launch.
    void draw(const rns::SmallDraw& d, const std::vector<kern::SmItem>& items) const;
    // The exact division of ModDown: outs[k] = psi(round(xs[k] / R) + adds[k]) on their first `keep` q-limbs, R the
    // product of the primes of the source runs (the same for every x).
    void divide_exact(const std::vector<const RnsPoly*>& xs, const std::vector<Run>& src, const Converter& conv,
                      const Consts& inv, std::size_t keep, const std::vector<const RnsPoly*>& adds, const Perm* perm,
                      const std::vector<RnsPoly*>& outs) const;
    // The same with the conversion between the transforms' passes (kern::ModDownColumns), s source limbs.
    void divide_exact_fused(const std::vector<const RnsPoly*>& xs, const std::vector<Run>& src, std::size_t s,
                            const Converter& conv, const Consts& inv, std::size_t keep,
                            const std::vector<const RnsPoly*>& adds, const Perm* perm,
                            const std::vector<RnsPoly*>& outs) const;
    // ModDown's conversion between the passes: K polynomials' s sources after the inverse transform's first pass (y,
    // s limbs each; primes of the runs) to their `keep` corrections before the forward transform's second pass.
    RnsPoly mod_down_columns(const RnsPoly& y, std::size_t K, const std::vector<Run>& src, std::size_t s,
                             const Converter& conv, std::size_t keep) const;
    // ModUp up to its forward transform's second pass (kern::ModUpColumns): the digits over Q_l * P_np, their targets
    // after the forward column pass; the own limbs copied from d when `own`.
    std::vector<RnsPoly> mod_up_columns(const RnsPoly& d, std::size_t np, bool own) const;

    const char* name_;
    std::size_t n_, L1_;  // L1_: the number of q-primes (the index of the first special prime)
    Table q_, mods_, fw_, fwp_, iw_, iwp_, ninv_, ninvp_;
    kern::Ring ring_{};
    std::vector<Consts> rescale_inv_;  // per level l (index l)
    std::vector<Table> rescale_half_;
    std::vector<Table> digit_factors_;  // [digit * alpha + (m - 1)]: first m primes of the digit -> every prime
    std::vector<Consts> modup_scale_;   // per q-limb count: (Q_j / q_i)^-1 n^-1 of each limb i (its digit j)
    std::vector<Converter> p_to_q_;     // [k]: the first k special primes P_k -> every q
    std::vector<Consts> p_inv_;         // [k]: P_k^-1 mod q_i
    Consts p_mod_q_;
    Table p0_half_;
    std::vector<Converter> pq_to_q_;  // per level l: (P, q_l) -> q_0..q_{l-1}
    std::vector<Consts> pq_inv_;
    Table fft_re_, fft_im_, fft_inv_re_, fft_inv_im_;  // the special FFT's stage twiddles, split
    mutable std::mutex perm_mutex_;
    mutable std::map<u64, Perm> perms_;
    std::vector<Crt> crts_;
};

}  // namespace detail
}  // namespace KASOKU_GPU_VARIANT
}  // namespace kasoku::gpu
