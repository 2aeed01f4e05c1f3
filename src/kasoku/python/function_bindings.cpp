// Polynomials and functions of encrypted values: ks.Polynomial, ks.chebyshev, Evaluator.evaluate_polynomial,
// evaluate_function, sigmoid, exp, sin, cos, sqrt, inverse, sign, compare, linear_combination; bootstrapping
// (ks.Bootstrapper, Evaluator.bootstrap), which stands on the polynomial evaluator.
#include <nanobind/nanobind.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>

#include "bindings_internal.hpp"
#include "kasoku/algo/functions.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kasoku;
using namespace kasoku::ckks;

namespace kasoku_py {

namespace {
using Interval = std::pair<double, double>;
constexpr double kPi = 3.14159265358979323846;

algo::Basis basis_of(const std::string& s) {
    if (s == "power") return algo::Basis::power;
    if (s == "chebyshev") return algo::Basis::chebyshev;
    throw ParameterError("basis must be \"power\" or \"chebyshev\", got \"" + s + "\"");
}

algo::Polynomial make_polynomial(const Values& coeffs, const std::string& basis, std::optional<Interval> interval) {
    const Interval iv = interval.value_or(Interval{-1.0, 1.0});
    return algo::Polynomial(coeffs.get(), basis_of(basis), iv.first, iv.second);
}

// f at the Chebyshev nodes of the interval: f is called once with a NumPy array of the nodes (a vectorised function)
// and, when that fails or does not give one value per node, once per node with a float.
algo::Polynomial interpolate(const nb::callable& f, Interval iv, std::size_t degree) {
    const std::vector<double> nodes = algo::chebyshev_nodes(iv.first, iv.second, degree);
    cvec values;
    try {
        const nb::object arr = nb::module_::import_("numpy").attr("asarray")(nodes);
        const Values v = nb::cast<Values>(f(arr));
        if (v.error.empty() && v.v.size() == nodes.size()) values = v.v;
    } catch (const nb::python_error&) {
    } catch (const nb::cast_error&) {}
    if (values.empty()) {
        for (double x : nodes) values.push_back(nb::cast<std::complex<double>>(f(x)));
    }
    return algo::chebyshev_from_values(values, iv.first, iv.second);
}

// Binds an algo function of (ciphertext, interval, degree): sigmoid, exp, sin, cos, sqrt.
using IntervalFunction = Ciphertext (*)(const Evaluator&, const Ciphertext&, double, double, std::size_t, kasoku::Exec);
auto interval_function(IntervalFunction fn) {
    return [fn](const KEvaluator& e, const KCiphertext& a, Interval iv, std::size_t degree, TArg t) {
        same_owner(a.owner, e.owner, "ciphertext");
        return wrap(e.owner, fn(*e.ev, a.ct, iv.first, iv.second, degree, threads_arg(t)));
    };
}

KCiphertext eval_poly(const KEvaluator& e, const KCiphertext& a, const algo::Polynomial& p, TArg t) {
    same_owner(a.owner, e.owner, "ciphertext");
    return wrap(e.owner, algo::evaluate(*e.ev, a.ct, p, threads_arg(t)));
}

std::vector<const Ciphertext*> unwrap_all(const KEvaluator& e, const std::vector<const KCiphertext*>& cts,
                                          const char* what) {
    std::vector<const Ciphertext*> xs;
    for (const KCiphertext* c : cts) {
        if (!c) throw ParameterError(std::string(what) + ": a ciphertext is None");
        same_owner(c->owner, e.owner, "ciphertext");
        xs.push_back(&c->ct);
    }
    return xs;
}
// "2^-131.6", "0" (never) or "1" (no bound): a probability far below what a double prints usefully.
std::string failure_text(const algo::BootstrapFailure& f) {
    if (std::isinf(f.log2_per_bootstrap)) return "0";
    if (f.log2_per_bootstrap >= 0) return "1";
    char buf[32];
    std::snprintf(buf, sizeof buf, "2^%.1f", f.log2_per_bootstrap);
    return buf;
}

}  // namespace

void bind_functions(nb::module_& m) {
    nb::class_<algo::Polynomial>(
        m, "Polynomial",
        "p(x) = sum_i coeffs[i] B_i(t), t = (2x - a - b) / (b - a) on interval (a, b) (t = x on (-1, 1)); "
        "B_i = t^i (basis=\"power\") or the Chebyshev T_i(t) (basis=\"chebyshev\"). Evaluator.evaluate_polynomial "
        "takes `depth` levels.")
        .def(
            "__init__",
            [](algo::Polynomial* self, const Values& coeffs, const std::string& basis,
               std::optional<Interval> interval) {
                new (self) algo::Polynomial(make_polynomial(coeffs, basis, interval));
            },
            "coeffs"_a, "basis"_a = "power", "interval"_a = nb::none())
        .def_prop_ro(
            "coeffs", [](const algo::Polynomial& p) { return ComplexArray{p.coeffs}; },
            "Its coefficients, lowest degree first, in its basis.")
        .def_prop_ro(
            "basis",
            [](const algo::Polynomial& p) {
                return std::string(p.basis == algo::Basis::power ? "power" : "chebyshev");
            },
            "\"power\" or \"chebyshev\".")
        .def_prop_ro(
            "interval",
            [](const algo::Polynomial& p) {
                return Interval{p.a, p.b};
            },
            "(a, b): the input interval mapped onto (-1, 1) before evaluation.")
        .def_prop_ro("degree", &algo::Polynomial::degree, "Its degree.")
        .def_prop_ro("depth", &algo::Polynomial::depth,
                     "Levels the evaluation takes: ceil(log2(degree + 1)), plus one when the interval is not (-1, 1).")
        .def(
            "plan",
            [](const algo::Polynomial& p) {
                const algo::PolynomialPlan plan = algo::plan_polynomial(p);
                return std::map<std::string, std::size_t>{{"products", plan.products},
                                                          {"terms", plan.terms},
                                                          {"baby", plan.baby},
                                                          {"depth", static_cast<std::size_t>(plan.depth)}};
            },
            "What the evaluation will do: ciphertext products, terms of its linear combinations, baby-step bound, "
            "depth.")
        .def(
            "__call__",
            [](const algo::Polynomial& p, const Values& x) -> nb::object {
                const cvec& v = x.get();
                if (x.scalar) return nb::cast(p(v.front()));
                cvec out(v.size());
                for (std::size_t i = 0; i < v.size(); ++i) out[i] = p(v[i]);
                return nb::cast(ComplexArray{std::move(out)});
            },
            "x"_a, "p(x) in plain arithmetic (a number or an array).")
        .def("__repr__", [](const algo::Polynomial& p) {
            return "Polynomial(" + p.describe() + ", depth " + std::to_string(p.depth()) + ")";
        });

    m.def("chebyshev", &interpolate, "f"_a, "interval"_a, "degree"_a,
          "The Chebyshev interpolant of f on interval (a, b) at degree + 1 Chebyshev nodes. f is called with a NumPy "
          "array of the nodes (or, if that fails, with each node). Coefficients below 2^-50 of the largest are zero.");
    m.def(
        "chebyshev_nodes",
        [](Interval iv, std::size_t degree) { return algo::chebyshev_nodes(iv.first, iv.second, degree); },
        "interval"_a, "degree"_a,
        "The degree + 1 Chebyshev nodes on interval (a, b) that ks.chebyshev interpolates at.");
    nb::class_<KBootstrapper>(
        m, "Bootstrapper",
        "CKKS bootstrapping: ModRaise, CoeffToSlot (special FFT stages merged into cts_levels BSGS transforms), "
        "EvalMod (Chebyshev cosine over abs(I) <= k_bound, double_angle double-angle steps, optionally arcsin's Taylor "
        "polynomial of odd arcsine_degree), SlotToCoeff (stc_levels transforms). k_bound 0 and double_angle None: "
        "chosen, the fewest levels and products whose failure probability (an I beyond what EvalMod maps, from the "
        "exact law of I and EvalMod's measured reach: failure_probability, failure) is at most 2^-failure_bits. "
        "slots=0: all ctx.slots complex slots; a power of two up "
        "to ctx.slots / 2: sparse packing, where the input repeats every `slots` slots (ctx.encode/encrypt with "
        "slots=) - one EvalMod instead of two. slot_to_coeff_first=True: SlotToCoeff on the input's lowest levels "
        "(stc_levels of them; the input must be at level >= stc_levels), then ModRaise, CoeffToSlot, EvalMod and one "
        "scaling level (use arcsine_degree=3 with it: the slots become coefficients as large as the values). "
        "real=True: the messages are real; EvalMod runs once instead of twice (full slots: about a third less time) "
        "and the output holds the real part of each input slot (imaginary parts are dropped). at_use=True: the "
        "transforms keep their diagonals' values and encode them at each bootstrap (a plan a fraction of the size, "
        "bootstraps a little slower, the same results). cts_levels/stc_levels 0: "
        "chosen from the bootstrapping levels' room. Needs sparse-secret encapsulation (Parameters.boot_secret_weight) "
        "or a sparse secret (hamming_weight) unless k_bound is given; takes `depth` levels (the bootstrapping levels "
        "when the parameters have them, else from the top) and leaves results at `output_level` (ctx.user_level with "
        "bootstrapping levels). Making one encodes its transforms (the memory of bootstrapping besides the Galois "
        "keys; a second one of the same context and config shares them, made at once); ctx.keygen(bootstrapping=b) "
        "makes its keys. progress: None (a bar on stderr when it is a terminal and the plan takes over a second), True "
        "(a bar), False (none) or a callable(done, total) called after each transform; Ctrl-C ends it at the next "
        "transform (KeyboardInterrupt).")
        .def(
            "__init__",
            [](KBootstrapper* self, const KContext& c, int cts_levels, int stc_levels, std::optional<int> double_angle,
               int log_message_ratio, double k_bound, std::size_t cos_degree, std::size_t slots, int arcsine_degree,
               bool slot_to_coeff_first, bool real, bool at_use, int failure_bits, TArg t, nb::handle progress) {
                const algo::BootstrapConfig cfg{cts_levels,
                                                stc_levels,
                                                double_angle.value_or(-1),
                                                log_message_ratio,
                                                k_bound,
                                                cos_degree,
                                                slots,
                                                arcsine_degree,
                                                slot_to_coeff_first,
                                                real,
                                                at_use,
                                                failure_bits};
                new (self) KBootstrapper{c.owner, std::make_shared<const algo::Bootstrapper>(
                                                      c.owner->ctx, cfg, threads_arg(t),
                                                      python_progress(progress, "bootstrapping plan", "transform"))};
            },
            "ctx"_a, "cts_levels"_a = 0, "stc_levels"_a = 0, "double_angle"_a = nb::none(), "log_message_ratio"_a = 0,
            "k_bound"_a = 0.0, "cos_degree"_a = 0, "slots"_a = 0, "arcsine_degree"_a = 0,
            "slot_to_coeff_first"_a = false, "real"_a = false, "at_use"_a = false, "failure_bits"_a = 128,
            "threads"_a = nb::none(), "progress"_a = nb::none(), ReleaseGil())
        .def_prop_ro(
            "depth", [](const KBootstrapper& b) { return b.boot->depth(); }, "Levels a bootstrap consumes.")
        .def_prop_ro(
            "input_level", [](const KBootstrapper& b) { return b.boot->input_level(); },
            "The lowest level an input may have (0; SlotToCoeff first: stc_levels).")
        .def_prop_ro(
            "slots", [](const KBootstrapper& b) { return b.boot->slots(); },
            "Complex slots it bootstraps (ctx.slots when full; fewer: sparse packing).")
        .def_prop_ro(
            "output_level", [](const KBootstrapper& b) { return b.boot->output_level(); },
            "The level a bootstrapped ciphertext is at.")
        .def_prop_ro(
            "raise_level", [](const KBootstrapper& b) { return b.boot->raise_level(); },
            "The level ModRaise raises to: user_level + depth with bootstrapping levels, else max_level.")
        .def_prop_ro(
            "k_bound", [](const KBootstrapper& b) { return b.boot->k_bound(); },
            "Bound on abs(I) in ModRaise's q_0 I that EvalMod's interpolant spans (chosen for failure_bits by "
            "default).")
        .def_prop_ro(
            "double_angle", [](const KBootstrapper& b) { return b.boot->config().double_angle; },
            "EvalMod's double-angle steps (chosen with k_bound by default).")
        .def_prop_ro(
            "failure_probability", [](const KBootstrapper& b) { return b.boot->failure_probability(); },
            "Probability that one bootstrap fails (a coefficient's abs(I) beyond EvalMod's reach): an upper bound from "
            "the exact law of I and the reach measured in plain arithmetic; 0.0 when abs(I) can never exceed it, 1.0 "
            "when the secret is dense (no bound). failure gives its parts.")
        .def_prop_ro(
            "failure",
            [](const KBootstrapper& b) {
                const algo::BootstrapFailure& f = b.boot->failure();
                nb::dict d;
                d["secret_weight"] = f.secret_weight;
                d["reach"] = f.reach;
                d["tolerance"] = f.tolerance;
                d["coefficients"] = f.coefficients;
                d["log2_per_coefficient"] = f.log2_per_coefficient;
                d["log2_per_bootstrap"] = f.log2_per_bootstrap;
                return d;
            },
            "dict: secret_weight (h of the secret ModRaise sees), reach (the largest abs(I) EvalMod maps within "
            "tolerance, measured), tolerance (EvalMod's error that puts 2^-20 into every output slot), coefficients "
            "(EvalMod evaluates per bootstrap), log2_per_coefficient (P(abs(I) > reach)), log2_per_bootstrap (the "
            "union "
            "bound; -inf: never). docs/BOOTSTRAPPING.md, 'Failure probability'.")
        .def_prop_ro(
            "message_ratio", [](const KBootstrapper& b) { return b.boot->message_ratio(); },
            "K = q_0 / (message scale at ModRaise).")
        .def_prop_ro(
            "cos_degree", [](const KBootstrapper& b) { return b.boot->cosine().degree(); },
            "Degree of EvalMod's cosine interpolant.")
        .def_prop_ro(
            "plan_nbytes", [](const KBootstrapper& b) { return b.boot->plan_nbytes(); },
            "Memory of the encoded transforms (periodic diagonals in their subring; shared by the "
            "bootstrappers of one context and config).")
        .def(
            "galois_elements", [](const KBootstrapper& b) { return b.boot->galois_elements(); },
            "The Galois elements of its rotations and conjugation (ctx.keygen(bootstrapping=b) makes them).")
        .def(
            "galois_levels", [](const KBootstrapper& b) { return b.boot->galois_levels(); },
            "dict: each of galois_elements() -> the highest level a bootstrap uses its key at (SlotToCoeff's lower "
            "than CoeffToSlot's); ctx.keygen(bootstrapping=b) makes each key for those levels only.")
        .def("__repr__", [](const KBootstrapper& b) {
            const auto& c = b.boot->config();
            return "Bootstrapper(slots=" + std::to_string(b.boot->slots()) +
                   ", depth=" + std::to_string(b.boot->depth()) +
                   ", output_level=" + std::to_string(b.boot->output_level()) +
                   ", cts_levels=" + std::to_string(c.cts_levels) + ", stc_levels=" + std::to_string(c.stc_levels) +
                   ", double_angle=" + std::to_string(c.double_angle) +
                   ", cos_degree=" + std::to_string(b.boot->cosine().degree()) +
                   ", arcsine_degree=" + std::to_string(c.arcsine_degree) +
                   (c.slot_to_coeff_first ? ", slot_to_coeff_first=True" : "") + (c.real ? ", real=True" : "") +
                   ", k_bound=" + std::to_string(static_cast<int>(b.boot->k_bound())) +
                   ", failure_probability=" + failure_text(b.boot->failure()) + ")";
        });

    m.def(
        "sign_depth", &algo::sign_depth, "eps"_a = 1.0 / 64, "precision_bits"_a = 16,
        "Levels Evaluator.sign takes for inputs with abs(x) >= eps to reach 2^-precision_bits (3 per composite step).");
    m.def(
        "inverse_depth",
        [](Interval iv, std::size_t degree, int iterations) {
            return algo::inverse_depth(iv.first, iv.second, degree, iterations);
        },
        "interval"_a, "degree"_a = 15, "iterations"_a = 2, "Levels Evaluator.inverse takes.");
}

void bind_function_methods(nb::class_<KEvaluator>& ev) {
    ev.def(
          "evaluate_polynomial",
          [](const KEvaluator& e, const KCiphertext& a, const algo::Polynomial& p, TArg t) {
              return eval_poly(e, a, p, t);
          },
          "a"_a, "polynomial"_a, "threads"_a = nb::none(), ReleaseGil())
        .def(
            "evaluate_polynomial",
            [](const KEvaluator& e, const KCiphertext& a, const Values& coeffs, const std::string& basis,
               std::optional<Interval> interval,
               TArg t) { return eval_poly(e, a, make_polynomial(coeffs, basis, interval), t); },
            "a"_a, "coeffs"_a, "basis"_a = "power", "interval"_a = nb::none(), "threads"_a = nb::none(),
            "p(a) slot-wise, baby-step giant-step with the least depth: ceil(log2(degree + 1)) levels, plus one for an "
            "interval other than (-1, 1). The result lands on the canonical scale of level a.level - depth. Raises "
            "LevelError (naming the depth) when a has fewer levels.",
            ReleaseGil())
        .def(
            "evaluate_function",
            [](const KEvaluator& e, const KCiphertext& a, const nb::callable& f, Interval iv, std::size_t degree,
               TArg t) {
                const algo::Polynomial p = interpolate(f, iv, degree);
                nb::gil_scoped_release release;
                return eval_poly(e, a, p, t);
            },
            "a"_a, "f"_a, "interval"_a, "degree"_a, "threads"_a = nb::none(),
            "f(a) through its Chebyshev interpolant of this degree on interval (inputs outside it give meaningless "
            "results).")
        .def("sigmoid", interval_function(&algo::sigmoid), "a"_a, "interval"_a = Interval{-8.0, 8.0}, "degree"_a = 63,
             "threads"_a = nb::none(), "1 / (1 + exp(-a)) on interval (degree 63 on (-8, 8): within 1e-4, 7 levels).",
             ReleaseGil())
        .def("exp", interval_function(&algo::exp), "a"_a, "interval"_a = Interval{-1.0, 1.0}, "degree"_a = 15,
             "threads"_a = nb::none(), "exp(a) on interval (its Chebyshev interpolant of this degree).", ReleaseGil())
        .def("sin", interval_function(&algo::sin), "a"_a, "interval"_a = Interval{-kPi, kPi}, "degree"_a = 31,
             "threads"_a = nb::none(), "sin(a) on interval (its Chebyshev interpolant of this degree).", ReleaseGil())
        .def("cos", interval_function(&algo::cos), "a"_a, "interval"_a = Interval{-kPi, kPi}, "degree"_a = 31,
             "threads"_a = nb::none(), "cos(a) on interval (its Chebyshev interpolant of this degree).", ReleaseGil())
        .def("sqrt", interval_function(&algo::sqrt), "a"_a, "interval"_a, "degree"_a = 31, "threads"_a = nb::none(),
             "sqrt(a) on interval (a, b), 0 <= a < b (prefer a > 0: near 0 the interpolant converges slowly).",
             ReleaseGil())
        .def(
            "inverse",
            [](const KEvaluator& e, const KCiphertext& a, Interval iv, std::size_t degree, int iterations, TArg t) {
                same_owner(a.owner, e.owner, "ciphertext");
                return wrap(e.owner,
                            algo::inverse(*e.ev, a.ct, iv.first, iv.second, degree, iterations, threads_arg(t)));
            },
            "a"_a, "interval"_a, "degree"_a = 15, "iterations"_a = 2, "threads"_a = nb::none(),
            "1 / a on an interval without 0: a Chebyshev interpolant, then Newton steps y (2 - a y) (2 levels each); "
            "ks.inverse_depth gives the levels.",
            ReleaseGil())
        .def(
            "sign",
            [](const KEvaluator& e, const KCiphertext& a, double eps, int bits, TArg t) {
                same_owner(a.owner, e.owner, "ciphertext");
                return wrap(e.owner, algo::sign(*e.ev, a.ct, eps, bits, threads_arg(t)));
            },
            "a"_a, "eps"_a = 1.0 / 64, "precision_bits"_a = 16, "threads"_a = nb::none(),
            "sign(a) for a in [-1, 1] with abs(a) >= eps, within 2^-precision_bits in plain arithmetic (plus CKKS "
            "noise): composite polynomials f_3 of Cheon, Kim and Kim; ks.sign_depth gives the levels.",
            ReleaseGil())
        .def(
            "compare",
            [](const KEvaluator& e, const KCiphertext& a, const KCiphertext& b, double eps, int bits, TArg t) {
                same_owner(a.owner, e.owner, "first ciphertext");
                same_owner(b.owner, e.owner, "second ciphertext");
                return wrap(e.owner, algo::compare(*e.ev, a.ct, b.ct, eps, bits, threads_arg(t)));
            },
            "a"_a, "b"_a, "eps"_a = 1.0 / 64, "precision_bits"_a = 16, "threads"_a = nb::none(),
            "1 where a > b, 0 where a < b, for a - b in [-1, 1] with abs(a - b) >= eps (same depth as sign).",
            ReleaseGil())
        .def(
            "bootstrap",
            [](const KEvaluator& e, const KCiphertext& a, const KBootstrapper* b, TArg t) {
                same_owner(a.owner, e.owner, "ciphertext");
                if (b) same_owner(b->owner, e.owner, "bootstrapper");
                const auto boot = b ? b->boot : e.owner->default_bootstrapper();
                return wrap(e.owner, boot->bootstrap(*e.ev, a.ct, threads_arg(t)));
            },
            "a"_a, "bootstrapper"_a = nb::none(), "threads"_a = nb::none(),
            "The message of a (any level from bootstrapper.input_level, 0 unless SlotToCoeff first; any scale above "
            "it, the canonical one at it, which drop_level keeps; size 2 or 3) again at bootstrapper.output_level, on "
            "its canonical scale: values with abs(x) <= 1 keep about 20 bits. bootstrapper=None: one with the default "
            "config, made on first use (the keys of ctx.keygen(bootstrapping=True)).",
            ReleaseGil())
        .def(
            "bootstrap_profile",
            [](const KEvaluator& e, const KCiphertext& a, const KBootstrapper* b, TArg t, bool return_counts)
                -> std::variant<
                    std::pair<KCiphertext, std::map<std::string, double>>,
                    std::tuple<KCiphertext, std::map<std::string, double>, std::map<std::string, std::size_t>>> {
                same_owner(a.owner, e.owner, "ciphertext");
                if (b) same_owner(b->owner, e.owner, "bootstrapper");
                const auto boot = b ? b->boot : e.owner->default_bootstrapper();
                algo::BootstrapTimes times;
                algo::OpCounts counts;
                KCiphertext out = wrap(e.owner, boot->bootstrap(*e.ev, a.ct, threads_arg(t), &counts, &times));
                std::map<std::string, double> secs{{"raise", times.raise},
                                                   {"coeff_to_slot", times.coeff_to_slot},
                                                   {"eval_mod", times.eval_mod},
                                                   {"slot_to_coeff", times.slot_to_coeff}};
                if (!return_counts) return std::make_pair(std::move(out), std::move(secs));
                return std::make_tuple(std::move(out), std::move(secs),
                                       std::map<std::string, std::size_t>{{"add", counts.add},
                                                                          {"cmult", counts.cmult},
                                                                          {"rot", counts.rot},
                                                                          {"mult", counts.mult},
                                                                          {"decompose", counts.decompose},
                                                                          {"mod_down", counts.mod_down},
                                                                          {"rescale", counts.rescale}});
            },
            "a"_a, "bootstrapper"_a = nb::none(), "threads"_a = nb::none(), "return_counts"_a = false,
            "bootstrap, and the seconds of each stage: (ciphertext, {raise, coeff_to_slot, eval_mod, slot_to_coeff}); "
            "return_counts=True adds the operations it ran (add, cmult, rot, mult, decompose, mod_down, rescale: a "
            "rotation or relinearisation is a key switch, decompose its ModUp, mod_down its ModDown).",
            ReleaseGil())
        .def(
            "linear_combination",
            [](const KEvaluator& e, const std::vector<const KCiphertext*>& cts, const Values& coeffs,
               std::complex<double> constant, std::optional<int> level, double scale, TArg t) {
                const auto xs = unwrap_all(e, cts, "linear_combination");
                if (level)
                    return wrap(e.owner,
                                e.ev->linear_combination_at(xs, coeffs.get(), constant, *level, scale, threads_arg(t)));
                if (scale != 0.0) throw ParameterError("linear_combination: give level= with scale=");
                return wrap(e.owner, e.ev->linear_combination(xs, coeffs.get(), constant, threads_arg(t)));
            },
            "cts"_a, "coeffs"_a, "constant"_a = 0.0, "level"_a = nb::none(), "scale"_a = 0.0, "threads"_a = nb::none(),
            "sum_i coeffs[i] * cts[i] + constant with one rescale, landing on the canonical scale of the level below "
            "the lowest term; level=l (below every term's): on level l instead, with `scale` (0: l's canonical scale).",
            ReleaseGil())
        .def(
            "multiply_add",
            [](const KEvaluator& e, const KCiphertext& a, const KCiphertext& b, std::int64_t k,
               const std::vector<const KCiphertext*>& cts, const std::optional<Values>& coeffs,
               std::complex<double> constant, TArg t) {
                same_owner(a.owner, e.owner, "ciphertext");
                same_owner(b.owner, e.owner, "ciphertext");
                const auto xs = unwrap_all(e, cts, "multiply_add");
                const cvec none;
                return wrap(e.owner, e.ev->multiply_add(a.ct, b.ct, k, xs, coeffs ? coeffs->get() : none, constant,
                                                        threads_arg(t)));
            },
            "a"_a, "b"_a, "k"_a = 1, "cts"_a = std::vector<const KCiphertext*>{}, "coeffs"_a = nb::none(),
            "constant"_a = 0.0, "threads"_a = nb::none(),
            "k * a * b + sum_i coeffs[i] * cts[i] + constant with one relinearisation and one rescale (a and b at one "
            "level, any scales; the terms at that level or above): the sums of polynomial evaluation without rescales "
            "of their own. The result is one level down with scale a.scale * b.scale / q.",
            ReleaseGil());
}

}  // namespace kasoku_py
