// The backend seam (docs/ARCHITECTURE.md "Adding a backend"): a context made with another backend runs every CKKS
// operation through it, and gives the same bits as the CPU backend.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>

#include "kasoku/algo/linear_transform.hpp"
#include "kasoku/ckks/serialization.hpp"
#include "kasoku/support/error.hpp"
#include "seam_check.hpp"
#include "test_env.hpp"

using namespace kasoku;
using namespace kasoku::ckks;
using rns::RnsPoly;

namespace {

// A backend of its own that forwards every operation to a CPU backend and counts them.
class CountingBackend final : public rns::Backend {
public:
    explicit CountingBackend(std::shared_ptr<const rns::RnsContext> ring)
        : Backend(ring, rns::host_memory()), cpu_(rns::make_cpu_backend(ring)) {}
    const char* name() const override { return "counting"; }
    int calls(const std::string& op) const {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = calls_.find(op);
        return it == calls_.end() ? 0 : it->second;
    }

protected:
    void do_upload(RnsPoly& out, const rns::LimbWriter& fill, Exec e) const override {
        tick("upload");
        cpu_->upload(out, fill, e);
    }
    void do_download(const RnsPoly& a, const rns::LimbReader& read, std::size_t limbs, Exec e) const override {
        tick("download");
        cpu_->download(a, read, e, limbs);
    }
    void do_from_signed(const std::int64_t* c, RnsPoly& out, Exec e) const override {
        tick("from_signed");
        cpu_->from_signed(c, out, e);
    }
    void do_from_signed(const __int128* c, RnsPoly& out, Exec e) const override {
        tick("from_signed");
        cpu_->from_signed(c, out, e);
    }
    void do_sample(const rns::SmallDraw& d, RnsPoly& out, Exec e) const override {
        tick("sample");
        cpu_->sample(d, out, e);
    }
    void do_add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec e) const override {
        tick("add");
        cpu_->add(a, b, out, e);
    }
    void do_sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec e) const override {
        tick("sub");
        cpu_->sub(a, b, out, e);
    }
    void do_negate(const RnsPoly& a, RnsPoly& out, Exec e) const override {
        tick("negate");
        cpu_->negate(a, out, e);
    }
    void do_mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec e) const override {
        tick("mul");
        cpu_->mul(a, b, out, e);
    }
    void do_tensor(const RnsPoly& a0, const RnsPoly& a1, const RnsPoly& b0, const RnsPoly& b1, RnsPoly& d0, RnsPoly& d1,
                   RnsPoly& d2, Exec e) const override {
        tick("tensor");
        cpu_->tensor(a0, a1, b0, b1, d0, d1, d2, e);
    }
    void do_fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, Exec e) const override {
        tick("fma");
        cpu_->fma(a, b, c, out, e);
    }
    void do_mul_constant(const RnsPoly& a, const std::vector<rns::u64>& r, RnsPoly& out, Exec e) const override {
        tick("mul_constant");
        cpu_->mul_constant(a, r, out, e);
    }
    void do_add_constant(const RnsPoly& a, const std::vector<rns::u64>& r, RnsPoly& out, Exec e) const override {
        tick("add_constant");
        cpu_->add_constant(a, r, out, e);
    }
    void do_linear_combination(const std::vector<const RnsPoly*>& x, const std::vector<std::vector<rns::u64>>& c,
                               RnsPoly& out, Exec e) const override {
        tick("linear_combination");
        cpu_->linear_combination(x, c, out.num_q(), out, e);
    }
    void do_sum_of_products(const std::vector<std::vector<const RnsPoly*>>& x, const std::vector<const RnsPoly*>& y,
                            const std::vector<RnsPoly*>& out, bool accumulate, Exec e) const override {
        tick("sum_of_products");
        cpu_->sum_of_products(x, y, out, accumulate, e);
    }
    void do_horner(const std::vector<const RnsPoly*>& c, const RnsPoly& x, RnsPoly& out, Exec e) const override {
        tick("horner");
        cpu_->horner(c, x, out, e);
    }
    void do_to_subring(const RnsPoly& a, RnsPoly& out, Exec e) const override {
        tick("to_subring");
        cpu_->to_subring(a, out.n(), out, e);
    }
    void do_to_ntt(RnsPoly& a, Exec e) const override {
        tick("to_ntt");
        cpu_->to_ntt(a, e);
    }
    void do_from_ntt(RnsPoly& a, Exec e) const override {
        tick("from_ntt");
        cpu_->from_ntt(a, e);
    }
    void do_automorphism(const RnsPoly& a, rns::u64 g, RnsPoly& out, Exec e) const override {
        tick("automorphism");
        cpu_->automorphism(a, g, out, e);
    }
    void do_rescale(RnsPoly& a, Exec e) const override {
        tick("rescale");
        cpu_->rescale(a, e);
    }
    void do_divide_round_by_p0(RnsPoly& a, const rns::SmallDraw* addend, Exec e) const override {
        tick("divide_round_by_p0");
        cpu_->divide_round_by_p0(a, addend, e);
    }
    void do_mod_down(const RnsPoly& b, const RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a, rns::u64 g,
                     RnsPoly& out_b, RnsPoly& out_a, Exec e) const override {
        tick("mod_down");
        cpu_->mod_down(b, a, add_b, add_a, g, out_b, out_a, e);
    }
    void do_mod_down_rescale(RnsPoly& b, RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a,
                             Exec e) const override {
        tick("mod_down_rescale");
        cpu_->mod_down_rescale(b, a, add_b, add_a, e);
    }
    void do_add_times_p(const RnsPoly& d, RnsPoly& x, std::size_t first, std::size_t count, Exec e) const override {
        tick("add_times_p");
        cpu_->add_times_p(d, x, e, first, count);
    }
    std::vector<RnsPoly> do_mod_up(const RnsPoly& d, Exec e) const override {
        tick("mod_up");
        return cpu_->mod_up(d, e);
    }
    void do_key_switch(const RnsPoly& d, const rns::GadgetKey& key, RnsPoly& b, RnsPoly& a, Exec e) const override {
        tick("key_switch");
        cpu_->key_switch(d, key, b, a, e);
    }
    void do_inner_product(const std::vector<RnsPoly>& digits, const std::vector<rns::KeyTerm>& terms, RnsPoly& b,
                          RnsPoly& a, const RnsPoly* c0, RnsPoly* c0_out, Exec e) const override {
        tick("inner_product");
        cpu_->inner_product(digits, terms, b, a, c0, c0_out, e);
    }

