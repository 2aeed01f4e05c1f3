// The checks every backend shares: operand shapes and output shapes, before the backend's own do_* methods run.
#include "kasoku/rns/backend.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "kasoku/support/aligned.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::rns {

namespace {
void require(bool ok, const char* op, const char* what) {
    if (!ok) throw InternalError(std::string(op) + ": " + what);
}
void same_shape(const RnsPoly& a, const RnsPoly& b, const char* op) {
    require(a.same_shape(b), op, "operands of different shapes");
}
}  // namespace

Backend::Backend(std::shared_ptr<const RnsContext> ring, std::shared_ptr<const PolyMemory> memory)
    : ring_(std::move(ring)), memory_(std::move(memory)) {
    if (!ring_ || !memory_) throw InternalError("a backend needs a ring and a memory");
}

void Backend::check_mine(const RnsPoly& a, const char* op) const {
    require(!a.empty() && a.n() == ring_->n(), op, "empty polynomial or another ring degree");
    require(a.memory() == memory_, op, "polynomial of another backend's memory");
}

// Words per limb of a subring polynomial of this ring: a power of two up to n.
bool Backend::subring_size(std::size_t n_sub) const {
    return n_sub >= 1 && n_sub <= ring_->n() && (n_sub & (n_sub - 1)) == 0;
}

// A plaintext of sum_of_products: this backend's, of n words per limb or a subring's fewer.
void Backend::check_plaintext(const RnsPoly& a, const char* op) const {
    require(!a.empty() && subring_size(a.n()), op, "empty plaintext or one of another ring degree");
    require(a.memory() == memory_, op, "polynomial of another backend's memory");
}

void Backend::shape(std::size_t num_q, std::size_t num_p, bool ntt_form, RnsPoly& out, std::size_t n) const {
    if (n == 0) n = ring_->n();
    if (out.empty() || out.memory() != memory_ || out.n() != n || out.num_q() != num_q || out.num_p() != num_p)
        out = RnsPoly(memory_, n, num_q, num_p, ntt_form);
    out.set_ntt_form(ntt_form);
}

void Backend::shape(const RnsPoly& like, RnsPoly& out) const {
    if (&like != &out) shape(like.num_q(), like.num_p(), like.ntt_form(), out);
}

RnsPoly Backend::poly(std::size_t num_q, std::size_t num_p, bool ntt_form) const {
    return RnsPoly(memory_, ring_->n(), num_q, num_p, ntt_form);
}

void Backend::upload(RnsPoly& out, const LimbWriter& fill, Exec exec) const {
    check_mine(out, "upload");
    do_upload(out, fill, exec);
}

void Backend::download(const RnsPoly& a, const LimbReader& read, Exec exec, std::size_t limbs) const {
    check_mine(a, "download");
    if (limbs == npos) limbs = a.limbs();
    require(limbs <= a.limbs(), "download", "more limbs asked for than the polynomial has");
    do_download(a, read, limbs, exec);
}

void Backend::from_signed(const std::int64_t* coeffs, RnsPoly& out, Exec exec) const {
    check_mine(out, "from_signed");
    do_from_signed(coeffs, out, exec);
}

void Backend::from_signed(const __int128* coeffs, RnsPoly& out, Exec exec) const {
    check_mine(out, "from_signed");
    do_from_signed(coeffs, out, exec);
}

void Backend::raise_q0(const RnsPoly& a, RnsPoly& out, Exec exec) const {
    check_mine(a, "raise_q0");
    check_mine(out, "raise_q0");
    require(a.limbs() > 0, "raise_q0", "the polynomial has no limbs");
    do_raise_q0(a, out, exec);
}

void Backend::sample(const SmallDraw& draw, RnsPoly& out, Exec exec) const {
    check_mine(out, "sample");
    do_sample(draw, out, exec);
}

void Backend::do_sample(const SmallDraw& draw, RnsPoly& out, Exec exec) const {
    std::vector<std::int64_t> c(ring_->n());
    draw_small(draw, c.size(), c.data());
    do_from_signed(c.data(), out, exec);
    secure_wipe(c.data(), c.size() * sizeof c[0]);
}

