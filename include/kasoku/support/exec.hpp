// The execution handle that every heavy operation takes (docs/ARCHITECTURE.md): where and how wide it runs.
#pragma once

namespace kasoku {

// The CPU backend runs an operation on a team of `threads` OpenMP threads; a device backend runs it on its stream
// number `stream`. An Exec is made implicitly from a thread count, so `ev.rotate(ct, 1, 2)` runs on two threads.
struct Exec {
    int threads = 0;  // 0: the context's default thread count (resolved by Context::exec before a backend sees it)
    int stream = 0;   // device backends: which of their streams (0: the default one); the CPU backend ignores it

    Exec(int threads_ = 0) : threads(threads_) {}  // NOLINT(google-explicit-constructor): a thread count is an Exec
    static Exec on_stream(int stream, int threads = 0) {
        Exec e(threads);
        e.stream = stream;
        return e;
    }
};

}  // namespace kasoku
