// The GPU backend: rns::Backend over the kernels of launch.hpp, with the context's tables uploaded once into the
// backend's memory. Every operation is a short sequence of launches over whole polynomials (all limbs of a segment
// at once), composed exactly as the CPU backend composes its kernels, so that the results are the same bits.
// The same source builds the CUDA backend (kasoku_gpu: CUDA memory, CUDA launches) and the emulated one
// (kasoku_gpu_emulated: host memory, the launches as CPU loops), which tests this file's logic on machines without a
// GPU (tests/cpp/gpu/test_gpu_emulated.cpp).
#include <algorithm>
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

namespace {

using arith::Modulus;
using arith::u64;
using rns::GadgetKey;
using rns::KeyTerm;
using rns::PolyAccess;
using rns::PolyMemory;
using rns::RnsPoly;

u64* words(RnsPoly& p) { return PolyAccess::data(p); }
const u64* words(const RnsPoly& p) { return PolyAccess::data(p); }

// Words in the backend's memory holding a host array of trivially copyable values; freed with the object (in stream
// order on a device, so a per-call table may go out of scope right after the launches that read it).
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
    // `words` uninitialised words (a buffer a kernel fills).
    Table(std::shared_ptr<const PolyMemory> mem, std::size_t words) : mem_(std::move(mem)), words_(std::max<std::size_t>(1, words)) {
        p_ = mem_->allocate(words_);
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
    T* as() const { return reinterpret_cast<T*>(p_); }

private:
    std::shared_ptr<const PolyMemory> mem_;
    u64* p_ = nullptr;
    std::size_t words_ = 0;
};

// A base converter's tables in the backend's memory.
struct ConverterTables {
    Table inv, inv_shoup, factors, multiples, inv_q;
    ConverterTables() = default;
    ConverterTables(const std::shared_ptr<const PolyMemory>& mem, const rns::BaseConverter& c)
        : inv(mem, c.source_inverses()), inv_shoup(mem, c.source_inverses_shoup()), factors(mem, c.factors()),
          multiples(mem, c.q_multiples()), inv_q(mem, c.inverse_primes()) {}
};

class GpuBackend final : public rns::Backend {
public:
    GpuBackend(std::shared_ptr<const rns::RnsContext> ring, std::shared_ptr<const PolyMemory> memory, const char* name);
    const char* name() const override { return name_; }

protected:
    void do_upload(RnsPoly& out, const rns::LimbWriter& fill, Exec) const override;
    void do_download(const RnsPoly& a, const rns::LimbReader& read, std::size_t limbs, Exec) const override;
    void do_from_signed(const std::int64_t* coeffs, RnsPoly& out, Exec) const override { from_signed_any(coeffs, out); }
    void do_from_signed(const __int128* coeffs, RnsPoly& out, Exec) const override { from_signed_any(coeffs, out); }
    void do_add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec) const override;
    void do_sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec) const override;
    void do_negate(const RnsPoly& a, RnsPoly& out, Exec) const override;
    void do_mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec) const override;
    void do_fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, Exec) const override;
    void do_mul_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec) const override;
    void do_add_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec) const override;
    void do_linear_combination(const std::vector<const RnsPoly*>& x, const std::vector<std::vector<u64>>& c, RnsPoly& out,
                               Exec) const override;
    void do_sum_of_products(const std::vector<std::vector<const RnsPoly*>>& x, const std::vector<const RnsPoly*>& y,
                            const std::vector<RnsPoly*>& out, bool accumulate, Exec) const override;
    void do_horner(const std::vector<const RnsPoly*>& c, const RnsPoly& x, RnsPoly& out, Exec) const override;
    void do_to_ntt(RnsPoly& a, Exec) const override;
    void do_from_ntt(RnsPoly& a, Exec) const override;
    void do_automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, Exec) const override;
    void do_rescale(RnsPoly& a, Exec) const override;
    void do_divide_round_by_p0(RnsPoly& a, const std::int64_t* addend, Exec) const override;
    void do_mod_down(const RnsPoly& a, const RnsPoly* addend, u64 galois_elt, RnsPoly& out, Exec) const override;
    void do_mod_down_rescale(RnsPoly& a, Exec) const override;
    void do_add_times_p(const RnsPoly& d, RnsPoly& x, std::size_t first, std::size_t count, Exec) const override;
    std::vector<RnsPoly> do_mod_up(const RnsPoly& d, Exec) const override;
    void do_key_switch(const RnsPoly& d, const GadgetKey& key, RnsPoly& b, RnsPoly& a, Exec) const override;
    void do_inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, RnsPoly& b, RnsPoly& a,
                          const RnsPoly* c0, RnsPoly* c0_out, Exec) const override;

