// Types shared by the binding sources (named namespace: nanobind tells types apart by their C++ identity).
#pragma once
#include <nanobind/nanobind.h>

#include <memory>

#include "kasoku/ckks/evaluator.hpp"

namespace kasoku_py {

// State shared by a Python Context and every object it makes: the C++ context and the evaluator that the
// ciphertext operators (+, -, *) use.
struct Owner {
    kasoku::ckks::ContextPtr ctx;
    std::shared_ptr<const kasoku::ckks::Evaluator> evaluator;        // set by Context.evaluator(...)
    std::shared_ptr<const kasoku::ckks::Evaluator> keyless;          // add/sub/negate without keys
};
using OwnerPtr = std::shared_ptr<Owner>;

struct KContext { OwnerPtr owner; };
struct KCiphertext { OwnerPtr owner; kasoku::ckks::Ciphertext ct; };
struct KEvaluator { OwnerPtr owner; std::shared_ptr<const kasoku::ckks::Evaluator> ev; };

// The scheduler's classes and functions (kasoku._kasoku.sched).
void bind_sched(nanobind::module_& m);

}  // namespace kasoku_py
