// A polynomial in RNS form: limbs x n words, over the primes q_0..q_{num_q-1} followed by
// the special primes p_0..p_{num_p-1}. Coefficient or evaluation (NTT) form.
#pragma once
#include <cstddef>
#include <algorithm>
#include <cstdint>

#include "kasoku/support/aligned.hpp"
#include "kasoku/support/random.hpp"

namespace kasoku::rns {

class RnsPoly {
public:
    RnsPoly() = default;
    // The words are left uninitialised (every producer writes them all); call zero() when zeros are needed.
    RnsPoly(std::size_t n, std::size_t num_q, std::size_t num_p, bool ntt_form)
        : n_(n), num_q_(num_q), num_p_(num_p), ntt_form_(ntt_form), data_(n * (num_q + num_p)) {}
    void zero() { std::fill(data_.begin(), data_.end(), 0); }

    std::size_t n() const { return n_; }
    std::size_t num_q() const { return num_q_; }
    std::size_t num_p() const { return num_p_; }
    std::size_t limbs() const { return num_q_ + num_p_; }
    bool ntt_form() const { return ntt_form_; }
    void set_ntt_form(bool f) { ntt_form_ = f; }
    bool empty() const { return data_.empty(); }

    std::uint64_t* limb(std::size_t i) { return data_.data() + i * n_; }
    const std::uint64_t* limb(std::size_t i) const { return data_.data() + i * n_; }
    std::uint64_t* data() { return data_.data(); }
    const std::uint64_t* data() const { return data_.data(); }
    std::size_t words() const { return data_.size(); }

    // Keeps the first `num_q` q-limbs and the first `num_p` special limbs.
    void truncate(std::size_t num_q, std::size_t num_p = 0) {
        AlignedWords d(n_ * (num_q + num_p));
        std::copy(data_.begin(), data_.begin() + static_cast<std::ptrdiff_t>(n_ * num_q), d.begin());
        std::copy(data_.begin() + static_cast<std::ptrdiff_t>(n_ * num_q_),
                  data_.begin() + static_cast<std::ptrdiff_t>(n_ * (num_q_ + num_p)),
                  d.begin() + static_cast<std::ptrdiff_t>(n_ * num_q));
        num_q_ = num_q;
        num_p_ = num_p;
        wipe();
        data_.swap(d);
    }
    // Zeroes the memory (used for secret material before it is released).
    void wipe() { secure_wipe(data_.data(), data_.size() * sizeof(std::uint64_t)); }
    bool operator==(const RnsPoly& o) const {
        return n_ == o.n_ && num_q_ == o.num_q_ && num_p_ == o.num_p_ && ntt_form_ == o.ntt_form_ && data_ == o.data_;
    }

private:
    std::size_t n_ = 0, num_q_ = 0, num_p_ = 0;
    bool ntt_form_ = false;
    AlignedWords data_;
};

}  // namespace kasoku::rns