void Backend::encode_slots(const std::complex<double>* values, std::size_t p, double scale, RnsPoly& out,
                           Exec exec) const {
    const char* op = "encode_slots";
    require(p >= 1 && p <= ring_->n() / 2 && std::has_single_bit(p), op, "a power of two of values up to n/2");
    require(!out.empty() && (out.n() == ring_->n() || (out.n() == 2 * p && out.ntt_form())), op,
            "an output of n words per limb, or an NTT-form one of 2p");
    require(out.memory() == memory_, op, "polynomial of another backend's memory");
    do_encode_slots(values, p, scale, out, exec);
}

void Backend::do_encode_slots(const std::complex<double>* values, std::size_t p, double scale, RnsPoly& out,
                              Exec exec) const {
    std::vector<std::complex<double>> v(values, values + p);
    ring_->slot_fft().inverse(v);
    const bool subring = out.n() < ring_->n();
    const std::size_t stride = out.n() / (2 * p);
    std::vector<__int128, AlignedAllocator<__int128>> coeff(out.n(), 0);
    // below 2^62 (every encoding at a 40-bit scale) through int64, a single instruction, not libgcc's __int128 one
    const auto to_int = [](double x) {
        return std::fabs(x) < 0x1p62 ? static_cast<__int128>(static_cast<std::int64_t>(x)) : static_cast<__int128>(x);
    };
    for (std::size_t i = 0; i < p; ++i) {
        coeff[stride * i] = to_int(std::nearbyint(v[i].real() * scale));
        coeff[stride * (i + p)] = to_int(std::nearbyint(v[i].imag() * scale));
    }
    if (subring) do_from_signed_subring(coeff.data(), out, exec);
    else do_from_signed(coeff.data(), out, exec);
}

std::vector<std::complex<double>> Backend::decode_slots(const RnsPoly& a, std::size_t t, double scale,
                                                        Exec exec) const {
    const char* op = "decode_slots";
    check_mine(a, op);
    require(!a.ntt_form() && t >= 1 && t <= a.num_q(), op, "a coefficient-form polynomial with at least t q-limbs");
    return do_decode_slots(a, t, scale, exec);
}

std::vector<std::complex<double>> Backend::do_decode_slots(const RnsPoly& a, std::size_t t, double scale,
                                                           Exec exec) const {
    const std::size_t n = ring_->n(), slots = n / 2;
    std::vector<double, AlignedAllocator<double>> real(n);
    do_download(
        a, [&](const u64* const* limbs) { ring_->compose_centered(limbs, t, real.data()); }, t, exec);
    std::vector<std::complex<double>> v(slots);
    const double inv = 1.0 / scale;
    for (std::size_t i = 0; i < slots; ++i) v[i] = {real[i] * inv, real[i + slots] * inv};
    ring_->slot_fft().forward(v);
    return v;
}

void Backend::do_raise_q0(const RnsPoly& a, RnsPoly& out, Exec exec) const {
    do_from_signed(centered_q0(*this, a, exec).data(), out, exec);
}

void Backend::add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const {
    check_mine(a, "add");
    same_shape(a, b, "add");
    shape(a, out);
    do_add(a, b, out, exec);
}

void Backend::sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const {
    check_mine(a, "sub");
    same_shape(a, b, "sub");
    shape(a, out);
    do_sub(a, b, out, exec);
}

void Backend::copy(const RnsPoly& a, RnsPoly& out, Exec exec, std::size_t num_q) const {
    check_mine(a, "copy");
    if (num_q == npos) num_q = a.num_q();
    require(num_q <= a.num_q(), "copy", "more q-limbs asked for than the polynomial has");
    require(&a != &out, "copy", "out is the polynomial copied");
    shape(num_q, a.num_p(), a.ntt_form(), out);
    do_copy(a, out, exec);
}

void Backend::do_copy(const RnsPoly& a, RnsPoly& out, Exec) const {
    const std::size_t n = a.n(), nq = out.num_q();
    memory_->copy(PolyAccess::data(a), n * nq, PolyAccess::data(out));
    memory_->copy(PolyAccess::data(a) + n * a.num_q(), n * a.num_p(), PolyAccess::data(out) + n * nq);
}

