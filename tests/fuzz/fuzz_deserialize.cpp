// One libFuzzer target per parser (KASOKU_FUZZ_KIND: 1 Parameters, 2 Ciphertext, 3 PublicKey, 4 SecretKey,
// 5 SwitchKey, 6 EvaluationKeys, 7 a multiparty Share: a ckks record). Input: the header's flags byte, then the payload; sealed, then parsed. A parser may
// refuse (kasoku::Error); anything else that escapes, a crash, a leak or undefined behaviour is a finding.
// Parameters that parse are also built into a context when the ring is small (N <= 2^10): every bound the context,
// its primes and key-switching digits rely on must be a checked error, not a crash.
#include "fuzz_common.hpp"
#include "kasoku/mp/multiparty.hpp"
#include "kasoku/support/error.hpp"

using namespace kasoku;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    constexpr int kind = KASOKU_FUZZ_KIND;
    const ckks::Context& ctx = fuzz::context();
    const ckks::Bytes b = fuzz::seal(kind, data[0], kind == 1 ? 0 : ctx.fingerprint(), data + 1, size - 1);
    try {
        if constexpr (kind == 1) {
            const ckks::Parameters p = ckks::deserialize_parameters(b.data(), b.size());
            if (p.log_n <= 10) (void)ckks::Context::create(p, 1);
        }
        if constexpr (kind == 2) (void)ckks::deserialize_ciphertext(ctx, b.data(), b.size());
        if constexpr (kind == 3) (void)ckks::deserialize_public_key(ctx, b.data(), b.size());
        if constexpr (kind == 4) (void)ckks::deserialize_secret_key(ctx, b.data(), b.size());
        if constexpr (kind == 5) (void)ckks::deserialize_switch_key(ctx, b.data(), b.size());
        if constexpr (kind == 6) (void)ckks::deserialize_evaluation_keys(ctx, b.data(), b.size());
        if constexpr (kind == 7) (void)mp::share_from_bytes(ctx, b.data(), b.size());
    } catch (const Error&) {}
    return 0;
}
