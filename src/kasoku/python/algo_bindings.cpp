// Linear transforms, the matrix encoder and encrypted matrix products (Manabe et al.).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <tuple>
#include <variant>

#include "bindings_internal.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kasoku;
using namespace kasoku::ckks;

namespace kasoku_py {

namespace {
struct KMatrixEncoder {
    OwnerPtr owner;
    std::shared_ptr<const algo::MatrixEncoder> enc;
};
struct KMatrix {
    OwnerPtr owner;
    algo::EncryptedMatrix m;
};

using Counts = std::map<std::string, std::size_t>;
Counts counts_dict(const algo::OpCounts& c) {
    return {{"add", c.add},        {"cmult", c.cmult},         {"rot", c.rot},
            {"mult", c.mult},      {"decompose", c.decompose}, {"mod_down", c.mod_down},
            {"rescale", c.rescale}};
}

// Matrices as the encoder wants them: `cols` must be d.
const std::vector<std::vector<double>>& matrices_for(const KMatrixEncoder& e, const Matrices& m) {
    const auto& v = m.get();
    if (m.cols != e.enc->d())
        throw ParameterError("matrices must have d = " + std::to_string(e.enc->d()) + " columns, got " +
                             std::to_string(m.cols));
    return v;
}
}  // namespace

void bind_algo(nb::module_& m) {
    nb::class_<KLinearTransform>(
        m, "LinearTransform",
        "A plaintext matrix times an encrypted vector (diagonal method, baby-step giant-step, hoisted baby steps); "
        "diagonals encoded once at `level`. Apply with Evaluator.apply(transform, ct).")
        .def(
            "__init__",
            [](KLinearTransform* self, const KContext& c, std::map<std::int64_t, Values> diagonals,
               std::optional<int> level, std::optional<std::size_t> baby, TArg t, bool at_use,
               std::optional<std::string> products) {
                const auto& ctx = c.owner->ctx;
                // The converted values moved, not copied: a network layer's are hundreds of MB.
                std::map<std::int64_t, cvec> diags;
                for (auto& [k, v] : diagonals) {
                    v.get();  // throws the conversion's error, if any
                    diags[k] = std::move(v.v);
                }
                algo::ProductBasis basis = algo::ProductBasis::automatic;
                if (products && *products == "extended") basis = algo::ProductBasis::extended;
                else if (products && *products == "level") basis = algo::ProductBasis::level;
                else if (products)
                    throw ParameterError("products must be None, \"extended\" or \"level\", not \"" + *products + "\"");
                new (self) KLinearTransform{c.owner, std::make_shared<const algo::LinearTransform>(
                                                         ctx, std::move(diags), level ? *level : ctx->user_level(),
                                                         baby ? *baby : 0, threads_arg(t), at_use, basis)};
            },
            "ctx"_a, "matrix_or_diagonals"_a, "level"_a = nb::none(), "baby"_a = nb::none(), "threads"_a = nb::none(),
            "at_use"_a = false, "products"_a = nb::none(),
            "diagonals {r: values}: out[s] = sum_r values_r[s] * in[(s + r) mod slots]. level: the inputs' level "
            "(default top). baby: baby steps per giant step (default: the cheapest split). at_use: keep the values and "
            "encode the diagonals in apply, 16 at a time (the memory of 16 encodings instead of all; the same "
            "results). products: where the diagonals multiply the baby rotations, "
            "\"extended\" (over Q_l * P, no ModDown per baby step), \"level\" (over Q_l: a ModDown per baby step, "
            "diagonals of fewer limbs) or None (the cheaper: low levels with many diagonals take \"level\").",
            ReleaseGil())
        .def(
            "__init__",
            [](KLinearTransform* self, const KContext& c, const ComplexMatrix& matrix, std::optional<int> level,
               std::optional<std::size_t> baby, TArg t) {
                const auto& ctx = c.owner->ctx;
                const cvec& a = matrix.get();
                new (self) KLinearTransform{
                    c.owner, std::make_shared<const algo::LinearTransform>(algo::LinearTransform::from_matrix(
                                 ctx, a.data(), matrix.dim, level ? *level : ctx->user_level(), baby ? *baby : 0,
                                 threads_arg(t)))};
            },
            "ctx"_a, "matrix_or_diagonals"_a, "level"_a = nb::none(), "baby"_a = nb::none(), "threads"_a = nb::none(),
            "matrix: dim x dim (dim <= slots) acting on slots 0..dim-1 (cyclic over all slots when dim = slots).",
            ReleaseGil())
        .def_prop_ro(
            "level", [](const KLinearTransform& l) { return l.lt->level(); },
            "The level its input must be at (it consumes one).")
        .def_prop_ro(
            "diagonal_count", [](const KLinearTransform& l) { return l.lt->diagonal_count(); },
            "Nonzero diagonals of the matrix.")
        .def_prop_ro(
            "nbytes", [](const KLinearTransform& l) { return l.lt->nbytes(); },
            "Memory of its encoded diagonals (periodic ones in their subring; at_use: the values kept instead).")
        .def_prop_ro(
            "products",
            [](const KLinearTransform& l) {
                return std::string(l.lt->products() == algo::ProductBasis::level ? "level" : "extended");
            },
            "Where its diagonals multiply the baby rotations: \"extended\" (Q_l * P) or \"level\" (Q_l).")
        .def_prop_ro(
            "baby_steps", [](const KLinearTransform& l) { return l.lt->plan().babies; },
            "Rotation steps of the hoisted baby steps.")
        .def_prop_ro(
            "giant_steps", [](const KLinearTransform& l) { return l.lt->plan().giants; },
            "Rotation steps of the giant steps.")
        .def(
            "galois_elements", [](const KLinearTransform& l) { return l.lt->galois_elements(); },
            "Exactly the Galois elements apply needs: pass them to ctx.keygen(galois_elements=...).")
        .def_static(
            "plan",
            [](const KContext& c, const std::vector<std::int64_t>& offsets, std::optional<std::size_t> baby,
               int level) {
                const auto& ctx = *c.owner->ctx;
                const auto p = algo::LinearTransform::plan_for(offsets, ctx.slots(), baby ? *baby : 0);
                const bool low =
                    algo::LinearTransform::cheaper_basis(ctx, p, offsets.size(), level) == algo::ProductBasis::level;
                return std::make_tuple(p.babies, p.giants, algo::LinearTransform::galois_elements(ctx, p), p.n1,
                                       std::string(low ? "level" : "extended"));
            },
            "ctx"_a, "offsets"_a, "baby"_a = nb::none(), "level"_a = 1,
            "(baby_steps, giant_steps, galois_elements, baby, products) of a transform with these nonzero diagonals "
            "at `level`, without encoding any: the keys a transform made later (at its use) will need, the baby steps "
            "per giant step that make it with the same split without searching again (0: every offset a baby step), "
            "and the product basis it takes by default (\"extended\": diagonals over Q_level * P; \"level\": over "
            "Q_level).");

    nb::class_<KMatrix>(m, "EncryptedMatrix",
                        "g encrypted matrices packed by a MatrixEncoder (one or more ciphertexts).")
        .def_prop_ro(
            "ciphertexts", [](const KMatrix& x) { return wrap_all(x.owner, x.m.blocks); },
            "Its ciphertexts, one per block of the grid.")
        .def_prop_ro(
            "shape", [](const KMatrix& x) { return std::make_tuple(x.m.rows, x.m.d()); }, "(rows, d) of each matrix.")
        .def_prop_ro(
            "g", [](const KMatrix& x) { return x.m.g(); }, "Matrices packed side by side in each ciphertext.")
        .def_prop_ro(
            "grid", [](const KMatrix& x) { return x.m.grid(); },
            "Blocks per side (matrices larger than a ciphertext are split).")
        .def_prop_ro(
            "level", [](const KMatrix& x) { return x.m.level(); }, "Its ciphertexts' level.")
        .def("__repr__", [](const KMatrix& x) {
            return "EncryptedMatrix(g=" + std::to_string(x.m.g()) + ", shape=(" + std::to_string(x.m.rows) + ", " +
                   std::to_string(x.m.d()) + "), ciphertexts=" + std::to_string(x.m.blocks.size()) +
                   ", level=" + std::to_string(x.m.level()) + ")";
        });

    nb::class_<KMatrixEncoder>(
        m, "MatrixEncoder",
        "Packs g d x d matrices per ciphertext (V[g*j + i] = M_i[j // d][j % d], tiled); larger matrices (g = 1, d*d > "
        "slots) become blocks. rows: the rows of rectangular left operands (rows | d), for galois_elements.")
        .def(
            "__init__",
            [](KMatrixEncoder* self, const KContext& c, std::size_t d, std::size_t g, std::optional<std::size_t> rows) {
                new (self) KMatrixEncoder{
                    c.owner, std::make_shared<const algo::MatrixEncoder>(c.owner->ctx, d, g, rows ? *rows : 0)};
            },
            "ctx"_a, "d"_a, "g"_a = 1, "rows"_a = nb::none())
        .def_prop_ro(
            "d", [](const KMatrixEncoder& e) { return e.enc->d(); }, "Matrix side d.")
        .def_prop_ro(
            "g", [](const KMatrixEncoder& e) { return e.enc->g(); }, "Matrices per ciphertext.")
        .def_prop_ro(
            "rows", [](const KMatrixEncoder& e) { return e.enc->rows(); }, "Rows of the left operand (d: square).")
        .def_prop_ro(
            "block", [](const KMatrixEncoder& e) { return e.enc->block(); }, "Side of one block a ciphertext holds.")
        .def_prop_ro(
            "grid", [](const KMatrixEncoder& e) { return e.enc->grid(); }, "Blocks per side.")
        .def(
            "galois_elements", [](const KMatrixEncoder& e) { return e.enc->galois_elements(); },
            "Exactly the Galois elements matmul needs (ctx.keygen(matmul=(d, g)) makes them).")
        .def(
            "pack",
            [](const KMatrixEncoder& e, const Matrices& mats) {
                std::vector<ComplexArray> out;
                for (auto& b : e.enc->pack(matrices_for(e, mats), mats.rows)) out.push_back(ComplexArray{std::move(b)});
                return out;
            },
            "matrices"_a, "The slot vectors (one per block) that encrypt would encrypt.", ReleaseGil())
        .def(
            "encrypt",
            [](const KMatrixEncoder& e, const Matrices& mats, const KPublicKey& pk, std::optional<int> level, TArg t) {
                same_owner(pk.owner, e.owner, "public key");
                return KMatrix{e.owner, e.enc->encrypt(matrices_for(e, mats), mats.rows, *pk.key, level ? *level : -1,
                                                       threads_arg(t))};
            },
            "matrices"_a, "public_key"_a, "level"_a = nb::none(), "threads"_a = nb::none(),
            "Encrypts g matrices (a list of 2-D arrays, a 3-D array, or one 2-D array when g = 1), each d x d or rows "
            "x d.",
            ReleaseGil())
        .def(
            "decrypt",
            [](const KMatrixEncoder& e, const KMatrix& x, const KSecretKey& sk, TArg t) {
                same_owner(sk.owner, e.owner, "secret key");
                return RealMatrices{e.enc->decrypt(x.m, *sk.key, threads_arg(t)), x.m.rows, e.enc->d()};
            },
            "m"_a, "secret_key"_a, "threads"_a = nb::none(), "The g matrices as a list of 2-D float64 arrays.",
            ReleaseGil())
        .def(
            "transform",
            [](const KMatrixEncoder& e, const std::string& which, std::size_t k, std::optional<int> level, TArg t) {
                return KLinearTransform{e.owner, std::make_shared<const algo::LinearTransform>(
                                                     e.enc->transform(which, k, level ? *level : -1, threads_arg(t)))};
            },
            "which"_a, "k"_a = 0, "level"_a = nb::none(), "threads"_a = nb::none(),
            "sigma, tau, phi (k) or psi (k) of Jiang et al. on every packed matrix, as a LinearTransform.",
            ReleaseGil());

    m.def(
        "matmul",
        [](const KEvaluator& e, const KMatrix& a, const KMatrix& b, TArg t, bool return_counts,
           nb::handle progress) -> std::variant<KMatrix, std::tuple<KMatrix, Counts>> {
            same_owner(a.owner, e.owner, "left operand");
            same_owner(b.owner, e.owner, "right operand");
            algo::OpCounts c;
            KMatrix out{e.owner,
                        algo::matmul(*e.ev, a.m, b.m, threads_arg(t), &c, python_progress(progress, "matmul", "step"))};
            if (return_counts) return std::make_tuple(std::move(out), counts_dict(c));
            return out;
        },
        "ev"_a, "a"_a, "b"_a, "threads"_a = nb::none(), "return_counts"_a = false, "progress"_a = nb::none(),
        "The products A_i B_i of the packed pairs (depth 3). return_counts=True also returns the operations executed "
        "(add, cmult, rot, mult, decompose, mod_down, rescale). progress: None (a bar on stderr when it is a terminal "
        "and the product takes over a second), True, False or a callable(done, total) called after each of the grid x "
        "block steps; Ctrl-C ends it at the next step (KeyboardInterrupt).",
        ReleaseGil());
    m.def(
        "matmul_schoolbook",
        [](const KEvaluator& e, const std::vector<const KCiphertext*>& a, const std::vector<const KCiphertext*>& b,
           std::size_t d, TArg t,
           bool return_counts) -> std::variant<std::vector<KCiphertext>, std::tuple<std::vector<KCiphertext>, Counts>> {
            std::vector<Ciphertext> ca, cb;
            for (const auto* v : {&a, &b})
                for (const auto* x : *v) {
                    if (!x)
                        throw ParameterError(
                            "matmul_schoolbook: the operands must be lists of ciphertexts (found None)");
                    (v == &a ? ca : cb).push_back(x->ct);
                }
            algo::OpCounts c;
            auto out = wrap_all(e.owner, algo::matmul_schoolbook(*e.ev, ca, cb, d, threads_arg(t), &c));
            if (return_counts) return std::make_tuple(std::move(out), counts_dict(c));
            return out;
        },
        "ev"_a, "a"_a, "b"_a, "d"_a, "threads"_a = nb::none(), "return_counts"_a = false,
        "Baseline: one ciphertext per element (row major), d^3 tensor products, one relinearisation per element.",
        ReleaseGil());
}

}  // namespace kasoku_py
