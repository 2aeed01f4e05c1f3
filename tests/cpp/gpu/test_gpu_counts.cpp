// The GPU backend's launch budget, read without a GPU (docs/GPU.md "Launch budget"): the emulated backend runs the
// CUDA backend's logic and counts what it asks of the device (src/kasoku/gpu/counters.hpp). At H16 and B13, each
// operation's launches, host synchronisations, allocations and bytes moved (after one warm-up call) must stay at or
// below the figures committed in launch_budget.txt; the table printed beside them gives the bandwidth model's H100
// time and the bytes against the least the operation moves when each of its steps reads its operands and writes its
// results once.
// KASOKU_WRITE_BUDGET=<file> writes the counts of this build as a new budget.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/backends.hpp"
#include "gpu/counters.hpp"
#include "gpu/device_memory.hpp"
#include "kasoku/algo/bootstrap.hpp"
#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/gpu/cuda.hpp"
#include "seam_check.hpp"

using namespace kasoku;
using namespace kasoku::ckks;

namespace {

struct Measured {
    std::string set, op;
    gpu::Counts counts;
    std::uint64_t min_bytes;  // the least it moves (measure())
};

gpu::Counts count(const std::function<void()>& f) {
    f();  // warm-up: tables made on first use (automorphism permutations)
    gpu::CountScope scope;
    f();
    return scope.counts();
}

// The operations of the budget at one parameter set, on the emulated backend with its kernels skipped (the counts do
// not depend on the data: CountsDoNotDependOnTheData).
std::vector<Measured> measure(const std::string& set, bool hoisting, const std::vector<int>& batches) {
    const Parameters params = Parameters::named(set);
    const gpu::KernelsSkipped skip;
    auto ctx = Context::create(params, 1, gpu::make_emulated_gpu_backend);
    KeyGenerator kg(ctx);
    const SecretKey sk = kg.secret_key();
    const PublicKey pk = kg.public_key(sk);
    const std::vector<std::int64_t> steps =
        hoisting ? std::vector<std::int64_t>{1, 2, 3, 4} : std::vector<std::int64_t>{1};
    const auto ek = std::make_shared<const EvaluationKeys>(kg.evaluation_keys(sk, true, steps, false, {}));
    const Evaluator ev(ctx, ek);
    const Encoder enc(ctx);
    const Encryptor encryptor(ctx);
    test::cvec x(ctx->slots());  // values of full period: encoding transforms all the slots
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = {0.5 - 1e-3 * static_cast<double>(i % 7), 0.0};
    const int top = ctx->max_level();
    auto fresh = [&] { return encryptor.encrypt(enc.encode(x, ctx->default_scale(), top), pk); };
    const Ciphertext a = fresh(), b = fresh();
    const Plaintext pt = enc.encode(x, ctx->default_scale(), top);

    // The least each operation moves: every step of it reads its operands and writes its results once, with its NTTs
    // and conversions fused into the step (tensor; ModUp: d in, the digits out; the inner product: digits and key
    // digits in, (b, a) over Q_l * P out; ModDown: (b, a) and the addends in, the result out).
    const rns::RnsContext& r = ctx->rns();
    const std::uint64_t L = 8 * r.n(), q = top + 1, k = r.p_count(), D = r.digits_at(q);
    const std::uint64_t ct = 2 * q * L, key = 2 * D * (q + k) * L, up = q * L + D * (q + k) * L;
    const std::uint64_t inner = D * (q + k) * L + key + 2 * (q + k) * L;
    const std::uint64_t mult = 2 * ct + 3 * q * L + up + inner + 2 * (q + k) * L + 2 * q * L + 2 * (q - 1) * L;
    const std::uint64_t rot = up + inner + 2 * (q + k) * L + q * L + 2 * q * L;
    std::vector<Measured> out;
    auto add = [&](const std::string& op, std::uint64_t min_bytes, const std::function<void()>& f) {
        out.push_back({set, op, count(f), min_bytes});
    };
    // Encryption: the plaintext and the public key in, the ciphertext out (its randomness drawn on the device, the
    // encoding's transform there too: the values' copy is the one wait); decryption (no "least": it reads only the
    // limbs decoding needs; the slots' copy is its one wait). Each step alone too.
    add("EncodeEncrypt", 3 * q * L + ct, [&] { fresh(); });
    add("Encode", q * L, [&] { enc.encode(x, ctx->default_scale(), top); });
    add("Encrypt", 3 * q * L + ct, [&] { encryptor.encrypt(pt, pk); });
    const Decryptor decryptor(ctx);
    add("DecryptDecode", 0, [&] { decryptor.decrypt(a, sk); });
    const std::size_t t = enc.limbs_for_scale(a.scale, a.level());
    rns::RnsPoly m;
    const auto phase = [&] {  // Decryptor's phase: c0 + c1 s on the limbs decoding reads, to coefficient form
        m = rns::RnsPoly();   // the last one freed first: the arena hands its block back
        m = ctx->backend().poly(t, 0, true);
        ctx->backend().horner({&a.polys[0], &a.polys[1]}, sk.poly(), m, {});
        ctx->backend().from_ntt(m, {});
    };
    add("Decrypt", 0, phase);
    add("Decode", 0, [&] { enc.decode(m, t, a.scale); });
    add("Add", 3 * ct, [&] { ev.add(a, b); });
    Ciphertext acc = ev.multiply_scalar(a, 0.0, false);
    add("MultiplyPlainAccumulate", 3 * ct + ct / 2, [&] { ev.multiply_plain_accumulate(a, pt, acc); });
    add("MulRelinRescale", mult, [&] { ev.multiply(a, b); });
    add("Rotate", rot, [&] { ev.rotate(a, 1); });
    if (hoisting) add("RotateHoisted4", up + 4 * (rot - up), [&] { ev.rotate_hoisted(a, {1, 2, 3, 4}); });
    for (int d : batches) {
        std::vector<Ciphertext> xs;
        for (int i = 0; i < d; ++i) xs.push_back(fresh());
        Evaluator::Batch pa, pb;
        for (int i = 0; i < d; ++i) {
            pa.push_back(&xs[i]);
            pb.push_back(&xs[(i + 1) % d]);
        }
        add("MulRelinRescale_x" + std::to_string(d), d * (mult - key) + key, [&] { ev.multiply_many(pa, pb); });
        add("Rotate_x" + std::to_string(d), d * (rot - key) + key, [&] { ev.rotate_many(pa, 1); });
    }
    return out;
}

// A BOOT16 bootstrap (complex slots and real slots), whole keys as a device context's keygen makes them: its launches,
// and no host synchronisation, allocation or transfer in it (no "least": its many steps have no simple floor).
std::vector<Measured> measure_bootstrap() {
    const gpu::KernelsSkipped skip;
    auto ctx = Context::create(Parameters::named("BOOT16"), 1, gpu::make_emulated_gpu_backend);
    const algo::Bootstrapper complex(ctx), real(ctx, {.real = true});
    std::map<std::uint64_t, int> levels = complex.galois_levels();
    for (const auto& [g, level] : real.galois_levels()) levels[g] = std::max(levels[g], level);
    std::vector<std::uint64_t> elements;
    for (const auto& [g, level] : levels) elements.push_back(g);
    KeyGenerator kg(ctx);
    const SecretKey sk = kg.secret_key();
    auto ek =
        std::make_shared<EvaluationKeys>(kg.evaluation_keys(sk, true, {}, false, elements, {}, {}, false, levels));
    kg.encapsulation_keys(sk, *ek);
    const Evaluator ev(ctx, ek);
    const Ciphertext x = Encryptor(ctx).encrypt(Encoder(ctx).encode(test::cvec(ctx->slots(), 0.5), ctx->scale_at(0), 0),
                                                kg.public_key(sk));
    return {{"BOOT16", "Bootstrap", count([&] { complex.bootstrap(ev, x); }), 0},
            {"BOOT16", "BootstrapReal", count([&] { real.bootstrap(ev, x); }), 0}};
}

struct Budget {
    std::uint64_t launches, syncs, allocations, bytes;
};

std::string budget_path() { return std::string(KASOKU_TEST_SOURCE_DIR) + "/gpu/launch_budget.txt"; }

// "set op launches syncs allocations bytes" per line ('#': a comment; Op_xN: a batch of N).
std::map<std::string, Budget> read_budget() {
    std::map<std::string, Budget> b;
    std::ifstream in(budget_path());
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream s(line);
        std::string set, op;
        Budget x{};
        s >> set >> op >> x.launches >> x.syncs >> x.allocations >> x.bytes;
        b[set + " " + op] = x;
    }
    return b;
}