void Backend::negate(const RnsPoly& a, RnsPoly& out, Exec exec) const {
    check_mine(a, "negate");
    shape(a, out);
    do_negate(a, out, exec);
}

void Backend::mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const {
    check_mine(a, "mul");
    same_shape(a, b, "mul");
    require(a.ntt_form(), "mul", "operands must be in NTT form");
    shape(a, out);
    do_mul(a, b, out, exec);
}

void Backend::fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, Exec exec) const {
    check_mine(a, "fma");
    same_shape(a, b, "fma");
    same_shape(a, c, "fma");
    require(a.ntt_form(), "fma", "operands must be in NTT form");
    shape(a, out);
    do_fma(a, b, c, out, exec);
}

void Backend::tensor(const RnsPoly& a0, const RnsPoly& a1, const RnsPoly& b0, const RnsPoly& b1, RnsPoly& d0,
                     RnsPoly& d1, RnsPoly& d2, Exec exec) const {
    check_mine(a0, "tensor");
    for (const RnsPoly* x : {&a1, &b0, &b1}) same_shape(a0, *x, "tensor");
    require(a0.ntt_form(), "tensor", "operands must be in NTT form");
    for (const RnsPoly* out : {&d0, &d1, &d2})
        require(out != &a0 && out != &a1 && out != &b0 && out != &b1, "tensor", "an output is an operand");
    require(&d0 != &d1 && &d1 != &d2 && &d0 != &d2, "tensor", "the outputs must be three polynomials");
    shape(a0, d0);
    shape(a0, d1);
    shape(a0, d2);
    do_tensor(a0, a1, b0, b1, d0, d1, d2, exec);
}

void Backend::mul_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec exec) const {
    check_mine(a, "mul_constant");
    require(residues.size() >= ring_->q_count() + ring_->p_count(), "mul_constant", "one residue per prime needed");
    shape(a, out);
    do_mul_constant(a, residues, out, exec);
}

void Backend::add_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec exec) const {
    check_mine(a, "add_constant");
    require(residues.size() >= ring_->q_count() + ring_->p_count(), "add_constant", "one residue per prime needed");
    shape(a, out);
    do_add_constant(a, residues, out, exec);
}

void Backend::linear_combination(const std::vector<const RnsPoly*>& x, const std::vector<std::vector<u64>>& c,
                                 std::size_t num_q, RnsPoly& out, Exec exec) const {
    const char* op = "linear_combination";
    require(!x.empty() && x.size() == c.size() && num_q >= 1, op,
            "one constant per term, at least one term and one limb");
    for (std::size_t i = 0; i < x.size(); ++i) {
        check_mine(*x[i], op);
        require(x[i]->num_q() >= num_q && x[i]->ntt_form() == x[0]->ntt_form() && x[i] != &out, op,
                "every term needs the limbs of the result, in one form, and none may be the result");
        require(c[i].size() >= ring_->q_count() + ring_->p_count(), op, "one residue per prime needed");
    }
    shape(num_q, 0, x[0]->ntt_form(), out);
    do_linear_combination(x, c, out, exec);
}

void Backend::sum_of_products(const std::vector<std::vector<const RnsPoly*>>& x, const std::vector<const RnsPoly*>& y,
                              const std::vector<RnsPoly*>& out, bool accumulate, Exec exec) const {
    const char* op = "sum_of_products";
    require(!x.empty() && x.size() == y.size() && !out.empty(), op, "one plaintext per term, at least one term");
    for (std::size_t i = 0; i < x.size(); ++i) {
        require(x[i].size() == out.size(), op, "every term needs one polynomial per output");
        check_plaintext(*y[i], op);
        for (std::size_t k = 0; k < out.size(); ++k) {
            const RnsPoly& xk = *x[i][k];
            check_mine(xk, op);
            same_shape(xk, *x[0][k], op);
            require(xk.ntt_form() && y[i]->ntt_form() && y[i]->num_q() == xk.num_q() && y[i]->num_p() >= xk.num_p(), op,
                    "a plaintext must cover its term's limbs, all in NTT form");
        }
    }
    for (std::size_t k = 0; k < out.size(); ++k) {
        if (accumulate) {
            check_mine(*out[k], op);
            same_shape(*out[k], *x[0][k], op);
        } else {
            shape(*x[0][k], *out[k]);
        }
    }
    do_sum_of_products(x, y, out, accumulate, exec);
}

