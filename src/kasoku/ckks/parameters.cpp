#include "kasoku/ckks/parameters.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/rns/rns_context.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::ckks {

namespace {
Parameters make(const char* name, int log_n, int first, int scale, int levels, int special, int k,
                std::optional<int> security) {
    return {.log_n = log_n,
            .first_bits = first,
            .scale_bits = scale,
            .levels = levels,
            .special_bits = special,
            .special_primes = k,
            .security = security,
            .name = name,
            .rationale = {}};
}
// Bootstrapping sets: a dense main secret (the HE Standard bound applies to log2(QP)), user levels of 40 bits under
// bootstrapping levels of larger primes, sparse-secret encapsulation (weight 32) around ModRaise.
Parameters make_boot(const char* name, int log_n, int first, int levels, int boot_levels, int boot_bits, int k) {
    Parameters p = make(name, log_n, first, 40, levels, 60, k, 128);
    p.boot_levels = boot_levels;
    p.boot_bits = boot_bits;
    p.boot_secret_weight = 32;
    return p;
}
}  // namespace

std::vector<std::string> Parameters::names() {
    return {"T12", "T13", "H15", "H16", "B13", "M14", "SCHED", "BOOT15", "BOOT16", "BOOT16L", "TB10", "TS10"};
}

Parameters Parameters::named(const std::string& name) {
    if (name == "T12") return make("T12", 12, 60, 40, 2, 60, 1, std::nullopt);
    if (name == "T13") return make("T13", 13, 60, 40, 2, 60, 1, 128);
    // H15, H16: special primes of 48 bits, above their digits' moduli (5 and 7 primes: 240 and 336 bits against 220 and
    // 300) and below 2^48, where the AVX-512-IFMA kernels and the AVX2 body's double-precision NTT and dot products run
    // (docs/PERFORMANCE.md: a key switch 19 % faster than with 60-bit primes on IFMA, 8-17 % faster than with 50-bit
    // ones on AVX2, the same precision)
    if (name == "H15") return make("H15", 15, 60, 40, 12, 48, 5, 128);
    if (name == "H16") return make("H16", 16, 60, 40, 20, 48, 7, 128);
    if (name == "B13") return make("B13", 13, 60, 40, 1, 60, 1, 128);
    if (name == "M14") return make("M14", 14, 60, 40, 4, 60, 2, 128);
    if (name == "SCHED") return make("SCHED", 15, 60, 50, 7, 60, 1, 128);
    if (name == "BOOT15") return make_boot("BOOT15", 15, 55, 2, 12, 50, 2);
    if (name == "BOOT16") return make_boot("BOOT16", 16, 60, 9, 14, 60, 8);
    // 14 user levels: 55-bit bootstrapping primes and 6 special primes (5 key-switching digits) fit 128-bit
    if (name == "BOOT16L") return make_boot("BOOT16L", 16, 60, 14, 14, 55, 6);
    // Tests only (no security claim), bootstrapping in seconds at N = 2^10. TB10: BOOT16's form (user levels of 40
    // bits under 15 bootstrapping levels of 55 bits, encapsulation of weight 32). TS10: the sparse main secret of
    // weight 64 and 17 levels of 50 bits, bootstrapping inside the user's chain.
    if (name == "TB10") {
        Parameters p = make_boot("TB10", 10, 60, 2, 15, 55, 3);
        p.security = std::nullopt;
        return p;
    }
    if (name == "TS10") {
        Parameters p = make("TS10", 10, 60, 50, 17, 60, 3, std::nullopt);
        p.hamming_weight = 64;
        return p;
    }
    std::string all;
    for (auto& n : names()) all += (all.empty() ? "" : ", ") + n;
    throw ParameterError("unknown parameter set '" + name + "'; named sets are: " + all);
}