void print_table(const std::vector<Measured>& ms) {
    std::cout << "\n| set | operation | launches | host syncs | allocations | MB moved | x least | model H100 (us) |\n"
              << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const Measured& m : ms) {
        std::cout << "| " << m.set << " | " << m.op << " | " << m.counts.launches << " | " << m.counts.syncs << " | "
                  << m.counts.allocations << " | " << std::fixed << std::setprecision(1) << m.counts.bytes / 1e6
                  << " | " << std::setprecision(2);
        if (m.min_bytes) std::cout << static_cast<double>(m.counts.bytes) / static_cast<double>(m.min_bytes);
        else std::cout << "-";
        std::cout << " | " << std::setprecision(0) << gpu::model_us(m.counts, gpu::kH100) << " |\n";
    }
    for (const Measured& m : ms) {
        if (m.set != "H16" || (m.op != "MulRelinRescale" && m.op != "Rotate")) continue;
        std::cout << "\n"
                  << m.set << " " << m.op
                  << " by kernel\n\n| kernel | launches | MB | 64-bit mults (M) | model H100 (us) |\n"
                  << "| --- | ---: | ---: | ---: | ---: |\n";
        for (const auto& [name, k] : m.counts.kernels)
            std::cout << "| " << name << " | " << k.launches << " | " << std::setprecision(1) << k.bytes / 1e6 << " | "
                      << k.mults / 1e6 << " | " << gpu::model_us(k, gpu::kH100) << " |\n";
    }
    std::cout << std::defaultfloat << std::endl;
}

