#include "kasoku/ckks/crypto.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "checks_internal.hpp"
#include "kasoku/support/error.hpp"
#include "sampling_internal.hpp"

namespace kasoku::ckks {

using rns::RnsPoly;

namespace {
// Signed small coefficients into an RnsPoly over q_0..q_{num_q-1} and p_0..p_{num_p-1}, NTT form.
RnsPoly small_poly(const Context& ctx, const std::vector<std::int64_t>& c, std::size_t num_q, std::size_t num_p,
                   Exec exec) {
    RnsPoly p = ctx.backend().poly(num_q, num_p, true);
    ctx.backend().from_signed(c.data(), p, exec);
    return p;
}

// Whether the b_j of a key over Q_m * P_k (nq = m + 1, np = k) may be rounded to multiples of the first prime q_0 (so
// that their limb mod q_0 is zero and is not stored, Power2Round-style): the rounding adds |r_j| <= q_0 / 2 to each
// b_j, and the key switch's output gains sum_j d_j r_j / P_k, below n * digits * (Q_j / 2) (q_0 / 2) / P_k for digits
// |d_j| < Q_j / 2. Allowed when that bound is below 2^-20, far under the key switch's own rounding error (1 + ||s||).
bool rounds_first_limb(const rns::RnsContext& r, std::size_t nq, std::size_t np) {
    double log_p = 0.0, log_qj = 0.0;
    for (std::size_t i = 0; i < np; ++i) log_p += std::log2(static_cast<double>(r.p_primes()[i]));
    for (std::size_t j = 0; j < r.digits_at(nq); ++j) {
        double s = 0.0;
        for (std::size_t i = 0; i < r.digit_size(j, nq); ++i)
            s += std::log2(static_cast<double>(r.q_primes()[r.digit_begin(j) + i]));
        log_qj = std::max(log_qj, s);
    }
    const double bound = std::log2(static_cast<double>(r.n()) * static_cast<double>(r.digits_at(nq))) + log_qj +
                         std::log2(static_cast<double>(r.q_primes()[0])) - 2.0 - log_p;
    return bound < -20.0;
}

// The key's error e_j as the residues of e_j - r_j, r_j = [b_j + e_j]_{q_0} centered, for b_j = -a_j s + P g_j s' so
// far: b_j + e_j - r_j is then a multiple of q_0. Made in the one lift that adds the error (no pass of its own).
std::vector<__int128> error_rounding_to_q0(const Context& ctx, const RnsPoly& b, const std::vector<std::int64_t>& e,
                                           Exec exec) {
    std::vector<__int128> u =
        rns::centered_q0(ctx.backend(), b, exec);  // [b]_{q_0}: secret-derived, wiped by the caller
    const auto q0 = static_cast<__int128>(ctx.rns().q_primes()[0]);
    for (std::size_t i = 0; i < u.size(); ++i) {
        __int128 r = u[i] + e[i];  // in (-q_0/2 - 20, q_0/2 + 20): center it again
        if (r > q0 / 2) r -= q0;
        else if (r <= -q0 / 2) r += q0;
        u[i] = e[i] - r;
    }
    return u;
}
}  // namespace

SecretKey KeyGenerator::secret_key(Exec exec) const {
    exec = ctx_->exec(exec);
    Prng prng;
    auto s = detail::sample_ternary(ctx_->n(), ctx_->params().hamming_weight, prng);
    RnsPoly poly = small_poly(*ctx_, s, ctx_->rns().q_count(), ctx_->rns().p_count(), exec);
    secure_wipe(s.data(), s.size() * sizeof s[0]);
    std::uint64_t id;
    os_random_bytes(&id, sizeof id);
    return SecretKey(std::move(poly), ctx_->uid(), id);
}

RnsPoly uniform_poly(const Context& ctx, const Seed& seed, std::size_t part, std::size_t num_q, std::size_t num_p) {
    RnsPoly out = ctx.backend().poly(num_q, num_p, true);
    detail::sample_uniform(ctx.backend(), seed, part, out);
    return out;
}

RnsPoly error_poly(const Context& ctx, std::size_t num_q, std::size_t num_p, Exec exec) {
    Prng prng;
    return small_poly(ctx, detail::sample_gaussian(ctx.n(), prng), num_q, num_p, ctx.exec(exec));
}

RnsPoly ternary_poly(const Context& ctx, std::size_t num_q, std::size_t num_p, Exec exec) {
    Prng prng;
    std::vector<std::int64_t> t = detail::sample_ternary(ctx.n(), 0, prng);
    RnsPoly p = small_poly(ctx, t, num_q, num_p, ctx.exec(exec));
    secure_wipe(t.data(), t.size() * sizeof t[0]);
    return p;
}

PublicKey KeyGenerator::public_key(const SecretKey& sk, Exec exec) const { return public_key(sk, random_seed(), exec); }

PublicKey KeyGenerator::public_key(const SecretKey& sk, const Seed& common, Exec exec) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    exec = ctx_->exec(exec);
    const auto& r = ctx_->rns();
    const auto& be = ctx_->backend();
    Prng prng;
    PublicKey pk;
    pk.context_uid = ctx_->uid();
    pk.key_id = sk.key_id();
    // Over Q * p_0: encryption divides its noise by p_0 (see Encryptor::encrypt).
    pk.a = uniform_poly(*ctx_, common, 0, r.q_count(), 1);
    pk.seed = common;
    pk.b = small_poly(*ctx_, detail::sample_gaussian(ctx_->n(), prng), r.q_count(), 1, exec);
    RnsPoly s = sk.poly();
    s.truncate(r.q_count(), 1);
    RnsPoly as;
    be.mul(pk.a, s, as, exec);
    be.sub(pk.b, as, pk.b, exec);  // b = e - a s
    s.wipe();
    as.wipe();
    return pk;
}