void Backend::to_subring(const RnsPoly& a, std::size_t n_sub, RnsPoly& out, Exec exec) const {
    const char* op = "to_subring";
    check_mine(a, op);
    require(a.ntt_form() && subring_size(n_sub), op,
            "an NTT-form polynomial and a power of two of words per limb up to n");
    require(&a != &out, op, "the output must not be the input");
    shape(a.num_q(), a.num_p(), true, out, n_sub);
    do_to_subring(a, out, exec);
}

void Backend::from_signed_subring(const __int128* coeffs, RnsPoly& out, Exec exec) const {
    const char* op = "from_signed_subring";
    require(!out.empty() && out.memory() == memory_ && out.ntt_form() && subring_size(out.n()), op,
            "an NTT-form output of a power of two of words per limb up to n");
    do_from_signed_subring(coeffs, out, exec);
}

void Backend::do_from_signed_subring(const __int128* coeffs, RnsPoly& out, Exec exec) const {
    const std::size_t n = ring_->n(), stride = n / out.n();
    std::vector<__int128> spread(n, 0);
    for (std::size_t j = 0; j < out.n(); ++j) spread[j * stride] = coeffs[j];
    RnsPoly full = poly(out.num_q(), out.num_p(), true);
    do_from_signed(spread.data(), full, exec);
    do_to_subring(full, out, exec);
}

void Backend::horner(const std::vector<const RnsPoly*>& c, const RnsPoly& x, RnsPoly& out, Exec exec) const {
    const char* op = "horner";
    check_mine(x, op);
    check_mine(out, op);
    require(!c.empty() && x.ntt_form() && out.ntt_form() && out.num_p() == 0 && out.num_q() <= x.num_q(), op,
            "NTT-form operands covering the output's limbs");
    for (const RnsPoly* ci : c) {
        check_mine(*ci, op);
        require(ci->ntt_form() && out.num_q() <= ci->num_q(), op, "NTT-form operands covering the output's limbs");
    }
    do_horner(c, x, out, exec);
}

void Backend::to_ntt(RnsPoly& a, Exec exec) const {
    check_mine(a, "to_ntt");
    if (!a.ntt_form()) do_to_ntt(a, exec);
}

void Backend::from_ntt(RnsPoly& a, Exec exec) const {
    check_mine(a, "from_ntt");
    if (a.ntt_form()) do_from_ntt(a, exec);
}

void Backend::automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, Exec exec) const {
    check_mine(a, "automorphism");
    require(a.ntt_form(), "automorphism", "the operand must be in NTT form");
    require(&a != &out, "automorphism", "cannot run in place");
    shape(a, out);
    do_automorphism(a, galois_elt, out, exec);
}

void Backend::rescale(RnsPoly& a, Exec exec) const {
    check_mine(a, "rescale");
    require(a.ntt_form() && a.num_p() == 0 && a.num_q() >= 2, "rescale",
            "needs an NTT-form polynomial over Q_l, l >= 1");
    do_rescale(a, exec);
}

void Backend::rescale(std::vector<RnsPoly>& polys, Exec exec) const {
    for (const RnsPoly& a : polys) {
        check_mine(a, "rescale");
        require(a.ntt_form() && a.num_p() == 0 && a.num_q() >= 2, "rescale",
                "needs NTT-form polynomials over Q_l, l >= 1");
    }
    do_rescale_all(polys, exec);
}

void Backend::do_rescale_all(std::vector<RnsPoly>& polys, Exec exec) const {
    for (RnsPoly& a : polys) do_rescale(a, exec);
}

void Backend::divide_round_by_p0(RnsPoly& a, const SmallDraw* addend, Exec exec) const {
    check_mine(a, "divide_round_by_p0");
    require(a.ntt_form() && a.num_p() == 1, "divide_round_by_p0", "needs an NTT-form polynomial over Q_l * p_0");
    do_divide_round_by_p0(a, addend, exec);
}

