#include "kasoku/algo/matmul.hpp"

#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "kasoku/ckks/encoder.hpp"
#include "kasoku/support/error.hpp"
#include "offsets_internal.hpp"

namespace kasoku::algo {

using ckks::Ciphertext;

class MatmulPlan {
public:
    struct Level {
        std::optional<LinearTransform> sigma, tau;  // at the operands' level
        std::vector<LinearTransform> phi;           // phi^k, k = 1..block-1, one level lower
        std::vector<LinearTransform> psi;           // psi^k when it is not a plain rotation (partial tiling)
    };

    MatmulPlan(ckks::ContextPtr ctx, std::size_t d, std::size_t g) : ctx(std::move(ctx)), d(d), g(g) {
        const std::size_t slots = this->ctx->slots();
        if (d == 0 || g == 0) throw ParameterError("matrix dimension d and count g must be positive");
        if (g * d * d <= slots) {
            block = d;
        } else if (g == 1) {
            block = 1;
            while (4 * block * block <= slots) block *= 2;
        } else {
            throw ParameterError("g*d*d = " + std::to_string(g * d * d) + " exceeds the " + std::to_string(slots) +
                                 " slots: pack at most g = " + std::to_string(slots / (d * d)) +
                                 " matrices of this size, or use g = 1, which splits a large matrix into blocks");
        }
        grid = (d + block - 1) / block;
        period = g * block * block;
        tiles = slots / period;
        cyclic = slots % period == 0;
    }

    // Offset (slots) of the diagonal that moves matrix position `src` to `dst` (row-major indices in a block).
    std::int64_t offset(std::size_t dst, std::size_t src) const {
        const std::int64_t r =
            static_cast<std::int64_t>(g) * (static_cast<std::int64_t>(src) - static_cast<std::int64_t>(dst));
        if (!cyclic) return r;                                               // stays inside its tile
        return detail::signed_offset(r, static_cast<std::int64_t>(period));  // the input repeats with period g*b*b
    }

    // Slot diagonals of the block map out[l] = in[src(l)] (src(l) < 0: out[l] = 0).
    std::map<std::int64_t, cvec> diagonals(const std::function<std::int64_t(std::size_t, std::size_t)>& src) const {
        std::map<std::int64_t, cvec> out;
        const std::size_t slots = ctx->slots();
        for (std::size_t i = 0; i < block; ++i)
            for (std::size_t j = 0; j < block; ++j) {
                const std::int64_t s = src(i, j);
                if (s < 0) continue;
                const std::size_t l = i * block + j;
                auto& v = out[offset(l, static_cast<std::size_t>(s))];
                if (v.empty()) v.assign(slots, 0.0);
                for (std::size_t t = 0; t < tiles; ++t)
                    for (std::size_t m = 0; m < g; ++m) v[t * period + g * l + m] = 1.0;
            }
        return out;
    }
    std::vector<std::int64_t> offsets(const std::function<std::int64_t(std::size_t, std::size_t)>& src) const {
        std::set<std::int64_t> out;
        for (std::size_t i = 0; i < block; ++i)
            for (std::size_t j = 0; j < block; ++j)
                if (src(i, j) >= 0) out.insert(offset(i * block + j, static_cast<std::size_t>(src(i, j))));
        return {out.begin(), out.end()};
    }

    // The four maps of Jiang et al. on a block (row-major source index).
    auto sigma_src() const {
        return [b = block](std::size_t i, std::size_t j) { return static_cast<std::int64_t>(i * b + (i + j) % b); };
    }
    auto tau_src() const {
        return [b = block](std::size_t i, std::size_t j) { return static_cast<std::int64_t>(((i + j) % b) * b + j); };
    }
    auto phi_src(std::size_t k) const {
        return [b = block, k](std::size_t i, std::size_t j) { return static_cast<std::int64_t>(i * b + (j + k) % b); };
    }
    auto psi_src(std::size_t k) const {
        return
            [b = block, k](std::size_t i, std::size_t j) { return static_cast<std::int64_t>(((i + k) % b) * b + j); };
    }
    // psi^k as one rotation (full tiling): its step, in slots.
    std::int64_t psi_step(std::size_t k) const { return offset(0, k * block); }