private:
    void tick(const char* op) const {
        std::lock_guard<std::mutex> lock(mu_);
        ++calls_[op];
    }
    std::unique_ptr<const rns::Backend> cpu_;
    mutable std::mutex mu_;
    mutable std::map<std::string, int> calls_;
};

}  // namespace

TEST(BackendSeam, EveryOperationRunsOnTheContextsBackendWithTheCpuBits) {
    const CountingBackend* made = nullptr;
    auto ctx = test::expect_same_bits_as_cpu(test::research_params(8, 50, 32, 3, 50, 2),
                                             [&](std::shared_ptr<const rns::RnsContext> ring) {
                                                 auto b = std::make_unique<const CountingBackend>(std::move(ring));
                                                 made = b.get();
                                                 return b;
                                             });
    ASSERT_NE(made, nullptr);
    EXPECT_STREQ(ctx->backend().name(), "counting");
    // The key-switching steps went through the backend (and nothing bypassed it: there is no other way to the words).
    for (const char* op : {"key_switch", "mod_up", "inner_product", "mod_down", "mod_down_rescale", "tensor",
                           "sum_of_products", "linear_combination", "horner", "from_signed", "sample", "upload",
                           "download", "rescale", "divide_round_by_p0"})
        EXPECT_GT(made->calls(op), 0) << op;
}

TEST(BackendSeam, FactoryErrorsAreParameterErrors) {
    const Parameters p = test::research_params(8, 50, 32, 2, 50, 1);
    EXPECT_THROW(Context::create(p, 1, rns::BackendFactory{}), ParameterError);
    EXPECT_THROW(
        Context::create(p, 1,
                        [](std::shared_ptr<const rns::RnsContext>) { return std::unique_ptr<const rns::Backend>(); }),
        ParameterError);
    // a backend of another ring
    EXPECT_THROW(Context::create(p, 1,
                                 [](std::shared_ptr<const rns::RnsContext> ring) {
                                     auto other = std::make_shared<const rns::RnsContext>(
                                         ring->n(), ring->q_primes(), ring->p_primes(), ring->alpha());
                                     return rns::make_cpu_backend(other);
                                 }),
                 ParameterError);
}