void Backend::check_mod_down_operands(const RnsPoly& b, const RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a,
                                      std::size_t min_q, bool p_prefix, const char* op,
                                      const char* pair_message) const {
    for (const RnsPoly* x : {&b, &a}) {
        check_mine(*x, op);
        require(x->ntt_form() && x->num_p() > 0 && x->num_p() <= ring_->p_count() &&
                    (p_prefix || x->num_p() == ring_->p_count()) && x->num_q() >= min_q && x->num_q() == b.num_q() &&
                    x->num_p() == b.num_p(),
                op, pair_message);
    }
    check_addends(add_b, add_a, b.num_q(), op);
}

void Backend::check_addends(const RnsPoly* add_b, const RnsPoly* add_a, std::size_t num_q, const char* op) const {
    for (const RnsPoly* add : {add_b, add_a}) {
        if (!add) continue;
        check_mine(*add, op);
        require(add->num_q() == num_q && add->num_p() == 0 && add->ntt_form(), op,
                "an addend must be an NTT-form polynomial over Q_l");
    }
}

void Backend::check_switched(const RnsPoly& d, const char* op) const {
    check_mine(d, op);
    require(d.ntt_form() && d.num_p() == 0 && ring_->p_count() > 0, op, "needs an NTT-form polynomial over Q_l");
}

const GadgetKey& Backend::with_a_parts(const GadgetKey& key, GadgetKey& storage) const {
    if (!key.compact() || draws_key_limbs()) return key;
    storage = drawn(key);
    return storage;
}

void Backend::mod_down(const RnsPoly& b, const RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a, u64 galois_elt,
                       RnsPoly& out_b, RnsPoly& out_a, Exec exec) const {
    check_mod_down_operands(b, a, add_b, add_a, 0, true, "mod_down", "needs two NTT-form polynomials over Q_l * P_k");
    require(&out_b != &out_a, "mod_down", "the two outputs must be two polynomials");
    do_mod_down(b, a, add_b, add_a, galois_elt, out_b, out_a, exec);
}

void Backend::mod_down_rescale(RnsPoly& b, RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a, Exec exec) const {
    check_mod_down_operands(b, a, add_b, add_a, 2, true, "mod_down_rescale",
                            "needs two NTT-form polynomials over Q_l * P_k, l >= 1");
    require(&b != &a, "mod_down_rescale", "b and a must be two polynomials");
    if (b.num_p() == ring_->p_count()) return do_mod_down_rescale(b, a, add_b, add_a, exec);
    // Over fewer special primes (a key for low levels): ModDown, then the rescale (the backends' fused conversion is
    // for all of P).
    RnsPoly out_b, out_a;
    shape(b.num_q(), 0, true, out_b);
    shape(b.num_q(), 0, true, out_a);
    do_mod_down(b, a, add_b, add_a, 1, out_b, out_a, exec);
    do_rescale(out_b, exec);
    do_rescale(out_a, exec);
    b = std::move(out_b);
    a = std::move(out_a);
}

void Backend::add_times_p(const RnsPoly& d, RnsPoly& x, Exec exec, std::size_t first, std::size_t count) const {
    check_mine(d, "add_times_p");
    check_mine(x, "add_times_p");
    if (count == npos) count = d.num_q() > first ? d.num_q() - first : 0;
    require(
        d.num_q() == x.num_q() && d.ntt_form() == x.ntt_form() && first + count <= d.num_q() && ring_->p_count() > 0,
        "add_times_p", "d and x over the same q-limbs, in one form");
    do_add_times_p(d, x, first, count, exec);
}

