// The online executor: the scheduler of Suzuki, Ishimaki and Yamana for a server. Jobs of any task graph, each with its
// own evaluator
// (its client's keys) and input ciphertexts, join at any time; their tasks run on `threads` threads with the thread
// counts the policy gives (the same list scheduler and policies as sched::run), and finished jobs are collected.
// Errors: submit throws what checking a job finds (ParameterError for a missing or unknown input, LevelError for an
// input at another level than the graph's, MissingKeyError for a key a task needs, ParameterError after close()),
// before the job joins; an error inside a task ends that job only (Finished::error) and the executor goes on.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/sched/cost_model.hpp"
#include "kasoku/sched/graph.hpp"
#include "kasoku/sched/scheduler.hpp"

namespace kasoku::sched {

class Executor {
public:
    // cost gives the priorities and the kasoku policy's estimates; threads >= 1. The arguments in Python's order
    // (ks.sched.Executor(cost, threads, policy)).
    // @throws ParameterError for threads < 1
    Executor(CostModel cost, int threads, Policy policy = Policy::kasoku);
    ~Executor();  // close()
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    // Checks the job and queues it; returns its id (0, 1, ... in submission order). Thread-safe. An error inside a
    // task later ends that job only (Finished::error).
    // @throws ParameterError for a null evaluator, inputs as check_job finds them, or an executor that was closed
    // @throws LevelError if an input is at another level than the graph declares
    // @throws MissingKeyError if the evaluator lacks a key a task needs
    std::uint64_t submit(const Graph& g, std::shared_ptr<const ckks::Evaluator> ev,
                         const std::map<std::string, ckks::Ciphertext>& inputs);

    struct Finished {
        std::uint64_t id = 0;
        std::map<std::string, ckks::Ciphertext> outputs;  // by the graph's output names; empty on error
        std::string error;                                // the task's error message; empty on success
        double queued_ms = 0;                             // submission to the first task's start
        double run_ms = 0;                                // first task's start to the last task's end
    };
    // The jobs finished since the last call (at most max), in the order they finished; waits up to timeout_ms for
    // the first one (0: no wait). Thread-safe.
    std::vector<Finished> collect(double timeout_ms, std::size_t max = static_cast<std::size_t>(-1));

    int jobs_in_system() const;  // submitted and not finished
    int busy_threads() const;
    int threads() const { return threads_; }
    // Stops taking jobs, lets the running tasks end, drops the rest; then joins the threads. Idempotent.
    void close();

private:
    struct State;
    std::unique_ptr<State> s_;
    int threads_;
};

}  // namespace kasoku::sched
