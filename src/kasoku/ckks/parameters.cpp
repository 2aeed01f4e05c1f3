#include "kasoku/ckks/parameters.hpp"

#include <sstream>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::ckks {

namespace {
Parameters make(const char* name, int log_n, int first, int scale, int levels, int special, int k,
                std::optional<int> security) {
    return {.log_n = log_n, .first_bits = first, .scale_bits = scale, .levels = levels, .special_bits = special,
            .special_primes = k, .security = security, .name = name};
}
}  // namespace

std::vector<std::string> Parameters::names() { return {"T12", "T13", "H15", "H16", "B13", "M14", "SCHED"}; }

Parameters Parameters::named(const std::string& name) {
    if (name == "T12") return make("T12", 12, 60, 40, 2, 60, 1, std::nullopt);
    if (name == "T13") return make("T13", 13, 60, 40, 2, 60, 1, 128);
    if (name == "H15") return make("H15", 15, 60, 40, 12, 60, 5, 128);
    if (name == "H16") return make("H16", 16, 60, 40, 20, 60, 7, 128);
    if (name == "B13") return make("B13", 13, 60, 40, 1, 60, 1, 128);
    if (name == "M14") return make("M14", 14, 60, 40, 4, 60, 2, 128);
    if (name == "SCHED") return make("SCHED", 15, 60, 50, 7, 60, 1, 128);
    std::string all;
    for (auto& n : names()) all += (all.empty() ? "" : ", ") + n;
    throw ParameterError("unknown parameter set '" + name + "'; named sets are: " + all);
}

int Parameters::alpha() const {
    if (dnum > 0) return (levels + 1 + dnum - 1) / dnum;
    return special_primes;
}

int Parameters::digits() const { return (levels + 1 + alpha() - 1) / alpha(); }

int Parameters::log_qp_bits() const { return first_bits + levels * scale_bits + special_primes * special_bits; }

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
    if (special_primes < 1) fail("special_primes must be >= 1 (hybrid key switching needs them), got " + std::to_string(special_primes));
    if (special_bits < scale_bits || special_bits > maxb)
        fail("special_bits must be in scale_bits.." + std::to_string(maxb) + ", got " + std::to_string(special_bits));
    if (dnum < 0 || dnum > levels + 1) fail("dnum must be in 1..levels+1 (or 0 for automatic), got " + std::to_string(dnum));
    if (alpha() > special_primes)
        fail("dnum = " + std::to_string(digits()) + " needs alpha = " + std::to_string(alpha()) +
             " primes per digit, but only " + std::to_string(special_primes) +
             " special primes are given; raise special_primes or dnum");
    if (hamming_weight < 0 || static_cast<std::uint64_t>(hamming_weight) > n())
        fail("hamming_weight must be in 0..n, got " + std::to_string(hamming_weight));
    if (security.has_value()) {
        if (*security != 128)
            fail("security must be 128 or None (research parameters, no security claim), got " + std::to_string(*security));
        if (hamming_weight != 0)
            fail("the HE Standard table assumes a uniform ternary secret: use hamming_weight = 0 or security = None");
        const int bound = max_log_qp_128(log_n);
        if (bound == 0) fail("no 128-bit HE Standard entry for log_n = " + std::to_string(log_n) + "; pass security=None");
        if (log_qp_bits() > bound)
            fail("insecure parameters: log2(QP) = " + std::to_string(log_qp_bits()) + " bits exceeds the 128-bit bound of " +
                 std::to_string(bound) + " for N = 2^" + std::to_string(log_n) +
                 " (HE Standard); use fewer levels or primes, a larger log_n, or security=None for research use");
    }
}

std::string Parameters::describe() const {
    std::ostringstream s;
    s << (name.empty() ? "custom" : name) << ": N=2^" << log_n << ", q: " << first_bits << " + " << levels << " x "
      << scale_bits << " bits, P: " << special_primes << " x " << special_bits << " bits, dnum=" << digits()
      << ", log2(QP)<=" << log_qp_bits() << ", security=" << (security ? std::to_string(*security) + "-bit" : "none");
    return s.str();
}

}  // namespace kasoku::ckks