SwitchKey KeyGenerator::switch_key(const SecretKey& sk, const RnsPoly& s_from, const RnsPoly& s_to, const Seed& seed,
                                   Exec exec) const {
    const auto& r = ctx_->rns();
    const auto& be = ctx_->backend();
    const std::size_t nq = s_to.num_q(), np = s_to.num_p();
    if (!s_from.same_shape(s_to) || np == 0) throw InternalError("switch_key: the two secrets over one Q_m * P_k");
    Prng prng;
    SwitchKey key;
    key.context_uid = ctx_->uid();
    key.key_id = sk.key_id();
    key.seed = seed;  // stands for every a_j: part j of the seed (detail::uniform_limb)
    const bool round = rounds_first_limb(r, nq, np);
    for (std::size_t j = 0; j < r.digits_at(nq); ++j) {
        RnsPoly a = be.poly(nq, np, true);
        detail::sample_uniform(be, *key.seed, j, a);
        const std::vector<std::int64_t> e = detail::sample_gaussian(ctx_->n(), prng);
        RnsPoly b, err = be.poly(nq, np, true);
        be.mul(a, s_to, b, exec);
        be.negate(b, b, exec);
        ctx_->keyswitcher().add_gadget(s_from, j, b, exec);  // -a s_to + P * s_from on the primes of digit j
        if (round) {
            std::vector<__int128> rounded = error_rounding_to_q0(*ctx_, b, e, exec);
            be.from_signed(rounded.data(), err, exec);
            secure_wipe(rounded.data(), rounded.size() * sizeof rounded[0]);
        } else {
            be.from_signed(e.data(), err, exec);
        }
        be.add(b, err, b, exec);  // + e_j (- r_j)
        err.wipe();
        key.b.push_back(std::move(b));
        key.a.push_back(std::move(a));
    }
    return key;
}

SwitchKey KeyGenerator::relin_key(const SecretKey& sk, Exec exec) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    exec = ctx_->exec(exec);
    RnsPoly s2;
    ctx_->backend().mul(sk.poly(), sk.poly(), s2, exec);
    SwitchKey k = switch_key(sk, s2, sk.poly(), random_seed(), exec);
    s2.wipe();
    return k;
}

