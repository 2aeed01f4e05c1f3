// C++ example: encrypt two vectors, multiply, rotate, decrypt (the Python API's C++ counterpart).
#include <cmath>
#include <cstdio>
#include <vector>

#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/evaluator.hpp"

int main() {
    using namespace kasoku::ckks;
    auto ctx = Context::create(Parameters::named("T13"));
    KeyGenerator keygen(ctx);
    SecretKey sk = keygen.secret_key();
    PublicKey pk = keygen.public_key(sk);
    auto ek =
        std::make_shared<const EvaluationKeys>(keygen.evaluation_keys(sk, /*relin=*/true, /*rotations=*/{1}, false));

    std::vector<std::complex<double>> x = {1.0, 2.0, 3.0, 4.0}, y = {0.5, 0.25, -1.0, 2.0};
    Encoder encoder(ctx);
    Encryptor encryptor(ctx);
    Ciphertext cx = encryptor.encrypt(encoder.encode(x, ctx->default_scale(), ctx->max_level()), pk);
    Ciphertext cy = encryptor.encrypt(encoder.encode(y, ctx->default_scale(), ctx->max_level()), pk);

    Evaluator ev(ctx, ek);  // no secret key inside
    Ciphertext r = ev.rotate(ev.multiply(cx, cy), 1);

    auto out = Decryptor(ctx).decrypt(r, sk);
    double err = 0;
    for (int i = 0; i < 3; ++i) {
        double want = (x[i + 1] * y[i + 1]).real();
        std::printf("slot %d: %.6f (expected %.6f)\n", i, out[i].real(), want);
        err = std::fmax(err, std::fabs(out[i].real() - want));
    }
    return err < 1e-4 ? 0 : 1;
}
