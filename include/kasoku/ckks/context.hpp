// Context: parameters, the RNS ring, the polynomial backend that computes on it (with its tables: NTT, base
// conversion) and the encoder's FFT roots: what its parameters determine. Immutable after construction and shared by
// every object made from it; what the layers above derive from it and share among their objects (the key-switching
// costs measured on this machine, a bootstrapper's encoded transforms) it keeps for them (Context::shared).
#pragma once
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kasoku/ckks/parameters.hpp"
#include "kasoku/rns/backend.hpp"
#include "kasoku/rns/keyswitch.hpp"
#include "kasoku/rns/rns_context.hpp"

namespace kasoku::ckks {

class Context {
public:
    // threads: default thread count of operations (0 = all cores). backend: makes the polynomial backend from the
    // ring (default: the CPU backend).
    // @throws ParameterError for invalid or insecure parameters (Parameters::validate), prime sizes with too few NTT
    //         primes for N, a negative thread count, or a backend factory that is empty or makes no backend of the ring
    // @throws Error if the system has no randomness to give (the context's uid)
    // @throws what the backend factory throws (gpu::make_cuda_backend: DeviceError)
    static std::shared_ptr<const Context> create(const Parameters& params, int threads = 0,
                                                 const rns::BackendFactory& backend = rns::make_cpu_backend);

    const Parameters& params() const { return params_; }
    // The ring: primes, digits, automorphism tables.
    const rns::RnsContext& rns() const { return *ring_; }
    // Where polynomials live and every operation on them runs.
    const rns::Backend& backend() const { return *backend_; }
    // Key switching (decompose -> inner product -> ModDown) on the backend.
    const rns::KeySwitcher& keyswitcher() const { return keyswitcher_; }
    std::size_t n() const { return ring_->n(); }
    std::size_t slots() const { return ring_->n() / 2; }
    // The top of the chain (every ciphertext prime): bootstrapping raises to it.
    int max_level() const { return params_.levels + params_.boot_levels; }
    // The top level for the user's data: fresh encodings and encryptions by default, bootstrapping's output. Below the
    // bootstrapping levels (Parameters::boot_levels); max_level() when there are none.
    int user_level() const { return params_.levels; }
    double default_scale() const { return default_scale_; }
    // Canonical scale of each level: s_L = 2^scale_bits at the user level L, s_{l-1} = s_l^2 / q_l. Fresh ciphertexts
    // at level l get s_l; products of canonical operands and plaintext products land on s_{l-1} after the rescale, so
    // ciphertexts that reach a level by different paths can be added without adjustment. The bootstrapping levels
    // have a chain of their own from s_max = 2^boot_bits down to level L + 1 (a plaintext product, whose scale can be
    // chosen, crosses to L).
    // @throws LevelError if level is outside 0..max_level()
    double scale_at(int level) const { return scales_[check_level(level)]; }
    // Whether `scale` is scale_at(level) (to 1e-9 relative): what polynomial evaluation and bootstrapping require.
    // @throws LevelError if level is outside 0..max_level()
    bool is_canonical(double scale, int level) const { return std::fabs(scale / scale_at(level) - 1.0) <= 1e-9; }
    int threads() const { return threads_; }
    // Resolves a per-call thread count (0 -> the context default).
    // @throws ParameterError for a negative count
    int threads_or_default(int threads) const;
    // The execution handle with its thread count resolved (threads_or_default).
    // @throws ParameterError for a negative e.threads
    Exec exec(Exec e) const {
        e.threads = threads_or_default(e.threads);
        return e;
    }
    // Random per-context id: objects remember it and operations refuse objects of another context.
    std::uint64_t uid() const { return uid_; }
    // Hash of the parameters and the primes: serialized objects carry it.
    std::uint64_t fingerprint() const { return fingerprint_; }
    // log2(q_0 ... q_level)
    // @throws LevelError if level is outside 0..max_level()
    double log_modulus(int level) const { return log_q_prefix_[check_level(level)]; }
    // level itself (scale_at and log_modulus check with it).
    // @throws LevelError if level is outside 0..max_level()
    std::size_t check_level(int level) const;
    // Galois elements: rotation by `step` slots to the left, and conjugation.
    std::uint64_t galois_element(std::int64_t step) const;
    std::uint64_t conjugation_element() const { return 2 * n() - 1; }
    // The one check of every operation that takes Galois elements.
    // @throws ParameterError (naming op) unless galois_elt is a Galois element of this ring: odd and below 2n, and not
    //         1 where the operation needs a key switch for it (identity_allowed false)
    void check_galois_element(std::uint64_t galois_elt, const char* op, bool identity_allowed = true) const;

    // The encoder's tables (HEAAN-style special FFT: rns::SlotFft, the ring's): rot_group()[j] = 5^j mod 2n, ksi()[k] =
    // exp(2 pi i k / 2n), and each stage's twiddles in order.
    const std::vector<std::uint64_t>& rot_group() const { return rns().slot_fft().rot_group(); }
    const std::vector<std::complex<double>>& ksi() const { return rns().slot_fft().ksi(); }
    const std::vector<std::complex<double>>& fft_twiddles() const { return rns().slot_fft().twiddles(); }
    const std::vector<std::complex<double>>& fft_twiddles_inverse() const {
        return rns().slot_fft().twiddles_inverse();
    }

    // What the layers above derive from this context and share among their objects, kept by the context so that it
    // ends with it (no process-wide cache): Evaluator::keyswitch_costs' measured costs, algo::Bootstrapper's encoded
    // transforms. Each kind is a class derived from Shared, read back with std::dynamic_pointer_cast.
    class Shared {
    public:
        virtual ~Shared() = default;
    };
    // The object kept under `key`, else make()'s, then kept under `key`: for the context's life with `keep`, else
    // while something else holds it. make runs under the key's own lock, so that a second caller of the same key
    // waits for the first instead of making it again (make must not ask for its own key). Thread-safe.
    // @throws what make throws (nothing is kept then)
    std::shared_ptr<const Shared> shared(const std::string& key,
                                         const std::function<std::shared_ptr<const Shared>()>& make,
                                         bool keep = false) const;

    Context(const Parameters& params, int threads, const rns::BackendFactory& backend);

private:
    struct SharedSlot {
        std::mutex mu;
        std::weak_ptr<const Shared> alive;
        std::shared_ptr<const Shared> kept;
    };
    mutable std::mutex shared_mu_;
    mutable std::map<std::string, std::shared_ptr<SharedSlot>> shared_;
    Parameters params_;
    std::shared_ptr<const rns::RnsContext> ring_;
    std::unique_ptr<const rns::Backend> backend_;
    rns::KeySwitcher keyswitcher_;
    double default_scale_;
    int threads_;
    std::uint64_t uid_, fingerprint_;
    std::vector<double> log_q_prefix_, scales_;
};

using ContextPtr = std::shared_ptr<const Context>;

// galois_elt^-1 modulo 2n for an odd Galois element galois_elt (the group of units mod 2n has order n).
// @throws ParameterError for an even galois_elt or galois_elt >= two_n
std::uint64_t galois_inverse(std::uint64_t galois_elt, std::uint64_t two_n);

}  // namespace kasoku::ckks
