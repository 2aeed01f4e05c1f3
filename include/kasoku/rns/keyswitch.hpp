// Hybrid key switching (Han-Ki; Inoue 2022 Alg. 2.4.1-2.4.4, hoisting after Alg. 3.2.1), written once for every
// backend as whole-polynomial operations, in the three steps of Inoue 2022:
//
//   1. ModUp:          split c1 into dnum digits of alpha primes and extend each to Q_l * P (Backend::mod_up; the
//                      decomposition that hoisted key switches share);
//   2. inner product:  the digits times the key digits, summed (and permuted by an automorphism), still over
//                      Q_l * P, where sums of key switches and plaintext products can be taken (lazy ModDown);
//   3. ModDown:        divide by P back to Q_l (fused with an automorphism, the addition of c0, or a rescale).
//
// The CKKS layer reaches key switching only here (ckks::Context::keyswitcher): each step under the backend's name for
// it, the fused ones included (key_switch_mod_down, key_switch_sum_mod_down), so that a backend sees every key
// switch through one door and the lazy values (step 2's results) are one type. The limb-by-limb pipelines behind them
// are the backend's. They throw what the backend throws (backend.hpp): InternalError for operands of the wrong shapes
// (a key without dnum digits over Q_L * P, digits of another level, lazy values with and without c0), ParameterError
// for an invalid Galois element.
#pragma once
#include <cstdint>
#include <vector>

#include "kasoku/rns/backend.hpp"

namespace kasoku::rns {

// A ciphertext before its ModDown: (c0 + round(b / P), round(a / P)), with c0 over Q_l (may be empty: zero) and (b, a)
// over Q_l * P, NTT form. Lazy values of one input add up, so a sum of key switches needs one ModDown.
struct LazyPolys {
    RnsPoly c0, b, a;
};

class KeySwitcher {
public:
    explicit KeySwitcher(const Backend& backend) : be_(backend) {}
    const Backend& backend() const { return be_; }

    // ---- step 1
    // ModUp of every digit of d (NTT form over Q_l): digit j extended to Q_l * P (Backend::mod_up; the decomposition
    // that hoisted key switches share: ckks::Evaluator::decompose wraps it with its level and key checks).
    // @throws InternalError as Backend::mod_up
    std::vector<RnsPoly> mod_up(const RnsPoly& d, Exec exec) const { return be_.mod_up(d, exec); }

    // ---- step 2 (results over Q_l * P; c0 of a result is empty unless said otherwise)
    // <ModUp(d), key>: steps 1 and 2 fused limb by limb, for a key switch that shares nothing.
    // @throws InternalError as Backend::key_switch (a d not in NTT form over Q_l, a key of the wrong shape)
    LazyPolys key_switch(const RnsPoly& d, const GadgetKey& key, Exec exec) const;
    // <digits, key>, without automorphism (the list form of hoisting: each result gets its own ModDown).
    // @throws InternalError as Backend::inner_product (digits of another level or shape, a key of the wrong shape)
    LazyPolys inner_product(const std::vector<RnsPoly>& digits, const GadgetKey& key, Exec exec) const;
    // sum_e psi_{g_e}(<digits, key_e>), and c0 = sum_e psi_{g_e}(c0) (the sum form of hoisting: one ModDown for all).
    // @throws InternalError as Backend::inner_product (no terms, digits or c0 of another level or shape, a null key or
    //     one of the wrong shape)
    // @throws ParameterError for a g_e other than 1 that is even or >= 2n
    LazyPolys inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, const RnsPoly& c0,
                            Exec exec) const;
    // For each group j: sum over its terms (i, y) of y * psi_{g_i}(c0, <digits, key_i>), c0 part included: the
    // baby steps of a linear transform and their plaintext sums in one call (Backend::inner_product_sums), the same
    // as inner_product of each term and sum_of_products of each group.
    // @throws InternalError as Backend::inner_product_sums
    // @throws ParameterError for a g_i other than 1 that is even or >= 2n
    std::vector<LazyPolys> inner_product_sums(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms,
                                              const RnsPoly& c0, const std::vector<std::vector<ProductTerm>>& groups,
                                              Exec exec) const;
    // acc += x (every part; both from one input at one level).
    // @throws InternalError if one has a c0 part and the other not, or their parts differ in shape
    void add(LazyPolys& acc, const LazyPolys& x, Exec exec) const;
    // sum_i xs[i] * pts[i] (every part; Backend::sum_of_products), pts over Q_l * P: masks and diagonals multiply
    // key-switched values before their one ModDown, which then also divides the rounding of the products by P.
    // @throws InternalError for no terms, terms with and without c0, or as Backend::sum_of_products (another number
    //     of plaintexts, shapes that differ, plaintexts that do not cover their terms' limbs)
    LazyPolys sum_of_products(const std::vector<const LazyPolys*>& xs, const std::vector<const RnsPoly*>& pts,
                              Exec exec) const;