private:
    const PolyMemory& mem() const { return *memory(); }
    template <class T>
    Table table(const std::vector<T>& v) const { return Table(memory(), v); }
    // f(first limb, first prime index, limbs) for the q-limbs, then the special limbs, of a polynomial's shape.
    template <class F>
    void segments(std::size_t num_q, std::size_t num_p, F f) const {
        if (num_q) f(std::size_t{0}, std::size_t{0}, num_q);
        if (num_p) f(num_q, L1_, num_p);
    }
    // Transforms of `limbs` limbs at `a` over the primes from index idx on.
    void ntt(u64* a, std::size_t idx, std::size_t limbs) const {
        launch::ntt_forward(mem(), a, fw_.as<u64>() + idx * n_, fwp_.as<u64>() + idx * n_, q_.as<u64>() + idx, n_, limbs);
    }
    void intt(u64* a, std::size_t idx, std::size_t limbs) const {
        launch::ntt_inverse(mem(), a, iw_.as<u64>() + idx * n_, iwp_.as<u64>() + idx * n_, ninv_.as<u64>() + idx,
                            ninvp_.as<u64>() + idx, q_.as<u64>() + idx, n_, limbs);
    }
    template <class Int>
    void from_signed_any(const Int* coeffs, RnsPoly& out) const;
    const Table& permutation(u64 galois_elt) const;
    // round(a / R) on the first `keep` q-limbs (+ addend over Q, then permuted by perm), R the product of the primes
    // of the source limbs, given as (first limb of a, first prime index, count) runs: the CPU's divide_exact.
    struct Run {
        std::size_t limb, idx, count;
    };
    void divide_exact(const RnsPoly& a, const std::vector<Run>& src, const ConverterTables& conv, const Table& inv,
                      const Table& inv_shoup, std::size_t keep, RnsPoly& out, const RnsPoly* addend, const Table* perm) const;
    void divide_round_by_last(RnsPoly& a, std::size_t keep, const Table& inv, const Table& inv_shoup, const Table& half_mod,
                              const std::int64_t* addend) const;
    // dst (+)= src permuted (perm may be null) over `limbs` limbs of the primes from the segments of (num_q, num_p).
    void add_permuted(RnsPoly& dst, const u64* src, const Table* perm, bool first, std::size_t num_q, std::size_t num_p) const;

    const char* name_;
    std::size_t n_, L1_;  // L1_: the number of q-primes (the index of the first special prime)
    Table q_, mods_, fw_, fwp_, iw_, iwp_, ninv_, ninvp_;
    std::vector<Table> rescale_inv_, rescale_inv_shoup_, rescale_half_;  // per level l (index l)
    std::vector<ConverterTables> digit_conv_;  // [digit * alpha + (m - 1)]: first m primes of the digit -> every prime
    ConverterTables p_to_q_;
    Table p_inv_, p_inv_shoup_, p_mod_q_, p_mod_q_shoup_, p0_inv_, p0_inv_shoup_, p0_half_;
    std::vector<ConverterTables> pq_to_q_;  // per level l: (P, q_l) -> q_0..q_{l-1}
    std::vector<Table> pq_inv_, pq_inv_shoup_;
    // per q-limb count nq: the prime index of each limb of Q_l * P (also the key's limb, keys spanning Q_L * P)
    std::vector<Table> limb_primes_;
    mutable std::mutex perm_mutex_;
    mutable std::map<u64, Table> perms_;
};

