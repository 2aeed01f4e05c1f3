#include "kasoku/algo/bootstrap.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <string>
#include <tuple>

#include "kasoku/support/error.hpp"

namespace kasoku::algo {

namespace {

using Diagonals = std::map<std::int64_t, cvec>;
using ckks::Ciphertext;

// The butterfly stage of block length `len` of the special FFT (inverse: of fft_special_inv) as diagonals.
//   forward, first half of a block (j < len/2):  out[s] = in[s] + w_j in[s + len/2]
//            second half (j = j' + len/2):       out[s] = in[s - len/2] - w_j' in[s]
//   inverse, first half:                         out[s] = in[s] + in[s + len/2]
//            second half:                        out[s] = (in[s - len/2] - in[s]) conj(w_j')
// with w_j = zeta^(5^j mod 4 len) for zeta a primitive 4 len-th root of unity, as the encoder's tables give it;
// diagonals of n values (the FFT's size), offsets mod n.
Diagonals stage(const ckks::Context& ctx, std::size_t len, bool inverse, std::size_t n) {
    const std::size_t m = 2 * ctx.n(), lenh = len / 2, lenq = len * 4;
    const auto& rot = ctx.rot_group();
    const auto& ksi = ctx.ksi();
    cvec d0(n), up(n), down(n);
    for (std::size_t s = 0; s < n; ++s) {
        const std::size_t j = s % len;
        if (j < lenh) {
            d0[s] = 1.0;
            up[s] = inverse ? 1.0 : ksi[(rot[j] % lenq) * (m / lenq)];
        } else {
            const std::size_t jj = j - lenh;
            const auto w = inverse ? ksi[(lenq - rot[jj] % lenq) * (m / lenq)] : ksi[(rot[jj] % lenq) * (m / lenq)];
            down[s] = inverse ? w : 1.0;
            d0[s] = -w;
        }
    }
    Diagonals d;
    d[0] = std::move(d0);
    d[static_cast<std::int64_t>(lenh)] = std::move(up);
    auto& dn = d[static_cast<std::int64_t>(n - lenh)];  // -len/2 mod n (the same offset as +len/2 when len = n)
    if (dn.empty()) dn.assign(n, 0.0);
    for (std::size_t s = 0; s < n; ++s) dn[s] += down[s];
    return d;
}

// (a after b): out[s] = sum_r a_r[s] (b in)[s + r] = sum_{r,t} a_r[s] b_t[s + r] in[s + r + t].
Diagonals compose(const Diagonals& a, const Diagonals& b, std::size_t n) {
    Diagonals c;
    for (const auto& [r, ar] : a)
        for (const auto& [t, bt] : b) {
            auto& ct = c[static_cast<std::int64_t>((static_cast<std::size_t>(r) + static_cast<std::size_t>(t)) % n)];
            if (ct.empty()) ct.assign(n, 0.0);
            for (std::size_t s = 0; s < n; ++s) ct[s] += ar[s] * bt[(s + static_cast<std::size_t>(r)) % n];
        }
    return c;
}

void check_range(const char* what, double v, double lo, double hi) {
    if (!(v >= lo && v <= hi))
        throw ParameterError(std::string("bootstrapping: ") + what + " = " + std::to_string(v) + " is outside " +
                             std::to_string(lo) + ".." + std::to_string(hi));
}

// d's diagonals (of a period dividing `size`) repeated to `size` values: the same map on inputs of that period.
Diagonals tiled(Diagonals d, std::size_t size) {
    for (auto& [r, v] : d) {
        const std::size_t period = v.size();
        v.resize(size);
        for (std::size_t s = period; s < size; ++s) v[s] = v[s - period];
    }
    return d;
}

// A map of period s (offsets 0..s-1, out[j] = sum_r d_r[j] in[(j + r) mod s]) with each entry that reads a slot below j
// (j + r >= s within the period) moved to the offset r - s, as a rotation of `all` slots (r - s + all): the same map
// on inputs of period s, and on those of period 2s the one that reads every partner in j's own block of s.
Diagonals signed_offsets(const Diagonals& d, std::size_t s, std::size_t all) {
    Diagonals out;
    for (const auto& [r, v] : d) {
        cvec up(s, 0.0), down(s, 0.0);
        bool any_up = false, any_down = false;
        for (std::size_t j = 0; j < s; ++j) {
            if (v[j] == 0.0) continue;
            const bool below = j + static_cast<std::size_t>(r) >= s;
            (below ? down : up)[j] = v[j];
            (below ? any_down : any_up) = true;
        }
        const auto put = [&](std::int64_t at, const cvec& w) {
            cvec& t = out[at];
            if (t.empty()) t.assign(s, 0.0);
            for (std::size_t j = 0; j < s; ++j) t[j] += w[j];
        };
        if (any_up) put(r, up);
        if (any_down) put(static_cast<std::int64_t>(static_cast<std::size_t>(r) + all - s), down);
    }
    return out;
}

Ciphertext apply_all(const std::vector<LinearTransform>& transforms, const ckks::Evaluator& ev, Ciphertext x,
                     Exec exec) {
    for (const auto& t : transforms) x = t.apply(ev, std::move(x), exec);  // each decomposition keeps its input
    return x;
}

}  // namespace

std::vector<std::map<std::int64_t, cvec>> dft_factors(const ckks::Context& ctx, bool inverse, int groups, double factor,
                                                      std::size_t slots) {
    const std::size_t n = slots ? slots : ctx.slots();
    if (n < 2 || n > ctx.slots() || !std::has_single_bit(n))
        throw ParameterError("the special FFT runs on a power of two of slots in 2.." + std::to_string(ctx.slots()) +
                             ", not " + std::to_string(n));
    const int stages = std::countr_zero(n);
    if (groups < 1 || groups > stages)
        throw ParameterError("the special FFT of " + std::to_string(n) + " slots has " + std::to_string(stages) +
                             " stages: merge them into 1.." + std::to_string(stages) + " transforms, not " +
                             std::to_string(groups));
    // Stage lengths in the order they apply: forward 2, 4, .., n; inverse n, .., 2.
    std::vector<std::size_t> lens;
    for (std::size_t len = 2; len <= n; len *= 2) lens.push_back(len);
    if (inverse) std::reverse(lens.begin(), lens.end());
    const double per_group = std::pow(inverse ? factor / static_cast<double>(n) : factor, 1.0 / groups);
    std::vector<Diagonals> out;
    std::size_t next = 0;
    for (int group = 0; group < groups; ++group) {
        const std::size_t count = (lens.size() - next) / static_cast<std::size_t>(groups - group);
        Diagonals acc = stage(ctx, lens[next], inverse, n);
        for (std::size_t i = 1; i < count; ++i) acc = compose(stage(ctx, lens[next + i], inverse, n), acc, n);
        next += count;
        for (auto& [r, d] : acc)
            for (auto& v : d) v *= per_group;
        out.push_back(std::move(acc));
    }
    return out;
}

double log2_irwin_hall_tail(int terms, double a) {
    if (terms < 1 || terms > 65536 || !std::isfinite(a))
        throw ParameterError("log2_irwin_hall_tail: terms must be in 1..65536 and a finite");
    // W = V + terms / 2 lies in [0, terms] and is symmetric about terms / 2: P(V >= a) = P(W <= t), t = terms / 2 - a,
    // the CDF F_m(t) of m = terms uniforms on [0, 1]. F_j(x) = (x F_{j-1}(x) + (j - x) F_{j-1}(x - 1)) / j with F_0 the
    // unit step: on 0 < x < j both weights are positive, so no term cancels another. f[i] holds F_j(t - i); only
    // i < t matters (F_j vanishes at and below 0).
    const long double t = static_cast<long double>(terms) / 2 - a;
    if (t <= 0) return -std::numeric_limits<double>::infinity();
    if (t >= terms) return 0.0;
    const std::size_t points = static_cast<std::size_t>(std::ceil(t)) + 1;
    std::vector<long double> f(points + 1);
    for (std::size_t i = 0; i <= points; ++i) f[i] = t - static_cast<long double>(i) >= 0 ? 1.0L : 0.0L;
    for (int j = 1; j <= terms; ++j)
        for (std::size_t i = 0; i < points; ++i) {
            const long double x = t - static_cast<long double>(i);
            f[i] = x <= 0 ? 0.0L : x >= j ? 1.0L : (x * f[i] + (j - x) * f[i + 1]) / j;
        }
    return static_cast<double>(std::log2(f[0]));
}

namespace {
// The config with its transform levels chosen, the bound on |I| and EvalMod's cosine: everything that decides the
// levels and the Galois elements, without encoding anything.
struct Plan {
    BootstrapConfig cfg;
    double k_bound = 0;
    Polynomial cos, asin;
    std::size_t slots = 0;
    int depth = 0;      // the levels it takes
    int doublings = 0;  // ModRaise's c = 2^doublings
    double ratio = 0;   // K = q_0 / (c s_0)
    BootstrapFailure failure;
};

// arcsin(y) = sum_k (2k)! / (4^k (k!)^2 (2k + 1)) y^(2k + 1), to the given odd degree.
Polynomial arcsine_taylor(int degree) {
    cvec c(static_cast<std::size_t>(degree) + 1, 0.0);
    double a = 1.0;  // (2k)! / (4^k (k!)^2)
    for (int k = 0; 2 * k + 1 <= degree; ++k) {
        c[2 * static_cast<std::size_t>(k) + 1] = a / (2 * k + 1);
        a *= (2.0 * k + 1) / (2.0 * k + 2);
    }
    return Polynomial(std::move(c));
}

constexpr double kCosineError = 0x1p-42;  // the chosen cosine interpolant's error on [-1, 1]
constexpr int kToleranceBits = 20;        // the reach's tolerance: 2^-20 in every output slot
constexpr int kMaxExactWeight = 4096;     // larger Hamming weights get no bound (probability 1)

// EvalMod's chain in plain arithmetic at x = m / K + I (its input slot holds x / range), and what it stands for.
double eval_mod_chain(const Polynomial& cos, int r, const Polynomial& asin, double range, double x) {
    double c = cos(x / range).real();
    for (int i = 0; i < r; ++i) c = 2.0 * c * c - 1.0;
    return asin.coeffs.empty() ? c : asin(c).real();
}
// (The arcsine polynomial on the exact sine: its own truncation, like the sine's curvature, is an error of the message
// that every coefficient has, not a failure.)
double eval_mod_ideal(const Polynomial& asin, double x) {
    const double sine = std::sin(2.0 * std::numbers::pi * x);
    return asin.coeffs.empty() ? sine : asin(sine).real();
}

// The cosine interpolant of cos(2 pi (range y - 1/4) / 2^r) on [-1, 1]: of the given degree, else the least degree
// within kCosineError among those of the fewest levels (up to 1023); no coefficients when none is.
Polynomial cosine_for(double range, int r, std::size_t degree) {
    const double shrink = std::ldexp(1.0, -r);
    const auto f = [range, shrink](double y) { return std::cos(2.0 * std::numbers::pi * (range * y - 0.25) * shrink); };
    if (degree > 0) return chebyshev(f, -1.0, 1.0, degree);
    const auto fits = [&](std::size_t d, Polynomial& p) {
        p = chebyshev(f, -1.0, 1.0, d);
        for (int i = 0; i <= 4096; ++i) {
            const double y = -1.0 + i / 2048.0;
            if (!(std::abs(p(y).real() - f(y)) <= kCosineError)) return false;
        }
        return true;
    };
    Polynomial best;
    std::size_t hi = 7;
    while (!fits(hi, best)) {
        if (hi >= 1023) return {};
        hi = 2 * hi + 1;
    }
    for (std::size_t lo = hi / 2; hi - lo > 1;) {  // degrees of the same depth as hi: (hi / 2, hi]
        const std::size_t mid = (lo + hi) / 2;
        Polynomial p;
        if (fits(mid, p)) {
            hi = mid;
            best = std::move(p);
        } else {
            lo = mid;
        }
    }
    return best;
}

// BootstrapFailure of a chain: its reach measured at x = +-I + m / K (33 values of m in [-1, 1] each), I = 0, 1, ..
// up to the largest |I| the secret allows, and the union bound of the law over the coefficients.
BootstrapFailure failure_of(const Polynomial& cos, int r, const Polynomial& asin, double range, double ratio, int h,
                            std::size_t coefficients) {
    BootstrapFailure f;
    f.secret_weight = h;
    f.coefficients = coefficients;
    f.tolerance = std::ldexp(2.0 * std::numbers::pi / ratio, -kToleranceBits);
    const int top = h > 0 ? h / 2 + 1 : static_cast<int>(range) + 8;
    f.reach = top;
    for (int i = 0; i <= top && f.reach == top; ++i)
        for (int k = 0; k <= 32; ++k) {
            const double m = (k / 16.0 - 1.0) / ratio;
            if (!(std::abs(eval_mod_chain(cos, r, asin, range, i + m) - eval_mod_ideal(asin, i + m)) <= f.tolerance &&
                  std::abs(eval_mod_chain(cos, r, asin, range, -i + m) - eval_mod_ideal(asin, -i + m)) <=
                      f.tolerance)) {
                f.reach = i - 1;
                break;
            }
        }
    if (h <= 0 || h > kMaxExactWeight) return f;  // no bound: probability 1
    f.log2_per_coefficient = std::min(0.0, 1.0 + log2_irwin_hall_tail(h, f.reach + 0.5 - 1.0 / ratio));
    f.log2_per_bootstrap = std::min(0.0, std::log2(static_cast<double>(coefficients)) + f.log2_per_coefficient);
    return f;
}

// One EvalMod configuration: its bound, double angles, cosine, levels, ciphertext products and failure.
struct EvalMod {
    double k_bound = 0;
    int r = 0;
    Polynomial cos;
    int depth = 0;
    std::size_t products = 0;
    BootstrapFailure failure;
    bool valid() const { return !cos.coeffs.empty(); }
    // fewer levels, then fewer products, then a smaller bound (EvalMod amplifies the noise by 2 pi (k_bound + 1))
    bool better_than(const EvalMod& o) const {
        return std::tie(depth, products, k_bound) < std::tie(o.depth, o.products, o.k_bound);
    }
};

EvalMod eval_mod_for(double k_bound, int r, const BootstrapConfig& cfg, const Polynomial& asin, double ratio, int h,
                     std::size_t coefficients) {
    EvalMod e;
    e.k_bound = k_bound;
    e.r = r;
    e.cos = cosine_for(k_bound + 1.0, r, cfg.cos_degree);
    if (!e.valid()) return e;
    e.depth = e.cos.depth() + r + (asin.coeffs.empty() ? 0 : asin.depth());
    e.products = plan_polynomial(e.cos).products + static_cast<std::size_t>(r) +
                 (asin.coeffs.empty() ? 0 : plan_polynomial(asin).products);
    e.failure = failure_of(e.cos, r, asin, k_bound + 1.0, ratio, h, coefficients);
    return e;
}

Plan make_plan(const ckks::Context& ctx, BootstrapConfig cfg) {
    Plan plan;
    plan.slots = cfg.slots ? cfg.slots : ctx.slots();
    if (plan.slots < 2 || plan.slots > ctx.slots() || !std::has_single_bit(plan.slots))
        throw ParameterError("bootstrapping: slots must be 0 (all " + std::to_string(ctx.slots()) +
                             ") or a power of two in 2.." + std::to_string(ctx.slots()) + ", not " +
                             std::to_string(cfg.slots));
    const int stages = std::countr_zero(plan.slots);
    if (cfg.double_angle != -1) check_range("double_angle", cfg.double_angle, 0, 8);
    check_range("failure_bits", cfg.failure_bits, 1, 1000);
    if (cfg.arcsine_degree != 0 && (cfg.arcsine_degree < 3 || cfg.arcsine_degree > 15 || cfg.arcsine_degree % 2 == 0))
        throw ParameterError("bootstrapping: arcsine_degree must be 0 (off) or odd in 3..15, not " +
                             std::to_string(cfg.arcsine_degree));
    if (cfg.log_message_ratio == 0) {
        // Sparse slots (g = n / (2 s) copies of each value): the message's nonzero coefficients are sqrt(g) times
        // those of full slots of the same values, and the best K grows with them (the sine's curvature against
        // EvalMod's noise), rounded down: + floor(log2(g) / 2) (measured at BOOT16 with 2^12..2^14 slots,
        // docs/BOOTSTRAPPING.md).
        const auto& p = ctx.params();
        const int sparse_bits = std::countr_zero(ctx.slots() / plan.slots) / 2;
        cfg.log_message_ratio =
            p.boot_levels > 0
                ? std::clamp(
                      static_cast<int>(std::lround(4 + 0.4 * (p.boot_bits - 55) + 0.75 * (16 - p.log_n))) + sparse_bits,
                      4, 30)
                : 8;
    }
    check_range("log_message_ratio", cfg.log_message_ratio, 4, 30);
    if (cfg.cts_levels < 0 || cfg.stc_levels < 0)
        throw ParameterError("bootstrapping: cts_levels and stc_levels must be >= 1 (or 0: chosen from the levels)");
    if (!std::isfinite(cfg.k_bound) || cfg.k_bound < 0)
        throw ParameterError("bootstrapping: k_bound must be finite and >= 0 (0: chosen for failure_bits)");
    // c = 2^doublings: K = q_0 / (c s_0) the largest power-of-two step at or above 2^log_message_ratio.
    const double q0 = static_cast<double>(ctx.rns().prime(0)), s0 = ctx.scale_at(0);
    const double want = std::ldexp(1.0, cfg.log_message_ratio);
    while (q0 / (std::ldexp(s0, plan.doublings + 1)) >= want) ++plan.doublings;
    plan.ratio = q0 / std::ldexp(s0, plan.doublings);
    const auto& params = ctx.params();
    const int h = params.boot_secret_weight > 0 ? params.boot_secret_weight : params.hamming_weight;
    if (cfg.k_bound == 0 && h == 0)
        throw ParameterError(
            "bootstrapping with a uniform ternary secret: ModRaise's q_0 I would need a very long sine "
            "approximation; use parameters with boot_secret_weight (sparse-secret encapsulation, e.g. "
            "32) or a sparse secret (hamming_weight), or give k_bound");
    if (cfg.arcsine_degree) plan.asin = arcsine_taylor(cfg.arcsine_degree);
    // The coefficients EvalMod evaluates: all n (real and imaginary parts of n / 2 slots), the lower half for real
    // slots, 2 s for s sparse slots.
    const std::size_t coefficients = plan.slots < ctx.slots() ? 2 * plan.slots : cfg.real ? ctx.n() / 2 : ctx.n();
    // EvalMod: cos(2 pi ((B + 1) y - 1/4) / 2^r) on [-1, 1], B and r as given or chosen. Chosen: for each r in 1..6
    // (r = 0 never takes fewer levels or products) the least B whose failure probability meets the target, and of
    // those the best (EvalMod::better_than). A given B with r chosen: the best r that meets the target, else the best.
    const double target = -static_cast<double>(cfg.failure_bits);
    const bool chosen_r = cfg.double_angle == -1;
    EvalMod best, best_any;
    for (int r = chosen_r ? 1 : cfg.double_angle; r <= (chosen_r ? 6 : cfg.double_angle); ++r) {
        const int largest = cfg.k_bound > 0 ? 0 : h / 2 + 1;  // at h / 2 + 1 nothing lies beyond the range
        for (int b = 1; b <= std::max(1, largest); ++b) {
            const double bound = cfg.k_bound > 0 ? cfg.k_bound : b;
            EvalMod e = eval_mod_for(bound, r, cfg, plan.asin, plan.ratio, h, coefficients);
            if (!e.valid()) continue;
            const bool meets = e.failure.log2_per_bootstrap <= target;
            if (!best_any.valid() || e.better_than(best_any)) best_any = e;
            if (meets) {
                if (!best.valid() || e.better_than(best)) best = std::move(e);
                break;
            }
        }
    }
    if (!best.valid()) {
        if (cfg.k_bound == 0 || !best_any.valid())
            throw ParameterError("bootstrapping: no cosine interpolant of degree <= 1023 " +
                                 (cfg.k_bound > 0
                                      ? "for k_bound " + std::to_string(cfg.k_bound)
                                      : "keeps the failure probability at 2^-" + std::to_string(cfg.failure_bits) +
                                            " for a secret of weight " + std::to_string(h)) +
                                 "; raise double_angle" + (cfg.k_bound > 0 ? std::string() : " or lower failure_bits"));
        best = std::move(best_any);  // the given k_bound, whatever its failure probability
    }
    plan.k_bound = best.k_bound;
    cfg.double_angle = best.r;
    plan.cos = std::move(best.cos);
    plan.failure = best.failure;
    // Transform levels left to choose (0): the room the bootstrapping levels leave beside EvalMod (6 without them),
    // CoeffToSlot taking the larger half (up to 4), SlotToCoeff the rest (up to 4), neither above the FFT's stages.
    const int evalmod = plan.cos.depth() + cfg.double_angle + (cfg.arcsine_degree ? plan.asin.depth() : 0);
    const int room = params.boot_levels > 0 ? params.boot_levels - evalmod : 6;
    if (cfg.slot_to_coeff_first) {
        // SlotToCoeff on the input's lowest levels (up to 3 of the user's), then one level for the final scaling.
        const int user = params.boot_levels > 0 ? ctx.user_level() : ctx.max_level();
        if (cfg.stc_levels == 0) cfg.stc_levels = std::clamp(user, 1, std::min(3, stages));
        if (cfg.stc_levels > user)
            throw ParameterError("bootstrapping SlotToCoeff first takes " + std::to_string(cfg.stc_levels) +
                                 " levels of the input's, but the parameters have " + std::to_string(user) +
                                 "; use fewer stc_levels or more levels");
        if (cfg.cts_levels == 0) cfg.cts_levels = std::clamp(room - 1, 1, std::min(4, stages));
    } else {
        if (cfg.cts_levels == 0)
            cfg.cts_levels =
                std::clamp(cfg.stc_levels ? room - cfg.stc_levels : (room + 1) / 2, 1, std::min(4, stages));
        if (cfg.stc_levels == 0) cfg.stc_levels = std::clamp(room - cfg.cts_levels, 1, std::min(4, stages));
    }
    check_range("cts_levels", cfg.cts_levels, 1, stages);
    check_range("stc_levels", cfg.stc_levels, 1, stages);
    plan.depth = cfg.cts_levels + evalmod + (cfg.slot_to_coeff_first ? 1 : cfg.stc_levels);
    // With bootstrapping levels, the transforms run in them and the last one crosses to the user level.
    const int have = params.boot_levels > 0 ? params.boot_levels : ctx.max_level();
    if (plan.depth > have)
        throw ParameterError("bootstrapping needs " + std::to_string(plan.depth) + " levels (CoeffToSlot " +
                             std::to_string(cfg.cts_levels) + ", EvalMod " + std::to_string(evalmod) +
                             (cfg.slot_to_coeff_first ? std::string(", the final scaling 1")
                                                      : ", SlotToCoeff " + std::to_string(cfg.stc_levels)) +
                             ") but the parameters have " + std::to_string(have) +
                             (params.boot_levels > 0 ? " bootstrapping levels" : "") +
                             "; use more levels or fewer transform levels");
    plan.cfg = cfg;
    return plan;
}

// The diagonals of the CoeffToSlot and SlotToCoeff transforms (over all slots), scaled by the factors (SlotToCoeff
// first: its factor goes to the final scaling instead). Sparse slots (s < ctx.slots()): CoeffToSlot's maps H are
// followed by D1 = 1/2 on slots j < s, -i/2 on s..2s - 1, so that a + conj(a), a = D1 H(y), is Re u | Im u for
// u = H(y). D1 goes into the first map (whose diagonals have period s already, so it takes a period of 2s): every FFT
// stage pairs slots within aligned blocks of at most s, so the later maps commute with D1 once a partner below j is
// read by the signed offset (a rotation by -r, not by s - r: on inputs of period 2s they differ; signed_offsets), and
// their diagonals keep their short periods (a plan of half the bytes at s = n/4). D3 w + D4 Rot_s(w), D3 = 1 | i,
// D4 = i | 1 (slots j < s | s..2s - 1), is w_j + i w_{j+s} on every slot for w of period 2s: SlotToCoeff's last map
// takes it (the earlier ones, on w by signed offsets, commute with it), or (SlotToCoeff first) the final scaling is it.
struct Maps {
    std::vector<Diagonals> cts, stc;
    Diagonals finish;  // SlotToCoeff first: the final scaling (one level, after EvalMod)
};

Maps transform_maps(const ckks::Context& ctx, const Plan& plan, double cts_factor, double stc_factor) {
    const std::size_t s = plan.slots, all = ctx.slots();
    const bool first = plan.cfg.slot_to_coeff_first;
    Maps m{dft_factors(ctx, true, plan.cfg.cts_levels, cts_factor, s),
           dft_factors(ctx, false, plan.cfg.stc_levels, first ? 1.0 : stc_factor, s),
           {}};
    if (first) m.finish[0] = cvec(all, stc_factor);
    if (s < all) {
        const std::complex<double> i(0.0, 1.0);
        Diagonals& first_map = m.cts.front();
        first_map = tiled(std::move(first_map), 2 * s);
        for (auto& [r, v] : first_map)
            for (std::size_t j = 0; j < 2 * s; ++j) v[j] *= j < s ? 0.5 : -0.5 * i;
        for (std::size_t k = 1; k < m.cts.size(); ++k) m.cts[k] = signed_offsets(std::move(m.cts[k]), s, all);
        cvec d3(2 * s, 1.0), d4(2 * s, i);
        for (std::size_t j = s; j < 2 * s; ++j) std::swap(d3[j], d4[j]);
        const Diagonals join{{0, d3}, {static_cast<std::int64_t>(s), d4}};
        if (first) {
            m.finish = tiled(join, all);
            for (auto& [r, v] : m.finish)
                for (auto& x : v) x *= stc_factor;
        } else {
            // The join goes into the last map (the long-period one); the maps before it read w of period 2s by signed
            // offsets, so that the join commutes with them.
            for (std::size_t k = 0; k + 1 < m.stc.size(); ++k) m.stc[k] = signed_offsets(std::move(m.stc[k]), s, all);
            m.stc.back() = compose(tiled(std::move(m.stc.back()), 2 * s), join, 2 * s);
        }
    }
    if (plan.cfg.real && s == all && !first) {
        // SlotToCoeff after D = diag(1/2, 1, .., 1): out[j] = sum_r diag_r[j] D[j + r] in[j + r], so the entries that
        // read slot 0 (the constant coefficient) are halved; the conjugation sum then counts it once.
        for (auto& [r, v] : m.stc.front()) v[(all - static_cast<std::size_t>(r)) % all] *= 0.5;
    }
    for (auto* list : {&m.cts, &m.stc})
        for (auto& d : *list) d = tiled(std::move(d), all);
    return m;
}

// Sparse slots: the Galois elements of the rotations by s * 2^i, i < log2(ctx.slots() / s), whose doubling sum is the
// trace to the subring.
std::vector<std::uint64_t> trace_galois_elts(const ckks::Context& ctx, std::size_t s) {
    std::vector<std::uint64_t> galois_elts;
    for (std::size_t r = s; r < ctx.slots(); r *= 2)
        galois_elts.push_back(ctx.galois_element(static_cast<std::int64_t>(r)));
    return galois_elts;
}

// Where a plan's levels go: ModRaise's level (the top), the first SlotToCoeff transform's, and the level of SlotToCoeff
// first's final scaling (the transforms below each of them one level each).
struct TransformLevels {
    int top, stc_top, finish;
};
TransformLevels transform_levels(const ckks::Context& ctx, const Plan& plan) {
    const int top = ctx.params().boot_levels > 0 ? ctx.user_level() + plan.depth : ctx.max_level();
    const int output = top - plan.depth;
    return {top, plan.cfg.slot_to_coeff_first ? plan.cfg.stc_levels : output + plan.cfg.stc_levels, output + 1};
}

// An element's key serves every level up to the highest it is used at.
void use_at(std::map<std::uint64_t, int>& levels, std::uint64_t galois_elt, int level) {
    int& at = levels.try_emplace(galois_elt, level).first->second;
    at = std::max(at, level);
}
}  // namespace

Bootstrapper::Bootstrapper(ckks::ContextPtr ctx, BootstrapConfig cfg, Exec exec, const Progress& progress)
    : ctx_(std::move(ctx)) {
    if (!ctx_) throw ParameterError("bootstrapping needs a context");
    Plan plan = make_plan(*ctx_, cfg);
    cfg_ = plan.cfg;
    k_bound_ = plan.k_bound;
    cos_ = std::move(plan.cos);
    asin_ = std::move(plan.asin);
    depth_ = plan.depth;
    slots_ = plan.slots;
    trace_galois_elts_ = trace_galois_elts(*ctx_, slots_);
    const double range = k_bound_ + 1.0;
    const TransformLevels at = transform_levels(*ctx_, plan);
    top_ = at.top;
    doublings_ = plan.doublings;
    ratio_ = plan.ratio;
    failure_ = plan.failure;
    const double q0 = static_cast<double>(ctx_->rns().prime(0));

    // The encoded transforms: those of a living bootstrapper of this context and config (Context::shared), else
    // encoded now. The key is everything the planned config fixes (its transform levels chosen).
    std::string key = "algo.bootstrap_transforms";
    for (double v : {static_cast<double>(cfg_.cts_levels), static_cast<double>(cfg_.stc_levels),
                     static_cast<double>(cfg_.double_angle), static_cast<double>(cfg_.log_message_ratio), k_bound_,
                     static_cast<double>(cos_.coeffs.size()), static_cast<double>(slots_),
                     static_cast<double>(cfg_.arcsine_degree), cfg_.slot_to_coeff_first ? 1.0 : 0.0,
                     real_projection() ? 1.0 : 0.0, cfg_.at_use ? 1.0 : 0.0}) {
        char word[32];
        std::snprintf(word, sizeof word, " %a", v);  // exact
        key += word;
    }
    transforms_ = std::dynamic_pointer_cast<const Transforms>(ctx_->shared(key, [&] {
        // CoeffToSlot: slots decode(t) / s_top -> (t_j + i t_{j+n/2}) / (2 q_0 (B + 1)); sparse: the trace's sum of g
        // copies -> (t_{gj} + i t_{g(j+s)}) / (q_0 (B + 1)) before the split (which halves it).
        const double gap = static_cast<double>(ctx_->slots()) / static_cast<double>(slots_);  // a power of two
        const double cts_factor = ctx_->scale_at(top_) / (q0 * (sparse() ? gap : 2.0) * range);
        // SlotToCoeff: sin(2 pi x) = sin(2 pi m / K) ~ 2 pi m / K -> m.
        const double stc_factor = ratio_ / (2.0 * std::numbers::pi) * (real_projection() && !doublings_ ? 0.5 : 1.0);
        const Maps maps = transform_maps(*ctx_, plan, cts_factor, stc_factor);
        auto t = std::make_shared<Transforms>();
        const std::size_t total = static_cast<std::size_t>(cfg_.cts_levels) +
                                  static_cast<std::size_t>(cfg_.stc_levels) + (cfg_.slot_to_coeff_first ? 1 : 0);
        std::size_t done = 0;
        const auto encoded = [&] {
            if (progress) progress(++done, total);
        };
        for (int i = 0; i < cfg_.cts_levels; ++i) {
            t->cts.emplace_back(ctx_, maps.cts[static_cast<std::size_t>(i)], top_ - i, 0, exec, cfg_.at_use);
            encoded();
        }
        // SlotToCoeff first: on the input's levels stc_levels..1 (then the final scaling above the output level); else
        // the last levels.
        for (int i = 0; i < cfg_.stc_levels; ++i) {
            t->stc.emplace_back(ctx_, maps.stc[static_cast<std::size_t>(i)], at.stc_top - i, 0, exec, cfg_.at_use);
            encoded();
        }
        if (cfg_.slot_to_coeff_first) {
            t->finish.emplace_back(ctx_, maps.finish, at.finish, 0, exec, cfg_.at_use);
            encoded();
        }
        return std::shared_ptr<const ckks::Context::Shared>(std::move(t));
    }));
    if (!transforms_) throw InternalError("Bootstrapper: the context keeps something else under " + key);
}

double Bootstrapper::eval_mod_reference(double x) const {
    return eval_mod_chain(cos_, cfg_.double_angle, asin_, k_bound_ + 1.0, x);
}

BootstrapFailure Bootstrapper::failure(const ckks::Context& ctx, const BootstrapConfig& cfg) {
    return make_plan(ctx, cfg).failure;
}

int Bootstrapper::levels_needed(const ckks::Context& ctx, const BootstrapConfig& cfg) {
    return make_plan(ctx, cfg).depth;
}

std::size_t Bootstrapper::plan_nbytes() const {
    std::size_t bytes = 0;
    for (const auto* list : {&transforms_->cts, &transforms_->stc, &transforms_->finish})
        for (const LinearTransform& t : *list) bytes += t.nbytes();
    return bytes;
}

std::vector<std::uint64_t> Bootstrapper::galois_elements() const {
    std::vector<std::uint64_t> all;
    for (const auto& [galois_elt, level] : galois_levels()) all.push_back(galois_elt);
    return all;
}

std::vector<std::uint64_t> Bootstrapper::galois_elements(const ckks::Context& ctx, const BootstrapConfig& cfg) {
    std::vector<std::uint64_t> all;
    for (const auto& [galois_elt, level] : galois_levels(ctx, cfg)) all.push_back(galois_elt);
    return all;
}

std::map<std::uint64_t, int> Bootstrapper::galois_levels() const {
    std::map<std::uint64_t, int> levels;
    use_at(levels, ctx_->conjugation_element(), top_ - cfg_.cts_levels);  // after CoeffToSlot (and below it)
    for (std::uint64_t galois_elt : trace_galois_elts_) use_at(levels, galois_elt, top_);
    for (const auto* list : {&transforms_->cts, &transforms_->stc, &transforms_->finish})
        for (const auto& t : *list)
            for (std::uint64_t galois_elt : t.galois_elements()) use_at(levels, galois_elt, t.level());
    return levels;
}

std::map<std::uint64_t, int> Bootstrapper::galois_levels(const ckks::Context& ctx, const BootstrapConfig& cfg) {
    const Plan plan = make_plan(ctx, cfg);
    const TransformLevels at = transform_levels(ctx, plan);
    std::map<std::uint64_t, int> levels;
    use_at(levels, ctx.conjugation_element(), at.top - plan.cfg.cts_levels);
    for (std::uint64_t galois_elt : trace_galois_elts(ctx, plan.slots)) use_at(levels, galois_elt, at.top);
    const Maps maps = transform_maps(ctx, plan, 1.0, 1.0);
    const auto use_map = [&](const Diagonals& d, int level) {
        std::vector<std::int64_t> offsets;
        for (const auto& [r, diag] : d)  // the nonzero diagonals, as LinearTransform keeps them
            if (std::any_of(diag.begin(), diag.end(), [](const auto& v) { return v != 0.0; })) offsets.push_back(r);
        for (std::uint64_t galois_elt :
             LinearTransform::galois_elements(ctx, LinearTransform::plan_for(offsets, ctx.slots())))
            use_at(levels, galois_elt, level);
    };
    for (std::size_t i = 0; i < maps.cts.size(); ++i) use_map(maps.cts[i], at.top - static_cast<int>(i));
    for (std::size_t i = 0; i < maps.stc.size(); ++i) use_map(maps.stc[i], at.stc_top - static_cast<int>(i));
    if (!maps.finish.empty()) use_map(maps.finish, at.finish);
    return levels;
}

namespace {
// ct on `level` with its canonical scale: taken down exactly (one rescale) from above; on that level its scale must
// be the canonical one already.
Ciphertext on_level(const ckks::Context& ctx, const ckks::Evaluator& ev, const Ciphertext& in, int level, Exec exec) {
    if (in.size() > 3)
        throw ParameterError("bootstrap takes ciphertexts of size 2 or 3, not " + std::to_string(in.size()));
    Ciphertext ct = in.size() == 3 ? ev.relinearize(in, exec) : in;
    if (ct.level() > level) return ev.linear_combination_at({&ct}, {1.0}, 0.0, level, 0.0, exec);
    if (ct.level() < level)
        throw LevelError("bootstrap with SlotToCoeff first needs the ciphertext at level >= " + std::to_string(level) +
                         " (the transform runs on its levels " + std::to_string(level) + "..1), this one is at " +
                         std::to_string(ct.level()) + "; bootstrap it earlier or use fewer stc_levels");
    if (!ctx.is_canonical(ct.scale, level))
        throw ScaleError("bootstrap needs a ciphertext at level " + std::to_string(level) +
                         " on its canonical scale (" + std::to_string(ctx.scale_at(level)) + "), this one has " +
                         std::to_string(ct.scale) +
                         " and no level left to adjust it: bootstrap it one level earlier (any scale is taken above "
                         "level " +
                         std::to_string(level) +
                         "), or bring it down with drop_level, which keeps the canonical "
                         "scale, instead of drop_limbs or a hand-chosen scale");
    return ct;
}
}  // namespace

Ciphertext mod_raise(const ckks::Evaluator& ev, const Ciphertext& a, int level, Exec exec) {
    const ckks::Context& ctx = ev.context();
    if (a.context_uid != ctx.uid()) throw ParameterError("mod_raise: the ciphertext belongs to another context");
    if (a.size() != 2) throw ParameterError("mod_raise needs a relinearised (size-2) ciphertext; relinearize it first");
    if (level < 0) level = ctx.max_level();
    if (a.level() != 0)
        throw LevelError("mod_raise needs a ciphertext at level 0 (this one is at level " + std::to_string(a.level()) +
                         "); drop_level it first");
    if (level < 1 || level > ctx.max_level())
        throw LevelError("mod_raise to level " + std::to_string(level) + ": levels are 1.." +
                         std::to_string(ctx.max_level()));
    exec = ctx.exec(exec);
    const rns::Backend& be = ctx.backend();
    Ciphertext r = a;
    for (rns::RnsPoly& p : r.polys) {
        rns::RnsPoly out = be.poly(static_cast<std::size_t>(level) + 1, 0, true);
        be.raise_q0(p, out, exec);
        p = std::move(out);
    }
    return r;
}

namespace {
const ckks::SwitchKey& encapsulation_key(const ckks::Evaluator& ev, bool to_sparse, const char* op) {
    const ckks::EvaluationKeys* keys = ev.keys();
    const auto& key = keys ? (to_sparse ? keys->to_sparse : keys->from_sparse) : nullptr;
    if (!key)
        throw MissingKeyError(std::string(op) +
                              " needs the encapsulation keys: parameters with boot_secret_weight and "
                              "ctx.keygen(bootstrapping=True) (KeyGenerator::encapsulation_keys)");
    return *key;
}
}  // namespace

Ciphertext switch_to_sparse(const ckks::Evaluator& ev, const Ciphertext& a, Exec exec) {
    const ckks::SwitchKey& key = encapsulation_key(ev, true, "switch_to_sparse");
    if (a.level() != 0)
        throw LevelError(
            "switch_to_sparse works at level 0 (its key lives on q_0 * p_0 only); drop_level the ciphertext first");
    return ev.key_switch(a, key, exec);
}

Ciphertext switch_from_sparse(const ckks::Evaluator& ev, const Ciphertext& a, Exec exec) {
    return ev.key_switch(a, encapsulation_key(ev, false, "switch_from_sparse"), exec);
}

Ciphertext Bootstrapper::raise(const ckks::Evaluator& ev, const Ciphertext& ct, Exec exec) const {
    Ciphertext x = on_level(*ctx_, ev, ct, 0, exec);
    int doublings = doublings_;
    if (real_projection()) {
        // 2 Re(z) = z + conj(z) (a key switch on q_0 alone) stands for the first doubling: from here on the message
        // is a real one, whose polynomial's lower half determines it (without doublings the message is twice as
        // large and SlotToCoeff halves it).
        x = ev.add(x, ev.conjugate(x, exec), exec);
        doublings = std::max(0, doublings - 1);
    }
    for (int i = 0; i < doublings; ++i) x = ev.add(x, x, exec);
    const bool encapsulated = ctx_->params().boot_secret_weight > 0;
    if (encapsulated) x = switch_to_sparse(ev, x, exec);
    Ciphertext raised = mod_raise(ev, x, top_, exec);
    raised.scale = ctx_->scale_at(top_);
    return encapsulated ? switch_from_sparse(ev, raised, exec) : raised;
}

Ciphertext Bootstrapper::coeff_to_slot(const ckks::Evaluator& ev, const Ciphertext& raised, Exec exec,
                                       OpCounts* counts) const {
    const ckks::Evaluator cev = counts ? ev.counting(*counts) : ev;
    if (!sparse()) return apply_all(transforms_->cts, cev, raised, exec);
    // The trace to the subring (doubling: one key per step), the transforms, then a + conj(a).
    const Ciphertext a =
        apply_all(transforms_->cts, cev,
                  cev.trace(raised, trace_galois_elts_, static_cast<int>(trace_galois_elts_.size()), exec), exec);
    return cev.add(a, cev.conjugate(a, exec), exec);
}

Ciphertext Bootstrapper::eval_mod(const ckks::Evaluator& ev, const Ciphertext& y, Exec exec, OpCounts* counts) const {
    const ckks::Evaluator cev = counts ? ev.counting(*counts) : ev;
    Ciphertext c = evaluate(cev, y, cos_, exec);
    for (int i = 0; i < cfg_.double_angle; ++i) c = cev.multiply_add(c, c, 2, {}, {}, -1.0, exec);
    return asin_.coeffs.empty() ? c : evaluate(cev, c, asin_, exec);
}

Ciphertext Bootstrapper::slot_to_coeff(const ckks::Evaluator& ev, const Ciphertext& w, Exec exec,
                                       OpCounts* counts) const {
    return apply_all(transforms_->stc, counts ? ev.counting(*counts) : ev, w, exec);
}

Ciphertext Bootstrapper::bootstrap(const ckks::Evaluator& ev, const Ciphertext& ct, Exec exec, OpCounts* counts,
                                   BootstrapTimes* times) const {
    const ckks::Evaluator cev = counts ? ev.counting(*counts) : ev;  // every stage below counts through it
    using clock = std::chrono::steady_clock;
    auto t = clock::now();
    const auto lap = [&](double BootstrapTimes::*stage) {
        if (times) ctx_->backend().memory()->synchronize();  // a device's stage ends when its queued work does
        const auto now = clock::now();
        if (times) times->*stage = std::chrono::duration<double>(now - t).count();
        t = now;
    };
    Ciphertext in = ct;
    if (cfg_.slot_to_coeff_first) {
        in = slot_to_coeff(cev, on_level(*ctx_, cev, ct, cfg_.stc_levels, exec), exec);
        lap(&BootstrapTimes::slot_to_coeff);
    }
    const Ciphertext raised = raise(cev, in, exec);
    lap(&BootstrapTimes::raise);
    const Ciphertext v = coeff_to_slot(cev, raised, exec);
    lap(&BootstrapTimes::coeff_to_slot);
    Ciphertext w;
    if (sparse()) {  // real already: one EvalMod
        w = eval_mod(cev, v, exec);
    } else if (cfg_.real) {  // the real part a = v + conj(v) only: the lower half of the coefficients
        w = eval_mod(cev, cev.add(v, cev.conjugate(v, exec), exec), exec);
    } else {
        // v = (a + i b) / 2 (both scaled by 1 / (B + 1)): a = v + conj(v), b = i (conj(v) - v).
        const Ciphertext vc = cev.conjugate(v, exec);
        const Ciphertext re = eval_mod(cev, cev.add(v, vc, exec), exec);
        const Ciphertext im = eval_mod(cev, cev.multiply_by_i(cev.sub(vc, v, exec), exec), exec);
        w = cev.add(re, cev.multiply_by_i(im, exec), exec);
    }
    if (cfg_.slot_to_coeff_first)
        w = transforms_->finish.front().apply(cev, std::move(w), exec);  // the final scaling, timed with EvalMod
    lap(&BootstrapTimes::eval_mod);
    if (cfg_.slot_to_coeff_first) return w;
    Ciphertext out = slot_to_coeff(cev, w, exec);
    // Real slots: out is the lower half m_low of a real message's m (its constant coefficient halved), and
    // m(X) = m_low(X) + m_low(X^-1): the conjugation of the slots.
    if (real_projection()) out = cev.add(out, cev.conjugate(out, exec), exec);
    lap(&BootstrapTimes::slot_to_coeff);
    return out;
}

}  // namespace kasoku::algo