    const Level& at(int level, Exec exec) const {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& slot = levels_[level];
        if (!slot) {
            auto lv = std::make_unique<Level>();
            lv->sigma.emplace(ctx, diagonals(sigma_src()), level, 0, exec);
            lv->tau.emplace(ctx, diagonals(tau_src()), level, 0, exec);
            for (std::size_t k = 1; k < block; ++k) {
                lv->phi.emplace_back(ctx, diagonals(phi_src(k)), level - 1, 0, exec);
                if (!cyclic) lv->psi.emplace_back(ctx, diagonals(psi_src(k)), level - 1, 0, exec);
            }
            slot = std::move(lv);
        }
        return *slot;
    }

    // Computed once per row count: matmul checks its keys against them on every call.
    const std::vector<std::uint64_t>& galois_elements(std::size_t rows) const {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& cached = elements_[rows];
        if (!cached.empty()) return cached;
        const std::size_t slots = ctx->slots();
        std::set<std::uint64_t> out;
        auto add_plan = [&](const std::vector<std::int64_t>& offs) {
            for (auto galois_elt : LinearTransform::galois_elements(*ctx, LinearTransform::plan_for(offs, slots)))
                out.insert(galois_elt);
        };
        add_plan(offsets(sigma_src()));
        add_plan(offsets(tau_src()));
        for (std::size_t k = 1; k < block; ++k) {
            add_plan(offsets(phi_src(k)));
            if (cyclic) out.insert(ctx->galois_element(psi_step(k)));
            else add_plan(offsets(psi_src(k)));
        }
        for (auto s : rect_steps(rows)) out.insert(ctx->galois_element(s));
        out.erase(1);
        cached.assign(out.begin(), out.end());
        return cached;
    }

    // Rotations that sum the d/l row blocks of a rectangular product (rows = l).
    std::vector<std::int64_t> rect_steps(std::size_t rows) const {
        std::vector<std::int64_t> s;
        if (rows == 0 || rows >= block) return s;
        for (std::size_t m = 1; m < block / rows; ++m) s.push_back(static_cast<std::int64_t>(g * m * rows * block));
        return s;
    }