GpuBackend::GpuBackend(std::shared_ptr<const rns::RnsContext> r, std::shared_ptr<const PolyMemory> memory_in, const char* name)
    : Backend(std::move(r), std::move(memory_in)), name_(name), n_(ring().n()), L1_(ring().q_count()) {
    const rns::RnsContext& R = ring();
    const std::vector<u64>& q = R.q_primes();
    const std::vector<u64>& p = R.p_primes();
    const std::size_t all = q.size() + p.size(), L = q.size() - 1;
    std::vector<Modulus> mods;
    std::vector<u64> primes, fw, fwp, iw, iwp, ninv, ninvp;
    for (std::size_t i = 0; i < all; ++i) {
        mods.push_back(R.modulus(i));
        primes.push_back(R.prime(i));
        const arith::NttTables t(R.prime(i), n_);
        fw.insert(fw.end(), t.root_powers(), t.root_powers() + n_);
        fwp.insert(fwp.end(), t.root_shoup(), t.root_shoup() + n_);
        iw.insert(iw.end(), t.inv_root_powers(), t.inv_root_powers() + n_);
        iwp.insert(iwp.end(), t.inv_root_shoup(), t.inv_root_shoup() + n_);
        ninv.push_back(t.n_inv());
        ninvp.push_back(t.n_inv_shoup());
    }
    q_ = table(primes);
    mods_ = table(mods);
    fw_ = table(fw);
    fwp_ = table(fwp);
    iw_ = table(iw);
    iwp_ = table(iwp);
    ninv_ = table(ninv);
    ninvp_ = table(ninvp);
    limb_primes_.resize(q.size() + 1);
    for (std::size_t nq = 1; nq <= q.size(); ++nq) {
        std::vector<std::uint32_t> idx;
        for (std::size_t t = 0; t < nq + p.size(); ++t) idx.push_back(static_cast<std::uint32_t>(R.prime_index(t, nq)));
        limb_primes_[nq] = table(idx);
    }
    const rns::ScalingTables t(R);  // the CPU backend's constants, uploaded
    for (std::size_t l = 0; l <= L; ++l) {
        rescale_inv_.push_back(table(t.rescale_inv[l]));
        rescale_inv_shoup_.push_back(table(t.rescale_inv_shoup[l]));
        rescale_half_.push_back(table(t.rescale_half[l]));
    }
    for (const rns::BaseConverter& c : t.digit_conv) digit_conv_.emplace_back(memory(), c);
    if (p.empty()) return;
    p_to_q_ = ConverterTables(memory(), t.p_to_q);
    p_inv_ = table(t.p_inv);
    p_inv_shoup_ = table(t.p_inv_shoup);
    p_mod_q_ = table(t.p_mod_q);
    p_mod_q_shoup_ = table(t.p_mod_q_shoup);
    p0_inv_ = table(t.p0_inv);
    p0_inv_shoup_ = table(t.p0_inv_shoup);
    p0_half_ = table(t.p0_half);
    for (std::size_t l = 0; l <= L; ++l) {
        pq_to_q_.emplace_back(l >= 1 ? ConverterTables(memory(), t.pq_to_q[l]) : ConverterTables());
        pq_inv_.push_back(table(t.pq_inv[l]));
        pq_inv_shoup_.push_back(table(t.pq_inv_shoup[l]));
    }
}

// ---------------------------------------------------------------- transfers

void GpuBackend::do_upload(RnsPoly& out, const rns::LimbWriter& fill, Exec) const {
    AlignedWords host(n_);
    for (std::size_t i = 0; i < out.limbs(); ++i) {
        fill(i, host.data());
        mem().from_host(host.data(), n_, words(out) + i * n_);
    }
    secure_wipe(host.data(), n_ * sizeof(u64));  // a secret key comes this way
}

void GpuBackend::do_download(const RnsPoly& a, const rns::LimbReader& read, std::size_t limbs, Exec) const {
    AlignedWords host(limbs * n_);
    mem().to_host(words(a), limbs * n_, host.data());
    std::vector<const u64*> ptrs(limbs);
    for (std::size_t i = 0; i < limbs; ++i) ptrs[i] = host.data() + i * n_;
    read(ptrs.data());
    secure_wipe(host.data(), limbs * n_ * sizeof(u64));
}

// Residues on the host (the randomness of encryption and key generation stays there), then one upload and the NTT.
template <class Int>
void GpuBackend::from_signed_any(const Int* coeffs, RnsPoly& out) const {
    AlignedWords host(out.words());
    for (std::size_t i = 0; i < out.limbs(); ++i) {
        const Modulus& m = ring().modulus(ring().prime_index(i, out.num_q()));
        u64* d = host.data() + i * n_;
        for (std::size_t c = 0; c < n_; ++c) {
            if constexpr (sizeof(Int) == 8) d[c] = arith::signed_residue(coeffs[c], m.value);
            else d[c] = arith::reduce_signed(coeffs[c], m);
        }
    }
    mem().from_host(host.data(), out.words(), words(out));
    secure_wipe(host.data(), out.words() * sizeof(u64));
    if (out.ntt_form()) segments(out.num_q(), out.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t k) { ntt(words(out) + l0 * n_, idx, k); });
}

