// Evaluator, Decomposition and LazyCiphertext: every homomorphic operation (the GIL is released for each).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <variant>

#include "bindings_internal.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kasoku;
using namespace kasoku::ckks;

namespace kasoku_py {

namespace {

// Batches: Python lists of ciphertexts (None elements are reported by the evaluator), and the optional list of
// ciphertexts to overwrite with the results (then nothing is returned).
using CtList = std::vector<KCiphertext*>;
using OutList = std::optional<std::vector<KCiphertext*>>;
constexpr const char* kBatchDoc =
    "One operation on many ciphertexts (element i of each list); element i of the result equals the single "
    "operation's, bit for bit. The CPU runs the elements in parallel over the threads (one thread each) when there are "
    "at least as many. out=[...]: ciphertexts to overwrite with the results (same length; returns None).";

Evaluator::Batch batch(const CtList& v) {
    Evaluator::Batch b;
    for (KCiphertext* k : v) b.push_back(k ? &k->ct : nullptr);
    return b;
}

std::optional<std::vector<KCiphertext>> deliver(const KEvaluator& e, std::vector<Ciphertext> r, const OutList& out) {
    if (!out) return wrap_all(e.owner, std::move(r));
    if (out->size() != r.size())
        throw ParameterError("out has " + std::to_string(out->size()) + " ciphertexts for " + std::to_string(r.size()) +
                             " results");
    for (std::size_t i = 0; i < r.size(); ++i)
        if (!(*out)[i]) throw ParameterError("out[" + std::to_string(i) + "] is not a ciphertext");
    for (std::size_t i = 0; i < r.size(); ++i) {
        (*out)[i]->owner = e.owner;
        (*out)[i]->ct = std::move(r[i]);
    }
    return std::nullopt;
}
struct KDecomposition {
    OwnerPtr owner;
    std::shared_ptr<const Decomposition> d;
};
struct KLazy {
    OwnerPtr owner;
    LazyCiphertext x;
};

int level_or_top(const KEvaluator& e, std::optional<int> level) { return level ? *level : e.owner->ctx->user_level(); }
}  // namespace

void bind_evaluator(nb::module_& m) {
    auto evaluator =
        nb::class_<KEvaluator>(m, "Evaluator", "Homomorphic operations with evaluation keys only (no secret inside).");
    evaluator
        .def(
            "add",
            [](const KEvaluator& e, const KCiphertext& a, const KCiphertext& b, TArg t) {
                return wrap(e.owner, e.ev->add(a.ct, b.ct, threads_arg(t)));
            },
            "a"_a, "b"_a, "threads"_a = nb::none(),
            "a + b slot by slot; operands at different levels or scales are aligned exactly first.", ReleaseGil())
        .def(
            "sub",
            [](const KEvaluator& e, const KCiphertext& a, const KCiphertext& b, TArg t) {
                return wrap(e.owner, e.ev->sub(a.ct, b.ct, threads_arg(t)));
            },
            "a"_a, "b"_a, "threads"_a = nb::none(), "a - b slot by slot (aligned as add does).", ReleaseGil())
        .def(
            "negate",
            [](const KEvaluator& e, const KCiphertext& a, TArg t) {
                return wrap(e.owner, e.ev->negate(a.ct, threads_arg(t)));
            },
            "a"_a, "threads"_a = nb::none(), "-a.", ReleaseGil())
        .def(
            "add_plain",
            [](const KEvaluator& e, const KCiphertext& a, const Values& v, TArg t) {
                return add_values(*e.ev, e.owner, a.ct, v, 1, threads_arg(t));
            },
            "a"_a, "values"_a, "threads"_a = nb::none(), "Adds an array (zero padded to the slots) or a scalar.",
            ReleaseGil())
        .def(
            "multiply_plain",
            [](const KEvaluator& e, const KCiphertext& a, const Values& v, bool rescale, TArg t) {
                return mul_values(*e.ev, e.owner, a.ct, v, rescale, threads_arg(t));
            },
            "a"_a, "values"_a, "rescale"_a = true, "threads"_a = nb::none(),
            "Multiplies by an array or a scalar, encoded so that the rescaled result lands on the next level's "
            "canonical scale.",
            ReleaseGil())
        .def(
            "multiply",
            [](const KEvaluator& e, const KCiphertext& a, const KCiphertext& b, bool rescale, TArg t) {
                return wrap(e.owner, e.ev->multiply(a.ct, b.ct, rescale, threads_arg(t)));
            },
            "a"_a, "b"_a, "rescale"_a = true, "threads"_a = nb::none(),
            "Relinearised product; rescaled unless rescale=False. Operands at different levels are aligned.",
            ReleaseGil())
        .def(
            "square",
            [](const KEvaluator& e, const KCiphertext& a, bool rescale, TArg t) {
                return wrap(e.owner, e.ev->square(a.ct, rescale, threads_arg(t)));
            },
            "a"_a, "rescale"_a = true, "threads"_a = nb::none(),
            "a * a (one tensor square, relinearised; rescaled unless "
            "rescale=False).",
            ReleaseGil())
        .def(
            "tensor",
            [](const KEvaluator& e, const KCiphertext& a, const KCiphertext& b, TArg t) {
                return wrap(e.owner, e.ev->tensor(a.ct, b.ct, threads_arg(t)));
            },
            "a"_a, "b"_a, "threads"_a = nb::none(),
            "The tensor product alone: a size-3 ciphertext at scale sa*sb (sums of them need one relinearize).",
            ReleaseGil())
        .def(
            "relinearize",
            [](const KEvaluator& e, const KCiphertext& a, TArg t) {
                return wrap(e.owner, e.ev->relinearize(a.ct, threads_arg(t)));
            },
            "a"_a, "threads"_a = nb::none(),
            "A size-3 ciphertext (tensor) back to size 2 with the relinearisation key (MissingKeyError without it).",
            ReleaseGil())
        .def(
            "rescale",
            [](const KEvaluator& e, const KCiphertext& a, TArg t) {
                return wrap(e.owner, e.ev->rescale(a.ct, threads_arg(t)));
            },
            "a"_a, "threads"_a = nb::none(), "Divides by the last prime: one level down, the scale divided by it.",
            ReleaseGil())
        .def(
            "drop_level",
            [](const KEvaluator& e, const KCiphertext& a, int level, TArg t) {
                return wrap(e.owner, e.ev->drop_level(a.ct, level, threads_arg(t)));
            },
            "a"_a, "level"_a, "threads"_a = nb::none(),
            "a at `level`: on the canonical scale of that level when a is on its own level's (fresh, products, "
            "bootstrapping's output; to a relative 2^-40), so it combines, evaluates polynomials and bootstraps there; "
            "other scales are kept (drop_limbs).",
            ReleaseGil())
        .def(
            "drop_limbs",
            [](const KEvaluator& e, const KCiphertext& a, int level) {
                return wrap(e.owner, e.ev->drop_limbs(a.ct, level));
            },
            "a"_a, "level"_a, "Drops limbs down to `level`, nothing else: the scale stays a's.", ReleaseGil())
        .def(
            "rotate",
            [](const KEvaluator& e, const KCiphertext& a, std::int64_t step, TArg t) {
                return wrap(e.owner, e.ev->rotate(a.ct, step, threads_arg(t)));
            },
            "a"_a, "step"_a, "threads"_a = nb::none(), "Left rotation: slot i of the result is slot i+step of a.",
            ReleaseGil())
        .def(
            "conjugate",
            [](const KEvaluator& e, const KCiphertext& a, TArg t) {
                return wrap(e.owner, e.ev->conjugate(a.ct, threads_arg(t)));
            },
            "a"_a, "threads"_a = nb::none(), "The complex conjugate of every slot (needs keygen(conjugation=True)).",
            ReleaseGil())
        // ---- batches (Takao et al.): element i of the result is the single operation on element i of the inputs
        .def(
            "add_many",
            [](const KEvaluator& e, const CtList& a, const CtList& b, OutList out, TArg t) {
                return deliver(e, e.ev->add_many(batch(a), batch(b), threads_arg(t)), out);
            },
            "a"_a, "b"_a, "out"_a = nb::none(), "threads"_a = nb::none(), kBatchDoc, ReleaseGil())
        .def(
            "sub_many",
            [](const KEvaluator& e, const CtList& a, const CtList& b, OutList out, TArg t) {
                return deliver(e, e.ev->sub_many(batch(a), batch(b), threads_arg(t)), out);
            },
            "a"_a, "b"_a, "out"_a = nb::none(), "threads"_a = nb::none(), kBatchDoc, ReleaseGil())
        .def(
            "multiply_many",
            [](const KEvaluator& e, const CtList& a, const CtList& b, bool relinearize, bool rescale, OutList out,
               TArg t) {
                return deliver(e, e.ev->multiply_many(batch(a), batch(b), relinearize, rescale, threads_arg(t)), out);
            },
            "a"_a, "b"_a, "relinearize"_a = true, "rescale"_a = true, "out"_a = nb::none(), "threads"_a = nb::none(),
            kBatchDoc, ReleaseGil())
        .def(
            "tensor_many",
            [](const KEvaluator& e, const CtList& a, const CtList& b, OutList out, TArg t) {
                return deliver(e, e.ev->tensor_many(batch(a), batch(b), threads_arg(t)), out);
            },
            "a"_a, "b"_a, "out"_a = nb::none(), "threads"_a = nb::none(), kBatchDoc, ReleaseGil())
        .def(
            "relinearize_many",
            [](const KEvaluator& e, const CtList& a, OutList out, TArg t) {
                return deliver(e, e.ev->relinearize_many(batch(a), threads_arg(t)), out);
            },
            "a"_a, "out"_a = nb::none(), "threads"_a = nb::none(), kBatchDoc, ReleaseGil())
        .def(
            "rescale_many",
            [](const KEvaluator& e, const CtList& a, OutList out, TArg t) {
                return deliver(e, e.ev->rescale_many(batch(a), threads_arg(t)), out);
            },
            "a"_a, "out"_a = nb::none(), "threads"_a = nb::none(), kBatchDoc, ReleaseGil())
        .def(
            "rotate_many",
            [](const KEvaluator& e, const CtList& a, std::int64_t step, OutList out, TArg t) {
                return deliver(e, e.ev->rotate_many(batch(a), step, threads_arg(t)), out);
            },
            "a"_a, "step"_a, "out"_a = nb::none(), "threads"_a = nb::none(), kBatchDoc, ReleaseGil())
        .def(
            "multiply_plain_many",
            [](const KEvaluator& e, const CtList& a, const std::vector<Values>& values, bool rescale, OutList out,
               TArg t) {
                std::vector<cvec> v;
                for (const Values& x : values)
                    v.push_back(x.scalar ? cvec(e.owner->ctx->slots(), x.get().at(0)) : x.get());
                return deliver(e, e.ev->multiply_plain_many(batch(a), v, rescale, threads_arg(t)), out);
            },
            "a"_a, "values"_a, "rescale"_a = true, "out"_a = nb::none(), "threads"_a = nb::none(),
            "values: one array (or a scalar, for every slot) per ciphertext, encoded as multiply_plain encodes them. "
            "Element i of the result equals multiply_plain(a[i], values[i]) bit for bit; out=[...] as for add_many.",
            ReleaseGil())
        // ---- hoisting and trace-type functions (Inoue 2022)
        .def(
            "rotate_hoisted",
            [](const KEvaluator& e, const KCiphertext& a, const std::vector<std::int64_t>& steps, bool conjugate,
               TArg t) { return wrap_all(e.owner, e.ev->rotate_hoisted(a.ct, steps, conjugate, threads_arg(t))); },
            "a"_a, "steps"_a, "conjugate"_a = false, "threads"_a = nb::none(),
            "Rotations of a by each step (then its conjugate if conjugate=True), sharing one ModUp. Returns a list.",
            ReleaseGil())
        .def(
            "apply_galois_hoisted",
            [](const KEvaluator& e, const KCiphertext& a, const std::vector<std::uint64_t>& elts, TArg t) {
                return wrap_all(e.owner, e.ev->apply_galois_hoisted(a.ct, elts, threads_arg(t)));
            },
            "a"_a, "galois_elements"_a, "threads"_a = nb::none(),
            "psi_g(a) for each Galois element g, sharing one ModUp.", ReleaseGil())
        .def(
            "apply_galois_sum_hoisted",
            [](const KEvaluator& e, const KCiphertext& a, const std::vector<std::uint64_t>& elts, TArg t) {
                return wrap(e.owner, e.ev->apply_galois_sum_hoisted(a.ct, elts, threads_arg(t)));
            },
            "a"_a, "galois_elements"_a, "threads"_a = nb::none(),
            "sum_g psi_g(a): one ModUp, the sum taken before ModDown, one ModDown.", ReleaseGil())
        .def(
            "rotate_sum_hoisted",
            [](const KEvaluator& e, const KCiphertext& a, const std::vector<std::int64_t>& steps,
               const std::vector<std::uint64_t>& elts, bool conjugate, TArg t) {
                return wrap(e.owner, e.ev->rotate_sum_hoisted(a.ct, steps, elts, conjugate, threads_arg(t)));
            },
            "a"_a, "steps"_a = std::vector<std::int64_t>{}, "galois_elements"_a = std::vector<std::uint64_t>{},
            "conjugate"_a = false, "threads"_a = nb::none(),
            "Sum of the rotations of a by `steps` (and of psi_g(a) for `galois_elements`, and its conjugate if "
            "conjugate=True): one ModUp, the sum taken before ModDown, one ModDown.",
            ReleaseGil())
        .def(
            "trace",
            [](const KEvaluator& e, const KCiphertext& a, const std::vector<std::uint64_t>& autos, std::optional<int> h,
               TArg t) { return wrap(e.owner, e.ev->trace(a.ct, autos, h ? *h : 0, threads_arg(t))); },
            "a"_a, "automorphisms"_a, "h"_a = nb::none(), "threads"_a = nb::none(),
            "Trace-type function over the doubling steps `automorphisms` (Galois elements): sum over all subsets S of "
            "psi_{prod S}(a). h = len(automorphisms) is repeated doubling, smaller h unrolls it into h hoisted sums; "
            "None picks the cheapest h whose keys exist, from the measured cost model.",
            ReleaseGil())
        .def(
            "sum_slots",
            [](const KEvaluator& e, const KCiphertext& a, std::optional<std::size_t> count, std::optional<int> h,
               TArg t) { return wrap(e.owner, e.ev->sum_slots(a.ct, count ? *count : 0, h ? *h : 0, threads_arg(t))); },
            "a"_a, "count"_a = nb::none(), "h"_a = nb::none(), "threads"_a = nb::none(),
            "Slot i of the result is sum_{j < count} a[(i + j) mod slots]; count a power of two (None: all slots).",
            ReleaseGil())
        .def(
            "choose_trace_h",
            [](const KEvaluator& e, const std::vector<std::uint64_t>& autos, std::optional<int> level, TArg t) {
                return e.ev->choose_trace_h(autos, level_or_top(e, level), threads_arg(t));
            },
            "automorphisms"_a, "level"_a = nb::none(), "threads"_a = nb::none(),
            "The h that trace(..., h=None) uses at this level (0: no h has all its keys).", ReleaseGil())
        .def(
            "model_trace_h",
            [](const KEvaluator& e, std::size_t M, std::optional<int> level, TArg t) {
                return best_trace_h(e.ev->keyswitch_costs(level_or_top(e, level), threads_arg(t)), M);
            },
            "M"_a, "level"_a = nb::none(), "threads"_a = nb::none(),
            "The h in 1..M with the smallest modelled trace time, whether or not its keys exist.", ReleaseGil())
        .def(
            "model_trace_ms",
            [](const KEvaluator& e, std::size_t M, std::size_t h, std::optional<int> level, TArg t) {
                return trace_cost(e.ev->keyswitch_costs(level_or_top(e, level), threads_arg(t)), M, h);
            },
            "M"_a, "h"_a, "level"_a = nb::none(), "threads"_a = nb::none(),
            "Modelled time (ms) of a trace with M doubling steps and h iterations: per group, decompose + "
            "(2^m - 1) inner products + mod_down + add, from keyswitch_costs.",
            ReleaseGil())
        .def(
            "keyswitch_costs",
            [](const KEvaluator& e, std::optional<int> level, TArg t) {
                const KeySwitchCosts c = e.ev->keyswitch_costs(level_or_top(e, level), threads_arg(t));
                return std::map<std::string, std::variant<int, double>>{{"level", c.level},
                                                                        {"threads", c.threads},
                                                                        {"decompose_ms", c.decompose_ms},
                                                                        {"inner_product_ms", c.inner_product_ms},
                                                                        {"mod_down_ms", c.mod_down_ms},
                                                                        {"add_ms", c.add_ms}};
            },
            "level"_a = nb::none(), "threads"_a = nb::none(),
            "Measured ms of the key-switching steps at a level (the cost model behind h=None), measured once per "
            "context, level and thread count and kept with the context.",
            ReleaseGil())
        .def(
            "decompose",
            [](const KEvaluator& e, const KCiphertext& a, TArg t) {
                return KDecomposition{e.owner,
                                      std::make_shared<const Decomposition>(e.ev->decompose(a.ct, threads_arg(t)))};
            },
            "a"_a, "threads"_a = nb::none(), "Key-switching step 1: digit split and ModUp of a (hoistable).",
            ReleaseGil())
        .def(
            "inner_product_lazy",
            [](const KEvaluator& e, const KDecomposition& d, std::uint64_t galois_elt, TArg t) {
                return KLazy{e.owner, e.ev->inner_product_lazy(*d.d, galois_elt, threads_arg(t))};
            },
            "decomposition"_a, "galois_element"_a, "threads"_a = nb::none(),
            "Key-switching step 2: psi_g(a) left in the Q*P basis (LazyCiphertext; lazy values add with +).",
            ReleaseGil())
        .def(
            "mod_down",
            [](const KEvaluator& e, const KLazy& x, TArg t) {
                return wrap(e.owner, e.ev->mod_down(x.x, threads_arg(t)));
            },
            "lazy"_a, "threads"_a = nb::none(), "Key-switching step 3: ModDown of a LazyCiphertext to a Ciphertext.",
            ReleaseGil())
        .def(
            "apply",
            [](const KEvaluator& e, const KLinearTransform& lt, const KCiphertext& a, TArg t) {
                same_owner(lt.owner, e.owner, "linear transform");
                return wrap(e.owner, lt.lt->apply(*e.ev, a.ct, threads_arg(t)));
            },
            "transform"_a, "a"_a, "threads"_a = nb::none(),
            "The linear transform of a (at transform.level), hoisted baby steps and lazy giant steps, rescaled once.",
            ReleaseGil());

    bind_function_methods(evaluator);
    nb::class_<KDecomposition>(m, "Decomposition", "ModUp digits of a ciphertext (Evaluator.decompose).")
        .def_prop_ro(
            "level", [](const KDecomposition& d) { return d.d->input.level(); }, "The decomposed ciphertext's level.")
        .def_prop_ro(
            "digits", [](const KDecomposition& d) { return d.d->digits.size(); }, "Its ModUp digits at that level.");
    nb::class_<KLazy>(m, "LazyCiphertext", "A key-switched ciphertext before ModDown (Evaluator.inner_product_lazy).")
        .def_prop_ro(
            "level", [](const KLazy& x) { return x.x.level(); }, "Its level (ModDown keeps it).")
        .def(
            "__add__",
            [](const KLazy& a, const KLazy& b) {
                KLazy r = a;
                a.owner->keyless->add_lazy_inplace(r.x, b.x);
                return r;
            },
            ReleaseGil());
}

}  // namespace kasoku_py