    ckks::ContextPtr ctx;
    std::size_t d, g, block = 0, grid = 1, period = 0, tiles = 0;
    bool cyclic = true;

private:
    mutable std::mutex mutex_;
    mutable std::map<int, std::unique_ptr<Level>> levels_;
    mutable std::map<std::size_t, std::vector<std::uint64_t>> elements_;
};

std::size_t EncryptedMatrix::d() const { return plan ? plan->d : 0; }
std::size_t EncryptedMatrix::g() const { return plan ? plan->g : 0; }
std::size_t EncryptedMatrix::grid() const { return plan ? plan->grid : 0; }

MatrixEncoder::MatrixEncoder(ckks::ContextPtr ctx, std::size_t d, std::size_t g, std::size_t rows)
    : plan_(std::make_shared<const MatmulPlan>(std::move(ctx), d, g)), rows_(rows == 0 ? d : rows) {
    if (rows_ != d && (rows_ > d || d % rows_ != 0 || plan_->grid != 1))
        throw ParameterError("rows = " + std::to_string(rows_) +
                             ": a rectangular left operand needs rows dividing d = " + std::to_string(d) +
                             " and d*d*g <= slots (no blocks)");
}

std::size_t MatrixEncoder::d() const { return plan_->d; }
std::size_t MatrixEncoder::g() const { return plan_->g; }
std::size_t MatrixEncoder::block() const { return plan_->block; }
std::size_t MatrixEncoder::grid() const { return plan_->grid; }
std::vector<std::uint64_t> MatrixEncoder::galois_elements() const { return plan_->galois_elements(rows_); }

LinearTransform MatrixEncoder::transform(const std::string& which, std::size_t k, int level, Exec exec) const {
    const MatmulPlan& p = *plan_;
    if (level < 0) level = p.ctx->user_level();
    if (k >= p.block) throw ParameterError("k must be below the block dimension " + std::to_string(p.block));
    if (which == "sigma") return LinearTransform(p.ctx, p.diagonals(p.sigma_src()), level, 0, exec);
    if (which == "tau") return LinearTransform(p.ctx, p.diagonals(p.tau_src()), level, 0, exec);
    if (which == "phi") return LinearTransform(p.ctx, p.diagonals(p.phi_src(k)), level, 0, exec);
    if (which == "psi") return LinearTransform(p.ctx, p.diagonals(p.psi_src(k)), level, 0, exec);
    throw ParameterError("unknown transform '" + which + "': use sigma, tau, phi or psi");
}

std::vector<cvec> MatrixEncoder::pack(const std::vector<std::vector<double>>& mats, std::size_t rows) const {
    const MatmulPlan& p = *plan_;
    if (mats.size() != p.g)
        throw ParameterError("expected g = " + std::to_string(p.g) + " matrices, got " + std::to_string(mats.size()));
    if (rows != p.d && (rows == 0 || rows > p.d || p.d % rows != 0 || p.grid != 1))
        throw ParameterError("a matrix has " + std::to_string(rows) + " rows; expected d = " + std::to_string(p.d) +
                             ", or a divisor of d for the left operand of a rectangular product (without blocks)");
    for (const auto& m : mats) {
        if (m.size() != rows * p.d)
            throw ParameterError("each matrix must be " + std::to_string(rows) + " x " + std::to_string(p.d) + " (" +
                                 std::to_string(rows * p.d) + " values), got " + std::to_string(m.size()) + " values");
        for (double x : m)
            if (!std::isfinite(x)) throw ParameterError("matrix entries must be finite numbers");
    }
    const std::size_t b = p.block;
    std::vector<cvec> out(p.grid * p.grid, cvec(p.ctx->slots(), 0.0));
    for (std::size_t bi = 0; bi < p.grid; ++bi)
        for (std::size_t bj = 0; bj < p.grid; ++bj)
            for (std::size_t i = 0; i < b; ++i)
                for (std::size_t j = 0; j < b; ++j) {
                    const std::size_t r = bi * b + i, c = bj * b + j;
                    if (r >= p.d || c >= p.d) continue;
                    const std::size_t src_row = r % rows;  // rows < d: Jiang's vertical replication
                    for (std::size_t m = 0; m < p.g; ++m) {
                        const double v = mats[m][src_row * p.d + c];
                        for (std::size_t t = 0; t < p.tiles; ++t)
                            out[bi * p.grid + bj][t * p.period + p.g * (i * b + j) + m] = v;
                    }
                }
    return out;
}

std::vector<std::vector<double>> MatrixEncoder::unpack(const std::vector<cvec>& blocks, std::size_t rows) const {
    const MatmulPlan& p = *plan_;
    if (blocks.size() != p.grid * p.grid)
        throw ParameterError("unpack: expected grid x grid = " + std::to_string(p.grid * p.grid) + " blocks, got " +
                             std::to_string(blocks.size()));
    if (rows == 0 || rows > p.d)
        throw ParameterError("unpack: a matrix has 1.." + std::to_string(p.d) + " rows, got " + std::to_string(rows));
    const std::size_t b = p.block;
    for (const cvec& v : blocks)
        if (v.size() < p.g * b * b)
            throw ParameterError("unpack: a block holds " + std::to_string(p.g * b * b) + " values, got " +
                                 std::to_string(v.size()));
    std::vector<std::vector<double>> out(p.g, std::vector<double>(rows * p.d));
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < p.d; ++c) {
            const cvec& v = blocks[(r / b) * p.grid + c / b];
            for (std::size_t m = 0; m < p.g; ++m) out[m][r * p.d + c] = v[p.g * ((r % b) * b + c % b) + m].real();
        }
    return out;
}