// ---------------------------------------------------------------- element-wise

void GpuBackend::do_add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec) const {
    segments(a.num_q(), a.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t k) {
        launch::add(mem(), words(a) + l0 * n_, words(b) + l0 * n_, words(out) + l0 * n_, q_.as<u64>() + idx, n_, k * n_);
    });
}

void GpuBackend::do_sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec) const {
    segments(a.num_q(), a.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t k) {
        launch::sub(mem(), words(a) + l0 * n_, words(b) + l0 * n_, words(out) + l0 * n_, q_.as<u64>() + idx, n_, k * n_);
    });
}

void GpuBackend::do_negate(const RnsPoly& a, RnsPoly& out, Exec) const {
    segments(a.num_q(), a.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t k) {
        launch::negate(mem(), words(a) + l0 * n_, words(out) + l0 * n_, q_.as<u64>() + idx, n_, k * n_);
    });
}

void GpuBackend::do_mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec) const {
    segments(a.num_q(), a.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t k) {
        launch::mul(mem(), words(a) + l0 * n_, words(b) + l0 * n_, words(out) + l0 * n_, mods_.as<Modulus>() + idx, n_, k * n_);
    });
}

void GpuBackend::do_fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, Exec) const {
    segments(a.num_q(), a.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t k) {
        launch::fma(mem(), words(a) + l0 * n_, words(b) + l0 * n_, words(c) + l0 * n_, words(out) + l0 * n_,
                    mods_.as<Modulus>() + idx, n_, k * n_);
    });
}

void GpuBackend::do_mul_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec) const {
    std::vector<u64> w(a.limbs()), wp(a.limbs());  // in limb order
    for (std::size_t i = 0; i < a.limbs(); ++i) {
        const std::size_t idx = ring().prime_index(i, a.num_q());
        const u64 q = ring().prime(idx);
        w[i] = residues[idx] % q;
        wp[i] = arith::shoup(w[i], q);
    }
    const Table tw = table(w), twp = table(wp);
    segments(a.num_q(), a.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t k) {
        launch::mul_constant(mem(), words(a) + l0 * n_, tw.as<u64>() + l0, twp.as<u64>() + l0, words(out) + l0 * n_,
                             q_.as<u64>() + idx, n_, k * n_);
    });
}

void GpuBackend::do_add_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec) const {
    std::vector<u64> c(a.limbs());
    for (std::size_t i = 0; i < a.limbs(); ++i) {
        const std::size_t idx = ring().prime_index(i, a.num_q());
        c[i] = residues[idx] % ring().prime(idx);
    }
    const Table tc = table(c);
    segments(a.num_q(), a.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t k) {
        launch::add_constant(mem(), words(a) + l0 * n_, tc.as<u64>() + l0, words(out) + l0 * n_, q_.as<u64>() + idx, n_, k * n_);
    });
}

void GpuBackend::do_linear_combination(const std::vector<const RnsPoly*>& x, const std::vector<std::vector<u64>>& c,
                                       RnsPoly& out, Exec) const {
    const std::size_t limbs = out.num_q();
    std::vector<const u64*> ptr(x.size());
    std::vector<u64> f(x.size() * limbs);  // term-major, then limb (= q-prime index)
    for (std::size_t t = 0; t < x.size(); ++t) {
        ptr[t] = words(*x[t]);
        for (std::size_t l = 0; l < limbs; ++l) f[t * limbs + l] = c[t][l] % ring().prime(l);
    }
    const Table tp = table(ptr), tf = table(f);
    launch::linear_combination(mem(), tp.as<const u64*>(), tf.as<u64>(), x.size(), mods_.as<Modulus>(), n_, limbs, words(out));
}

