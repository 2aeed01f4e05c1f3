#include "kasoku/ckks/context.hpp"

#include <openssl/sha.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <string>

#include "kasoku/arith/primes.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/random.hpp"
#include "kasoku/support/threads.hpp"

namespace kasoku::ckks {

std::shared_ptr<const Context> Context::create(const Parameters& params, int threads,
                                               const rns::BackendFactory& backend) {
    return std::make_shared<const Context>(params, threads, backend);
}

namespace {
// The ring of the parameters: q_0, then L scale primes, B bootstrapping primes and k special primes, all distinct and
// = 1 mod 2n.
std::shared_ptr<const rns::RnsContext> make_ring(const Parameters& params) {
    params.validate();
    const std::uint64_t n = params.n();
    std::vector<std::uint64_t> q = arith::generate_ntt_primes(params.first_bits, 1, n);
    for (const auto& [bits, count] :
         {std::pair{params.scale_bits, params.levels}, std::pair{params.boot_bits, params.boot_levels}})
        if (count > 0) {
            auto s = arith::generate_ntt_primes(bits, count, n, q);
            q.insert(q.end(), s.begin(), s.end());
        }
    auto p = arith::generate_ntt_primes(params.special_bits, params.special_primes, n, q);
    return std::make_shared<const rns::RnsContext>(n, q, p, static_cast<std::size_t>(params.alpha()));
}

std::unique_ptr<const rns::Backend> make_backend(const rns::BackendFactory& factory,
                                                 const std::shared_ptr<const rns::RnsContext>& ring) {
    if (!factory)
        throw ParameterError(
            "Context::create: the backend factory is empty; pass rns::make_cpu_backend or leave it out");
    auto be = factory(ring);
    if (!be || &be->ring() != ring.get())
        throw ParameterError("Context::create: the backend factory must return a backend of the ring it was given");
    return be;
}
}  // namespace

std::shared_ptr<const Context::Shared> Context::shared(const std::string& key,
                                                       const std::function<std::shared_ptr<const Shared>()>& make,
                                                       bool keep) const {
    std::shared_ptr<SharedSlot> slot;
    {
        const std::lock_guard<std::mutex> lock(shared_mu_);
        for (auto it = shared_.begin(); it != shared_.end();) {  // drop what nothing holds or is making any more
            const SharedSlot& s = *it->second;
            const bool unused = it->second.use_count() == 1 && !s.kept && s.alive.expired() && it->first != key;
            it = unused ? shared_.erase(it) : std::next(it);
        }
        auto& s = shared_[key];
        if (!s) s = std::make_shared<SharedSlot>();
        slot = s;
    }
    const std::lock_guard<std::mutex> lock(slot->mu);
    if (auto alive = slot->alive.lock()) return alive;
    std::shared_ptr<const Shared> made = make();
    slot->alive = made;
    if (keep) slot->kept = made;
    return made;
}

Context::Context(const Parameters& params, int threads, const rns::BackendFactory& backend)
    : params_(params), ring_(make_ring(params_)), backend_(make_backend(backend, ring_)), keyswitcher_(*backend_) {
    threads_ = resolve_threads(threads);
    const std::vector<std::uint64_t>& q = ring_->q_primes();
    const std::vector<std::uint64_t>& p = ring_->p_primes();
    default_scale_ = std::ldexp(1.0, params_.scale_bits);
    scales_.assign(q.size(), default_scale_);
    const int user = params_.levels, top = max_level();
    if (top > user) scales_[static_cast<std::size_t>(top)] = std::ldexp(1.0, params_.boot_bits);
    for (int l = top; l >= 1; --l)
        if (l != user + 1) scales_[l - 1] = scales_[l] * scales_[l] / static_cast<double>(q[l]);
    // scale(l - 1) = scale(l)^2 / q_l: a prime e_l bits below 2^scale_bits lifts every level below it by e_l, doubled
    // at each further level. With many small primes (28-bit ones at N = 2^14 sit up to 2^-6 bits low) that doubles into
    // tens of bits, and plaintexts stop fitting their levels. Where the user levels would drift more than a bit, their
    // top scale starts at 2^(scale_bits - sum_j e_(user+1-j) 2^-j) instead: then every user level stays within the
    // primes' own distance below 2^scale_bits.
    double drift = 0;
    for (int l = 0; l <= user; ++l) drift = std::max(drift, std::fabs(std::log2(scales_[l]) - params_.scale_bits));
    if (drift > 1.0) {
        double delta = 0;
        for (int j = 1; j <= user; ++j)
            delta -= (params_.scale_bits - std::log2(static_cast<double>(q[user + 1 - j]))) * std::ldexp(1.0, -j);
        default_scale_ = scales_[user] = std::exp2(params_.scale_bits + delta);
        for (int l = user; l >= 1; --l) scales_[l - 1] = scales_[l] * scales_[l] / static_cast<double>(q[l]);
    }
    double acc = 0;
    for (std::uint64_t qi : q) {
        acc += std::log2(static_cast<double>(qi));
        log_q_prefix_.push_back(acc);
    }
    std::uint64_t u;
    os_random_bytes(&u, sizeof u);
    uid_ = u;
    // fingerprint: SHA-256 over the parameter fields and the primes
    std::vector<std::uint64_t> words = {
        static_cast<std::uint64_t>(params_.log_n), static_cast<std::uint64_t>(params_.scale_bits),
        static_cast<std::uint64_t>(params_.alpha()), static_cast<std::uint64_t>(params_.hamming_weight)};
    if (params_.boot_levels > 0 || params_.boot_secret_weight > 0)  // (sets without them keep their fingerprints)
        words.insert(words.end(), {static_cast<std::uint64_t>(params_.boot_levels),
                                   static_cast<std::uint64_t>(params_.boot_secret_weight)});
    words.insert(words.end(), q.begin(), q.end());
    words.push_back(0);
    words.insert(words.end(), p.begin(), p.end());
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(words.data()), words.size() * sizeof(std::uint64_t), digest);
    std::memcpy(&fingerprint_, digest, sizeof fingerprint_);
}

