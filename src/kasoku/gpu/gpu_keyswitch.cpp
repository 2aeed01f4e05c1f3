// The GPU backend's key switching: ModUp (fused with its transforms' passes where the NTT takes two), the key switch
// with ModDown between the passes (KeySwitchRows), and the inner products with the keys.
#include "gpu/gpu_backend_internal.hpp"

namespace kasoku::gpu {
inline namespace KASOKU_GPU_VARIANT {
namespace detail {

// ---------------------------------------------------------------- key switching

std::vector<RnsPoly> GpuBackend::do_mod_up(const RnsPoly& d, Exec) const {
    const std::size_t nq = d.num_q(), np = ring().p_count(), digits = ring().digits_at(nq), alpha = ring().alpha();
    // The conversion between the transforms' passes (its forward transform's first pass done), or after the inverse
    // transform and before the forward one.
    const bool fused = kern::conversion_fuses(ring_.log_n, static_cast<u32>(alpha));
    std::vector<RnsPoly> out;
    if (fused) {
        out = mod_up_columns(d, np, true);
    } else {
        RnsPoly y = poly(nq, 0, false);  // scratch: coefficient form, each digit's limbs times (Q_j / q_i)^-1
        Transform inv{words(d), words(y), words(y), 0, nq};
        inv.scale = &modup_scale_[nq];
        ntt(false, {inv});
        std::vector<kern::CuItem> converts;
        for (std::size_t j = 0; j < digits; ++j) {
            const std::size_t begin = ring().digit_begin(j), m = ring().digit_size(j, nq);
            out.push_back(poly(nq, np, true));
            kern::CuItem c{};
            c.y = words(y) + begin * n_;
            c.own = words(d) + begin * n_;
            c.dst = words(out.back());
            c.f = digit_factors_[j * alpha + (m - 1)].as<u64>();
            c.s = static_cast<u32>(m);
            c.begin = static_cast<u32>(begin);
            converts.push_back(c);
        }
        kern::CuShared s{};
        s.r = ring_;
        s.nq = static_cast<u32>(nq);
        s.np = static_cast<u32>(np);
        launch::run<kern::ConvertUp>(mem(), s, converts);
    }
    std::vector<Transform> forward;  // every digit's limbs but its own
    for (std::size_t j = 0; j < digits; ++j) {
        const std::size_t begin = ring().digit_begin(j), m = ring().digit_size(j, nq);
        u64* o = words(out[j]);
        for (const Run& r : {Run{0, 0, begin}, Run{begin + m, begin + m, nq - begin - m}, Run{nq, L1_, np}})
            if (r.limbs) forward.push_back({o + r.limb * n_, o + r.limb * n_, o + r.limb * n_, r.prime, r.limbs});
    }
    ntt(true, forward, fused ? 1 : 0);
    return out;
}

std::vector<RnsPoly> GpuBackend::mod_up_columns(const RnsPoly& d, std::size_t np, bool own) const {
    const std::size_t nq = d.num_q(), digits = ring().digits_at(nq), alpha = ring().alpha();
    RnsPoly y = poly(nq, 0, false);  // scratch: after the inverse transform's first pass
    ntt(false, {{words(d), words(y), words(y), 0, nq}}, 0, 1);
    std::vector<RnsPoly> out;
    std::vector<kern::MuItem> items;
    kern::MuShared s{};
    s.r = ring_;
    s.nq = static_cast<u32>(nq);
    s.np = static_cast<u32>(np);
    for (std::size_t j = 0; j < digits; ++j) {
        const std::size_t begin = ring().digit_begin(j), m = ring().digit_size(j, nq);
        out.push_back(poly(nq, np, true));
        items.push_back({words(y) + begin * n_, own ? words(d) + begin * n_ : nullptr, words(out.back()),
                         digit_factors_[j * alpha + (m - 1)].as<u64>(), modup_scale_[nq].v.as<u64>() + begin,
                         modup_scale_[nq].p.as<u64>() + begin, static_cast<u32>(m), static_cast<u32>(begin)});
        s.rounds = std::max(s.rounds, kern::fused_rounds(static_cast<u32>(m), static_cast<u32>(nq + np - m)));
    }
    launch::run<kern::ModUpColumns>(mem(), s, items);
    return out;
}

void GpuBackend::do_key_switch_mod_down(const RnsPoly& d, const GadgetKey& key, const RnsPoly* add_b,
                                        const RnsPoly* add_a, u64 galois_elt, bool rescale, RnsPoly& out_b,
                                        RnsPoly& out_a, Exec e) const {
    const std::size_t nq = d.num_q(), np = key.b_parts()[0].num_p(), D = ring().digits_at(nq), alpha = ring().alpha();
    const std::size_t sources = np + (rescale ? 1 : 0), l = nq - 1, keep = rescale ? l : nq;
    if (!kern::rows_fuse(ring_.log_n) || !kern::conversion_fuses(ring_.log_n, static_cast<u32>(alpha)) ||
        !kern::conversion_fuses(ring_.log_n, static_cast<u32>(sources)) || D > kern::kDotDigits)
        return Backend::do_key_switch_mod_down(d, key, add_b, add_a, galois_elt, rescale, out_b, out_a, e);
    // ModUp to the middle of its forward transform; the inner product on ModDown's sources, which finishes that
    // transform and starts ModDown's inverse one; ModDown's conversion; the inner product on the other q-limbs, which
    // finishes ModDown's forward transform and divides. (b, a) is never written out whole.
    const std::vector<RnsPoly> digits = mod_up_columns(d, np, false);
    kern::KsShared s{};
    s.r = ring_;
    s.nq = static_cast<u32>(nq);
    s.np = static_cast<u32>(np);
    s.digits = static_cast<u32>(D);
    s.alpha = static_cast<u32>(alpha);
    s.key_nq = static_cast<u32>(key.a[0].num_q());
    s.rescale = rescale;
    s.keep = static_cast<u32>(keep);
    s.pk = p_mod_q_.v.as<u64>();
    s.pkp = p_mod_q_.p.as<u64>();
    kern::KsItem it{};
    it.d = words(d);
    for (std::size_t j = 0; j < D; ++j) {
        s.kb[j] = words(key.b_parts()[j]);
        s.ka[j] = words(key.a[j]);
        it.mid[j] = words(digits[j]);
    }
    if (rescale) {
        it.pre_b = add_b ? words(*add_b) : nullptr;
        it.pre_a = add_a ? words(*add_a) : nullptr;
    }
    RnsPoly y = poly(0, 2 * sources, false);
    it.y_b = words(y);
    it.y_a = words(y) + sources * n_;
    launch::run<kern::KeySwitchRows>(mem(), s, {it});

    const std::vector<Run> src = rescale ? std::vector<Run>{{nq, L1_, np}, {l, l, 1}} : std::vector<Run>{{nq, L1_, np}};
    const Converter& conv = rescale ? pq_to_q_[l] : p_to_q_[np];
    const Consts& inv = rescale ? pq_inv_[l] : p_inv_[np];
    const RnsPoly t = mod_down_columns(y, 2, src, sources, conv, keep);
    RnsPoly rb = poly(keep, 0, true), ra = poly(keep, 0, true);
    s.finish = 1;
    s.inv = inv.v.as<u64>();
    s.invp = inv.p.as<u64>();
    s.perm_inv = galois_elt == 1 ? nullptr : permutation(galois_elt).inverse.as<u32>();
    it.t_b = words(t);
    it.t_a = words(t) + keep * n_;
    if (!rescale) {
        it.add_b = add_b ? words(*add_b) : nullptr;
        it.add_a = add_a ? words(*add_a) : nullptr;
    }
    it.out_b = words(rb);
    it.out_a = words(ra);
    launch::run<kern::KeySwitchRows>(mem(), s, {it});
    out_b = std::move(rb);
    out_a = std::move(ra);
}

void GpuBackend::do_key_switch(const RnsPoly& d, const GadgetKey& key, RnsPoly& b, RnsPoly& a, Exec e) const {
    do_inner_product(do_mod_up(d, e), {KeyTerm{&key, 1}}, b, a, nullptr, nullptr, e);
}

void GpuBackend::do_inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, RnsPoly& b,
                                  RnsPoly& a, const RnsPoly* c0, RnsPoly* c0_out, Exec) const {
    // Over Q_l * P_k as shaped by the caller: the keys' special primes (the digits may have more: key_switch).
    const std::size_t nq = digits[0].num_q(), np = b.num_p(), D = digits.size();
    const bool with_c0 = c0 && c0_out;
    bool first = true;
    for (std::size_t e0 = 0; e0 < terms.size(); e0 += kern::kDotTerms) {
        const std::size_t E = std::min<std::size_t>(kern::kDotTerms, terms.size() - e0);
        for (std::size_t j0 = 0; j0 < D; j0 += kern::kDotDigits) {
            const std::size_t J = std::min<std::size_t>(kern::kDotDigits, D - j0);
            kern::DtShared s{};
            s.r = ring_;
            s.nq = static_cast<u32>(nq);
            s.np = static_cast<u32>(np);
            s.digits = static_cast<u32>(J);
            s.terms = static_cast<u32>(E);
            s.accumulate = !first;
            s.with_c0 = with_c0 && j0 == 0;
            for (std::size_t e = 0; e < E; ++e) {
                const KeyTerm& term = terms[e0 + e];
                s.perm[e] = term.galois_elt == 1 ? nullptr : permutation(term.galois_elt).perm.as<u32>();
                s.key_nq[e] = static_cast<u32>(term.key->a[0].num_q());
                for (std::size_t j = 0; j < J; ++j) {
                    s.kb[e][j] = words(term.key->b_parts()[j0 + j]);
                    s.ka[e][j] = words(term.key->a[j0 + j]);
                }
            }
            kern::DtItem it{};
            for (std::size_t j = 0; j < J; ++j) it.d[j] = words(digits[j0 + j]);
            it.b = words(b);
            it.a = words(a);
            if (with_c0) {
                it.c0 = words(*c0);
                it.c0_out = words(*c0_out);
            }
            launch::run<kern::Dot>(mem(), s, {it});
            first = false;
        }
    }
}

}  // namespace detail
}  // namespace KASOKU_GPU_VARIANT
}  // namespace kasoku::gpu