void GpuBackend::do_sum_of_products(const std::vector<std::vector<const RnsPoly*>>& x, const std::vector<const RnsPoly*>& y,
                                    const std::vector<RnsPoly*>& out, bool accumulate, Exec e) const {
    for (std::size_t k = 0; k < out.size(); ++k) {
        RnsPoly& o = *out[k];
        // limb t of a term is limb t of its plaintext (the same q-limbs, then the special ones)
        segments(o.num_q(), o.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t cnt) {
            const Modulus* m = mods_.as<Modulus>() + idx;
            u64* dst = words(o) + l0 * n_;
            for (std::size_t i = 0; i < x.size(); ++i) {
                const u64* xi = words(*x[i][k]) + l0 * n_;
                const u64* yi = words(*y[i]) + l0 * n_;
                if (i == 0 && !accumulate) launch::mul(mem(), xi, yi, dst, m, n_, cnt * n_);
                else launch::fma(mem(), xi, yi, dst, dst, m, n_, cnt * n_);
            }
        });
    }
}

void GpuBackend::do_horner(const std::vector<const RnsPoly*>& c, const RnsPoly& x, RnsPoly& out, Exec) const {
    const std::size_t w = out.num_q() * n_;
    mem().copy(words(*c.back()), w, words(out));
    for (std::size_t k = c.size() - 1; k-- > 0;)
        launch::fma(mem(), words(out), words(x), words(*c[k]), words(out), mods_.as<Modulus>(), n_, w);
}

// ---------------------------------------------------------------- transforms

void GpuBackend::do_to_ntt(RnsPoly& a, Exec) const {
    segments(a.num_q(), a.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t k) { ntt(words(a) + l0 * n_, idx, k); });
    a.set_ntt_form(true);
}

void GpuBackend::do_from_ntt(RnsPoly& a, Exec) const {
    segments(a.num_q(), a.num_p(), [&](std::size_t l0, std::size_t idx, std::size_t k) { intt(words(a) + l0 * n_, idx, k); });
    a.set_ntt_form(false);
}

const Table& GpuBackend::permutation(u64 galois_elt) const {
    std::lock_guard<std::mutex> lock(perm_mutex_);
    auto it = perms_.find(galois_elt);
    if (it == perms_.end()) it = perms_.emplace(galois_elt, table(*ring().automorphism_permutation(galois_elt))).first;
    return it->second;
}

void GpuBackend::do_automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, Exec) const {
    launch::permute(mem(), words(a), permutation(galois_elt).as<std::uint32_t>(), words(out), n_, a.limbs());
}

// ---------------------------------------------------------------- scaling

void GpuBackend::divide_round_by_last(RnsPoly& a, std::size_t keep, const Table& inv, const Table& inv_shoup,
                                      const Table& half_mod, const std::int64_t* addend) const {
    const std::size_t last_limb = a.limbs() - 1, idx = ring().prime_index(last_limb, a.num_q());
    RnsPoly last = poly(0, 1, false);
    mem().copy(words(a) + last_limb * n_, n_, words(last));
    intt(words(last), idx, 1);
    Table dev_addend;
    if (addend) dev_addend = table(std::vector<std::int64_t>(addend, addend + n_));
    const std::int64_t* add = addend ? dev_addend.as<std::int64_t>() : nullptr;
    launch::round_prepare(mem(), words(last), add, ring().prime(idx), n_);
    RnsPoly t = poly(keep, 0, true), out = poly(keep, 0, true);
    launch::round_correction(mem(), words(last), half_mod.as<u64>(), add, mods_.as<Modulus>(), n_, keep * n_, words(t));
    ntt(words(t), 0, keep);
    launch::divide_exact(mem(), words(a), words(t), inv.as<u64>(), inv_shoup.as<u64>(), q_.as<u64>(), nullptr, n_, keep * n_,
                         words(out));
    a = std::move(out);
}

void GpuBackend::do_rescale(RnsPoly& a, Exec) const {
    const std::size_t l = a.num_q() - 1;
    divide_round_by_last(a, l, rescale_inv_[l], rescale_inv_shoup_[l], rescale_half_[l], nullptr);
}

void GpuBackend::do_divide_round_by_p0(RnsPoly& a, const std::int64_t* addend, Exec) const {
    divide_round_by_last(a, a.num_q(), p0_inv_, p0_inv_shoup_, p0_half_, addend);
}

