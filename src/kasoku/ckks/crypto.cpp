#include "kasoku/ckks/crypto.hpp"

#include <string>

#include "checks_internal.hpp"
#include "kasoku/arith/kernels.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/threads.hpp"
#include "sampling_internal.hpp"

namespace kasoku::ckks {

using rns::RnsPoly;

namespace {
// Signed small coefficients into an RnsPoly over q_0..q_{num_q-1} and p_0..p_{num_p-1}, NTT form.
RnsPoly small_poly(const Context& ctx, const std::vector<std::int64_t>& c, std::size_t num_q, std::size_t num_p, int threads) {
    RnsPoly p(ctx.n(), num_q, num_p, false);
    ctx.rns().set_signed(c.data(), p, threads);
    ctx.rns().to_ntt(p, threads);
    return p;
}
}  // namespace

SecretKey KeyGenerator::secret_key(int threads) const {
    threads = ctx_->threads_or_default(threads);
    Prng prng;
    auto s = detail::sample_ternary(ctx_->n(), ctx_->params().hamming_weight, prng);
    RnsPoly poly = small_poly(*ctx_, s, ctx_->rns().q_count(), ctx_->rns().p_count(), threads);
    secure_wipe(s.data(), s.size() * sizeof s[0]);
    std::uint64_t id;
    os_random_bytes(&id, sizeof id);
    return SecretKey(std::move(poly), ctx_->uid(), id);
}

PublicKey KeyGenerator::public_key(const SecretKey& sk, int threads) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    threads = ctx_->threads_or_default(threads);
    const auto& r = ctx_->rns();
    Prng prng;
    PublicKey pk;
    pk.context_uid = ctx_->uid();
    pk.key_id = sk.key_id();
    // Over Q * p_0: encryption divides its noise by p_0 (see Encryptor::encrypt).
    pk.a = RnsPoly(ctx_->n(), r.q_count(), 1, true);
    detail::sample_uniform(r, pk.a, prng);
    pk.b = small_poly(*ctx_, detail::sample_gaussian(ctx_->n(), prng), r.q_count(), 1, threads);
    RnsPoly s = sk.poly();
    s.truncate(r.q_count(), 1);
    RnsPoly as;
    r.mul(pk.a, s, as, threads);
    r.sub(pk.b, as, pk.b, threads);  // b = e - a s
    s.wipe();
    as.wipe();
    return pk;
}

SwitchKey KeyGenerator::switch_key(const SecretKey& sk, const RnsPoly& s_from, const RnsPoly& s_to, int threads) const {
    const auto& r = ctx_->rns();
    const std::size_t nq = r.q_count(), np = r.p_count(), alpha = r.alpha();
    Prng prng;
    SwitchKey key;
    key.context_uid = ctx_->uid();
    key.key_id = sk.key_id();
    // P mod q_i
    std::vector<std::uint64_t> p_mod(nq);
    for (std::size_t i = 0; i < nq; ++i) {
        std::uint64_t v = 1;
        for (std::uint64_t p : r.p_primes()) v = arith::mul_mod(v, p % r.prime(i), r.modulus(i));
        p_mod[i] = v;
    }
    for (std::size_t j = 0; j < r.dnum(); ++j) {
        RnsPoly a(ctx_->n(), nq, np, true);
        detail::sample_uniform(r, a, prng);
        RnsPoly b = small_poly(*ctx_, detail::sample_gaussian(ctx_->n(), prng), nq, np, threads);
        RnsPoly as;
        r.mul(a, s_to, as, threads);
        r.sub(b, as, b, threads);
        as.wipe();
        // + P * s_from on the primes of digit j
        for (std::size_t i = j * alpha; i < std::min(nq, (j + 1) * alpha); ++i) {
            std::vector<std::uint64_t> t(ctx_->n());
            arith::mul_scalar_mod(s_from.limb(i), p_mod[i], arith::shoup(p_mod[i], r.prime(i)), ctx_->n(), r.prime(i), t.data());
            arith::add_mod(b.limb(i), t.data(), ctx_->n(), r.prime(i), b.limb(i));
            secure_wipe(t.data(), t.size() * sizeof t[0]);
        }
        key.b.push_back(std::move(b));
        key.a.push_back(std::move(a));
    }
    return key;
}

SwitchKey KeyGenerator::relin_key(const SecretKey& sk, int threads) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    threads = ctx_->threads_or_default(threads);
    RnsPoly s2;
    ctx_->rns().mul(sk.poly(), sk.poly(), s2, threads);
    SwitchKey k = switch_key(sk, s2, sk.poly(), threads);
    s2.wipe();
    return k;
}

SwitchKey KeyGenerator::galois_key(const SecretKey& sk, std::uint64_t galois_elt, int threads) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    threads = ctx_->threads_or_default(threads);
    if (galois_elt % 2 == 0 || galois_elt >= 2 * ctx_->n())
        throw ParameterError("Galois element " + std::to_string(galois_elt) + " must be odd and below 2n");
    // Switches from s to s(X^{g^-1}): the evaluator applies X -> X^g after the inner product (seed 000 Alg. 3.2.1),
    // which turns it into the key switch from s(X^g) to s that the automorphism needs.
    RnsPoly s_inv;
    ctx_->rns().automorphism(sk.poly(), galois_inverse(galois_elt, 2 * ctx_->n()), s_inv, threads);
    SwitchKey k = switch_key(sk, sk.poly(), s_inv, threads);
    s_inv.wipe();
    return k;
}

