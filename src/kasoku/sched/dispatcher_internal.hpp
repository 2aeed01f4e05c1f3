// The list scheduler both executors drive: jobs arrive, tasks finish, and place() starts the ready tasks in priority
// order (earlier job first, then the longest remaining path) with the thread counts the policy gives, until the
// policy says to wait; and the task kinds' mapping to the evaluator, shared by the real executor and
// CostModel::measure.
#pragma once
#include <array>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "kasoku/sched/scheduler.hpp"
#include "kasoku/support/threads.hpp"

namespace kasoku::sched::detail {

struct Placement {
    int job, node, threads;
    double start_ms, expected_end_ms;
    std::size_t trace_entry = 0;  // batch streams: its entry in result.tasks
    // What the correction learns from: the width of the running tasks and the jobs in flight when it started, and the
    // integral of busy threads over time then (Dispatcher::busy_area_), so that its end can price the load it saw.
    double width = 1, busy_area = 0;
    int jobs_in_flight = 0;
};

// What the dispatcher needs of a graph, computed once per graph: successors, each node's priority (the longest path,
// one thread, unloaded, from its start to the job's end) and the number of tasks.
struct Plan {
    Plan(Graph graph, const CostModel& cost);
    Graph g;
    std::vector<std::vector<int>> succ;
    std::vector<double> priority;
    int tasks = 0;
};

class Dispatcher {
public:
    // A stream of `jobs` jobs of one graph (ids 0..jobs-1, arriving through arrive()); `result` records their times.
    Dispatcher(const Graph& g, const CostModel& cost, Policy policy, int threads, std::size_t jobs);
    // An open stream: jobs of any graph join through add() (the online executor); `result` stays empty.
    Dispatcher(const CostModel& cost, Policy policy, int threads);

    void arrive(int job, double now);
    int add(std::shared_ptr<const Plan> plan, double now);  // open streams: the new job's id (0, 1, ...)
    std::vector<Placement> place(double now);
    void finish(const Placement& p, double now);  // p as returned by place()
    // Drops the job's tasks that have not started (its running ones still report through finish()).
    void abort(int job);

    bool job_done(int job) const { return !jobs_.count(job); }  // finished, or never arrived
    int busy_threads() const { return busy_; }
    int running_tasks() const { return running_; }
    int jobs_in_flight() const { return in_flight_; }
    // The learnt ratios of observed to estimated task times (StreamResult::corrections: the thread counts run).
    std::vector<StreamResult::Correction> corrections() const;
    // The factor the estimates of kind op on `threads` threads carry now (1 before any task of the kind).
    double correction(OpKind op, int threads) const { return correction_[static_cast<int>(op) - 1][threads - 1]; }

