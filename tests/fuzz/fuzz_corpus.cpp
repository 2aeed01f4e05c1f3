// Seed inputs for the fuzz targets: valid objects of the fuzz context, plain and zstd-compressed, as
// <dir>/<kind>/<name> files (flags byte + payload, what the targets read).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "fuzz_common.hpp"
#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/mp/multiparty.hpp"

using namespace kasoku;
using namespace kasoku::ckks;

namespace {
void write(const std::filesystem::path& dir, const std::string& kind, const std::string& name, const Bytes& b) {
    std::filesystem::create_directories(dir / kind);
    std::ofstream f(dir / kind / name, std::ios::binary);
    f.put(static_cast<char>(b[7]));  // flags, then the payload without header and digest
    f.write(reinterpret_cast<const char*>(b.data() + 24), static_cast<std::streamsize>(b.size() - 24 - 32));
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: fuzz_corpus <directory>\n";
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    const Context& c = fuzz::context();
    const ContextPtr ctx = Context::create(c.params(), 1);  // same parameters and fingerprint, shared ownership
    KeyGenerator kg(ctx);
    const SecretKey sk = kg.secret_key();
    const PublicKey pk = kg.public_key(sk);
    auto ek = std::make_shared<const EvaluationKeys>(kg.evaluation_keys(sk, true, {1}, true));
    Encoder enc(ctx);
    const Plaintext pt = enc.encode(std::vector<std::complex<double>>(ctx->slots(), 0.25), ctx->default_scale(), 2);
    Encryptor e(ctx);
    const Ciphertext sym = e.encrypt_symmetric(pt, sk), pub = e.encrypt(pt, pk);
    const Ciphertext three = Evaluator(ctx, ek).tensor(pub, pub);
    // Multiparty shares of a two-party session (2-of-2 thresholds for the Shamir shares).
    const mp::Session session = mp::Session::random(2, 2);
    mp::Party party(ctx, session, 1);
    const std::vector<mp::Share> shares{party.public_key_share(), party.relin_round1(),
                                        party.galois_key_share(ctx->galois_element(1)), party.shamir_shares()[1]};
    for (const Compression z : {Compression::none, Compression::zstd}) {
        const std::string sfx = z == Compression::zstd ? "-zstd" : "";
        write(dir, "parameters", "p" + sfx, serialize(c.params(), z));
        write(dir, "ciphertext", "symmetric" + sfx, serialize(*ctx, sym, z));
        write(dir, "ciphertext", "public" + sfx, serialize(*ctx, pub, z));
        write(dir, "ciphertext", "three" + sfx, serialize(*ctx, three, z));
        write(dir, "public_key", "pk" + sfx, serialize(*ctx, pk, z));
        write(dir, "secret_key", "sk" + sfx, serialize(*ctx, sk, z));
        write(dir, "switch_key", "relin" + sfx, serialize(*ctx, *ek->relin, z));
        write(dir, "evaluation_keys", "ek" + sfx, serialize(*ctx, *ek, z));
        for (std::size_t i = 0; i < shares.size(); ++i)
            write(dir, "share", "share" + std::to_string(i) + sfx, mp::to_bytes(*ctx, shares[i], z));
    }
    return 0;
}
