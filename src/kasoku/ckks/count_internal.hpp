// Evaluator::Count: how each public operation adds its counts to a counting evaluator's OpCounts (Evaluator::counting).
#pragma once
#include <atomic>
#include <exception>

#include "kasoku/ckks/evaluator.hpp"

namespace kasoku::ckks {

class Evaluator::Count {
public:
    Count(const Evaluator& ev, const OpCounts& adds)
        : sink_(ev.counts_ && depth() == 0 ? ev.counts_ : nullptr),
          adds_(adds),
          exceptions_(std::uncaught_exceptions()) {
        ++depth();
    }
    ~Count() {
        --depth();
        if (!sink_ || std::uncaught_exceptions() != exceptions_) return;
        const auto add = [](std::size_t& to, std::size_t k) {
            if (k) std::atomic_ref<std::size_t>(to).fetch_add(k, std::memory_order_relaxed);
        };
        add(sink_->add, adds_.add);
        add(sink_->cmult, adds_.cmult);
        add(sink_->rot, adds_.rot);
        add(sink_->mult, adds_.mult);
        add(sink_->decompose, adds_.decompose);
        add(sink_->mod_down, adds_.mod_down);
        add(sink_->rescale, adds_.rescale);
    }
    Count(const Count&) = delete;
    Count& operator=(const Count&) = delete;

private:
    static int& depth() {
        thread_local int d = 0;  // counted operations running on this thread
        return d;
    }
    OpCounts* sink_;
    OpCounts adds_;
    int exceptions_;
};

}  // namespace kasoku::ckks
