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
        for (auto f : kOpCountFields)
            if (adds_.*f) std::atomic_ref<std::size_t>(sink_->*f).fetch_add(adds_.*f, std::memory_order_relaxed);
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