namespace {
// A key over Q_m * P_k (its digits' shape) serving operands over Q_l, l <= m: every digit of that shape, as many
// digits as Q_m splits into, and its a-parts (or, compact, their drawer); num_p > 0: k must be num_p.
void check_key(const RnsContext& r, const GadgetKey& key, std::size_t nq, std::size_t num_p, const char* op) {
    const std::vector<RnsPoly>& b = key.b_parts();
    require(!b.empty() && (key.compact() || b.size() == key.a.size()), op,
            "the key has no digits, or unequal numbers of b- and a-parts");
    const std::size_t kq = b[0].num_q(), kp = b[0].num_p();
    require(kp >= 1 && kp <= r.p_count() && (num_p == 0 || kp == num_p) && b.size() == r.digits_at(kq), op,
            "the keys must have one digit per alpha q-primes, over a prefix of the special primes (one prefix for all "
            "the keys of a sum)");
    require(kq >= nq, op, "the key serves fewer q-primes than the operand has (a key made for lower levels)");
    for (std::size_t j = 0; j < b.size(); ++j)
        require(b[j].num_q() == kq && b[j].num_p() == kp && b[j].ntt_form() &&
                    (key.compact() || (key.a[j].num_q() == kq && key.a[j].num_p() == kp && key.a[j].ntt_form())),
                op, "key digits must be NTT-form polynomials of one shape");
}

// The keys of one sum (at least one, none null, each as check_key takes it, all over the first key's special
// primes): that count.
std::size_t check_terms(const RnsContext& r, const std::vector<KeyTerm>& terms, std::size_t nq, const char* op) {
    for (const KeyTerm& t : terms) require(t.key != nullptr, op, "null key");
    check_key(r, *terms.front().key, nq, 0, op);
    const std::size_t kp = terms.front().key->b_parts()[0].num_p();
    for (const KeyTerm& t : terms) check_key(r, *t.key, nq, kp, op);
    return kp;
}
}  // namespace

GadgetKey Backend::drawn(const GadgetKey& key) const {
    GadgetKey x;
    x.b_of = &key.b_parts();
    const std::size_t kq = x.b_of->front().num_q(), kp = x.b_of->front().num_p();
    for (std::size_t j = 0; j < x.b_of->size(); ++j) {
        x.a.push_back(poly(kq, kp, true));
        upload(x.a.back(), [&](std::size_t l, std::uint64_t* d) { key.a_limb(j, ring_->prime_index(l, kq), d); });
    }
    return x;
}

std::vector<RnsPoly> Backend::mod_up(const RnsPoly& d, Exec exec) const {
    check_switched(d, "mod_up");
    return do_mod_up(d, exec);
}

void Backend::key_switch(const RnsPoly& d, const GadgetKey& key, RnsPoly& b, RnsPoly& a, Exec exec) const {
    check_switched(d, "key_switch");
    check_key(*ring_, key, d.num_q(), 0, "key_switch");
    const std::size_t kp = key.b_parts()[0].num_p();
    shape(d.num_q(), kp, true, b);
    shape(d.num_q(), kp, true, a);
    GadgetKey storage;
    do_key_switch(d, with_a_parts(key, storage), b, a, exec);
}

void Backend::key_switch_mod_down(const RnsPoly& d, const GadgetKey& key, const RnsPoly* add_b, const RnsPoly* add_a,
                                  u64 galois_elt, bool rescale, RnsPoly& out_b, RnsPoly& out_a, Exec exec) const {
    const char* op = "key_switch_mod_down";
    check_switched(d, op);
    check_key(*ring_, key, d.num_q(), 0, op);
    require(!rescale || (galois_elt == 1 && d.num_q() >= 2), op, "a rescale needs l >= 1 and no automorphism");
    require(&out_b != &out_a, op, "the two outputs must be two polynomials");
    check_addends(add_b, add_a, d.num_q(), op);
    GadgetKey storage;
    const GadgetKey& whole = with_a_parts(key, storage);
    if (!rescale || key.b_parts()[0].num_p() == ring_->p_count())
        return do_key_switch_mod_down(d, whole, add_b, add_a, galois_elt, rescale, out_b, out_a, exec);
    // A key over fewer special primes: ModDown, then the rescale (as mod_down_rescale).
    do_key_switch_mod_down(d, whole, add_b, add_a, 1, false, out_b, out_a, exec);
    do_rescale(out_b, exec);
    do_rescale(out_a, exec);
}

