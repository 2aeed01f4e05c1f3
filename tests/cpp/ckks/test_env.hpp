// Shared fixture of the CKKS tests: a context, keys, encoder, encryptor, decryptor and evaluator, plus a
// precision measure in bits.
#pragma once
#include <algorithm>
#include <cmath>
#include <complex>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/evaluator.hpp"

namespace kasoku::ckks::test {

using cvec = std::vector<std::complex<double>>;

// Small research parameters (no security check: fast, not secure).
inline Parameters research_params(int log_n, int first_bits, int scale_bits, int levels, int special_bits,
                                  int special_primes) {
    return {.log_n = log_n,
            .first_bits = first_bits,
            .scale_bits = scale_bits,
            .levels = levels,
            .special_bits = special_bits,
            .special_primes = special_primes,
            .security = std::nullopt};
}

// -log2 of the max absolute error
inline double precision_bits(const cvec& got, const cvec& want) {
    double err = 0;
    for (std::size_t i = 0; i < want.size(); ++i) err = std::max(err, std::abs(got[i] - want[i]));
    return err == 0 ? 60 : -std::log2(err);
}

// A parameter shape the CKKS suites run over: key-switching digits of one or several primes, one or several special
// primes (alpha below k too), and one or two threads per operation.
struct Shape {
    std::string name;
    Parameters params;
    int threads;
};
inline Parameters with_dnum(Parameters p, int dnum) {
    p.dnum = dnum;
    return p;
}

struct Env {
    ContextPtr ctx;
    SecretKey sk;
    PublicKey pk;
    std::shared_ptr<const EvaluationKeys> ek;
    Encoder enc;
    Encryptor encryptor;
    Decryptor dec;
    Evaluator ev;
    std::mt19937_64 rng;
    // Relinearisation key, Galois keys for `rotations`, conjugation and `galois_elements`.
    // threads: the context's default thread count of every operation.
    Env(const Parameters& p, const std::vector<std::int64_t>& rotations,
        const std::vector<std::uint64_t>& galois_elements = {}, std::uint64_t seed = 42, int threads = 2)
        : ctx(Context::create(p, threads)),
          sk(KeyGenerator(ctx).secret_key()),
          pk(KeyGenerator(ctx).public_key(sk)),
          ek(std::make_shared<const EvaluationKeys>(
              KeyGenerator(ctx).evaluation_keys(sk, true, rotations, true, galois_elements))),
          enc(ctx),
          encryptor(ctx),
          dec(ctx),
          ev(ctx, ek),
          rng(seed) {}
    cvec random(bool complex = false) {
        std::uniform_real_distribution<double> u(-1, 1);
        cvec v(ctx->slots());
        for (auto& x : v) x = {u(rng), complex ? u(rng) : 0.0};
        return v;
    }
    Ciphertext encrypt(const cvec& v) {
        return encryptor.encrypt(enc.encode(v, ctx->default_scale(), ctx->user_level()), pk);
    }
    cvec decrypt(const Ciphertext& c) { return dec.decrypt(c, sk); }
};

}  // namespace kasoku::ckks::test
