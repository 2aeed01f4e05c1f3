// The RNS tests' ring and backend (test_rns.cpp, test_keyswitch.cpp): a small ring of 60-, 40- and 61-bit primes on
// the CPU backend, polynomials to and from host limbs, GMP's CRT of a coefficient, random keys.
#pragma once
#include <gmpxx.h>

#include <memory>
#include <random>
#include <vector>

#include "kasoku/arith/primes.hpp"
#include "kasoku/rns/backend.hpp"

namespace kasoku::rns::test {
using arith::u64;

inline mpz_class to_mpz(u64 v) {
    mpz_class r;
    mpz_import(r.get_mpz_t(), 1, -1, sizeof v, 0, 0, &v);
    return r;
}
inline u64 mod_u64(const mpz_class& x, u64 q) {
    mpz_class r = x % to_mpz(q);
    if (r < 0) r += to_mpz(q);
    u64 v = 0;
    mpz_export(&v, nullptr, -1, sizeof v, 0, 0, r.get_mpz_t());
    return v;
}

using Limbs = std::vector<std::vector<u64>>;

struct Fixture {
    std::size_t n = 64;
    std::shared_ptr<const RnsContext> ring;
    std::unique_ptr<const Backend> be;
    Fixture(std::size_t nq = 6, std::size_t np = 3, std::size_t alpha = 3) {
        auto q = arith::generate_ntt_primes(60, 1, 64);
        auto r = arith::generate_ntt_primes(40, static_cast<int>(nq - 1), 64);
        q.insert(q.end(), r.begin(), r.end());
        ring =
            std::make_shared<const RnsContext>(64, q, arith::generate_ntt_primes(61, static_cast<int>(np), 64), alpha);
        be = make_cpu_backend(ring);
    }
    u64 prime(std::size_t limb, std::size_t nq) const { return ring->prime(ring->prime_index(limb, nq)); }
    Limbs host(const RnsPoly& a) const {
        Limbs out(a.limbs(), std::vector<u64>(n));
        be->download(a, [&](const u64* const* l) {
            for (std::size_t i = 0; i < a.limbs(); ++i) std::copy(l[i], l[i] + n, out[i].begin());
        });
        return out;
    }
    RnsPoly from_host(const Limbs& v, std::size_t nq, std::size_t np, bool ntt) const {
        RnsPoly a = be->poly(nq, np, ntt);
        be->upload(a, [&](std::size_t i, u64* d) { std::copy(v[i].begin(), v[i].end(), d); });
        return a;
    }
    RnsPoly random(std::size_t nq, std::size_t np, std::mt19937_64& rng, bool ntt = false) const {
        Limbs v(nq + np, std::vector<u64>(n));
        for (std::size_t i = 0; i < nq + np; ++i)
            for (auto& x : v[i]) x = rng() % prime(i, nq);
        return from_host(v, nq, np, ntt);
    }
    // CRT reconstruction of coefficient c of limbs [first, first+count) of a coefficient-form poly.
    mpz_class crt(const RnsPoly& a, std::size_t first, std::size_t count, std::size_t c,
                  mpz_class* modulus_out = nullptr) const {
        const Limbs h = host(a);
        mpz_class Q = 1;
        for (std::size_t i = 0; i < count; ++i) Q *= to_mpz(prime(first + i, a.num_q()));
        mpz_class x = 0;
        for (std::size_t i = 0; i < count; ++i) {
            mpz_class qi = to_mpz(prime(first + i, a.num_q()));
            mpz_class Qi = Q / qi, inv;
            mpz_invert(inv.get_mpz_t(), mpz_class(Qi % qi).get_mpz_t(), qi.get_mpz_t());
            x += to_mpz(h[first + i][c]) * inv % qi * Qi;
        }
        x %= Q;
        if (modulus_out) *modulus_out = Q;
        return x;
    }
    GadgetKey random_key(std::mt19937_64& rng) const {
        GadgetKey k;
        for (std::size_t j = 0; j < ring->dnum(); ++j) {
            k.b.push_back(random(ring->q_count(), ring->p_count(), rng, true));
            k.a.push_back(random(ring->q_count(), ring->p_count(), rng, true));
        }
        return k;
    }
};

}  // namespace kasoku::rns::test
