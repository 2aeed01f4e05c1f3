// The CPU backend's key switching: ModUp's sources and limbs, the fused key switch, the inner products with the keys
// (one routine behind key_switch and inner_product) and their fused forms with ModDown and the plaintext sums.
#include "cpu_backend_internal.hpp"

namespace kasoku::rns::cpu {

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

}  // namespace kasoku::rns::cpu
