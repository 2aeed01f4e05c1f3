// The GPU backend: rns::Backend over the kernels of kernels.hpp, with the ring's tables uploaded once into the
// backend's memory. Every operation is a short sequence of launches over whole polynomials, or over both polynomials of
// a pair (key switching's (b, a)), with the surrounding steps' constants folded into the NTT passes (n^-1 times the
// conversion's factor, the exact division and the automorphism after the last forward pass); per-call constants and
// pointers travel as kernel arguments, so an operation in steady state neither allocates (the memory's arena) nor
// waits for the device. Computed as the CPU backend computes, so that the results are the same bits.
// The same source builds the CUDA backend (kasoku_gpu: CUDA memory and launches) and the emulated one
// (kasoku_gpu_emulated: host memory, the kernels as CPU loops), which tests this file's logic on machines without a GPU.
// Key switching: gpu_keyswitch.cpp.
#include "gpu/gpu_backend_internal.hpp"

namespace kasoku::gpu {
inline namespace KASOKU_GPU_VARIANT {
namespace detail {

GpuBackend::GpuBackend(std::shared_ptr<const rns::RnsContext> r, std::shared_ptr<const PolyMemory> memory_in,
                       const char* name)
    : Backend(std::move(r), std::move(memory_in)), name_(name), n_(ring().n()), L1_(ring().q_count()) {
    const rns::RnsContext& R = ring();
    const std::vector<u64>& q = R.q_primes();
    const std::vector<u64>& p = R.p_primes();
    const std::size_t all = q.size() + p.size(), L = q.size() - 1, alpha = R.alpha();
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
    ring_.q = q_.as<u64>();
    ring_.m = mods_.as<Modulus>();
    ring_.fw = fw_.as<u64>();
    ring_.fwp = fwp_.as<u64>();
    ring_.iw = iw_.as<u64>();
    ring_.iwp = iwp_.as<u64>();
    ring_.ninv = ninv_.as<u64>();
    ring_.ninvp = ninvp_.as<u64>();
    ring_.n = static_cast<u32>(n_);
    ring_.log_n = static_cast<u32>(std::countr_zero(n_));
    ring_.first_special = static_cast<u32>(L1_);

    std::vector<double> split[4];  // the special FFT's twiddles: forward and inverse, real and imaginary parts
    for (const auto& w : R.slot_fft().twiddles()) split[0].push_back(w.real()), split[1].push_back(w.imag());
    for (const auto& w : R.slot_fft().twiddles_inverse()) split[2].push_back(w.real()), split[3].push_back(w.imag());
    fft_re_ = table(split[0]);
    fft_im_ = table(split[1]);
    fft_inv_re_ = table(split[2]);
    fft_inv_im_ = table(split[3]);
    for (std::size_t t = 1; t <= q.size() && t + 1 <= rns::crt::kMaxWords; ++t) {
        const auto c = R.crt_table(t);
        crts_.push_back({table(c->Q), table(c->half), table(c->qhat), table(c->qhat_inv), table(c->qhat_inv_shoup)});
    }

    const rns::ScalingTables t(R);  // the CPU backend's constants, uploaded
    for (std::size_t l = 0; l <= L; ++l) {
        const std::vector<u64> below(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(t.rescale_inv[l].size()));
        rescale_inv_.emplace_back(memory(), t.rescale_inv[l], below);
        rescale_half_.push_back(table(t.rescale_half[l]));
    }
    for (const rns::BaseConverter& c : t.digit_conv) digit_factors_.push_back(table(c.factors()));
    modup_scale_.resize(q.size() + 1);
    for (std::size_t nq = 1; nq <= q.size(); ++nq) {
        std::vector<u64> s(nq);
        for (std::size_t i = 0; i < nq; ++i) {
            const std::size_t j = i / alpha;
            const rns::BaseConverter& c = t.digit_converter(R, j, nq);
            s[i] = arith::mul_mod(c.source_inverses()[i - R.digit_begin(j)], ninv[i], mods[i]);
        }
        modup_scale_[nq] =
            Consts(memory(), s, std::vector<u64>(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(nq)));
    }
    if (p.empty()) return;
    p_to_q_.resize(p.size() + 1);
    p_inv_.resize(p.size() + 1);
    for (std::size_t k = 1; k <= p.size(); ++k) {
        p_to_q_[k] = Converter(memory(), t.p_to_q[k],
                               std::vector<u64>(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(k)), n_);
        p_inv_[k] = Consts(memory(), t.p_inv[k], q);
    }
    p_mod_q_ = Consts(memory(), t.p_mod_q, q);
    p0_half_ = table(t.p0_half);
    pq_to_q_.resize(L + 1);
    pq_inv_.resize(L + 1);
    for (std::size_t l = 1; l <= L; ++l) {
        std::vector<u64> src = p;
        src.push_back(q[l]);
        pq_to_q_[l] = Converter(memory(), t.pq_to_q[l], src, n_);
        pq_inv_[l] =
            Consts(memory(), t.pq_inv[l], std::vector<u64>(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(l)));
    }
}

// ---------------------------------------------------------------- transfers

void GpuBackend::do_upload(RnsPoly& out, const rns::LimbWriter& fill, Exec) const {
    AlignedWords host(out.words());
    struct Wipe {  // a secret key comes this way
        AlignedWords& h;
        ~Wipe() { secure_wipe(h.data(), h.size() * sizeof(u64)); }
    } wipe{host};
    for (std::size_t i = 0; i < out.limbs(); ++i) fill(i, host.data() + i * n_);
    mem().from_host(host.data(), out.words(), words(out));  // one copy
}

void GpuBackend::do_download(const RnsPoly& a, const rns::LimbReader& read, std::size_t limbs, Exec) const {
    AlignedWords host(limbs * n_);
    struct Wipe {
        AlignedWords& h;
        ~Wipe() { secure_wipe(h.data(), h.size() * sizeof(u64)); }
    } wipe{host};
    mem().to_host(words(a), limbs * n_, host.data());
    std::vector<const u64*> ptrs(limbs);
    for (std::size_t i = 0; i < limbs; ++i) ptrs[i] = host.data() + i * n_;
    read(ptrs.data());
}

// The n signed coefficients (sampled on the host, or a limb brought down to q_0) go up once, as words (64-bit, or 128-bit
// low/high pairs); every limb is reduced on the device (kern::FromSigned), then the NTT.
template <class Int>
void GpuBackend::from_signed_any(const Int* coeffs, RnsPoly& out) const {
    constexpr std::size_t per = sizeof(Int) / 8;
    RnsPoly up = poly(per, 0, false);
    mem().from_host(reinterpret_cast<const u64*>(coeffs), per * n_, words(up));
    kern::FsShared s{};
    s.r = ring_;
    s.coeffs = words(up);
    s.wide = per == 2;
    std::vector<kern::FsItem> items;
    for (const Run& r : runs(out.num_q(), out.num_p()))
        items.push_back({words(out) + r.limb * n_, static_cast<u32>(r.prime), static_cast<u32>(r.limbs)});
    launch::run<kern::FromSigned>(mem(), s, items);
    up.wipe();  // a secret key comes this way (a fill queued after the reduction)
    if (out.ntt_form()) do_to_ntt(out, {});
}

void GpuBackend::draw(const rns::SmallDraw& d, const std::vector<kern::SmItem>& items) const {
    kern::SmShared s{};
    s.r = ring_;
    s.key = rns::draw::key_of(d.seed, d.stream);
    s.kind = static_cast<u32>(d.kind);
    std::copy_n(rns::gaussian_cdf().begin(), rns::kGaussianBound, s.cdf);
    launch::run<kern::Sample>(mem(), s, items);
    secure_wipe(&s.key, sizeof s.key);
}

// Encryption's randomness from its seed alone: the draw's residues on every limb (one launch), then the NTT.
void GpuBackend::do_sample(const rns::SmallDraw& d, RnsPoly& out, Exec) const {
    std::vector<kern::SmItem> items;
    for (const Run& r : runs(out.num_q(), out.num_p()))
        items.push_back({words(out) + r.limb * n_, static_cast<u32>(r.prime), static_cast<u32>(r.limbs)});
    draw(d, items);
    if (out.ntt_form()) do_to_ntt(out, {});
}

// ModRaise on the device: q_0's limb of a, in coefficient form, read centered by every limb of out.
void GpuBackend::do_raise_q0(const RnsPoly& a, RnsPoly& out, Exec) const {
    RnsPoly c = poly(1, 0, a.ntt_form());
    mem().copy(words(a), n_, words(c));
    if (c.ntt_form()) do_from_ntt(c, {});
    kern::FsShared s{};
    s.r = ring_;
    s.coeffs = words(c);
    s.centered = 1;
    std::vector<kern::FsItem> items;
    for (const Run& r : runs(out.num_q(), out.num_p()))
        items.push_back({words(out) + r.limb * n_, static_cast<u32>(r.prime), static_cast<u32>(r.limbs)});
    launch::run<kern::FromSigned>(mem(), s, items);
    if (out.ntt_form()) do_to_ntt(out, {});
}

// ---------------------------------------------------------------- element-wise

template <kern::Op op>
void GpuBackend::ewise(RnsPoly& out, const RnsPoly* a, const RnsPoly* b, const RnsPoly* c) const {
    kern::EwShared s{};
    s.r = ring_;
    std::vector<kern::EwItem> items;
    for (const Run& r : runs(out.num_q(), out.num_p())) {
        kern::EwItem it{};
        const std::size_t off = r.limb * n_;
        it.out = words(out) + off;
        it.a = words(*a) + off;
        if (b) it.b = words(*b) + off;
        if (c) it.c = words(*c) + off;
        it.prime = static_cast<u32>(r.prime);
        it.limbs = static_cast<u32>(r.limbs);
        items.push_back(it);
    }
    launch::run<kern::Ewise<op>>(mem(), s, items);
}

void GpuBackend::do_tensor(const RnsPoly& a0, const RnsPoly& a1, const RnsPoly& b0, const RnsPoly& b1, RnsPoly& d0,
                           RnsPoly& d1, RnsPoly& d2, Exec) const {
    kern::RingOnly s{};
    s.r = ring_;
    std::vector<kern::TnItem> items;
    for (const Run& r : runs(a0.num_q(), a0.num_p())) {
        const std::size_t off = r.limb * n_;
        items.push_back({words(d0) + off, words(d1) + off, words(d2) + off, words(a0) + off, words(a1) + off,
                         words(b0) + off, words(b1) + off, static_cast<u32>(r.prime), static_cast<u32>(r.limbs)});
    }
    launch::run<kern::Tensor>(mem(), s, items);
}

// Per-limb constants of a call (residues per prime) in the launch's pool, 64 limbs per launch.
template <kern::Op op>
void GpuBackend::with_constants(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out) const {
    constexpr std::size_t kPerLaunch = sizeof(kern::EwShared::pool) / sizeof(u64) / 2;
    for (std::size_t first = 0; first < a.limbs(); first += kPerLaunch) {
        const std::size_t count = std::min(kPerLaunch, a.limbs() - first);
        kern::EwShared s{};
        s.r = ring_;
        std::vector<kern::EwItem> items;
        for (std::size_t i = first; i < first + count; ++i) {
            const std::size_t idx = ring().prime_index(i, a.num_q());
            const u64 q = ring().prime(idx), c = residues[idx] % q;
            s.pool[2 * (i - first)] = c;
            s.pool[2 * (i - first) + 1] = arith::shoup(c, q);
            if (items.empty() || items.back().prime + items.back().limbs != idx) {  // a new run of consecutive primes
                kern::EwItem it{};
                it.out = words(out) + i * n_;
                it.a = words(a) + i * n_;
                it.prime = static_cast<u32>(idx);
                it.pool = static_cast<u32>(2 * (i - first));
                items.push_back(it);
            }
            ++items.back().limbs;
        }
        launch::run<kern::Ewise<op>>(mem(), s, items);
    }
}

void GpuBackend::do_linear_combination(const std::vector<const RnsPoly*>& x, const std::vector<std::vector<u64>>& c,
                                       RnsPoly& out, Exec) const {
    const std::size_t limbs = out.num_q();
    constexpr std::size_t kPool = sizeof(kern::LcShared::f) / sizeof(u64);
    const std::size_t per = std::max<std::size_t>(1, std::min<std::size_t>(kern::kLcTerms, kPool / limbs));
    for (std::size_t first = 0; first < x.size(); first += per) {
        const std::size_t terms = std::min(per, x.size() - first);
        if (limbs > kPool) throw InternalError("linear_combination: more limbs than a launch's constants");
        kern::LcShared s{};
        s.r = ring_;
        s.terms = static_cast<u32>(terms);
        s.accumulate = first > 0;
        for (std::size_t t = 0; t < terms; ++t) {
            s.x[t] = words(*x[first + t]);  // the leading limbs of each term
            for (std::size_t l = 0; l < limbs; ++l) s.f[t * limbs + l] = c[first + t][l] % ring().prime(l);
        }
        kern::LcItem it{};
        it.out = words(out);
        it.limbs = static_cast<u32>(limbs);
        launch::run<kern::LinearCombination>(mem(), s, {it});
    }
}

void GpuBackend::do_sum_of_products(const std::vector<std::vector<const RnsPoly*>>& x,
                                    const std::vector<const RnsPoly*>& y, const std::vector<RnsPoly*>& out,
                                    bool accumulate, Exec) const {
    for (std::size_t first = 0; first < x.size(); first += kern::kSumTerms) {
        const std::size_t terms = std::min<std::size_t>(kern::kSumTerms, x.size() - first);
        kern::SpShared s{};
        s.r = ring_;
        s.terms = static_cast<u32>(terms);
        s.accumulate = accumulate || first > 0;
        for (std::size_t t = 0; t < terms; ++t)
            s.yshift[t] = static_cast<u32>(std::countr_zero(n_ / y[first + t]->n()));
        std::vector<kern::SpItem> items;
        for (std::size_t k = 0; k < out.size(); ++k) {
            RnsPoly& o = *out[k];
            for (const Run& r : runs(o.num_q(), o.num_p())) {
                kern::SpItem it{};
                it.out = words(o) + r.limb * n_;
                for (std::size_t t = 0; t < terms; ++t) {
                    const RnsPoly& yt = *y[first + t];
                    // limb t of a term is limb t of its plaintext: the same q-limbs, then the special ones (a subring
                    // plaintext's limbs are yt.n() words)
                    const std::size_t ylimb = r.prime < L1_ ? r.limb : yt.num_q() + (r.limb - o.num_q());
                    it.x[t] = words(*x[first + t][k]) + r.limb * n_;
                    it.y[t] = words(yt) + ylimb * yt.n();
                }
                it.prime = static_cast<u32>(r.prime);
                it.limbs = static_cast<u32>(r.limbs);
                items.push_back(it);
            }
        }
        launch::run<kern::SumProducts>(mem(), s, items);
    }
}

void GpuBackend::do_to_subring(const RnsPoly& a, RnsPoly& out, Exec) const {
    kern::SubShared s{};
    s.r = ring_;
    s.shift = static_cast<u32>(std::countr_zero(n_ / out.n()));
    launch::run<kern::Subring>(mem(), s, {kern::SubItem{words(out), words(a), static_cast<u32>(out.limbs()), 0}});
}

void GpuBackend::do_horner(const std::vector<const RnsPoly*>& c, const RnsPoly& x, RnsPoly& out, Exec) const {
    mem().copy(words(*c.back()), out.num_q() * n_, words(out));
    for (std::size_t k = c.size() - 1; k-- > 0;) ewise<kern::Op::fma>(out, &out, &x, c[k]);
}

// ---------------------------------------------------------------- slots

void GpuBackend::fft(bool inverse, double* re, double* im, std::size_t p) const {
    if (p < 2) return;
    const double* wr = inverse ? fft_inv_re_.as<double>() : fft_re_.as<double>();
    const double* wi = inverse ? fft_inv_im_.as<double>() : fft_im_.as<double>();
    const std::size_t tile = std::min<std::size_t>(p, kern::kFftTile);
    const auto stages = [&](std::size_t from, std::size_t to) {  // the global stages of len points, in order
        for (std::size_t len = from; inverse ? len >= to : len <= to; len = inverse ? len / 2 : len * 2)
            launch::run<kern::FftStage>(mem(), kern::FftShared{wr, wi, inverse ? 1u : 0u},
                                        {{re, im, static_cast<u32>(p), static_cast<u32>(len)}});
    };
    const auto tiles = [&] {
        launch::run<kern::FftTile>(mem(), kern::FtShared{wr, wi, inverse ? 1u : 0u, static_cast<u32>(tile)},
                                   {{re, im, static_cast<u32>(p), 0}});
    };
    if (inverse) {
        if (p > tile) stages(p, 2 * tile);
        tiles();
    } else {
        tiles();
        if (p > tile) stages(2 * tile, p);
    }
}

// The values go up once (real parts, then imaginary ones); the inverse transform, the rounding into every limb and the
// NTT run on the device. A subring plaintext is made as the full one, then taken (from_signed_subring's way).
void GpuBackend::do_encode_slots(const std::complex<double>* values, std::size_t p, double scale, RnsPoly& out,
                                 Exec) const {
    RnsPoly points = poly(1, 0, false);  // n words: 2p doubles used
    {
        AlignedWords host(2 * p);
        for (std::size_t i = 0; i < p; ++i) {
            host[i] = std::bit_cast<u64>(values[i].real());
            host[p + i] = std::bit_cast<u64>(values[i].imag());
        }
        mem().from_host(host.data(), 2 * p, words(points));
    }
    double* re = reinterpret_cast<double*>(words(points));
    double* im = re + p;
    fft(true, re, im, p);
    const bool subring = out.n() < n_;
    RnsPoly full = subring ? poly(out.num_q(), out.num_p(), true) : RnsPoly();
    RnsPoly& coeffs = subring ? full : out;
    kern::RsShared s{};
    s.r = ring_;
    s.re = re;
    s.im = im;
    s.inv_p = 1.0 / static_cast<double>(p);
    s.scale = scale;
    s.p = static_cast<u32>(p);
    s.log_p = static_cast<u32>(std::countr_zero(p));
    s.stride = static_cast<u32>(n_ / (2 * p));
    s.words = static_cast<u32>(n_);
    std::vector<kern::RsItem> items;
    for (const Run& r : runs(coeffs.num_q(), coeffs.num_p()))
        items.push_back({words(coeffs) + r.limb * n_, static_cast<u32>(r.prime), static_cast<u32>(r.limbs)});
    launch::run<kern::RoundSlots>(mem(), s, items);
    if (coeffs.ntt_form()) do_to_ntt(coeffs, {});
    if (subring) do_to_subring(full, out, {});
}

// The composition of the first t limbs, the forward transform and the scaling run on the device; the slots come down
// once (real parts, then imaginary ones).
std::vector<std::complex<double>> GpuBackend::do_decode_slots(const RnsPoly& a, std::size_t t, double scale,
                                                              Exec exec) const {
    if (t > crts_.size()) return Backend::do_decode_slots(a, t, scale, exec);
    const std::size_t slots = n_ / 2;
    RnsPoly points = poly(1, 0, false);
    double* re = reinterpret_cast<double*>(words(points));
    double* im = re + slots;
    const Crt& c = crts_[t - 1];
    kern::CsShared s{};
    s.r = ring_;
    s.Q = c.Q.as<u64>();
    s.half = c.half.as<u64>();
    s.qhat = c.qhat.as<u64>();
    s.qhat_inv = c.qhat_inv.as<u64>();
    s.qhat_inv_shoup = c.qhat_inv_shoup.as<u64>();
    s.inv_scale = 1.0 / scale;
    s.t = static_cast<u32>(t);
    s.log_slots = static_cast<u32>(std::countr_zero(slots));
    launch::run<kern::ComposeSlots>(mem(), s, {{words(a), re, im}});
    fft(false, re, im, slots);
    AlignedWords host(n_);
    mem().to_host(words(points), n_, host.data());
    std::vector<std::complex<double>> v(slots);
    for (std::size_t i = 0; i < slots; ++i)
        v[i] = {std::bit_cast<double>(host[i]), std::bit_cast<double>(host[slots + i])};
    return v;
}

// ---------------------------------------------------------------- transforms

void GpuBackend::ntt(bool forward, const std::vector<Transform>& ts, int first, int last_pass) const {
    const int passes = kern::ntt_passes(ring_.log_n);
    for (int pass = first; pass < std::min(passes, last_pass); ++pass) {
        kern::NtShared s{};
        s.r = ring_;
        s.pass = static_cast<u32>(pass);
        s.passes = static_cast<u32>(passes);
        const bool last = pass + 1 == passes;
        std::vector<kern::NtItem> items;
        for (const Transform& t : ts) {
            kern::NtItem it{};
            it.src = pass == 0 ? t.src : t.mid;
            it.dst = last ? t.dst : t.mid;
            it.prime = static_cast<u32>(t.prime);
            it.limbs = static_cast<u32>(t.limbs);
            it.a = t.a;
            it.add = t.add;
            if (t.inv) {
                it.inv = t.inv->v.as<u64>();
                it.invp = t.inv->p.as<u64>();
            }
            it.perm_inv = t.perm_inv;
            if (t.scale) {
                it.sc = t.scale->v.as<u64>() + t.scale_offset;
                it.scp = t.scale->p.as<u64>() + t.scale_offset;
            }
            items.push_back(it);
        }
        if (forward) launch::run<kern::Ntt<true>>(mem(), s, items);
        else launch::run<kern::Ntt<false>>(mem(), s, items);
    }
}

void GpuBackend::do_to_ntt(RnsPoly& a, Exec) const {
    std::vector<Transform> ts;
    for (const Run& r : runs(a.num_q(), a.num_p())) {
        u64* p = words(a) + r.limb * n_;
        ts.push_back({p, p, p, r.prime, r.limbs});
    }
    ntt(true, ts);
    a.set_ntt_form(true);
}

void GpuBackend::do_from_ntt(RnsPoly& a, Exec) const {
    std::vector<Transform> ts;
    for (const Run& r : runs(a.num_q(), a.num_p())) {
        u64* p = words(a) + r.limb * n_;
        ts.push_back({p, p, p, r.prime, r.limbs});
    }
    ntt(false, ts);
    a.set_ntt_form(false);
}

const GpuBackend::Perm& GpuBackend::permutation(u64 galois_elt) const {
    std::lock_guard<std::mutex> lock(perm_mutex_);
    auto it = perms_.find(galois_elt);
    if (it == perms_.end()) {
        const auto perm = ring().automorphism_permutation(galois_elt);
        std::vector<u32> inverse(perm->size());
        for (std::size_t k = 0; k < perm->size(); ++k) inverse[(*perm)[k]] = static_cast<u32>(k);
        it = perms_.emplace(galois_elt, Perm{table(*perm), table(inverse)}).first;
    }
    return it->second;
}

void GpuBackend::do_automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, Exec) const {
    kern::EwShared s{};
    s.r = ring_;
    kern::EwItem it{};
    it.out = words(out);
    it.a = words(a);
    it.perm = permutation(galois_elt).perm.as<u32>();
    it.limbs = static_cast<u32>(a.limbs());
    launch::run<kern::Ewise<kern::Op::permute>>(mem(), s, {it});
}

// ---------------------------------------------------------------- scaling

void GpuBackend::divide_round_by_last(const std::vector<RnsPoly*>& polys, std::size_t keep, const Consts& inv,
                                      const Table& half, const rns::SmallDraw* addend) const {
    RnsPoly dev_addend;
    if (addend) {  // n small signed coefficients, drawn on the device as words
        dev_addend = poly(1, 0, false);
        draw(*addend, {{words(dev_addend), 0, 0}});
    }
    const std::size_t K = polys.size();
    RnsPoly last = poly(K, 0, false), t = poly(K * keep, 0, false);  // scratch: K last limbs, K corrections
    std::vector<Transform> inverse, forward;
    std::vector<kern::RlItem> corrections;
    std::vector<RnsPoly> outs;
    for (std::size_t k = 0; k < K; ++k) {
        RnsPoly& a = *polys[k];
        const std::size_t last_limb = a.limbs() - 1, idx = ring().prime_index(last_limb, a.num_q());
        u64* lk = words(last) + k * n_;
        inverse.push_back({words(a) + last_limb * n_, lk, lk, idx, 1});
        kern::RlItem rl{};
        rl.last = lk;
        rl.addend = addend ? reinterpret_cast<const std::int64_t*>(words(dev_addend)) : nullptr;
        rl.t = words(t) + k * keep * n_;
        rl.half = half.as<u64>();
        rl.r = ring().prime(idx);
        rl.keep = static_cast<u32>(keep);
        corrections.push_back(rl);
        outs.push_back(poly(keep, 0, true));
        forward.push_back(division(rl.t, keep, outs.back(), a, nullptr, inv, nullptr));
    }
    divide<kern::RoundLast>(inverse, corrections, forward);
    for (std::size_t k = 0; k < K; ++k) *polys[k] = std::move(outs[k]);
}

void GpuBackend::do_rescale(RnsPoly& a, Exec) const {
    const std::size_t l = a.num_q() - 1;
    divide_round_by_last({&a}, l, rescale_inv_[l], rescale_half_[l], nullptr);
}

void GpuBackend::do_divide_round_by_p0(RnsPoly& a, const rns::SmallDraw* addend, Exec) const {
    divide_round_by_last({&a}, a.num_q(), p_inv_[1], p0_half_, addend);
}

void GpuBackend::divide_exact(const std::vector<const RnsPoly*>& xs, const std::vector<Run>& src, const Converter& conv,
                              const Consts& inv, std::size_t keep, const std::vector<const RnsPoly*>& adds,
                              const Perm* perm, const std::vector<RnsPoly*>& outs) const {
    // round(x / R): x - [x]_R (the exact, centered conversion of the source limbs) is divisible by R.
    std::size_t s = 0;
    for (const Run& r : src) s += r.limbs;
    if (kern::conversion_fuses(ring_.log_n, static_cast<u32>(s)))
        return divide_exact_fused(xs, src, s, conv, inv, keep, adds, perm, outs);
    const std::size_t K = xs.size();
    RnsPoly y = poly(0, K * s, false), t = poly(K * keep, 0, false);  // scratch: the scaled sources, the conversions
    std::vector<Transform> inverse, forward;
    std::vector<kern::CdItem> converts;
    std::vector<RnsPoly> results;
    for (std::size_t k = 0; k < K; ++k) {
        const RnsPoly& x = *xs[k];
        u64* yk = words(y) + k * s * n_;
        std::size_t j = 0;
        for (const Run& r : src) {  // to coefficient form, times (R / r_j)^-1 n^-1
            Transform f{words(x) + r.limb * n_, yk + j * n_, yk + j * n_, r.prime, r.limbs};
            f.scale = &conv.scale;
            f.scale_offset = j;
            inverse.push_back(f);
            j += r.limbs;
        }
        kern::CdItem c{};
        c.y = yk;
        c.dst = words(t) + k * keep * n_;
        c.f = conv.factors.as<u64>();
        c.qv = conv.multiples.as<u64>();
        c.inv_q = conv.inv_q.as<double>();
        c.s = static_cast<u32>(s);
        c.keep = static_cast<u32>(keep);
        converts.push_back(c);
        results.push_back(poly(keep, 0, true));
        forward.push_back(division(c.dst, keep, results.back(), x, adds[k], inv, perm));
    }
    divide<kern::ConvertDown>(inverse, converts, forward);
    for (std::size_t k = 0; k < K; ++k) *outs[k] = std::move(results[k]);
}

RnsPoly GpuBackend::mod_down_columns(const RnsPoly& y, std::size_t K, const std::vector<Run>& src, std::size_t s,
                                     const Converter& conv, std::size_t keep) const {
    RnsPoly t = poly(K * keep, 0, false);
    kern::MdShared sh{};
    sh.r = ring_;
    sh.f = conv.factors.as<u64>();
    sh.qv = conv.multiples.as<u64>();
    sh.inv_q = conv.inv_q.as<double>();
    sh.sc = conv.scale.v.as<u64>();
    sh.scp = conv.scale.p.as<u64>();
    sh.s = static_cast<u32>(s);
    sh.keep = static_cast<u32>(keep);
    sh.rounds = kern::fused_rounds(sh.s, sh.keep);
    std::size_t j = 0;
    for (const Run& r : src)
        for (std::size_t i = 0; i < r.limbs; ++i) sh.src_prime[j++] = static_cast<u32>(r.prime + i);
    std::vector<kern::MdItem> items;
    for (std::size_t k = 0; k < K; ++k) items.push_back({words(y) + k * s * n_, words(t) + k * keep * n_});
    launch::run<kern::ModDownColumns>(mem(), sh, items);
    return t;
}

void GpuBackend::divide_exact_fused(const std::vector<const RnsPoly*>& xs, const std::vector<Run>& src, std::size_t s,
                                    const Converter& conv, const Consts& inv, std::size_t keep,
                                    const std::vector<const RnsPoly*>& adds, const Perm* perm,
                                    const std::vector<RnsPoly*>& outs) const {
    const std::size_t K = xs.size();
    RnsPoly y = poly(0, K * s, false);  // scratch: the sources after the inverse transform's first pass
    std::vector<Transform> inverse;
    for (std::size_t k = 0; k < K; ++k) {
        std::size_t j = 0;
        for (const Run& r : src) {
            u64* yk = words(y) + (k * s + j) * n_;
            inverse.push_back({words(*xs[k]) + r.limb * n_, yk, yk, r.prime, r.limbs});
            j += r.limbs;
        }
    }
    ntt(false, inverse, 0, 1);
    RnsPoly t = mod_down_columns(y, K, src, s, conv, keep);
    std::vector<Transform> forward;
    std::vector<RnsPoly> results;
    for (std::size_t k = 0; k < K; ++k) {
        results.push_back(poly(keep, 0, true));
        forward.push_back(division(words(t) + k * keep * n_, keep, results.back(), *xs[k], adds[k], inv, perm));
    }
    ntt(true, forward, 1);
    for (std::size_t k = 0; k < K; ++k) *outs[k] = std::move(results[k]);
}

void GpuBackend::do_mod_down(const RnsPoly& b, const RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a,
                             u64 galois_elt, RnsPoly& out_b, RnsPoly& out_a, Exec) const {
    const Perm* perm = galois_elt == 1 ? nullptr : &permutation(galois_elt);
    const std::size_t k = b.num_p();  // the key's special primes: all of P, or a prefix (Backend::key_switch)
    divide_exact({&b, &a}, {{b.num_q(), L1_, k}}, p_to_q_[k], p_inv_[k], b.num_q(), {add_b, add_a}, perm,
                 {&out_b, &out_a});
}

void GpuBackend::do_mod_down_rescale(RnsPoly& b, RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a, Exec) const {
    const std::size_t l = b.num_q() - 1;
    // x + P add on every q-limb (q_l's is a source of the conversion), both polynomials in one launch
    kern::EwShared s{};
    s.r = ring_;
    std::vector<kern::EwItem> items;
    for (auto [x, add] : {std::pair{&b, add_b}, std::pair{&a, add_a}}) {
        if (!add) continue;
        kern::EwItem it{};
        it.out = words(*x);
        it.a = words(*x);
        it.b = words(*add);
        it.k = p_mod_q_.v.as<u64>();
        it.kp = p_mod_q_.p.as<u64>();
        it.limbs = static_cast<u32>(l + 1);
        items.push_back(it);
    }
    launch::run<kern::Ewise<kern::Op::add_mul_const>>(mem(), s, items);
    divide_exact({&b, &a}, {{l + 1, L1_, b.num_p()}, {l, l, 1}}, pq_to_q_[l], pq_inv_[l], l, {nullptr, nullptr},
                 nullptr, {&b, &a});
}

void GpuBackend::do_add_times_p(const RnsPoly& d, RnsPoly& x, std::size_t first, std::size_t count, Exec) const {
    kern::EwShared s{};
    s.r = ring_;
    kern::EwItem it{};
    it.out = words(x) + first * n_;
    it.a = it.out;
    it.b = words(d) + first * n_;
    it.k = p_mod_q_.v.as<u64>() + first;
    it.kp = p_mod_q_.p.as<u64>() + first;
    it.prime = static_cast<u32>(first);
    it.limbs = static_cast<u32>(count);
    launch::run<kern::Ewise<kern::Op::add_mul_const>>(mem(), s, {it});
}

}  // namespace detail

std::unique_ptr<const rns::Backend> make_gpu_backend(std::shared_ptr<const rns::RnsContext> ring,
                                                     std::shared_ptr<const rns::PolyMemory> memory, const char* name) {
    return std::make_unique<const detail::GpuBackend>(std::move(ring), std::move(memory), name);
}

}  // namespace KASOKU_GPU_VARIANT
}  // namespace kasoku::gpu