    // ---- step 3 (add_b, add_a over Q_l, may be null; empty or null terms are zero)
    // out_b = psi_g(round(x.b / P) + x.c0 + add_b), out_a = psi_g(round(x.a / P) + add_a) over Q_l (g = 1: no
    // automorphism).
    // The automorphism comes last, on two polynomials over Q_l: keys switch to s(X^{g^-1}) for that (keygen).
    // @throws InternalError as Backend::mod_down (x.b and x.a not over one Q_l * P_k, addends or x.c0 not over Q_l,
    //     outputs that are one polynomial)
    // @throws ParameterError for a galois_elt other than 1 that is even or >= 2n
    void mod_down(const LazyPolys& x, const RnsPoly* add_b, const RnsPoly* add_a, std::uint64_t galois_elt,
                  RnsPoly& out_b, RnsPoly& out_a, Exec exec) const;
    // out_b = round((x.b + P (x.c0 + add_b)) / (P q_l)), out_a = round((x.a + P add_a) / (P q_l)) over Q_{l-1}:
    // ModDown, the additions and a rescale in one base conversion per polynomial. Consumes x.
    // @throws InternalError as Backend::mod_down_rescale (x.b and x.a not over one Q_l * P with l >= 1, addends or x.c0
    //     not over Q_l)
    void mod_down_rescale(LazyPolys&& x, const RnsPoly* add_b, const RnsPoly* add_a, RnsPoly& out_b, RnsPoly& out_a,
                          Exec exec) const;

    // ---- steps 1 to 3 in one call, for a key switch that shares nothing (the backend may fuse them: the GPU backend
    // keeps the pair over Q_l * P out of memory, the CPU backend runs the sum form limb by limb)
    // mod_down(key_switch(d, key), add_b, add_a, galois_elt) or, with `rescale` (g = 1), mod_down_rescale: the multiply's
    // relinearisation and a single rotation.
    // @throws InternalError, ParameterError as Backend::key_switch_mod_down
    void key_switch_mod_down(const RnsPoly& d, const GadgetKey& key, const RnsPoly* add_b, const RnsPoly* add_a,
                             std::uint64_t galois_elt, bool rescale, RnsPoly& out_b, RnsPoly& out_a, Exec exec) const {
        be_.key_switch_mod_down(d, key, add_b, add_a, galois_elt, rescale, out_b, out_a, exec);
    }
    // mod_down(inner_product(mod_up(d), terms, c0)): a hoisted sum of key switches whose keys share their special
    // primes.
    // @throws InternalError, ParameterError as Backend::key_switch_sum_mod_down
    void key_switch_sum_mod_down(const RnsPoly& d, const std::vector<KeyTerm>& terms, const RnsPoly& c0, RnsPoly& out_b,
                                 RnsPoly& out_a, Exec exec) const {
        be_.key_switch_sum_mod_down(d, terms, c0, out_b, out_a, exec);
    }

    // ---- key generation
    // b += P s on the q-limbs of digit j: the gadget term of key digit j (s and b over Q_m * P_k, NTT form, P the
    // product of b's special primes: all of them, or a prefix; s is secret).
    // @throws InternalError for a digit that b's q-limbs do not have, s and b of different shapes, or (as
    //     Backend::add_times_p) a foreign s or b
    void add_gadget(const RnsPoly& s, std::size_t digit, RnsPoly& b, Exec exec) const;

private:
    const Backend& be_;
};

}  // namespace kasoku::rns