void Backend::do_key_switch_mod_down(const RnsPoly& d, const GadgetKey& key, const RnsPoly* add_b, const RnsPoly* add_a,
                                     u64 galois_elt, bool rescale, RnsPoly& out_b, RnsPoly& out_a, Exec exec) const {
    RnsPoly b, a;
    const std::size_t kp = key.b_parts()[0].num_p();
    shape(d.num_q(), kp, true, b);
    shape(d.num_q(), kp, true, a);
    do_key_switch(d, key, b, a, exec);
    if (!rescale) return do_mod_down(b, a, add_b, add_a, galois_elt, out_b, out_a, exec);
    do_mod_down_rescale(b, a, add_b, add_a, exec);
    out_b = std::move(b);
    out_a = std::move(a);
}

void Backend::key_switch_sum_mod_down(const RnsPoly& d, const std::vector<KeyTerm>& terms, const RnsPoly& c0,
                                      RnsPoly& out_b, RnsPoly& out_a, Exec exec) const {
    const char* op = "key_switch_sum_mod_down";
    check_switched(d, op);
    check_mine(c0, op);
    require(!terms.empty(), op, "needs at least one key");
    require(c0.num_q() == d.num_q() && c0.num_p() == 0 && c0.ntt_form(), op,
            "c0 must be an NTT-form polynomial over Q_l");
    require(&out_b != &out_a, op, "the two outputs must be two polynomials");
    check_terms(*ring_, terms, d.num_q(), op);
    std::vector<GadgetKey> keys;
    do_key_switch_sum_mod_down(d, terms_with_a_parts(terms, keys), c0, out_b, out_a, exec);
}

void Backend::do_key_switch_sum_mod_down(const RnsPoly& d, const std::vector<KeyTerm>& terms, const RnsPoly& c0,
                                         RnsPoly& out_b, RnsPoly& out_a, Exec exec) const {
    const std::vector<RnsPoly> digits = do_mod_up(d, exec);
    RnsPoly b, a, c0_sum;
    const std::size_t kp = terms[0].key->b_parts()[0].num_p();
    shape(d.num_q(), kp, true, b);
    shape(d.num_q(), kp, true, a);
    shape(c0, c0_sum);
    do_inner_product(digits, terms, b, a, &c0, &c0_sum, exec);
    do_mod_down(b, a, &c0_sum, nullptr, 1, out_b, out_a, exec);
}

std::size_t Backend::check_digits(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms,
                                  const char* op) const {
    require(!digits.empty() && !terms.empty(), op, "needs digits and at least one key");
    const std::size_t nq = digits[0].num_q();
    require(digits.size() == ring_->digits_at(nq), op, "wrong number of digits for their level");
    for (const RnsPoly& d : digits) {
        check_mine(d, op);
        require(d.num_q() == nq && d.num_p() == ring_->p_count() && d.ntt_form(), op,
                "digits must be NTT form over Q_l * P");
    }
    return nq;
}

void Backend::inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, RnsPoly& b,
                            RnsPoly& a, const RnsPoly* c0, RnsPoly* c0_out, Exec exec) const {
    const char* op = "inner_product";
    // Over Q_l * P_k, the keys' special primes (the digits' first k special limbs are their ModUp to P_k).
    const std::size_t nq = check_digits(digits, terms, op), kp = check_terms(*ring_, terms, nq, op);
    shape(nq, kp, true, b);
    shape(nq, kp, true, a);
    if (c0) {
        check_mine(*c0, op);
        require(c0_out && c0 != c0_out && c0->num_q() == nq && c0->num_p() == 0 && c0->ntt_form(), op,
                "c0 must be an NTT-form polynomial over Q_l, with its own output");
        shape(*c0, *c0_out);
    }
    std::vector<GadgetKey> keys;
    do_inner_product(digits, terms_with_a_parts(terms, keys), b, a, c0, c0_out, exec);
}

