#include "kasoku/support/random.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kasoku/support/error.hpp"

namespace kasoku {

void os_random_bytes(void* out, std::size_t count) {
    if (count == 0) return;
    if (RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(count)) != 1)
        throw Error("OpenSSL RAND_bytes failed: the operating system's random source is unavailable");
}

Seed random_seed() {
    Seed s{};
    os_random_bytes(s.data(), s.size());
    return s;
}

void secure_wipe(void* data, std::size_t bytes) {
    if (data && bytes) OPENSSL_cleanse(data, bytes);
}

struct Prng::Impl {
    EVP_CIPHER_CTX* ctx = nullptr;
    std::vector<unsigned char> zeros;
    ~Impl() {
        if (ctx) EVP_CIPHER_CTX_free(ctx);
    }
};

namespace {
// ChaCha20 keyed by the seed from block 0 of the nonce in iv[4..15] (iv[0..3]: the 32-bit block counter, 0).
EVP_CIPHER_CTX* chacha20(const Seed& seed, const unsigned char (&iv)[16]) {
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    if (!ctx || EVP_EncryptInit_ex(ctx, EVP_chacha20(), nullptr, seed.data(), iv) != 1) {
        if (ctx) EVP_CIPHER_CTX_free(ctx);
        throw Error("OpenSSL ChaCha20 initialisation failed");
    }
    return ctx;
}
}  // namespace

Prng::Prng(const Seed& seed) : impl_(std::make_unique<Impl>()) {
    const unsigned char iv[16] = {0};  // nonce 0: the seed's sequential stream
    impl_->ctx = chacha20(seed, iv);
}

Prng::Prng(const Seed& seed, std::uint64_t stream) : impl_(std::make_unique<Impl>()) {
    // nonce = the stream number (little-endian) and a tag word 1, which keeps every numbered stream apart from the
    // sequential one above (nonce 0)
    unsigned char iv[16] = {0};
    for (int i = 0; i < 8; ++i) iv[4 + i] = static_cast<unsigned char>(stream >> (8 * i));
    iv[12] = 1;
    impl_->ctx = chacha20(seed, iv);
}

Prng::~Prng() = default;

void Prng::fill(void* out, std::size_t count) {
    auto* p = static_cast<unsigned char*>(out);
    std::memset(p, 0, count);  // keystream XOR zeros = keystream
    std::size_t done = 0;
    while (done < count) {
        int chunk = static_cast<int>(std::min<std::size_t>(count - done, 1u << 30));
        int outl = 0;
        if (EVP_EncryptUpdate(impl_->ctx, p + done, &outl, p + done, chunk) != 1 || outl != chunk)
            throw Error("OpenSSL ChaCha20 keystream failed");
        done += static_cast<std::size_t>(chunk);
    }
}

std::uint64_t Prng::next_u64() {
    std::uint64_t v;
    fill(&v, sizeof v);
    return v;
}

}  // namespace kasoku