SwitchKey KeyGenerator::galois_key(const SecretKey& sk, std::uint64_t galois_elt, Exec exec, int max_level) const {
    if (max_level < 0) return galois_key(sk, galois_elt, random_seed(), exec);
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    exec = ctx_->exec(exec);
    ctx_->check_galois_element(galois_elt, "galois_key");
    const int top = static_cast<int>(ctx_->rns().q_count()) - 1;
    if (max_level > top)
        throw ParameterError("galois_key: level " + std::to_string(max_level) + " is above the top level " +
                             std::to_string(top));
    // Over Q_max_level * P_k: the secrets' first max_level + 1 q-limbs and the special limbs a key for those levels
    // needs (RnsContext::special_for).
    const std::size_t nq = static_cast<std::size_t>(max_level) + 1;
    RnsPoly s = sk.poly(), s_inv;
    s.truncate(nq, ctx_->rns().special_for(nq));
    ctx_->backend().automorphism(s, galois_inverse(galois_elt, 2 * ctx_->n()), s_inv, exec);
    SwitchKey k = switch_key(sk, s, s_inv, random_seed(), exec);
    s.wipe();
    s_inv.wipe();
    return k;
}

SwitchKey KeyGenerator::galois_key(const SecretKey& sk, std::uint64_t galois_elt, const Seed& common, Exec exec) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    exec = ctx_->exec(exec);
    ctx_->check_galois_element(galois_elt, "galois_key");
    // Switches from s to s(X^{g^-1}): the evaluator applies X -> X^g after the inner product (Inoue 2022 Alg. 3.2.1),
    // which turns it into the key switch from s(X^g) to s that the automorphism needs.
    RnsPoly s_inv;
    ctx_->backend().automorphism(sk.poly(), galois_inverse(galois_elt, 2 * ctx_->n()), s_inv, exec);
    SwitchKey k = switch_key(sk, sk.poly(), s_inv, common, exec);
    s_inv.wipe();
    return k;
}

EvaluationKeys KeyGenerator::evaluation_keys(const SecretKey& sk, bool relin,
                                             const std::vector<std::int64_t>& rotations, bool conjugation,
                                             const std::vector<std::uint64_t>& galois_elements, Exec exec,
                                             const Progress& progress, bool compact,
                                             const std::map<std::uint64_t, int>& galois_levels) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");  // also when no key is asked for
    EvaluationKeys ek;
    ek.context_uid = ctx_->uid();
    ek.key_id = sk.key_id();
    std::vector<std::uint64_t> elts;
    elts.reserve(rotations.size() + 1 + galois_elements.size());
    for (std::int64_t step : rotations) elts.push_back(ctx_->galois_element(step));
    if (conjugation) elts.push_back(ctx_->conjugation_element());
    elts.insert(elts.end(), galois_elements.begin(), galois_elements.end());
    std::sort(elts.begin(), elts.end());
    elts.erase(std::unique(elts.begin(), elts.end()), elts.end());
    elts.erase(std::remove(elts.begin(), elts.end(), std::uint64_t{1}), elts.end());
    const std::size_t total = elts.size() + (relin ? 1 : 0);
    std::size_t done = 0;
    const auto keep = [&](SwitchKey k, bool drop_a) {
        if (drop_a) k.a.clear();  // drawn from k.seed at each use (detail::gadget_key)
        if (progress) progress(++done, total);
        return std::make_shared<const SwitchKey>(std::move(k));
    };
    if (relin) ek.relin = keep(relin_key(sk, exec), false);
    for (std::uint64_t galois_elt : elts) {
        const auto lv = galois_levels.find(galois_elt);
        ek.galois[galois_elt] =
            keep(galois_key(sk, galois_elt, exec, lv == galois_levels.end() ? -1 : lv->second), compact);
    }
    return ek;
}

namespace detail {
std::shared_ptr<const rns::GadgetKey> gadget_key(const Context& ctx, std::shared_ptr<const SwitchKey> key) {
    if (!key->a.empty()) return key;
    if (!key->seed) throw InternalError("a key without its a-parts and without their seed");
    struct Compact : rns::GadgetKey {
        std::shared_ptr<const SwitchKey> owner;  // whose b-parts and seed these are
    };
    auto x = std::make_shared<Compact>();
    x->b_of = &key->b;
    const Seed* seed = &*key->seed;
    const rns::RnsContext* ring = &ctx.rns();
    x->a_limb = [seed, ring](std::size_t digit, std::size_t prime, std::uint64_t* out) {
        uniform_limb(*seed, digit, prime, ring->prime(prime), ring->n(), out);
    };
    x->owner = std::move(key);
    return x;
}
}  // namespace detail

