// Homomorphic operations. The evaluator holds evaluation keys only (never the secret key), is const,
// and any two calls may run at once on different threads. Each heavy call takes a thread count
// (0 = the context's default). Operands are never modified by out-of-place calls; in-place calls leave
// the operand unchanged when they throw.
#pragma once
#include <complex>
#include <memory>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/objects.hpp"

namespace kasoku::ckks {

class Evaluator {
public:
    // keys may be null: then only operations without key switching are available.
    Evaluator(ContextPtr ctx, std::shared_ptr<const EvaluationKeys> keys);

    const Context& context() const { return *ctx_; }
    const EvaluationKeys* keys() const { return keys_.get(); }

    Ciphertext add(const Ciphertext& a, const Ciphertext& b, int threads = 0) const;
    Ciphertext sub(const Ciphertext& a, const Ciphertext& b, int threads = 0) const;
    Ciphertext negate(const Ciphertext& a, int threads = 0) const;
    // Plaintext operands: values are encoded at the ciphertext's level (zero padded to slots()).
    Ciphertext add_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, int threads = 0) const;
    Ciphertext add_scalar(const Ciphertext& a, std::complex<double> c, int threads = 0) const;
    // Multiplies by values encoded with the scale that makes the rescaled result land exactly on the canonical scale
    // of the next level (Context::scale_at), whatever the operand's scale.
    Ciphertext multiply_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, bool rescale = true,
                              int threads = 0) const;
    Ciphertext multiply_scalar(const Ciphertext& a, std::complex<double> c, bool rescale = true, int threads = 0) const;
    // Tensor, relinearise, rescale (ModDown and rescale fused). rescale=false leaves a degree-1 ciphertext at scale sa*sb.
    Ciphertext multiply(const Ciphertext& a, const Ciphertext& b, bool rescale = true, int threads = 0) const;
    Ciphertext square(const Ciphertext& a, bool rescale = true, int threads = 0) const { return multiply(a, a, rescale, threads); }
    Ciphertext relinearize(const Ciphertext& a, int threads = 0) const;
    Ciphertext rescale(const Ciphertext& a, int threads = 0) const;
    Ciphertext drop_level(const Ciphertext& a, int level, int threads = 0) const;
    // Left rotation: slot i of the result is slot (i + step) mod slots of a.
    Ciphertext rotate(const Ciphertext& a, std::int64_t step, int threads = 0) const;
    Ciphertext conjugate(const Ciphertext& a, int threads = 0) const;
    // The automorphism X -> X^galois_elt followed by a key switch back to s.
    Ciphertext apply_galois(const Ciphertext& a, std::uint64_t galois_elt, int threads = 0) const;

    // In-place forms.
    void add_inplace(Ciphertext& a, const Ciphertext& b, int threads = 0) const { a = add(a, b, threads); }
    void sub_inplace(Ciphertext& a, const Ciphertext& b, int threads = 0) const { a = sub(a, b, threads); }
    void multiply_inplace(Ciphertext& a, const Ciphertext& b, int threads = 0) const { a = multiply(a, b, true, threads); }
    void rescale_inplace(Ciphertext& a, int threads = 0) const { a = rescale(a, threads); }
    void rotate_inplace(Ciphertext& a, std::int64_t step, int threads = 0) const { a = rotate(a, step, threads); }

    // Key switching of d (NTT form over Q_l) with `key`, result left in the Q_l * P basis (before ModDown).
    struct Lazy {
        rns::RnsPoly c0, c1;
    };
    Lazy key_switch_lazy(const rns::RnsPoly& d, const SwitchKey& key, int threads) const;

private:
    void check(const Ciphertext& a, const char* what) const;
    // a and b at a common level and scale: the operands themselves when they already agree, otherwise the
    // higher one dropped (and its scale adjusted exactly by a constant multiply and a rescale) in `storage`.
    struct Aligned {
        const Ciphertext* a_in;
        const Ciphertext* b_in;
        Ciphertext storage;
        int stored = 0;  // 1: storage replaces a, 2: storage replaces b
        const Ciphertext& a() const { return stored == 1 ? storage : *a_in; }
        const Ciphertext& b() const { return stored == 2 ? storage : *b_in; }
    };
    Aligned align(const Ciphertext& a, const Ciphertext& b, int threads) const;
    const SwitchKey& galois_key(std::uint64_t galois_elt, const char* what) const;
    void check_scale_fits(double scale, int level, const char* op) const;
    double plain_scale(const Ciphertext& a) const;

    ContextPtr ctx_;
    std::shared_ptr<const EvaluationKeys> keys_;
    Encoder encoder_;
};

}  // namespace kasoku::ckks