EncryptedMatrix MatrixEncoder::encrypt(const std::vector<std::vector<double>>& mats, std::size_t rows,
                                       const ckks::PublicKey& pk, int level, Exec exec) const {
    const auto& ctx = plan_->ctx;
    if (level < 0) level = ctx->user_level();
    if (level < 3 || level > ctx->max_level())
        throw LevelError("a matrix product needs 3 levels: encrypt at a level in 3.." +
                         std::to_string(ctx->max_level()) + ", got " + std::to_string(level));
    const auto packed = pack(mats, rows);
    ckks::Encoder enc(ctx);
    ckks::Encryptor encryptor(ctx);
    EncryptedMatrix out;
    out.rows = rows;
    out.plan = plan_;
    for (const auto& v : packed)
        out.blocks.push_back(encryptor.encrypt(enc.encode(v, ctx->scale_at(level), level, exec), pk, exec));
    return out;
}

std::vector<std::vector<double>> MatrixEncoder::decrypt(const EncryptedMatrix& m, const ckks::SecretKey& sk,
                                                        Exec exec) const {
    if (!m.plan || m.plan->d != plan_->d || m.plan->g != plan_->g || m.plan->ctx->uid() != plan_->ctx->uid())
        throw ParameterError("the encrypted matrix was made with another matrix encoder (d, g or context differ)");
    ckks::Decryptor dec(plan_->ctx);
    std::vector<cvec> blocks;
    for (const auto& ct : m.blocks) blocks.push_back(dec.decrypt(ct, sk, exec));
    return unpack(blocks, m.rows);
}

