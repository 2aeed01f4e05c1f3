// List scheduling of job streams over task graphs (Suzuki, Ishimaki and Yamana §7): critical-path priorities, earlier
// jobs first, and a
// thread-allocation policy per task. Two executors share the dispatcher: simulate (discrete events driven by a
// CostModel, any thread count) and run (this machine's threads, the library's operations on real ciphertexts).
// Errors: ParameterError for a bad argument (unknown policy name, threads < 1, arrivals that are not finite,
// non-negative and non-decreasing, a window outside the jobs); run also throws what checking its inputs finds
// (ParameterError for a missing or unknown input, LevelError for an input at another level than the graph's,
// MissingKeyError for a key a task needs) before anything runs, and rethrows the first error of a task.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/sched/cost_model.hpp"
#include "kasoku/sched/graph.hpp"

namespace kasoku::sched {

// fixed_1, fixed_half (ceil(nq/2)) and fixed_full (nq): the source's naive policies; dynamic: its four-step rule
// (§7.3.2); kasoku: ours (see decide_threads and docs/SCHEDULING.md).
enum class Policy { fixed_1, fixed_half, fixed_full, dynamic, kasoku };
const char* policy_name(Policy p);  // "fixed-1", "fixed-half", "fixed-full", "dynamic", "kasoku"
// @throws ParameterError for a name that is no policy's (the message names the policies)
Policy policy_from_name(const std::string& name);
std::vector<Policy> all_policies();

// A task whose operands are ready.
struct ReadyTask {
    int job = 0, node = 0;
    OpKind op = OpKind::add;
    int nq = 1;
    double priority = 0;  // longest path (ms, one thread, unloaded) from its start to the job's end
    bool align = false;   // its operands are at different levels (Graph::aligns)
    double ready_ms = 0;  // when its last operand was ready
};

// What a policy sees when it places the head of the ready list.
struct SchedulerView {
    int total_threads = 1;  // T: threads the scheduler may use at once
    int busy_threads = 0;   // n_c: threads of the running tasks
    // The running tasks' threads by kind (indexed by OpKind - 1); threads of busy_threads not counted here are
    // taken to be of the head's kind.
    std::array<int, kTaskKinds> busy_by_kind{};
    int running_tasks = 0;
    int jobs_in_system = 0;        // arrived and not finished
    int jobs_in_flight = 0;        // started and not finished
    bool head_starts_job = false;  // the head is its job's first task
    ReadyTask head;                // the task to place
    // The other ready tasks: their number r and the source's demand n_r (1 for a light task or multiply_plain, 2
    // for multiply, square, rotate).
    int others = 0, others_paper_demand = 0;
    // The running tasks' expected ends: (ms from now, threads they free), soonest first (the cost model's estimate
    // when they started). Empty: unknown.
    std::vector<std::pair<double, int>> releases;
    const CostModel* cost = nullptr;
    // What the executor has learnt of the head's kind: the ratio of its tasks' observed times to the cost model's
    // estimates, by thread count (index n - 1). Null, or n past its end: 1 (the model as it is).
    const std::vector<double>* correction = nullptr;
};
// The view of a head task and a list of other ready tasks (the aggregates computed from the list).
SchedulerView make_view(int total_threads, int busy_threads, int running_tasks, const ReadyTask& head,
                        const std::vector<ReadyTask>& others, const CostModel& cost);
// A ready task's share in n_r.
int paper_demand(const ReadyTask& t);

// Threads for view.head, or 0 to wait for the next event. Light tasks (add, add_plain) always get one thread.
// fixed-*: their count (capped at T) once that many threads are free. dynamic (the source's §7.3.2), with r and n_r
// as above:
//   n_c + nq + n_r <= T -> nq;  n_c + ceil(nq/2) + r <= T -> ceil(nq/2);  n_c + 2 + r <= T -> 2;  n_c + 1 <= T -> 1.
// kasoku (ours; estimates by the cost model: level-aware, alignment included, with the start-up overhead, the load
// factor and the model's job factor), with F = T / nq the jobs whose tasks the machine runs at full width at once:
//   1. marginal gain, under pressure (more than F jobs in the system): the threads n must raise the machine's work
//      per unit time, the sum over the running tasks' kinds k of busy_k / (load_factor_k(busy) * job_factor(jobs in
//      flight)), from n_c to n_c + n (a head that starts its job adds one in flight); the largest such n <= nq is
//      the cap (none: wait);
//   2. the n with the lowest price: its expected finish (counting the wait for running tasks to free threads,
//      `releases`) plus 16 * E * n * estimate(n) / T, its thread-milliseconds charged to the E = jobs in the system
//      beyond F / 4; when that n is not free yet, wait.
// Its estimates are the cost model's times the view's `correction`: the executor's running ratio of observed to
// estimated times per kind and thread count, so that a model measured on an idle machine corrects itself.
// @throws ParameterError for the kasoku policy without a cost model (view.cost null)
int decide_threads(Policy policy, const SchedulerView& view);

// Arrival times (ms from 0) of `jobs` jobs with exponential inter-arrival times of mean mean_ms:
// d_i = -mean_ms * ln(1 - u_i), u_i uniform in [0, 1) from a seeded 64-bit Mersenne Twister (the source's §7.2).
// @throws ParameterError for a mean_ms that is not finite and > 0, or jobs < 1
std::vector<double> poisson_arrivals(double mean_ms, int jobs, std::uint64_t seed);

struct StreamOptions {
    int threads = 1;
    Policy policy = Policy::kasoku;
    std::vector<double> arrivals_ms;   // one job per entry, non-decreasing; empty: one job at 0
    std::pair<int, int> window{0, 0};  // measured jobs, 1-based inclusive (the source: 301..1900); {0, 0}: all
};

// One task of a stream, as it ran: when its operands were ready, when it started and ended (ms from the stream's
// start), on how many threads, and the time the dispatcher expected for it there (the cost model's, under the load it
// saw). The simulator's and the real executor's records of one stream line up task by task.
struct TaskRecord {
    int job = 0, node = 0;
    OpKind op = OpKind::add;
    int nq = 1, threads = 1;
    double ready_ms = 0, start_ms = 0, end_ms = -1, expected_ms = 0;
};

struct StreamResult {
    std::vector<double> arrival_ms, start_ms, finish_ms;  // every job: arrival, first task start, last task end
    int window_first = 1, window_last = 0;                // 1-based inclusive
    // From the first measured arrival to the last measured finish (the source's Table 6).
    double makespan_ms = 0;
    double p50_ms = 0, p95_ms = 0, p99_ms = 0, mean_ms = 0;  // latencies (finish - arrival) of the measured jobs
    double busy_thread_ms = 0;                               // sum over tasks of threads * duration
    double span_ms = 0;                                      // first arrival to last finish, all jobs
    std::vector<int> threads_used;  // histogram: tasks run with 1, 2, ... threads (index 0 unused)
    std::vector<TaskRecord> tasks;  // every task, in start order (the trace of the stream)
    // What the dispatcher learnt by the end: per task kind and thread count with finished tasks, the ratio of their
    // observed times to the cost model's estimates (a running mean in log space) and how many tasks it has seen.
    struct Correction {
        OpKind op = OpKind::add;
        int threads = 1, tasks = 0;
        double factor = 1;
    };
    std::vector<Correction> corrections;
    std::vector<double> latencies_ms() const;  // measured jobs, in job order
};

// Discrete-event simulation: tasks progress at 1 / load_factor(busy threads) of their unloaded speed. The dispatcher
// estimates with `cost`; the tasks take the times of `truth` when given (a model that is off: what the kasoku policy's
// correction learns), of `cost` otherwise.
// @throws ParameterError for opts.threads < 1, arrivals that are not finite, >= 0 and non-decreasing, or a window
//     outside the jobs
StreamResult simulate(const Graph& g, const CostModel& cost, const StreamOptions& opts,
                      const CostModel* truth = nullptr);

struct RunResult {
    StreamResult stream;
    // Outputs (by the graph's output names) of the first keep_outputs jobs.
    std::vector<std::map<std::string, ckks::Ciphertext>> outputs;
};

// What run and the online executor check before a job starts: every input of the graph is given (and nothing else) at
// the graph's level, and the evaluator has the keys the tasks need.
// @throws ParameterError for an input of the graph that has no ciphertext, or a ciphertext for a name that is not one
// @throws LevelError if an input ciphertext is at another level than the graph declares
// @throws MissingKeyError if the graph multiplies or squares without the relinearisation key, or rotates without
//     the Galois key of a step (the message lists every missing step)
void check_job(const Graph& g, const ckks::Evaluator& ev, const std::map<std::string, ckks::Ciphertext>& inputs);

// Runs the stream for real on opts.threads threads: a job arrives at its arrival time (ms after the call) with
// `inputs` (by the graph's input names) and each task calls the evaluator with the thread count the policy gives it.
// `cost` gives the priorities and the kasoku policy's estimates. Every input level must equal the graph's.
// @throws ParameterError as simulate (threads, arrivals, window), and as check_job
// @throws LevelError, MissingKeyError as check_job, before anything runs
// @throws the first error a task throws (what the evaluator's operation throws), after the running tasks end
RunResult run(const Graph& g, const ckks::Evaluator& ev, const std::map<std::string, ckks::Ciphertext>& inputs,
              const CostModel& cost, const StreamOptions& opts, int keep_outputs = 1);

}  // namespace kasoku::sched
