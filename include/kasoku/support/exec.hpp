// The execution handle that every heavy operation takes (docs/ARCHITECTURE.md): how wide it runs.
#pragma once

namespace kasoku {

// The CPU backend runs an operation on a team of `threads` OpenMP threads. A device backend orders all the work of a
// context on one stream of its device (concurrent operations from several host threads are queued there in the
// order they are issued); batches (the *_many operations) are how several operations fill a device. An Exec is made
// implicitly from a thread count, so `ev.rotate(ct, 1, 2)` runs on two threads.
struct Exec {
    int threads = 0;  // 0: the context's default thread count (resolved by Context::exec before a backend sees it)

    Exec(int threads_ = 0) : threads(threads_) {}  // NOLINT(google-explicit-constructor): a thread count is an Exec
};

}  // namespace kasoku
