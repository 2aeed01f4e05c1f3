#include "kasoku/rns/keyswitch.hpp"

#include "kasoku/support/error.hpp"

namespace kasoku::rns {

LazyPolys KeySwitcher::key_switch(const RnsPoly& d, const GadgetKey& key, Exec exec) const {
    LazyPolys out;
    be_.key_switch(d, key, out.b, out.a, exec);
    return out;
}

LazyPolys KeySwitcher::inner_product(const std::vector<RnsPoly>& digits, const GadgetKey& key, Exec exec) const {
    LazyPolys out;
    be_.inner_product(digits, {KeyTerm{&key, 1}}, out.b, out.a, nullptr, nullptr, exec);
    return out;
}

LazyPolys KeySwitcher::inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms,
                                     const RnsPoly& c0, Exec exec) const {
    LazyPolys out;
    be_.inner_product(digits, terms, out.b, out.a, &c0, &out.c0, exec);
    return out;
}

std::vector<LazyPolys> KeySwitcher::inner_product_sums(const std::vector<RnsPoly>& digits,
                                                       const std::vector<KeyTerm>& terms, const RnsPoly& c0,
                                                       const std::vector<std::vector<ProductTerm>>& groups,
                                                       Exec exec) const {
    std::vector<LazyPolys> out(groups.size());
    std::vector<std::array<RnsPoly*, 3>> parts;
    for (LazyPolys& o : out) parts.push_back({&o.c0, &o.b, &o.a});
    be_.inner_product_sums(digits, terms, c0, groups, parts, exec);
    return out;
}

void KeySwitcher::add(LazyPolys& acc, const LazyPolys& x, Exec exec) const {
    if (acc.c0.empty() != x.c0.empty())
        throw InternalError("KeySwitcher::add: one lazy value has a c0 part and the other not");
    if (!acc.c0.empty()) be_.add(acc.c0, x.c0, acc.c0, exec);
    be_.add(acc.b, x.b, acc.b, exec);
    be_.add(acc.a, x.a, acc.a, exec);
}

LazyPolys KeySwitcher::sum_of_products(const std::vector<const LazyPolys*>& xs, const std::vector<const RnsPoly*>& pts,
                                       Exec exec) const {
    if (xs.empty()) throw InternalError("KeySwitcher::sum_of_products: no terms");
    const bool with_c0 = !xs[0]->c0.empty();
    std::vector<std::vector<const RnsPoly*>> terms;
    for (const LazyPolys* x : xs) {
        if (x->c0.empty() == with_c0)
            throw InternalError("KeySwitcher::sum_of_products: lazy values with and without c0");
        if (with_c0) terms.push_back({&x->c0, &x->b, &x->a});
        else terms.push_back({&x->b, &x->a});
    }
    LazyPolys out;
    std::vector<RnsPoly*> parts =
        with_c0 ? std::vector<RnsPoly*>{&out.c0, &out.b, &out.a} : std::vector<RnsPoly*>{&out.b, &out.a};
    be_.sum_of_products(terms, pts, parts, false, exec);
    return out;
}

void KeySwitcher::mod_down(const LazyPolys& x, const RnsPoly* add_b, const RnsPoly* add_a, std::uint64_t galois_elt,
                           RnsPoly& out_b, RnsPoly& out_a, Exec exec) const {
    RnsPoly both;  // x.c0 + add_b when there are two addends
    const RnsPoly* c0 = x.c0.empty() ? add_b : &x.c0;
    if (add_b && !x.c0.empty()) {
        be_.add(x.c0, *add_b, both, exec);
        c0 = &both;
    }
    be_.mod_down(x.b, x.a, c0, add_a, galois_elt, out_b, out_a, exec);
}

void KeySwitcher::mod_down_rescale(LazyPolys&& x, const RnsPoly* add_b, const RnsPoly* add_a, RnsPoly& out_b,
                                   RnsPoly& out_a, Exec exec) const {
    RnsPoly b = std::move(x.b), a = std::move(x.a), both;  // x.c0 + add_b when there are two addends
    const RnsPoly* c0 = x.c0.empty() ? add_b : &x.c0;
    if (add_b && !x.c0.empty()) {
        be_.add(x.c0, *add_b, both, exec);
        c0 = &both;
    }
    be_.mod_down_rescale(b, a, c0, add_a, exec);
    out_b = std::move(b);
    out_a = std::move(a);
}

void KeySwitcher::add_gadget(const RnsPoly& s, std::size_t digit, RnsPoly& b, Exec exec) const {
    const RnsContext& r = be_.ring();
    const std::size_t nq = b.num_q(), np = b.num_p();
    if (digit >= r.digits_at(nq) || !s.same_shape(b))
        throw InternalError("add_gadget: no such digit, or s and b of two shapes");
    if (np == r.p_count()) return be_.add_times_p(s, b, exec, r.digit_begin(digit), r.digit_size(digit, nq));
    // A key over a prefix P_k: b += (P_k on the digit's primes, 0 elsewhere) s.
    std::vector<u64> c(r.q_count() + r.p_count(), 0);
    for (std::size_t i = r.digit_begin(digit); i < r.digit_begin(digit) + r.digit_size(digit, nq); ++i) {
        const arith::Modulus& m = r.modulus(i);
        c[i] = 1;
        for (std::size_t j = 0; j < np; ++j) c[i] = arith::mul_mod(c[i], r.p_primes()[j] % m.value, m);
    }
    RnsPoly t;
    be_.mul_constant(s, c, t, exec);
    be_.add(b, t, b, exec);
    t.wipe();
}

}  // namespace kasoku::rns
