// The CPU backend: host memory, the run-time dispatched SIMD kernels of arith, OpenMP teams of Exec::threads.
// Every multi-step operation is a limb-by-limb pipeline: each limb is transformed, converted, combined and permuted
// while it is in cache, and the limbs are spread over the team. Key switching: cpu_keyswitch.cpp.
#include "cpu_backend_internal.hpp"

namespace kasoku::rns {
namespace cpu {

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

const arith::NttTables& CpuBackend::subring_ntt(std::size_t idx, std::size_t m) const {
    const std::lock_guard<std::mutex> lock(subring_mutex_);
    auto& t = subring_ntt_[{idx, m}];
    if (!t) t = std::make_unique<const arith::NttTables>(ntt_[idx]->subring(m));
    return *t;
}

void CpuBackend::do_from_signed_subring(const __int128* coeffs, RnsPoly& out, Exec exec) const {
    // From 16 points the SIMD bodies with the subring's tables (a bootstrap's transforms encoded at use: 2^15 points,
    // 4-5 % of its time in the scalar transform), below that the scalar one
    const std::size_t m = out.n();
    std::vector<const arith::NttTables*> tables(out.limbs(), nullptr);
    if (m >= 16)
        for (std::size_t i = 0; i < out.limbs(); ++i) tables[i] = &subring_ntt(pidx(i, out.num_q()), m);
    parallel_for(exec.threads, out.limbs(), [&](std::size_t i) {
        const std::size_t idx = pidx(i, out.num_q());
        const Modulus& q = ring().modulus(idx);
        u64* d = limb(out, i);
        for (std::size_t c = 0; c < m; ++c) d[c] = arith::reduce_signed(coeffs[c], q);
        if (tables[i]) arith::ntt_forward(d, *tables[i]);
        else arith::ntt_forward_prefix(d, m, *ntt_[idx]);
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
        // the terms' residues are below q_i: small sources when q_i is
        arith::dot_const_mod(src.data(), f.data(), x.size(), len, ring().modulus(i), limb(out, i) + k, nullptr, nullptr,
                             arith::small_source(ring().prime(i)));
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

void CpuBackend::do_divide_round_by_p0(RnsPoly& a, const SmallDraw* addend, Exec exec) const {
    std::vector<std::int64_t> e(addend ? n_ : 0);
    if (addend) draw_small(*addend, n_, e.data());
    RnsPoly* p = &a;
    divide_round_by_last(&p, 1, a.num_q(), t_.p_inv[1].data(), t_.p_inv_shoup[1].data(), t_.p0_half.data(),
                         exec.threads, addend ? e.data() : nullptr);
    secure_wipe(e.data(), e.size() * sizeof(std::int64_t));
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
                if (add[h] && add_factor && arith::small_source(q[i])) {
                    // (x - t) inv + add f as x inv + t (q - inv) + add f, one pass (the IFMA and double-precision
                    // bodies' small-source sums; for larger primes the passes below are faster)
                    const u64* y[3] = {x[h], t, limb(*add[h], i)};
                    const u64 f[3] = {inv[i], q[i] - inv[i], add_factor[i]};
                    arith::dot_const_mod(y, f, 3, n_, ring().modulus(i), t, nullptr, nullptr, true);
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

namespace {
// The limbs of a pair held in memory.
auto own_limbs(const RnsPoly& b, const RnsPoly& a) {
    return [&b, &a](std::size_t l, u64*, u64*, const u64*& xb, const u64*& xa) {
        xb = limb(b, l);
        xa = limb(a, l);
    };
}
}  // namespace

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

}  // namespace cpu

std::unique_ptr<const Backend> make_cpu_backend(std::shared_ptr<const RnsContext> ring) {
    return std::make_unique<const cpu::CpuBackend>(std::move(ring));
}

}  // namespace kasoku::rns