int Parameters::max_digit_bits(int alpha) const {
    if (alpha < 1) return 0;  // no digits (special_primes < 1, which validate() refuses)
    const auto bits = [&](int i) { return i == 0 ? first_bits : i <= levels ? scale_bits : boot_bits; };
    int widest = 0;
    for (int begin = 0; begin < q_primes(); begin += alpha) {
        int sum = 0;
        for (int i = begin; i < std::min(begin + alpha, q_primes()); ++i) sum += bits(i);
        widest = std::max(widest, sum);
    }
    return widest;
}

int Parameters::alpha() const {
    if (dnum > 0) return (q_primes() + dnum - 1) / dnum;
    int a = special_primes;
    while (a > 1 && max_digit_bits(a) > special_bits_total()) --a;
    return a;
}

int Parameters::digits() const { return (q_primes() + alpha() - 1) / alpha(); }

int Parameters::log_qp_bits() const {
    return first_bits + levels * scale_bits + boot_levels * boot_bits + special_primes * special_bits;
}

Parameters Parameters::for_circuit(int depth, int precision_bits, std::uint64_t slots, std::optional<int> security,
                                   int dnum, int integer_bits) {
    if (depth < 0 || depth > 60)
        throw ParameterError("for_circuit: depth must be in 0..60, got " + std::to_string(depth));
    if (precision_bits < 8 || precision_bits > 40)
        throw ParameterError("for_circuit: precision_bits must be in 8..40, got " + std::to_string(precision_bits));
    if (slots > (std::uint64_t{1} << 16))
        throw ParameterError("for_circuit: at most 2^16 slots (N = 2^17), got " + std::to_string(slots));
    if (security && *security != 128) throw ParameterError("for_circuit: security must be 128 or None");
    if (integer_bits < 1 || integer_bits > 30)
        throw ParameterError("for_circuit: integer_bits must be in 1..30, got " + std::to_string(integer_bits));
    if (dnum < 0 || dnum > depth + 1)
        throw ParameterError("for_circuit: dnum must be in 1..depth+1 (or 0/None: chosen), got " +
                             std::to_string(dnum));
    const int kSpecial = 60, kIfmaSpecial = 50, kDoubleSpecial = 48, kMaxScale = 55;
    int min_log_n = 10;
    while ((std::uint64_t{1} << (min_log_n - 1)) < slots) ++min_log_n;
    int best_qp = 0, best_scale = 0;  // for the error message: what N = 2^16 would need
    for (int log_n = min_log_n; log_n <= (security ? 16 : 17); ++log_n) {
        // One product adds noise ~ sqrt(N) * (small constants) / scale: about log_n/2 + 9 bits below the scale (H16:
        // 23 bits at scale 2^40, docs/PERFORMANCE.md); log2(depth + 1) more bits for the noise that adds up.
        const int noise = (log_n + 1) / 2 + 9 + static_cast<int>(std::ceil(std::log2(depth + 1.0)));
        const int scale = std::max(20, precision_bits + noise);
        if (scale > kMaxScale) continue;
        const int first = std::min(60, scale + integer_bits);
        const int lo = dnum > 0 ? dnum : std::min(3, depth + 1);
        const int hi = dnum > 0 ? dnum : depth + 1;
        const int bound = security ? max_log_qp_128(log_n) : 1 << 30;
        // For each dnum (fewest digits first: faster), special primes of 48 bits where alpha of them exceed the largest
        // digit's modulus (q_0's digit: first + (alpha - 1) scale bits), else of 50 (below 2^50 the AVX-512-IFMA
        // kernels and the AVX2 body's double-precision paths take either), else of 60 bits, else of q_0's size: P
        // stays above every digit's modulus, so key switching adds less noise than a rescaling, and the smaller P can
        // let a smaller ring hold the circuit.
        for (int d = lo; d <= hi; ++d) {
            const int alpha = (depth + 1 + d - 1) / d;
            for (const int special : {kDoubleSpecial, kIfmaSpecial, kSpecial, first}) {
                Parameters p{.log_n = log_n,
                             .first_bits = first,
                             .scale_bits = scale,
                             .levels = depth,
                             .special_bits = special,
                             .special_primes = alpha,
                             .security = security,
                             .dnum = d,
                             .hamming_weight = 0,
                             .name = {},
                             .rationale = {}};
                if (p.max_digit_bits(alpha) > p.special_bits_total()) continue;
                if (log_n == 16 && (best_qp == 0 || p.log_qp_bits() < best_qp)) {
                    best_qp = p.log_qp_bits();
                    best_scale = scale;
                }
                if (p.log_qp_bits() > bound) continue;
                std::ostringstream r;
                r << "N = 2^" << log_n << ": the smallest ring whose "
                  << (security ? "128-bit HE Standard bound (" + std::to_string(bound) + " bits)" : std::string("size"))
                  << " holds log2(QP) = " << p.log_qp_bits() << " bits"
                  << (slots ? " and " + std::to_string(slots) + " slots" : std::string()) << "; scale 2^" << scale
                  << ": " << precision_bits << " bits of precision + " << noise
                  << " bits of noise (one product at this N, and the "
                  << "sum over " << depth << " levels); q_0 = " << first << " bits: the scale + " << (first - scale)
                  << " bits for the integer part of results; " << depth << " primes of " << scale << " bits: one per "
                  << "rescaling; dnum = " << d << " digits of " << alpha << " primes, so " << alpha
                  << " special primes of " << special
                  << " bits (hybrid key switching: fewer digits are faster but need more special primes"
                  << (special == kDoubleSpecial ? "; 48 bits: above the digits' moduli and below 2^48, where the "
                                                  "AVX-512-IFMA kernels and the AVX2 double-precision paths run"
                      : special == kIfmaSpecial ? "; 50 bits: above the digits' moduli and below 2^50, where the "
                                                  "AVX-512-IFMA kernels and the AVX2 double-precision paths run"
                      : special < kSpecial      ? "; q_0's size, not 60 bits, to fit this ring"
                                                : "")
                  << ").";
                p.rationale = r.str();
                p.validate();
                return p;
            }
        }
    }
    std::ostringstream m;
    m << "for_circuit: depth " << depth << " with " << precision_bits << " bits of precision";
    if (best_qp == 0) m << " needs a scale above 2^" << kMaxScale << " (60-bit primes); ask for fewer precision_bits";
    else
        m << " needs log2(QP) >= " << best_qp << " bits (scale 2^" << best_scale
          << ") even at N = 2^16, above the 128-bit "
          << "HE Standard bound of " << max_log_qp_128(16) << "; split the circuit with bootstrapping (or decrypt and "
          << "re-encrypt on the client), ask for fewer precision_bits, or pass security=None for research use";
    if (dnum > 0) m << " (dnum = " << dnum << " fixed: dnum=None lets it choose)";
    throw ParameterError(m.str());
}

