// The check every backend passes (docs/ARCHITECTURE.md "Adding a backend"): a context made with the backend runs
// every kind of CKKS and algo operation and gives the CPU backend's bytes. Used by test_seam (a forwarding backend)
// and the GPU tests (the emulated GPU backend everywhere, the CUDA one on a device).
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "kasoku/algo/bootstrap.hpp"
#include "kasoku/algo/linear_transform.hpp"
#include "kasoku/algo/polynomial.hpp"
#include "kasoku/ckks/serialization.hpp"
#include "test_env.hpp"

namespace kasoku::ckks::test {

// An object of one context, loaded into another of the same parameters.
template <class T, class Load>
T moved(const Context& from, const Context& to, const T& x, Load load) {
    const Bytes b = serialize(from, x);
    return load(to, b.data(), b.size());
}
// deserialize_evaluation_keys with its default form (whole keys), as a function of moved's shape.
inline EvaluationKeys load_evaluation_keys(const Context& ctx, const std::uint8_t* data, std::size_t size) {
    return deserialize_evaluation_keys(ctx, data, size);
}

// Runs the operations on a CPU context and on one made with `factory` (same parameters, keys and inputs), expects the
// same bytes from each, and returns the other context.
inline ContextPtr expect_same_bits_as_cpu(const Parameters& params, const rns::BackendFactory& factory) {
    Env cpu(params, {1, 2, 3}, {}, 5, 1);
    auto ctx = Context::create(params, 1, factory);
    EXPECT_EQ(ctx->fingerprint(), cpu.ctx->fingerprint());

    // The same keys and input in the other context (the primes are deterministic, so the bytes load).
    const auto ek = std::make_shared<const EvaluationKeys>(moved(*cpu.ctx, *ctx, *cpu.ek, load_evaluation_keys));
    const SecretKey sk = moved(*cpu.ctx, *ctx, cpu.sk, deserialize_secret_key);
    const cvec x = cpu.random(true);
    const Ciphertext a = cpu.encrypt(x);
    const Ciphertext a2 = moved(*cpu.ctx, *ctx, a, deserialize_ciphertext);
    Evaluator ev(ctx, ek);
    {  // encryption with its randomness drawn where the context computes (a seeded draw: the same bits), at two levels
        const PublicKey pk = moved(*cpu.ctx, *ctx, cpu.pk, deserialize_public_key);
        Seed seed{};
        seed[3] = 7;
        for (int level : {cpu.ctx->max_level(), 1}) {
            const Plaintext p1 = Encoder(cpu.ctx).encode(x, cpu.ctx->default_scale(), level),
                            p2 = Encoder(ctx).encode(x, ctx->default_scale(), level);
            EXPECT_EQ(serialize(*cpu.ctx, Encryptor(cpu.ctx).encrypt(p1, cpu.pk, seed)),
                      serialize(*ctx, Encryptor(ctx).encrypt(p2, pk, seed)))
                << "encrypt (seeded) at level " << level << " on " << ctx->backend().name();
        }
    }

    const auto lt_diags = std::map<std::int64_t, cvec>{{0, cvec(cpu.ctx->slots(), 0.5)}, {2, x}};
    const algo::LinearTransform lt1(cpu.ctx, lt_diags, cpu.ctx->max_level()), lt2(ctx, lt_diags, ctx->max_level());
    auto same = [&](const Ciphertext& on_cpu, const Ciphertext& on_other, const char* what) {
        EXPECT_EQ(serialize(*cpu.ctx, on_cpu), serialize(*ctx, on_other)) << what << " on " << ctx->backend().name();
    };
    same(cpu.ev.multiply(a, a), ev.multiply(a2, a2), "multiply");
    same(cpu.ev.relinearize(cpu.ev.tensor(a, a)), ev.relinearize(ev.tensor(a2, a2)), "tensor + relinearize");
    same(cpu.ev.rotate(a, 1), ev.rotate(a2, 1), "rotate");
    same(cpu.ev.rotate_hoisted(a, {1, 2, 3})[2], ev.rotate_hoisted(a2, {1, 2, 3})[2], "rotate_hoisted");
    same(cpu.ev.sum_slots(a, 4, 1), ev.sum_slots(a2, 4, 1), "sum_slots");
    {  // compact keys: a-parts drawn from their seeds where they are read (CPU) or before the call (other backends)
        auto compact = std::make_shared<EvaluationKeys>(*ek);
        const auto drop_a = [](std::shared_ptr<const SwitchKey>& k) {
            auto c = std::make_shared<SwitchKey>(*k);
            c->a.clear();
            k = c;
        };
        drop_a(compact->relin);
        for (auto& [g, k] : compact->galois) drop_a(k);
        const Evaluator evc(ctx, compact);
        same(cpu.ev.multiply(a, a), evc.multiply(a2, a2), "multiply, compact keys");
        same(cpu.ev.rotate_hoisted(a, {1, 2, 3})[2], evc.rotate_hoisted(a2, {1, 2, 3})[2],
             "rotate_hoisted, compact keys");
        same(cpu.ev.rotate(cpu.ev.drop_level(a, 1), 1), evc.rotate(ev.drop_level(a2, 1), 1),
             "rotate at level 1, compact keys");
    }
    same(cpu.ev.multiply_plain(a, x), ev.multiply_plain(a2, x), "multiply_plain");
    same(cpu.ev.add_scalar(cpu.ev.sub(a, a), 0.25), ev.add_scalar(ev.sub(a2, a2), 0.25), "sub + add_scalar");
    same(lt1.apply(cpu.ev, a), lt2.apply(ev, a2), "linear transform");
    {  // the product basis of low levels: baby rotations brought down to Q_l, diagonals over Q_l (kasoku.nn's)
        const algo::LinearTransform l1(cpu.ctx, lt_diags, 1, 0, {}, false, algo::ProductBasis::level),
            l2(ctx, lt_diags, 1, 0, {}, false, algo::ProductBasis::level);
        same(l1.apply(cpu.ev, cpu.ev.drop_level(a, 1)), l2.apply(ev, ev.drop_level(a2, 1)),
             "linear transform, products over Q_l");
    }
    same(cpu.ev.multiply_by_i(a), ev.multiply_by_i(a2), "multiply_by_i");
    same(algo::mod_raise(cpu.ev, cpu.ev.drop_level(a, 0)), algo::mod_raise(ev, ev.drop_level(a2, 0)),
         "mod_raise (bootstrapping)");
    // Keys over fewer primes (Backend::key_switch): the relinearisation key cut to Q_1 * P switches a level-1 operand to
    // the bytes of the whole key; cut to q_0 * p_0 it runs the prefix ModUp and ModDown (bootstrapping's encapsulation).
    auto cut = [](const SwitchKey& k, const rns::RnsContext& r, std::size_t nq, std::size_t np) {
        SwitchKey c = k;
        c.seed.reset();
        c.b.resize(r.digits_at(nq));
        c.a.resize(r.digits_at(nq));
        for (auto* parts : {&c.b, &c.a})
            for (auto& x : *parts) x.truncate(nq, np);
        return c;
    };
    const Ciphertext a1 = cpu.ev.drop_level(a, 1), a1_2 = ev.drop_level(a2, 1);
    const std::size_t np = ctx->rns().p_count();
    EXPECT_EQ(serialize(*cpu.ctx, cpu.ev.key_switch(a1, cut(*cpu.ek->relin, cpu.ctx->rns(), 2, np))),
              serialize(*cpu.ctx, cpu.ev.key_switch(a1, *cpu.ek->relin)));
    same(cpu.ev.key_switch(a1, cut(*cpu.ek->relin, cpu.ctx->rns(), 2, np)),
         ev.key_switch(a1_2, cut(*ek->relin, ctx->rns(), 2, np)), "key_switch (a key for levels <= 1)");
    {  // Galois keys for levels <= 1 only (KeyGenerator::galois_key's max_level): every rotation path at level 1
        auto low_keys = [&](const EvaluationKeys& k, const rns::RnsContext& r) {
            auto out = std::make_shared<EvaluationKeys>(k);
            for (auto& [g, key] : out->galois) key = std::make_shared<const SwitchKey>(cut(*key, r, 2, np));
            return out;
        };
        const Evaluator low_cpu(cpu.ctx, low_keys(*cpu.ek, cpu.ctx->rns())), low_other(ctx, low_keys(*ek, ctx->rns()));
        same(low_cpu.rotate(a1, 1), low_other.rotate(a1_2, 1), "rotate, a key for levels <= 1");
        same(low_cpu.rotate_hoisted(a1, {1, 2, 3})[1], low_other.rotate_hoisted(a1_2, {1, 2, 3})[1],
             "rotate_hoisted, keys for levels <= 1");
        same(low_cpu.rotate_sum_hoisted(a1, {1, 2}), low_other.rotate_sum_hoisted(a1_2, {1, 2}),
             "rotate_sum_hoisted, keys for levels <= 1");
    }
    {  // Galois keys made for levels <= 1 (over the special primes a digit of Q_1 needs: RnsContext::special_for)
        // beside a key for every level: hoisted sums of two special-prime counts, and a transform's baby steps
        const std::map<std::uint64_t, int> levels = {{cpu.ctx->galois_element(1), 1}, {cpu.ctx->galois_element(2), 1}};
        const auto made = std::make_shared<const EvaluationKeys>(
            KeyGenerator(cpu.ctx).evaluation_keys(cpu.sk, false, {1, 2, 3}, false, {}, {}, {}, false, levels));
        EXPECT_EQ(made->galois.at(cpu.ctx->galois_element(1))->b[0].num_p(), cpu.ctx->rns().special_for(2));
        const auto there = std::make_shared<const EvaluationKeys>(moved(*cpu.ctx, *ctx, *made, load_evaluation_keys));
        const Evaluator m1(cpu.ctx, made), m2(ctx, there);
        same(m1.rotate(a1, 1), m2.rotate(a1_2, 1), "rotate, a key made for levels <= 1");
        same(m1.rotate_hoisted(a1, {1, 2, 3})[0], m2.rotate_hoisted(a1_2, {1, 2, 3})[0],
             "rotate_hoisted, keys made for levels <= 1");
        same(m1.rotate_sum_hoisted(a1, {1, 2, 3}), m2.rotate_sum_hoisted(a1_2, {1, 2, 3}),
             "rotate_sum_hoisted, keys of two special-prime counts");
        const auto diags = std::map<std::int64_t, cvec>{{0, cvec(cpu.ctx->slots(), 0.5)}, {1, x}, {2, x}, {3, x}};
        const algo::LinearTransform t1(cpu.ctx, diags, 1, 2, {}, false, algo::ProductBasis::extended),
            t2(ctx, diags, 1, 2, {}, false, algo::ProductBasis::extended);
        same(t1.apply(m1, a1), t2.apply(m2, a1_2), "linear transform, keys of two special-prime counts");
    }
    const Ciphertext a0 = cpu.ev.drop_level(a, 0), a0_2 = ev.drop_level(a2, 0);
    same(cpu.ev.key_switch(a0, cut(*cpu.ek->relin, cpu.ctx->rns(), 1, 1)),
         ev.key_switch(a0_2, cut(*ek->relin, ctx->rns(), 1, 1)), "key_switch (a key over q_0 * p_0)");
    const Ciphertext low = cpu.ev.multiply_scalar(a, 0.5), low2 = ev.multiply_scalar(a2, 0.5);
    same(cpu.ev.linear_combination({&a, &low}, {{0.25, -1.5}, 2.0}, 0.125),
         ev.linear_combination({&a2, &low2}, {{0.25, -1.5}, 2.0}, 0.125), "linear_combination (two levels)");
    const algo::Polynomial p({0.5, -0.25, 0.75, 0.125}, algo::Basis::chebyshev);
    same(algo::evaluate(cpu.ev, a, p), algo::evaluate(ev, a2, p), "polynomial");
    EXPECT_EQ(cpu.dec.decrypt(a, cpu.sk), Decryptor(ctx).decrypt(a2, sk));

    // Key generation and encryption in the other context too (its own randomness: checked by decryption).
    KeyGenerator kg(ctx);
    const SecretKey sk2 = kg.secret_key();
    const Ciphertext c =
        Encryptor(ctx).encrypt(Encoder(ctx).encode(x, ctx->default_scale(), ctx->max_level()), kg.public_key(sk2));
    EXPECT_GT(precision_bits(Decryptor(ctx).decrypt(c, sk2), x), 20);
    return ctx;
}

}  // namespace kasoku::ckks::test
