#include "kasoku/rns/rns_poly.hpp"

#include <cstring>
#include <vector>

#include "kasoku/support/aligned.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/random.hpp"

namespace kasoku::rns {

namespace {
class HostMemory final : public PolyMemory {
public:
    bool host_accessible() const override { return true; }
    std::uint64_t* allocate(std::size_t words) const override {
        return static_cast<std::uint64_t*>(detail::pool_allocate(words * sizeof(std::uint64_t)));
    }
    void deallocate(std::uint64_t* p, std::size_t words) const noexcept override {
        detail::pool_free(p, words * sizeof(std::uint64_t));
    }
    void copy(const std::uint64_t* src, std::size_t words, std::uint64_t* dst) const override {
        if (words) std::memcpy(dst, src, words * sizeof(std::uint64_t));
    }
    void zero(std::uint64_t* p, std::size_t words) const override {
        if (words) std::memset(p, 0, words * sizeof(std::uint64_t));
    }
    void wipe(std::uint64_t* p, std::size_t words) const noexcept override {
        if (words) secure_wipe(p, words * sizeof(std::uint64_t));
    }
    bool equal(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) const override {
        return words == 0 || std::memcmp(a, b, words * sizeof(std::uint64_t)) == 0;
    }
    void to_host(const std::uint64_t* src, std::size_t words, std::uint64_t* host_dst) const override {
        copy(src, words, host_dst);
    }
    void from_host(const std::uint64_t* host_src, std::size_t words, std::uint64_t* dst) const override {
        copy(host_src, words, dst);
    }
};
}  // namespace

const std::shared_ptr<const PolyMemory>& host_memory() {
    static const std::shared_ptr<const PolyMemory> mem = std::make_shared<const HostMemory>();
    return mem;
}

RnsPoly::RnsPoly(std::shared_ptr<const PolyMemory> memory, std::size_t n, std::size_t num_q, std::size_t num_p,
                 bool ntt_form)
    : mem_(std::move(memory)), n_(n), num_q_(num_q), num_p_(num_p), ntt_form_(ntt_form) {
    if (!mem_) throw InternalError("RnsPoly without a memory");
    if (words() != 0) data_ = mem_->allocate(words());
}

RnsPoly::RnsPoly(const RnsPoly& o)
    : mem_(o.mem_), n_(o.n_), num_q_(o.num_q_), num_p_(o.num_p_), ntt_form_(o.ntt_form_) {
    if (o.data_) {
        data_ = mem_->allocate(words());
        mem_->copy(o.data_, words(), data_);
    }
}

RnsPoly& RnsPoly::operator=(const RnsPoly& o) {
    if (this != &o) {
        RnsPoly t(o);
        *this = std::move(t);
    }
    return *this;
}

RnsPoly::RnsPoly(RnsPoly&& o) noexcept
    : mem_(std::move(o.mem_)), data_(o.data_), n_(o.n_), num_q_(o.num_q_), num_p_(o.num_p_), ntt_form_(o.ntt_form_) {
    o.data_ = nullptr;
    o.n_ = o.num_q_ = o.num_p_ = 0;
}

RnsPoly& RnsPoly::operator=(RnsPoly&& o) noexcept {
    if (this != &o) {
        release();
        mem_ = std::move(o.mem_);
        data_ = o.data_;
        n_ = o.n_;
        num_q_ = o.num_q_;
        num_p_ = o.num_p_;
        ntt_form_ = o.ntt_form_;
        o.data_ = nullptr;
        o.n_ = o.num_q_ = o.num_p_ = 0;
    }
    return *this;
}

RnsPoly::~RnsPoly() { release(); }

void RnsPoly::release() noexcept {
    if (data_) mem_->deallocate(data_, words());
    data_ = nullptr;
}

void RnsPoly::zero() {
    if (data_) mem_->zero(data_, words());
}

void RnsPoly::wipe() noexcept {
    if (data_) mem_->wipe(data_, words());
}

void RnsPoly::truncate(std::size_t num_q, std::size_t num_p) {
    if (num_q > num_q_ || num_p > num_p_) throw InternalError("RnsPoly::truncate can only drop limbs");
    RnsPoly kept(mem_, n_, num_q, num_p, ntt_form_);
    mem_->copy(data_, n_ * num_q, kept.data_);
    mem_->copy(data_ + n_ * num_q_, n_ * num_p, kept.data_ + n_ * num_q);
    wipe();
    *this = std::move(kept);
}

bool RnsPoly::operator==(const RnsPoly& o) const {
    if (n_ != o.n_ || num_q_ != o.num_q_ || num_p_ != o.num_p_ || ntt_form_ != o.ntt_form_) return false;
    if (!data_ || !o.data_) return data_ == o.data_;
    if (mem_ == o.mem_) return mem_->equal(data_, o.data_, words());
    std::vector<std::uint64_t> a(words()), b(words());
    mem_->to_host(data_, words(), a.data());
    o.mem_->to_host(o.data_, words(), b.data());
    return a == b;
}

}  // namespace kasoku::rns