    StreamResult result;  // batch streams: arrival/start/finish per job, every task (tasks), busy_thread_ms and
                          // threads_used as tasks run

private:
    struct Cmp {
        bool operator()(const ReadyTask& a, const ReadyTask& b) const {
            if (a.job != b.job) return a.job < b.job;
            if (a.priority != b.priority) return a.priority > b.priority;
            return a.node < b.node;
        }
    };
    struct Job {
        std::shared_ptr<const Plan> plan;
        std::vector<int> pending;  // unfinished operands per node
        int remaining = 0;         // unfinished tasks (aborted jobs: running tasks)
        int running = 0;           // tasks placed and not finished
        bool started = false, aborted = false;
    };
    void make_ready(int job, int node, double now);
    void record(std::vector<double>& v, int job, double t) {
        if (static_cast<std::size_t>(job) < v.size()) v[job] = t;
    }
    const CostModel& cost_;
    Policy policy_;
    int threads_;
    std::shared_ptr<const Plan> batch_plan_;  // batch streams: every job's plan
    int next_job_ = 0;
    std::map<int, Job> jobs_;  // arrived and not finished
    std::set<ReadyTask, Cmp> ready_;
    std::multimap<double, int> ends_;  // running tasks: expected end -> threads
    int busy_ = 0, running_ = 0, in_system_ = 0, in_flight_ = 0, others_paper_ = 0;
    std::array<int, kTaskKinds> busy_by_kind_{};
    void advance(double now);  // busy_area_ up to now
    double busy_area_ = 0, last_ms_ = 0;
    // Per kind and thread count (index n - 1): log of the observed / estimated ratio's running mean, and tasks seen.
    std::array<std::vector<double>, kTaskKinds> log_ratio_{}, correction_{};
    std::array<std::vector<int>, kTaskKinds> seen_{};
    std::array<std::vector<int>, kTaskKinds> from_{};  // nearest_observed(seen_[k]), made again when a count first runs
};

// For the thread counts of one kind (seen[n - 1]: its tasks run at n threads), the index of the nearest count that has
// run (itself where it has, the narrower one on a tie; -1 while none has). A count not run yet takes that one's learnt
// ratio, so that a width is not preferred only for never having been measured (the correction starts there from what
// the kind's other widths taught). On 2 Zen 5 threads a model a few per cent under the stream's one-thread tasks made
// kasoku run rotations and squares on two threads, which the simulator with the same model never chose: p95 +12 %
// against dynamic.
std::vector<int> nearest_observed(const std::vector<int>& seen);

// Where a runner (and CostModel::measure's measuring thread) runs its tasks: pinned to the first CPU of the task's team
// (sit; free on all the CPUs for no team), each task of several threads on the seat's ThreadTeam, engaged for that
// task alone with its helpers on the team's other CPUs, so that the task wakes them.
class Seat {
public:
    explicit Seat(int max_threads) : helpers_(max_threads) {}
    // Takes the team's CPUs; the calling thread's affinity is set only when its first CPU changes.
    void sit(std::vector<int> team, const std::vector<int>& all) {
        if (const int first = team.empty() ? -1 : team[0]; first != pinned_) {
            if (team.empty()) unbind(all);
            else unbind({first});
            pinned_ = first;
        }
        team_ = std::move(team);
    }
    int pinned() const { return pinned_; }  // the CPU the calling thread is pinned to (-1, -2: none)
    template <class F>
    auto run(int threads, const F& f) {
        std::optional<ThreadTeam::Engaged> wide;
        if (threads > 1) wide.emplace(helpers_, threads, team_);
        return f();
    }

private:
    ThreadTeam helpers_;
    std::vector<int> team_;
    int pinned_ = -2;  // the first CPU of the last team (-1: none, free on all; -2: not seated yet)
};

// Runs task n on its operands with the evaluator (b is used by the two-operand tasks only): the real executor's
// and CostModel::measure's one mapping from a task kind to the library's operation.
ckks::Ciphertext execute(const ckks::Evaluator& ev, const Node& n, const ckks::Ciphertext& a, const ckks::Ciphertext& b,
                         int threads);

using CtPtr = std::shared_ptr<const ckks::Ciphertext>;

// One placed task, as both executors' runners run it: its operands read from vals under the lock `lk` (held on entry
// and on return, released while the task runs), the evaluator called with the task's thread count, and on success
// its result stored in vals[node] and each operand dropped after its last use (uses). Returns the task's exception
// (null on success; vals is then unchanged).
std::exception_ptr run_task(std::unique_lock<std::mutex>& lk, const ckks::Evaluator& ev, const Graph& g, int node,
                            int threads, std::vector<CtPtr>& vals, std::vector<int>& uses);
// The runner threads both executors use: each takes the next placement from `queue` (push() under the lock), runs
// it with run_task on what `task` gives for it (nothing: skipped, e.g. a task of a job that has ended), and reports
// to `ended` with the task's exception (null on success); `task` and `ended` are called under the lock. The threads
// end once close() has been called and the queue is empty (an owner that stops at once clears the queue first).
// A task of several threads runs on the runner and helpers of the runner's own (a ThreadTeam, which spins between the
// task's parallel loops and sleeps between tasks: OpenMP teams, one pool per runner, slept in the kernel at every loop
// once the pools outnumbered the CPUs). Where there are no more runners than usable CPUs, that team runs on CPUs of
// its own: the runner takes as many free CPUs as the task has threads (its own CPU first where it is free), pins
// itself to the first and its helpers to the others until the task ends; the placed tasks never hold more threads
// than there are runners, so the CPUs never run out. Unpinned, Linux woke the second thread of a 2-thread task on the
// first one's core often enough that such tasks ran 1.5x their time alone in a stream (Zen 5, 2 cores;
// docs/SCHEDULING.md). A one-thread task is pinned to a free CPU likewise.
class Runners {
public:
    struct Task {
        std::shared_ptr<const ckks::Evaluator> ev;  // held while the task runs unlocked
        const Graph* g = nullptr;
        std::vector<CtPtr>* vals = nullptr;  // the job's values and use counts
        std::vector<int>* uses = nullptr;
    };
    Runners(std::mutex& m, int threads, std::function<std::optional<Task>(const Placement&)> task,
            std::function<void(const Placement&, std::exception_ptr)> ended);
    ~Runners();  // closes (taking the lock: never destroyed under it) and joins
    Runners(const Runners&) = delete;
    Runners& operator=(const Runners&) = delete;
    void push(const std::vector<Placement>& placed);  // under the lock
    void clear() { queue_.clear(); }                  // under the lock
    void close();                                     // under the lock
    bool closing() const { return closing_; }         // under the lock
    void join();                                      // not under the lock: waits for the threads (after close())

private:
    void loop();
    std::mutex& m_;
    std::condition_variable cv_;
    std::deque<Placement> queue_;
    bool closing_ = false;
    std::function<std::optional<Task>(const Placement&)> task_;
    std::function<void(const Placement&, std::exception_ptr)> ended_;
    std::vector<int> cpus_;   // the CPUs tasks are pinned to (empty: not pinned)
    std::vector<char> busy_;  // per entry of cpus_: a running task's
    int width_ = 1;           // the widest task: the runners' count
    std::vector<std::thread> threads_;
};

// Everything a job needs, checked before it starts: inputs by name and level, and the keys. The inputs by node id
// (null for the tasks).
std::vector<CtPtr> check_inputs(const Graph& g, const ckks::Evaluator& ev,
                                const std::map<std::string, ckks::Ciphertext>& inputs);

// How many times each node's value is read: by its successors, and once per output naming it (kept to the end).
std::vector<int> use_counts(const Graph& g, const std::vector<std::vector<int>>& succ);

// Validated arrivals of a stream (one job at 0 when empty); checks the window and the thread count.
std::vector<double> checked_arrivals(const StreamOptions& o);
// Fills the window statistics (latency percentiles, makespan) from the per-job times.
void summarise(StreamResult& r, std::pair<int, int> window);

}  // namespace kasoku::sched::detail
