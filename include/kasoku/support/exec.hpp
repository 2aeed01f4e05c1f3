// The execution handle that every heavy operation takes (docs/ARCHITECTURE.md): how wide it runs.
#pragma once
#include <cstddef>
#include <functional>

namespace kasoku {

// Called by long operations (key generation, a bootstrapper's plan) after each step with (steps done, steps in all),
// on the calling thread; an exception it throws ends the operation.
using Progress = std::function<void(std::size_t done, std::size_t total)>;

// The CPU backend runs an operation on a team of `threads` OpenMP threads. A device backend orders all the work of a
// context on one stream of its device (concurrent operations from several host threads are queued there in the
// order they are issued); batches (the *_many operations) are how several operations fill a device. An Exec is made
// implicitly from a thread count, so `ev.rotate(ct, 1, 2)` runs on two threads.
struct Exec {
    int threads = 0;  // 0: the context's default thread count (resolved by Context::exec before a backend sees it)

    Exec(int threads_ = 0) : threads(threads_) {}  // NOLINT(google-explicit-constructor): a thread count is an Exec
};

}  // namespace kasoku