void GpuBackend::divide_exact(const RnsPoly& a, const std::vector<Run>& src, const ConverterTables& conv, const Table& inv,
                              const Table& inv_shoup, std::size_t keep, RnsPoly& out, const RnsPoly* addend,
                              const Table* perm) const {
    // round(a / R): a - [a]_R (the exact, centered conversion of the source limbs) is divisible by R.
    std::size_t s = 0;
    for (const Run& r : src) s += r.count;
    RnsPoly y = poly(0, s, false);
    std::size_t j = 0;
    for (const Run& r : src) {  // the source limbs to coefficient form, scaled by (R / r_j)^-1
        u64* yj = words(y) + j * n_;
        mem().copy(words(a) + r.limb * n_, r.count * n_, yj);
        intt(yj, r.idx, r.count);
        launch::mul_constant(mem(), yj, conv.inv.as<u64>() + j, conv.inv_shoup.as<u64>() + j, yj, q_.as<u64>() + r.idx, n_,
                             r.count * n_);
        j += r.count;
    }
    const Table v(memory(), (n_ + 7) / 8);  // the overflow counts, one byte per coefficient
    std::uint8_t* vp = v.as<std::uint8_t>();
    launch::overflow_count(mem(), words(y), s, n_, conv.inv_q.as<double>(), vp);
    RnsPoly t = poly(keep, 0, true), result = poly(keep, 0, true);
    launch::convert(mem(), words(y), s, n_, conv.factors.as<u64>(), mods_.as<Modulus>(), keep, vp, conv.multiples.as<u64>(),
                    words(t));
    ntt(words(t), 0, keep);
    RnsPoly* dst = perm ? &t : &result;  // with a permutation: combined in place, then permuted into the result
    launch::divide_exact(mem(), words(a), words(t), inv.as<u64>(), inv_shoup.as<u64>(), q_.as<u64>(),
                         addend ? words(*addend) : nullptr, n_, keep * n_, words(*dst));
    if (perm) launch::permute(mem(), words(t), perm->as<std::uint32_t>(), words(result), n_, keep);
    out = std::move(result);
}

void GpuBackend::do_mod_down(const RnsPoly& a, const RnsPoly* addend, u64 galois_elt, RnsPoly& out, Exec) const {
    const Table* perm = galois_elt == 1 ? nullptr : &permutation(galois_elt);
    divide_exact(a, {{a.num_q(), L1_, a.num_p()}}, p_to_q_, p_inv_, p_inv_shoup_, a.num_q(), out, addend, perm);
}

void GpuBackend::do_mod_down_rescale(RnsPoly& a, Exec) const {
    const std::size_t l = a.num_q() - 1;
    RnsPoly out;
    divide_exact(a, {{l + 1, L1_, a.num_p()}, {l, l, 1}}, pq_to_q_[l], pq_inv_[l], pq_inv_shoup_[l], l, out, nullptr, nullptr);
    a = std::move(out);
}

void GpuBackend::do_add_times_p(const RnsPoly& d, RnsPoly& x, std::size_t first, std::size_t count, Exec) const {
    RnsPoly t = poly(count, 0, d.ntt_form());
    launch::mul_constant(mem(), words(d) + first * n_, p_mod_q_.as<u64>() + first, p_mod_q_shoup_.as<u64>() + first, words(t),
                         q_.as<u64>() + first, n_, count * n_);
    launch::add(mem(), words(x) + first * n_, words(t), words(x) + first * n_, q_.as<u64>() + first, n_, count * n_);
    mem().wipe(words(t), t.words());  // d may be a secret key (key generation)
}

// ---------------------------------------------------------------- key switching