void Backend::inner_product_sums(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms,
                                 const RnsPoly& c0, const std::vector<std::vector<ProductTerm>>& groups,
                                 const std::vector<std::array<RnsPoly*, 3>>& out, Exec exec) const {
    const char* op = "inner_product_sums";
    const std::size_t nq = check_digits(digits, terms, op), kp = check_terms(*ring_, terms, nq, op);
    check_mine(c0, op);
    require(c0.num_q() == nq && c0.num_p() == 0 && c0.ntt_form(), op, "c0 must be an NTT-form polynomial over Q_l");
    require(!groups.empty() && groups.size() == out.size(), op, "one output per group, at least one group");
    for (const auto& g : groups) {
        require(!g.empty(), op, "every group needs a term");
        for (const ProductTerm& e : g) {
            require(e.term < terms.size() && e.plain != nullptr, op, "a term index out of range or a null plaintext");
            check_plaintext(*e.plain, op);
            require(e.plain->ntt_form() && e.plain->num_q() == nq && e.plain->num_p() >= kp, op,
                    "a plaintext must be in NTT form over the digits' Q_l and the keys' special primes");
        }
    }
    std::vector<const RnsPoly*> seen = {&c0};
    for (const RnsPoly& d : digits) seen.push_back(&d);
    for (const auto& g : groups)
        for (const ProductTerm& e : g) seen.push_back(e.plain);
    for (const auto& o : out)
        for (RnsPoly* p : o) {
            require(p != nullptr && std::find(seen.begin(), seen.end(), p) == seen.end(), op,
                    "every output must be its own polynomial, none an input");
            seen.push_back(p);
        }
    for (const auto& o : out) {
        shape(nq, 0, true, *o[0]);
        shape(nq, kp, true, *o[1]);
        shape(nq, kp, true, *o[2]);
    }
    std::vector<GadgetKey> keys;
    do_inner_product_sums(digits, terms_with_a_parts(terms, keys), c0, groups, out, exec);
}

void Backend::do_inner_product_sums(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms,
                                    const RnsPoly& c0, const std::vector<std::vector<ProductTerm>>& groups,
                                    const std::vector<std::array<RnsPoly*, 3>>& out, Exec exec) const {
    std::vector<std::array<RnsPoly, 3>> products(terms.size());  // (c0, b, a) of each term used
    std::vector<bool> made(terms.size(), false);
    for (const auto& g : groups)
        for (const ProductTerm& e : g) {
            if (made[e.term]) continue;
            made[e.term] = true;
            auto& [pc, pb, pa] = products[e.term];
            shape(c0, pc);
            shape(c0.num_q(), terms[e.term].key->b_parts()[0].num_p(), true, pb);
            shape(c0.num_q(), pb.num_p(), true, pa);
            do_inner_product(digits, {terms[e.term]}, pb, pa, &c0, &pc, exec);
        }
    for (std::size_t j = 0; j < groups.size(); ++j) {
        std::vector<std::vector<const RnsPoly*>> x;
        std::vector<const RnsPoly*> y;
        for (const ProductTerm& e : groups[j]) {
            const auto& [pc, pb, pa] = products[e.term];
            x.push_back({&pc, &pb, &pa});
            y.push_back(e.plain);
        }
        do_sum_of_products(x, y, {out[j][0], out[j][1], out[j][2]}, false, exec);
    }
}

std::vector<KeyTerm> Backend::terms_with_a_parts(const std::vector<KeyTerm>& terms,
                                                 std::vector<GadgetKey>& keys) const {
    std::vector<KeyTerm> whole = terms;
    if (draws_key_limbs()) return whole;
    keys.reserve(terms.size());  // the compact keys' a-parts, drawn for this call (no reallocation: pointers are kept)
    for (KeyTerm& t : whole)
        if (t.key->compact()) t.key = &keys.emplace_back(drawn(*t.key));
    return whole;
}

std::vector<__int128> centered_q0(const Backend& be, const RnsPoly& p, Exec exec) {
    const std::uint64_t q0 = be.ring().prime(0);
    const std::size_t n = p.n();
    std::vector<__int128> out(n);
    RnsPoly c = p;
    c.truncate(1, 0);  // only q_0's limb is read
    be.from_ntt(c, exec);
    be.download(
        c,
        [&](const std::uint64_t* const* limbs) {
            for (std::size_t i = 0; i < n; ++i) {
                const std::uint64_t v = limbs[0][i];
                out[i] = v > q0 / 2 ? static_cast<__int128>(v) - static_cast<__int128>(q0) : static_cast<__int128>(v);
            }
        },
        exec, 1);
    return out;
}

}  // namespace kasoku::rns
