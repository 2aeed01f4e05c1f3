// Constant-time check of the samplers of secrets and errors, in the manner of dudect (Reparaz, Balasch and
// Verbauwhede, "Dude, is my code constant time?", DATE 2017): each sampler's core is timed on many calls whose random
// words are either one fixed array (class 0) or fresh ones (class 1), the classes interleaved at random, and Welch's t
// statistic compares the two distributions of times (over all measurements and over those below several
// percentiles, as dudect crops its tails). |t| above 4.5 is the usual sign of a timing difference; a constant-time
// implementation stays below it whatever the number of measurements. The early-exit table scan that kasoku's Gaussian
// used before (reference_gaussian below) runs as the positive control: the measurement must find its leak.
//
//   build/cpp/bench/dudect_sampling [measurements per sampler, default 200000] [ones]   (one JSON line per sampler;
//   ones: the fixed input has every bit set instead of random words drawn once)
//
// A benchmark, never a test: its figures go in docs/SECURITY.md with the machine that gave them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "ckks/sampling_internal.hpp"

namespace {

using namespace kasoku;
namespace detail = kasoku::ckks::detail;

// The Gaussian sampler kasoku had before (a scan of the table that stops at the value: its time tells the value).
void reference_gaussian(const std::uint64_t* r, std::size_t n, std::int64_t* out) {
    const auto& cdf = detail::gaussian_cdf();
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t u = r[i] >> 1;
        int x = 0;
        while (x < detail::kGaussianBound && u >= cdf[x]) ++x;
        out[i] = (r[i] & 1) ? -x : x;
    }
}

struct Welch {  // running means and variances of the two classes
    double n[2] = {0, 0}, mean[2] = {0, 0}, m2[2] = {0, 0};
    void add(int c, double x) {
        n[c] += 1;
        const double d = x - mean[c];
        mean[c] += d / n[c];
        m2[c] += d * (x - mean[c]);
    }
    double t() const {
        if (n[0] < 2 || n[1] < 2) return 0;
        const double v0 = m2[0] / (n[0] - 1), v1 = m2[1] / (n[1] - 1);
        return (mean[0] - mean[1]) / std::sqrt(v0 / n[0] + v1 / n[1]);
    }
};

struct Case {
    std::string name;
    std::size_t words;  // random words (or bytes) per call
    std::function<void(const std::uint64_t*)> run;
};

void measure(const Case& c, std::size_t measurements, bool fixed_ones, Prng& prng) {
    // As dudect: the inputs of a batch of calls prepared before it, each in its own place of one array, class 0's the
    // fixed words and class 1's fresh ones, so that the two classes differ only in their values (not in where their
    // words lie, or in what the preparation leaves in the cache).
    constexpr std::size_t batch = 256;
    std::vector<std::uint64_t> fixed(c.words), fresh(c.words * batch), inputs(c.words * batch);
    // class 0: one input for every call: words drawn once (fixed_ones false), or every bit set (the Gaussian's tail,
    // the longest early-exit scan)
    if (fixed_ones) std::fill(fixed.begin(), fixed.end(), ~std::uint64_t{0});
    else prng.fill(fixed.data(), fixed.size() * sizeof(std::uint64_t));
    std::vector<double> times(measurements);
    std::vector<int> cls(measurements);
    std::vector<std::uint8_t> coin(measurements);
    prng.fill(coin.data(), coin.size());
    for (std::size_t i = 0; i < measurements; ++i) {
        const std::size_t j = i % batch;
        if (j == 0) {  // every slot written the same way, in order: the classes' words are equally fresh in the cache
            prng.fill(fresh.data(), fresh.size() * sizeof(std::uint64_t));
            for (std::size_t k = 0; k < batch; ++k) {
                const std::uint64_t* src =
                    i + k < measurements && (coin[i + k] & 1) == 0 ? fixed.data() : fresh.data() + k * c.words;
                std::copy(src, src + c.words, inputs.begin() + k * c.words);
            }
        }
        cls[i] = coin[i] & 1;
        const auto t0 = std::chrono::steady_clock::now();
        c.run(inputs.data() + j * c.words);
        const auto t1 = std::chrono::steady_clock::now();
        times[i] = std::chrono::duration<double, std::nano>(t1 - t0).count();
    }
    // the first tenth warms caches and clocks: dropped
    const std::size_t skip = measurements / 10;
    std::vector<double> sorted(times.begin() + static_cast<std::ptrdiff_t>(skip), times.end());
    std::sort(sorted.begin(), sorted.end());
    const double crops[] = {1.0, 0.99, 0.9, 0.5};
    double worst = 0;
    std::string per_crop;
    for (double crop : crops) {
        const double limit = sorted[static_cast<std::size_t>(crop * static_cast<double>(sorted.size() - 1))];
        Welch w;
        for (std::size_t i = skip; i < measurements; ++i)
            if (times[i] <= limit) w.add(cls[i], times[i]);
        const double t = w.t();
        worst = std::max(worst, std::fabs(t));
        per_crop += (per_crop.empty() ? "" : ", ") + std::string("\"") + std::to_string(static_cast<int>(crop * 100)) +
                    "\": " + std::to_string(t);
    }
    std::printf(
        "{\"sampler\": \"%s\", \"fixed_input\": \"%s\", \"measurements\": %zu, \"median_ns\": %.1f, \"max_abs_t\": "
        "%.2f, \"t_by_percentile\": "
        "{%s}, \"verdict\": \"%s\"}\n",
        c.name.c_str(), fixed_ones ? "every bit set" : "random words drawn once", measurements - skip,
        sorted[sorted.size() / 2], worst, per_crop.c_str(),
        worst > 4.5 ? "timing depends on the input" : "no timing difference found");
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t m = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
    const bool fixed_ones = argc > 2 && std::string(argv[2]) == "ones";
    Prng prng;
    std::vector<std::int64_t> out(4096);
    std::vector<std::uint64_t> scratch(4096);
    const std::vector<Case> cases = {
        {"gaussian (constant time), 256 coefficients", 256,
         [&](const std::uint64_t* r) { detail::gaussian_from_words(r, 256, out.data()); }},
        {"gaussian, the early-exit scan it replaced (positive control), 256 coefficients", 256,
         [&](const std::uint64_t* r) { reference_gaussian(r, 256, out.data()); }},
        {"uniform ternary, 1024 coefficients", 2048,  // two words a coefficient
         [&](const std::uint64_t* r) { detail::ternary_from_words(r, 1024, out.data()); }},
        {"fixed Hamming weight 64, 1024 coefficients (bitonic network)", 1024,
         [&](const std::uint64_t* r) { detail::fixed_weight_from_words(r, 1024, 64, out.data(), scratch.data()); }},
    };
    for (const Case& c : cases) measure(c, c.name.find("fixed") != std::string::npos ? m / 4 : m, fixed_ones, prng);
    return 0;
}
