// The bootstrapping tests' environments (test_bootstrap.cpp, test_bootstrap_sparse.cpp), made once per test program:
// TS10 with its bootstrapper's keys, and the layered shape (two prime sizes, a dense secret, encapsulation).
#pragma once
#include <algorithm>
#include <cmath>
#include <memory>

#include "kasoku/algo/bootstrap.hpp"
#include "test_env.hpp"

namespace kasoku::algo::boot_test {
using ckks::Context;
using ckks::EvaluationKeys;
using ckks::Evaluator;
using ckks::KeyGenerator;
using ckks::Parameters;
using ckks::test::cvec;
using ckks::test::Env;

// N = 2^10 (512 slots), sparse secret (h = 64), 2^50 scale: 3 + EvalMod + 3 levels of bootstrapping and 2 left.
inline Parameters boot_params() { return Parameters::named("TS10"); }

struct BootEnv {
    Env env;
    Bootstrapper boot;
    BootEnv()
        : env(boot_params(), {}, Bootstrapper(Context::create(boot_params(), 1)).galois_elements()), boot(env.ctx) {}
};

inline BootEnv& boot_env() {
    static BootEnv e;
    return e;
}

inline double max_abs_error(const cvec& a, const cvec& b) {
    double e = 0;
    for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::abs(a[i] - b[i]));
    return e;
}

// Two prime sizes and encapsulation: N = 2^10, a dense main secret, 2 user levels of 40 bits under 15 bootstrapping
// levels of 55 bits, an ephemeral secret of weight 32 around ModRaise.
inline Parameters layered_params() {
    Parameters p = ckks::test::research_params(10, 60, 40, 2, 60, 3);
    p.boot_levels = 15;
    p.boot_bits = 55;
    p.boot_secret_weight = 32;
    return p;
}

struct LayeredEnv {
    Env env;
    Bootstrapper boot;
    std::shared_ptr<const EvaluationKeys> keys;  // env's keys and the encapsulation keys
    Evaluator ev;
    static std::shared_ptr<const EvaluationKeys> with_encapsulation(const Env& e) {
        EvaluationKeys k = *e.ek;
        KeyGenerator(e.ctx).encapsulation_keys(e.sk, k);
        return std::make_shared<const EvaluationKeys>(std::move(k));
    }
    LayeredEnv()
        : env(layered_params(), {}, Bootstrapper::galois_elements(*Context::create(layered_params(), 1), {})),
          boot(env.ctx),
          keys(with_encapsulation(env)),
          ev(env.ctx, keys) {}
};

inline LayeredEnv& layered_env() {
    static LayeredEnv e;
    return e;
}

}  // namespace kasoku::algo::boot_test