void KeyGenerator::encapsulation_keys(const SecretKey& sk, EvaluationKeys& ek, Exec exec) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    detail::check_key(*ctx_, ek.context_uid, "evaluation keys");
    if (ek.key_id != sk.key_id())
        throw ParameterError("encapsulation_keys: the evaluation keys belong to another secret key");
    const int h = ctx_->params().boot_secret_weight;
    if (h <= 0)
        throw ParameterError(
            "encapsulation keys need parameters with boot_secret_weight > 0 (the ephemeral secret's weight)");
    exec = ctx_->exec(exec);
    const auto& r = ctx_->rns();
    Prng prng;
    auto sparse = detail::sample_ternary(ctx_->n(), h, prng);
    // to_sparse over q_0 * p_0 only, the smallest modulus, where the sparse secret keeps its security: the ordinary
    // key of that shape (one digit), applied by the ordinary key switch at level 0 (Backend::key_switch).
    RnsPoly s = sk.poly(), s1 = small_poly(*ctx_, sparse, 1, 1, exec);
    s.truncate(1, 1);
    ek.to_sparse = std::make_shared<const SwitchKey>(switch_key(sk, s, s1, random_seed(), exec));
    s.wipe();
    s1.wipe();
    RnsPoly s_sparse = small_poly(*ctx_, sparse, r.q_count(), r.p_count(), exec);
    ek.from_sparse = std::make_shared<const SwitchKey>(switch_key(sk, s_sparse, sk.poly(), random_seed(), exec));
    s_sparse.wipe();
    secure_wipe(sparse.data(), sparse.size() * sizeof sparse[0]);
}

Ciphertext Encryptor::encrypt(const Plaintext& pt, const PublicKey& pk, Exec exec) const {
    return encrypt(pt, pk, random_seed(), exec);
}

Ciphertext Encryptor::encrypt(const Plaintext& pt, const PublicKey& pk, const Seed& seed, Exec exec) const {
    detail::check_key(*ctx_, pk.context_uid, "public key");
    detail::check_plain(*ctx_, pt);
    exec = ctx_->exec(exec);
    const auto& be = ctx_->backend();
    const std::size_t nq = pt.poly.num_q();
    // (v pk_0 + e_0, v pk_1 + e_1) over Q_l * p_0, divided by p_0 with rounding: the fresh noise is then the
    // rounding error, not v e + e_0 + e_1 s (about 2^9 smaller at N = 2^16), for a few NTTs more. v and the e_k are
    // streams 0, 1, 2 of the seed, drawn by the backend (on a device, there).
    using Kind = rns::SmallDraw::Kind;
    RnsPoly v = be.poly(nq, 1, true);
    be.sample({seed, 0, Kind::ternary}, v, exec);
    Ciphertext ct;
    ct.scale = pt.scale;
    ct.context_uid = ctx_->uid();
    ct.key_id = pk.key_id;
    ct.polys.resize(2);
    // The public key over Q_l * p_0: itself at the top level, else a copy of those limbs.
    const RnsPoly* key[2] = {&pk.b, &pk.a};
    RnsPoly cut[2];
    for (int k = 0; k < 2; ++k) {
        if (key[k]->num_q() == nq && key[k]->num_p() == 1) continue;
        cut[k] = *key[k];
        cut[k].truncate(nq, 1);
        key[k] = &cut[k];
    }
    for (int k = 0; k < 2; ++k) {
        const rns::SmallDraw e{seed, 1 + static_cast<std::uint64_t>(k), Kind::gaussian};
        be.mul(v, *key[k], ct.polys[k], exec);
        be.divide_round_by_p0(ct.polys[k], &e, exec);  // round((v pk_k + e_k) / p_0)
    }
    be.add(ct.polys[0], pt.poly, ct.polys[0], exec);
    v.wipe();
    return ct;
}