TEST(GpuCounts, H16AndB13WithinTheCommittedBudget) {
    std::vector<Measured> ms = measure("H16", true, {});
    for (Measured& m : measure("B13", false, {10, 100})) ms.push_back(std::move(m));
    for (Measured& m : measure_bootstrap()) ms.push_back(std::move(m));
    print_table(ms);
    if (const char* path = std::getenv("KASOKU_WRITE_BUDGET")) {
        std::ofstream out(path);
        out << "# The GPU backend's launch budget (tests/cpp/gpu/test_gpu_counts.cpp): per operation after a warm-up,\n"
               "# set op launches host_syncs allocations bytes. Counts may fall; a rise fails the test.\n";
        for (const Measured& m : ms)
            out << m.set << " " << m.op << " " << m.counts.launches << " " << m.counts.syncs << " "
                << m.counts.allocations << " " << m.counts.bytes << "\n";
        std::cout << "wrote the budget to " << path << "\n";
    }
    const auto budget = read_budget();
    for (const Measured& m : ms) {
        const auto it = budget.find(m.set + " " + m.op);
        ASSERT_NE(it, budget.end()) << m.set << " " << m.op << " has no budget in " << budget_path();
        const Budget& b = it->second;
        EXPECT_LE(m.counts.launches, b.launches) << m.set << " " << m.op << ": more launches than budgeted";
        EXPECT_LE(m.counts.syncs, b.syncs) << m.set << " " << m.op << ": more host synchronisations than budgeted";
        EXPECT_LE(m.counts.allocations, b.allocations) << m.set << " " << m.op << ": more allocations than budgeted";
        EXPECT_LE(m.counts.bytes, b.bytes) << m.set << " " << m.op << ": more bytes moved than budgeted";
        // Encoding and decoding run on the device, encryption's randomness is drawn there: a value goes up in one copy
        // and comes down in one, and nothing else waits for the device.
        if (m.op == "Encrypt" || m.op == "Decrypt") EXPECT_EQ(m.counts.syncs, 0u) << m.set << " " << m.op;
        if (m.op.starts_with("Encode") || m.op.starts_with("Decrypt") || m.op == "Decode")
            EXPECT_LE(m.counts.syncs, 1u) << m.set << " " << m.op;
        // issue 63's bound: a key-switched multiply at most 1.3x the least it moves (fused key switching)
        if (m.set == "H16" && m.op == "MulRelinRescale")
            EXPECT_LE(static_cast<double>(m.counts.bytes), 1.3 * static_cast<double>(m.min_bytes));
    }
}

// Skipping the kernels changes no count: the budget measured with KernelsSkipped is the backend's.
TEST(GpuCounts, CountsDoNotDependOnTheData) {
    const Parameters p = test::with_dnum(test::research_params(8, 50, 32, 3, 50, 2), 2);
    auto counts = [&](bool skip) {
        std::optional<gpu::KernelsSkipped> s;
        if (skip) s.emplace();
        test::Env env(p, {1}, {}, 3, 1);
        auto ctx = Context::create(p, 1, gpu::make_emulated_gpu_backend);
        const auto ek =
            std::make_shared<const EvaluationKeys>(test::moved(*env.ctx, *ctx, *env.ek, test::load_evaluation_keys));
        const Ciphertext a = test::moved(*env.ctx, *ctx, env.encrypt(env.random()), deserialize_ciphertext);
        const Evaluator ev(ctx, ek);
        return count([&] { ev.rotate(ev.multiply(a, a), 1); });
    };
    const gpu::Counts run = counts(false), skipped = counts(true);
    EXPECT_GT(run.launches, 0u);
    EXPECT_EQ(run.launches, skipped.launches);
    EXPECT_EQ(run.syncs, skipped.syncs);
    EXPECT_EQ(run.allocations, skipped.allocations);
    EXPECT_EQ(run.bytes, skipped.bytes);
    EXPECT_EQ(run.mults, skipped.mults);
}