std::size_t Context::check_level(int level) const {
    if (level < 0 || level > max_level())
        throw LevelError("no level " + std::to_string(level) + ": this context's levels are 0.." +
                         std::to_string(max_level()));
    return static_cast<std::size_t>(level);
}

int Context::threads_or_default(int threads) const { return threads == 0 ? threads_ : resolve_threads(threads); }

std::uint64_t Context::galois_element(std::int64_t step) const {
    const std::int64_t s = static_cast<std::int64_t>(slots());
    std::int64_t r = ((step % s) + s) % s;
    std::uint64_t galois_elt = 1, base = 5;
    const std::uint64_t m = 2 * n();
    for (std::uint64_t e = static_cast<std::uint64_t>(r); e; e >>= 1) {
        if (e & 1) galois_elt = galois_elt * base % m;
        base = base * base % m;
    }
    return galois_elt;
}

void Context::check_galois_element(std::uint64_t galois_elt, const char* op, bool identity_allowed) const {
    if (galois_elt % 2 == 0 || galois_elt >= 2 * n() || (!identity_allowed && galois_elt == 1))
        throw ParameterError(std::string(op) + ": Galois element " + std::to_string(galois_elt) + " must be odd" +
                             (identity_allowed ? "" : ", not 1,") + " and below 2n = " + std::to_string(2 * n()));
}

std::uint64_t galois_inverse(std::uint64_t galois_elt, std::uint64_t two_n) {
    if (galois_elt % 2 == 0 || galois_elt >= two_n)
        throw ParameterError("Galois element " + std::to_string(galois_elt) + " must be odd and below 2n");
    // galois_elt^(n - 1) = galois_elt^-1, since u^n = 1 for every unit u mod 2n (n a power of two)
    std::uint64_t r = 1, b = galois_elt;
    for (std::uint64_t e = two_n / 2 - 1; e; e >>= 1) {
        if (e & 1) r = r * b % two_n;
        b = b * b % two_n;
    }
    return r;
}

}  // namespace kasoku::ckks