EvaluationKeys KeyGenerator::evaluation_keys(const SecretKey& sk, bool relin, const std::vector<std::int64_t>& rotations,
                                             bool conjugation, const std::vector<std::uint64_t>& galois_elements,
                                             int threads) const {
    EvaluationKeys ek;
    ek.context_uid = ctx_->uid();
    ek.key_id = sk.key_id();
    if (relin) ek.relin = std::make_shared<const SwitchKey>(relin_key(sk, threads));
    std::vector<std::uint64_t> elts;
    for (std::int64_t step : rotations) elts.push_back(ctx_->galois_element(step));
    if (conjugation) elts.push_back(ctx_->conjugation_element());
    elts.insert(elts.end(), galois_elements.begin(), galois_elements.end());
    for (std::uint64_t g : elts)
        if (g != 1 && !ek.galois.count(g)) ek.galois[g] = std::make_shared<const SwitchKey>(galois_key(sk, g, threads));
    return ek;
}

Ciphertext Encryptor::encrypt(const Plaintext& pt, const PublicKey& pk, int threads) const {
    detail::check_key(*ctx_, pk.context_uid, "public key");
    detail::check_plain(*ctx_, pt);
    threads = ctx_->threads_or_default(threads);
    const auto& r = ctx_->rns();
    const std::size_t nq = pt.poly.num_q();
    Prng prng;
    // (v pk_0 + e_0, v pk_1 + e_1) over Q_l * p_0, divided by p_0 with rounding: the fresh noise is then the
    // rounding error, not v e + e_0 + e_1 s (about 2^9 smaller at N = 2^16), for a few NTTs more.
    auto v = small_poly(*ctx_, detail::sample_ternary(ctx_->n(), 0, prng), nq, 1, threads);
    Ciphertext ct;
    ct.scale = pt.scale;
    ct.context_uid = ctx_->uid();
    ct.key_id = pk.key_id;
    ct.polys.resize(2);
    RnsPoly b = pk.b, a = pk.a;
    b.truncate(nq, 1);
    a.truncate(nq, 1);
    for (int k = 0; k < 2; ++k) {
        auto e = detail::sample_gaussian(ctx_->n(), prng);
        r.mul(v, k == 0 ? b : a, ct.polys[k], threads);
        r.divide_round_by_p0(ct.polys[k], threads, e.data());  // round((v pk_k + e_k) / p_0)
    }
    r.add(ct.polys[0], pt.poly, ct.polys[0], threads);
    v.wipe();
    return ct;
}

Ciphertext Encryptor::encrypt_symmetric(const Plaintext& pt, const SecretKey& sk, int threads) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    detail::check_plain(*ctx_, pt);
    threads = ctx_->threads_or_default(threads);
    const auto& r = ctx_->rns();
    const std::size_t nq = pt.poly.num_q();
    Prng prng;
    Ciphertext ct;
    ct.scale = pt.scale;
    ct.context_uid = ctx_->uid();
    ct.key_id = sk.key_id();
    RnsPoly a(ctx_->n(), nq, 0, true);
    detail::sample_uniform(r, a, prng);
    RnsPoly s = sk.poly();
    s.truncate(nq);
    RnsPoly c0 = small_poly(*ctx_, detail::sample_gaussian(ctx_->n(), prng), nq, 0, threads);
    r.add(c0, pt.poly, c0, threads);
    RnsPoly as;
    r.mul(a, s, as, threads);
    r.sub(c0, as, c0, threads);
    s.wipe();
    ct.polys = {std::move(c0), std::move(a)};
    return ct;
}

std::vector<std::complex<double>> Decryptor::decrypt(const Ciphertext& ct, const SecretKey& sk, int threads) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    detail::check_ciphertext(*ctx_, ct, "ciphertext");
    if (ct.key_id != sk.key_id())
        throw ParameterError("this ciphertext was encrypted under another key than the secret key given; "
                             "decrypt it with the secret key of the key pair that encrypted it");
    threads = ctx_->threads_or_default(threads);
    const auto& r = ctx_->rns();
    // Only the limbs that determine the message are needed: m = c0 + c1 s (+ c2 s^2) on those.
    const std::size_t t = encoder_.limbs_for_scale(ct.scale, ct.level());
    const std::size_t n = ctx_->n();
    RnsPoly m(n, t, 0, true);
    parallel_for(threads, t, [&](std::size_t i) {
        const arith::Modulus& mod = r.modulus(i);
        const std::uint64_t* s = sk.poly().limb(i);
        std::vector<std::uint64_t> acc(ct.polys.back().limb(i), ct.polys.back().limb(i) + n);
        for (std::size_t k = ct.size() - 1; k-- > 0;) {
            arith::fma_mod(acc.data(), s, ct.polys[k].limb(i), n, mod, acc.data());  // Horner in s
        }
        std::copy(acc.begin(), acc.end(), m.limb(i));
        secure_wipe(acc.data(), acc.size() * sizeof acc[0]);
    });
    r.from_ntt(m, threads);
    auto out = encoder_.decode(m, t, ct.scale);
    m.wipe();
    return out;
}

}  // namespace kasoku::ckks