Ciphertext Encryptor::encrypt_symmetric(const Plaintext& pt, const SecretKey& sk, Exec exec) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    detail::check_plain(*ctx_, pt);
    exec = ctx_->exec(exec);
    const auto& be = ctx_->backend();
    const std::size_t nq = pt.poly.num_q();
    Ciphertext ct;
    ct.scale = pt.scale;
    ct.context_uid = ctx_->uid();
    ct.key_id = sk.key_id();
    ct.seed = random_seed();  // public (it stands for a): the error comes from a seed of its own
    RnsPoly a = uniform_poly(*ctx_, *ct.seed, 0, nq, 0);
    RnsPoly s = sk.poly();
    s.truncate(nq);
    RnsPoly c0 = be.poly(nq, 0, true);
    be.sample({random_seed(), 0, rns::SmallDraw::Kind::gaussian}, c0, exec);
    be.add(c0, pt.poly, c0, exec);
    RnsPoly as;
    be.mul(a, s, as, exec);
    be.sub(c0, as, c0, exec);
    s.wipe();
    ct.polys = {std::move(c0), std::move(a)};
    return ct;
}

// ---- Noise flooding

double flooding_sigma(std::size_t n, double noise_bound, int statistical_security, std::uint64_t queries) {
    if (statistical_security < 0 || statistical_security > 128)
        throw ParameterError("statistical_security must be in 0..128 bits, not " +
                             std::to_string(statistical_security));
    if (queries < 1) throw ParameterError("queries must be at least 1");
    if (!(noise_bound > 0) || !std::isfinite(noise_bound))
        throw ParameterError("the noise bound must be a finite number > 0, not " + std::to_string(noise_bound));
    return noise_bound * std::sqrt(static_cast<double>(n)) * std::sqrt(static_cast<double>(queries) / 2.0) *
           std::pow(2.0, statistical_security / 2.0);
}

double flooding_precision_bits(std::size_t n, double sigma, double scale, std::size_t shares) {
    return std::log2(scale / (sigma * std::sqrt(static_cast<double>(shares * n))));
}

double rounding_noise_bound(std::size_t n, double secret_variance) {
    return 16.0 * std::sqrt((1.0 + static_cast<double>(n) * secret_variance) / 12.0);
}

RnsPoly flooding_noise(const Context& ctx, double sigma, std::size_t num_q, Prng& prng, Exec exec) {
    std::vector<__int128> e = detail::sample_wide_gaussian(ctx.n(), sigma, prng);
    RnsPoly p = ctx.backend().poly(num_q, 0, true);
    ctx.backend().from_signed(e.data(), p, ctx.exec(exec));
    secure_wipe(e.data(), e.size() * sizeof e[0]);
    return p;
}

// ---- Decryptor

RnsPoly Decryptor::phase(const Ciphertext& ct, const SecretKey& sk, std::size_t limbs, Exec exec) const {
    detail::check_key(*ctx_, sk.context_uid(), "secret key");
    detail::check_ciphertext(*ctx_, ct, "ciphertext");
    if (ct.key_id != sk.key_id())
        throw ParameterError(
            "this ciphertext was encrypted under another key than the secret key given; "
            "decrypt it with the secret key of the key pair that encrypted it");
    RnsPoly m = ctx_->backend().poly(limbs, 0, true);
    std::vector<const RnsPoly*> c;
    for (const auto& p : ct.polys) c.push_back(&p);
    ctx_->backend().horner(c, sk.poly(), m, exec);  // c0 + c1 s (+ c2 s^2), NTT form
    return m;
}

std::vector<std::complex<double>> Decryptor::decrypt(const Ciphertext& ct, const SecretKey& sk, Exec exec) const {
    exec = ctx_->exec(exec);
    detail::check_ciphertext(*ctx_, ct, "ciphertext");  // before its level is read (phase checks the rest)
    // Only the limbs that determine the message are needed.
    const std::size_t t = encoder_.limbs_for_scale(ct.scale, ct.level());
    RnsPoly m = phase(ct, sk, t, exec);
    ctx_->backend().from_ntt(m, exec);
    auto out = encoder_.decode(m, t, ct.scale);
    m.wipe();
    return out;
}