std::vector<RnsPoly> GpuBackend::do_mod_up(const RnsPoly& d, Exec) const {
    const std::size_t nq = d.num_q(), np = ring().p_count(), digits = ring().digits_at(nq), alpha = ring().alpha();
    RnsPoly scaled = d;  // coefficient form, each digit's limbs times (Q_j / q_i)^-1
    intt(words(scaled), 0, nq);
    std::vector<RnsPoly> out;
    for (std::size_t j = 0; j < digits; ++j) {
        const std::size_t begin = ring().digit_begin(j), m = ring().digit_size(j, nq);
        const ConverterTables& conv = digit_conv_[j * alpha + (m - 1)];
        u64* y = words(scaled) + begin * n_;
        launch::mul_constant(mem(), y, conv.inv.as<u64>(), conv.inv_shoup.as<u64>(), y, q_.as<u64>() + begin, n_, m * n_);
        RnsPoly o = poly(nq, np, true);
        mem().copy(words(d) + begin * n_, m * n_, words(o) + begin * n_);  // the digit's own limbs
        const Run targets[] = {{0, 0, begin}, {begin + m, begin + m, nq - begin - m}, {nq, L1_, np}};
        for (const Run& r : targets) {
            if (r.count == 0) continue;
            u64* dst = words(o) + r.limb * n_;
            launch::convert(mem(), y, m, n_, conv.factors.as<u64>() + r.idx * m, mods_.as<Modulus>() + r.idx, r.count, nullptr,
                            nullptr, dst);
            ntt(dst, r.idx, r.count);
        }
        out.push_back(std::move(o));
    }
    return out;
}

void GpuBackend::do_key_switch(const RnsPoly& d, const GadgetKey& key, RnsPoly& b, RnsPoly& a, Exec e) const {
    do_inner_product(do_mod_up(d, e), {KeyTerm{&key, 1}}, b, a, nullptr, nullptr, e);
}

void GpuBackend::add_permuted(RnsPoly& dst, const u64* src, const Table* perm, bool first, std::size_t num_q,
                              std::size_t num_p) const {
    const std::size_t limbs = num_q + num_p;
    if (first) {
        if (perm) launch::permute(mem(), src, perm->as<std::uint32_t>(), words(dst), n_, limbs);
        else mem().copy(src, limbs * n_, words(dst));
        return;
    }
    RnsPoly tmp;
    if (perm) {
        tmp = poly(num_q, num_p, true);
        launch::permute(mem(), src, perm->as<std::uint32_t>(), words(tmp), n_, limbs);
        src = words(tmp);
    }
    segments(num_q, num_p, [&](std::size_t l0, std::size_t idx, std::size_t k) {
        launch::add(mem(), words(dst) + l0 * n_, src + l0 * n_, words(dst) + l0 * n_, q_.as<u64>() + idx, n_, k * n_);
    });
}

void GpuBackend::do_inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, RnsPoly& b,
                                  RnsPoly& a, const RnsPoly* c0, RnsPoly* c0_out, Exec) const {
    const std::size_t nq = digits[0].num_q(), np = ring().p_count(), limbs = nq + np, D = digits.size();
    const auto* primes = limb_primes_[nq].as<std::uint32_t>();
    std::vector<const u64*> dptr(D);
    for (std::size_t j = 0; j < D; ++j) dptr[j] = words(digits[j]);
    const Table td = table(dptr);
    RnsPoly tmp;
    for (std::size_t e = 0; e < terms.size(); ++e) {
        const GadgetKey& key = *terms[e].key;
        const Table* perm = terms[e].galois_elt == 1 ? nullptr : &permutation(terms[e].galois_elt);
        for (auto [half, acc] : {std::pair{&key.b, &b}, std::pair{&key.a, &a}}) {
            std::vector<const u64*> kptr(D);
            for (std::size_t j = 0; j < D; ++j) kptr[j] = words((*half)[j]);
            const Table tkp = table(kptr);
            const auto* dp = td.as<const u64*>();
            const auto* kp = tkp.as<const u64*>();
            if (!perm) {  // the product is the result: accumulate it in place
                launch::dot(mem(), dp, kp, primes, D, mods_.as<Modulus>(), n_, limbs, e > 0, words(*acc));
            } else {
                if (tmp.empty()) tmp = poly(nq, np, true);
                launch::dot(mem(), dp, kp, primes, D, mods_.as<Modulus>(), n_, limbs, false, words(tmp));
                add_permuted(*acc, words(tmp), perm, e == 0, nq, np);
            }
        }
        if (c0 && c0_out) add_permuted(*c0_out, words(*c0), perm, e == 0, nq, 0);
    }
}

}  // namespace

std::unique_ptr<const rns::Backend> make_gpu_backend(std::shared_ptr<const rns::RnsContext> ring,
                                                     std::shared_ptr<const PolyMemory> memory, const char* name) {
    return std::make_unique<const GpuBackend>(std::move(ring), std::move(memory), name);
}

}  // namespace KASOKU_GPU_VARIANT
}  // namespace kasoku::gpu