int Parameters::max_log_qp_128(int log_n) {
    switch (log_n) {
        case 10: return 27;
        case 11: return 54;
        case 12: return 109;
        case 13: return 218;
        case 14: return 438;
        case 15: return 881;
        case 16: return 1772;
        default: return 0;
    }
}

void Parameters::validate() const {
    auto fail = [](const std::string& m) { throw ParameterError(m); };
    if (log_n < 3 || log_n > 17) fail("log_n must be in 3..17, got " + std::to_string(log_n));
    const int maxb = arith::kMaxModulusBits;
    if (first_bits < 20 || first_bits > maxb)
        fail("first_bits must be in 20.." + std::to_string(maxb) + ", got " + std::to_string(first_bits));
    if (scale_bits < 20 || scale_bits > maxb)
        fail("scale_bits must be in 20.." + std::to_string(maxb) + ", got " + std::to_string(scale_bits));
    if (scale_bits >= first_bits)
        fail("first_bits (" + std::to_string(first_bits) + ") must exceed scale_bits (" + std::to_string(scale_bits) +
             ") so that decrypted values at level 0 have room for their integer part");
    if (levels < 0 || levels > 60) fail("levels must be in 0..60, got " + std::to_string(levels));
    if (special_primes < 1)
        fail("special_primes must be >= 1 (hybrid key switching needs them), got " + std::to_string(special_primes));
    if (special_primes > static_cast<int>(rns::kMaxDigitPrimes))
        fail("special_primes must be at most " + std::to_string(rns::kMaxDigitPrimes) + ", got " +
             std::to_string(special_primes));
    if (special_bits < scale_bits || special_bits > maxb)
        fail("special_bits must be in scale_bits.." + std::to_string(maxb) + ", got " + std::to_string(special_bits));
    if (boot_levels < 0 || boot_levels > 60) fail("boot_levels must be in 0..60, got " + std::to_string(boot_levels));
    if (boot_levels > 0 && (boot_bits < scale_bits || boot_bits > maxb))
        fail("boot_bits must be in scale_bits.." + std::to_string(maxb) + " when boot_levels > 0, got " +
             std::to_string(boot_bits));
    if (boot_levels == 0 && boot_bits != 0) fail("boot_bits is set but boot_levels is 0; give both or neither");
    if (boot_secret_weight < 0 || static_cast<std::uint64_t>(boot_secret_weight) > n())
        fail("boot_secret_weight must be in 0..n, got " + std::to_string(boot_secret_weight));
    if (dnum < 0 || dnum > q_primes())
        fail("dnum must be in 1.." + std::to_string(q_primes()) + " (the ciphertext primes), or 0 for automatic, got " +
             std::to_string(dnum));
    if (alpha() > special_primes)
        fail("dnum = " + std::to_string(digits()) + " needs alpha = " + std::to_string(alpha()) +
             " primes per digit, but only " + std::to_string(special_primes) +
             " special primes are given; raise special_primes or dnum");
    if (const int widest = max_digit_bits(alpha()); widest > special_bits_total())
        fail("dnum = " + std::to_string(digits()) + " makes a key-switching digit of " + std::to_string(widest) +
             " bits, more than the " + std::to_string(special_primes) + " x " + std::to_string(special_bits) + " = " +
             std::to_string(special_bits_total()) +
             " bits of the special primes: every key switch would gain that many bits of noise more; raise "
             "special_primes or special_bits, or dnum (0: chosen so that P covers every digit)");
    if (hamming_weight < 0 || static_cast<std::uint64_t>(hamming_weight) > n())
        fail("hamming_weight must be in 0..n, got " + std::to_string(hamming_weight));
    if (security.has_value()) {
        if (*security != 128)
            fail("security must be 128 or None (research parameters, no security claim), got " +
                 std::to_string(*security));
        if (hamming_weight != 0)
            fail("the HE Standard table assumes a uniform ternary secret: use hamming_weight = 0 or security = None");
        const int bound = max_log_qp_128(log_n);
        if (bound == 0)
            fail("no 128-bit HE Standard entry for log_n = " + std::to_string(log_n) + "; pass security=None");
        if (log_qp_bits() > bound)
            fail("insecure parameters: log2(QP) = " + std::to_string(log_qp_bits()) +
                 " bits exceeds the 128-bit bound of " + std::to_string(bound) + " for N = 2^" + std::to_string(log_n) +
                 " (HE Standard); use fewer levels or primes, a larger log_n, or security=None for research use");
    }
}

std::string Parameters::describe() const {
    std::ostringstream s;
    s << (name.empty() ? "custom" : name) << ": N=2^" << log_n << ", q: " << first_bits << " + " << levels << " x "
      << scale_bits;
    if (boot_levels > 0) s << " + " << boot_levels << " x " << boot_bits << " (bootstrapping)";
    s << " bits";
    if (hamming_weight > 0) s << ", secret h=" << hamming_weight;
    if (boot_secret_weight > 0) s << ", encapsulated h=" << boot_secret_weight;
    s << ", P: " << special_primes << " x " << special_bits << " bits, dnum=";
    if (special_primes >= 1) s << digits();  // unvalidated parameters: no digits without special primes
    else s << "none";
    s << ", log2(QP)<=" << log_qp_bits() << ", security=" << (security ? std::to_string(*security) + "-bit" : "none");
    return s.str();
}

}  // namespace kasoku::ckks