double Decryptor::noise(const Ciphertext& ct, const SecretKey& sk, const std::vector<std::complex<double>>& expected,
                        Exec exec) const {
    exec = ctx_->exec(exec);
    const std::size_t t = static_cast<std::size_t>(ct.level()) + 1;
    RnsPoly m = phase(ct, sk, t, exec);
    if (!expected.empty()) {
        const Plaintext pt = encoder_.encode(expected, ct.scale, ct.level(), exec);
        ctx_->backend().sub(m, pt.poly, m, exec);
    }
    ctx_->backend().from_ntt(m, exec);
    // The noise's slots, over the scale; Parseval over the n/2 slots (each root and its conjugate have one modulus):
    // sum_i e_i^2 = (2 / n) sum_j |e(zeta_j)|^2.
    const auto z = encoder_.decode(m, encoder_.limbs_for_scale(ct.scale, ct.level()), ct.scale);
    m.wipe();
    double sum = 0;
    for (const auto& v : z) sum += std::norm(v);
    const double n = static_cast<double>(ctx_->n());
    return ct.scale * std::sqrt(2.0 * sum / n / n);
}

double Decryptor::estimate_noise_bound(const Ciphertext& ct, const SecretKey& sk, Exec exec) const {
    const auto z = decrypt(ct, sk, exec);
    double sum = 0;
    for (const auto& v : z) sum += v.imag() * v.imag();
    const double n = static_cast<double>(ctx_->n());
    // E |e(zeta)|^2 = n rms^2 splits evenly between the real and imaginary parts of a slot, so that
    // rms = scale sqrt(2 mean(Im z^2) / n) where the values are real.
    const double rms = ct.scale * std::sqrt(2.0 * sum / static_cast<double>(z.size()) / n);
    const int h = ctx_->params().hamming_weight;
    const double variance = h > 0 ? static_cast<double>(h) / n : 2.0 / 3.0;
    return std::max(8.0 * rms, rounding_noise_bound(ctx_->n(), variance));
}

FloodedDecryption Decryptor::decrypt(const Ciphertext& ct, const SecretKey& sk, const Flooding& flood,
                                     Exec exec) const {
    exec = ctx_->exec(exec);
    detail::check_ciphertext(*ctx_, ct, "ciphertext");  // before its level is read
    if (!(flood.noise_bound >= 0) || !std::isfinite(flood.noise_bound))
        throw ParameterError("Flooding::noise_bound must be a finite number >= 0 (0: estimated), not " +
                             std::to_string(flood.noise_bound));
    FloodedDecryption out;
    out.noise_bound = flood.noise_bound > 0 ? flood.noise_bound : estimate_noise_bound(ct, sk, exec);
    out.sigma = flooding_sigma(ctx_->n(), out.noise_bound, flood.statistical_security, flood.queries);
    out.precision_bits = flooding_precision_bits(ctx_->n(), out.sigma, ct.scale);
    if (!(out.precision_bits >= flood.min_precision_bits)) {
        const double need = std::log2(ct.scale) + flood.min_precision_bits - out.precision_bits;
        throw ParameterError(
            "decrypt: flooding for " + std::to_string(flood.statistical_security) + "-bit security over " +
            std::to_string(flood.queries) + " queries (sigma = 2^" + std::to_string(std::log2(out.sigma)) +
            ", noise bound 2^" + std::to_string(std::log2(out.noise_bound)) + ") would leave " +
            std::to_string(out.precision_bits) + " bits at this ciphertext's scale 2^" +
            std::to_string(std::log2(ct.scale)) + ", and at least " + std::to_string(flood.min_precision_bits) +
            " were asked: compute to a scale of 2^" + std::to_string(static_cast<int>(std::ceil(need))) +
            " or more before decrypting, or ask for fewer queries or bits of security");
    }
    // The flood (|f| <= 6 sigma) fits the limbs that hold the message's scale with 64 bits of headroom.
    const std::size_t t = encoder_.limbs_for_scale(std::max(ct.scale, 6.0 * out.sigma), ct.level());
    RnsPoly m = phase(ct, sk, t, exec);
    Prng prng;
    RnsPoly f = flooding_noise(*ctx_, out.sigma, t, prng, exec);
    ctx_->backend().add(m, f, m, exec);
    f.wipe();
    ctx_->backend().from_ntt(m, exec);
    out.values = encoder_.decode(m, t, ct.scale);
    m.wipe();
    return out;
}

}  // namespace kasoku::ckks