// The debug switch waits after every launch (KASOKU_CUDA_SYNC=1): one host synchronisation per kernel.
TEST(GpuCounts, DebugSwitchWaitsForEveryLaunch) {
    const Parameters p = test::research_params(8, 50, 32, 2, 50, 1);
    test::Env env(p, {1}, {}, 3, 1);
    auto ctx = Context::create(p, 1, gpu::make_emulated_gpu_backend);
    const auto ek =
        std::make_shared<const EvaluationKeys>(test::moved(*env.ctx, *ctx, *env.ek, test::load_evaluation_keys));
    const Ciphertext a = test::moved(*env.ctx, *ctx, env.encrypt(env.random()), deserialize_ciphertext);
    const Evaluator ev(ctx, ek);
    const gpu::Counts off = count([&] { ev.rotate(a, 1); });
    gpu::set_sync_each_launch(true);
    const gpu::Counts on = count([&] { ev.rotate(a, 1); });
    gpu::set_sync_each_launch(false);
    std::uint64_t kernel_launches = 0;
    for (const auto& [name, k] : on.kernels)
        if (name != "copy" && name != "fill") kernel_launches += k.launches;
    EXPECT_EQ(on.launches, off.launches);
    EXPECT_EQ(on.syncs, off.syncs + kernel_launches);
}

// On a device: the CUDA backend asks the device for exactly what the emulated one counts.
TEST(GpuCounts, CudaCountsAreTheEmulatedOnes) {
    const gpu::CudaInfo info = gpu::cuda_info();
    if (!info.available) GTEST_SKIP() << "no CUDA device: " << info.reason;
    const Parameters p = test::with_dnum(test::research_params(10, 50, 32, 3, 50, 2), 2);
    test::Env env(p, {1}, {}, 3, 1);
    auto counts = [&](const rns::BackendFactory& f) {
        auto ctx = Context::create(p, 1, f);
        const auto ek =
            std::make_shared<const EvaluationKeys>(test::moved(*env.ctx, *ctx, *env.ek, test::load_evaluation_keys));
        const Ciphertext a = test::moved(*env.ctx, *ctx, env.encrypt(env.random()), deserialize_ciphertext);
        const Evaluator ev(ctx, ek);
        return count([&] { ev.rotate(ev.multiply(a, a), 1); });
    };
    const gpu::Counts cuda = counts(gpu::make_cuda_backend), emulated = counts(gpu::make_emulated_gpu_backend);
    EXPECT_EQ(cuda.launches, emulated.launches);
    EXPECT_EQ(cuda.syncs, emulated.syncs);
    EXPECT_EQ(cuda.allocations, emulated.allocations);
    EXPECT_EQ(cuda.bytes, emulated.bytes);
}

}  // namespace

// The device arena: a request takes its size class (m * 2^e words, m in 5..8: at least the request, under 1.25x it),
// a polynomial a level down reuses the block freed a level up, and release_kept gives the free blocks back.
TEST(GpuCounts, TheArenaReusesBlocksAcrossLevelsAndReleasesThem) {
    for (std::size_t w = 1; w < 5000; ++w) {
        const std::size_t c = gpu::DeviceMemory::size_class(w);
        ASSERT_GE(c, w);
        if (w > 8) ASSERT_LT(4 * c, 5 * w) << w;
        ASSERT_EQ(gpu::DeviceMemory::size_class(c), c) << w;  // a class is its own class
    }
    const Parameters p = test::research_params(10, 50, 32, 10, 50, 1);  // 11 q-primes
    auto ctx = Context::create(p, 1, gpu::make_emulated_gpu_backend);
    const auto& be = ctx->backend();
    const rns::PolyMemory& mem = *be.memory();
    ASSERT_EQ(gpu::DeviceMemory::size_class(9 * p.n()), 10 * p.n());  // 9 limbs take 10 limbs' class
    {
        const rns::RnsPoly up = be.poly(10, 0, true);
        (void)up;
    }
    const std::uint64_t held = mem.held().bytes;
    const gpu::Counts c = count([&] {
        const rns::RnsPoly down = be.poly(9, 0, true);  // a level down: the block freed above
        (void)down;
    });
    EXPECT_EQ(c.allocations, 0u);
    EXPECT_EQ(mem.held().bytes, held);
    mem.release_kept();
    EXPECT_EQ(mem.held().bytes + 8 * 10 * p.n(), held);
}