EncryptedMatrix matmul(const ckks::Evaluator& ev0, const EncryptedMatrix& a, const EncryptedMatrix& b, Exec exec,
                       OpCounts* counts, const Progress& progress) {
    if (!a.plan || !b.plan) throw ParameterError("matmul: an operand is empty; make it with MatrixEncoder.encrypt");
    const MatmulPlan& p = *a.plan;
    if (b.plan->d != p.d || b.plan->g != p.g || b.plan->ctx->uid() != p.ctx->uid())
        throw ParameterError("matmul: the operands were packed differently (d = " + std::to_string(p.d) +
                             ", g = " + std::to_string(p.g) + " vs d = " + std::to_string(b.plan->d) +
                             ", g = " + std::to_string(b.plan->g) + "); encrypt both with one MatrixEncoder");
    if (p.ctx->uid() != ev0.context().uid())
        throw ParameterError("matmul: the operands belong to another context than the evaluator");
    if (b.rows != p.d)
        throw ParameterError("matmul: the right operand must be d x d, it has " + std::to_string(b.rows) + " rows");
    if (a.blocks.size() != p.grid * p.grid || b.blocks.size() != p.grid * p.grid)
        throw ParameterError("matmul: an operand has the wrong number of block ciphertexts");
    const int level = std::min(a.level(), b.level());
    if (level < 3)
        throw LevelError("matmul needs 3 levels (sigma/tau, phi/psi, product) but the operands are at level " +
                         std::to_string(level) + "; encrypt them at a higher level or use parameters with more levels");
    exec = p.ctx->exec(exec);
    // Every key before any work.
    const ckks::EvaluationKeys* keys = ev0.keys();
    for (auto galois_elt : p.galois_elements(a.rows))
        if (!keys || !keys->galois.count(galois_elt))
            throw MissingKeyError(
                "matmul needs the Galois key for element " + std::to_string(galois_elt) +
                "; generate the keys with ctx.keygen(matmul=(d, g)) (C++: MatrixEncoder::galois_elements())");
    if (!keys || !keys->relin) throw MissingKeyError("matmul needs the relinearisation key");
    const MatmulPlan::Level& lv = p.at(level, exec);
    const ckks::Evaluator ev = counts ? ev0.counting(*counts) : ev0;
    const std::size_t G = p.grid, K = a.rows < p.block ? a.rows : p.block;
    auto at_level = [&](const Ciphertext& x) { return x.level() == level ? x : ev.drop_limbs(x, level, exec); };
    auto scalar_one = [&](const Ciphertext& x) {  // one level down at the canonical scale, like a masked rotation
        return ev.multiply_scalar(x, 1.0, true, exec);
    };
    std::vector<std::optional<Ciphertext>> acc(G * G);
    for (std::size_t kb = 0; kb < G; ++kb) {
        std::vector<ckks::Decomposition> da, db;  // sigma(A) and tau(B) blocks, kept in their decompositions
        for (std::size_t i = 0; i < G; ++i)
            da.push_back(ev.decompose(lv.sigma->apply(ev, at_level(a.blocks[i * G + kb]), exec), exec));
        for (std::size_t j = 0; j < G; ++j) {
            Ciphertext t = lv.tau->apply(ev, at_level(b.blocks[kb * G + j]), exec);
            // psi^k is then a rotation at the lower level
            db.push_back(ev.decompose(p.cyclic ? scalar_one(t) : std::move(t), exec));
        }
        for (std::size_t k = 0; k < K; ++k) {
            std::vector<Ciphertext> phi, psi;
            for (std::size_t i = 0; i < G; ++i)
                phi.push_back(k == 0 ? scalar_one(da[i].input) : lv.phi[k - 1].apply(ev, da[i], exec));
            for (std::size_t j = 0; j < G; ++j) {
                if (k == 0) {
                    psi.push_back(p.cyclic ? db[j].input : scalar_one(db[j].input));
                } else if (p.cyclic) {
                    psi.push_back(
                        ev.mod_down(ev.inner_product_lazy(db[j], p.ctx->galois_element(p.psi_step(k)), exec), exec));
                } else {
                    psi.push_back(lv.psi[k - 1].apply(ev, db[j], exec));
                }
            }
            for (std::size_t i = 0; i < G; ++i)
                for (std::size_t j = 0; j < G; ++j) {
                    Ciphertext t = ev.tensor(phi[i], psi[j], exec);
                    auto& s = acc[i * G + j];
                    s = s ? ev.add(*s, t, exec) : std::move(t);
                }
            if (progress) progress(kb * K + k + 1, G * K);
        }
    }
    EncryptedMatrix out;
    out.rows = a.rows;
    out.plan = a.plan;
    std::vector<std::uint64_t> rect;  // rotations summing the row blocks of a rectangular product
    for (auto st : p.rect_steps(a.rows)) rect.push_back(p.ctx->galois_element(st));
    for (auto& s : acc) {
        Ciphertext r = ev.rescale(ev.relinearize(*s, exec), exec);
        if (!rect.empty())  // sum the d/l row blocks of Jiang's replicated left operand
            r = ev.add(r, ev.apply_galois_sum_hoisted(r, rect, exec), exec);
        out.blocks.push_back(std::move(r));
    }
    return out;
}

std::vector<Ciphertext> matmul_schoolbook(const ckks::Evaluator& ev0, const std::vector<Ciphertext>& a,
                                          const std::vector<Ciphertext>& b, std::size_t d, Exec exec,
                                          OpCounts* counts) {
    if (a.size() != d * d || b.size() != d * d)
        throw ParameterError("schoolbook matmul: expected d*d = " + std::to_string(d * d) + " ciphertexts per operand");
    const ckks::Evaluator ev = counts ? ev0.counting(*counts) : ev0;
    std::vector<Ciphertext> out;
    for (std::size_t i = 0; i < d; ++i)
        for (std::size_t j = 0; j < d; ++j) {
            Ciphertext s = ev.tensor(a[i * d], b[j], exec);
            for (std::size_t k = 1; k < d; ++k) s = ev.add(s, ev.tensor(a[i * d + k], b[k * d + j], exec), exec);
            out.push_back(ev.rescale(ev.relinearize(s, exec), exec));
        }
    return out;
}

}  // namespace kasoku::algo
