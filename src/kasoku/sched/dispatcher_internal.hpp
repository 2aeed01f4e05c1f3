// The list scheduler both executors drive: jobs arrive, tasks finish, and place() starts the ready tasks in priority
// order (earlier job first, then the longest remaining path) with the thread counts the policy gives, until the
// policy says to wait; and the task kinds' mapping to the evaluator, shared by the real executor and
// CostModel::measure.
#pragma once
#include <array>
#include <map>
#include <set>
#include <vector>

#include "kasoku/sched/scheduler.hpp"

namespace kasoku::sched::detail {

struct Placement {
    int job, node, threads;
    double start_ms, expected_end_ms;
};

class Dispatcher {
public:
    Dispatcher(const Graph& g, const CostModel& cost, Policy policy, int threads, std::size_t jobs);

    void arrive(int job, double now);
    std::vector<Placement> place(double now);
    void finish(const Placement& p, double now);  // p as returned by place()

    bool job_done(int job) const { return remaining_[job] == 0; }
    int busy_threads() const { return busy_; }
    int running_tasks() const { return running_; }
    int jobs_in_flight() const { return in_flight_; }
    const std::vector<double>& priorities() const { return priority_; }

    StreamResult result;  // arrival/start/finish per job, busy_thread_ms and threads_used as tasks run

private:
    struct Cmp {
        bool operator()(const ReadyTask& a, const ReadyTask& b) const {
            if (a.job != b.job) return a.job < b.job;
            if (a.priority != b.priority) return a.priority > b.priority;
            return a.node < b.node;
        }
    };
    void make_ready(int job, int node);
    const Graph& g_;
    const CostModel& cost_;
    Policy policy_;
    int threads_;
    std::vector<std::vector<int>> succ_;
    std::vector<double> priority_;
    int tasks_per_job_ = 0;
    std::vector<std::vector<int>> pending_;  // per job (allocated at arrival): unfinished operands per node
    std::vector<int> remaining_;              // per job: unfinished tasks
    std::set<ReadyTask, Cmp> ready_;
    std::multimap<double, int> ends_;  // running tasks: expected end -> threads
    int busy_ = 0, running_ = 0, in_system_ = 0, in_flight_ = 0, others_paper_ = 0;
    std::array<int, kTaskKinds> busy_by_kind_{};
};

// Runs task n on its operands with the evaluator (b is used by the two-operand tasks only): the real executor's
// and CostModel::measure's one mapping from a task kind to the library's operation.
ckks::Ciphertext execute(const ckks::Evaluator& ev, const Node& n, const ckks::Ciphertext& a, const ckks::Ciphertext& b,
                         int threads);

// Validated arrivals of a stream (one job at 0 when empty); checks the window and the thread count.
std::vector<double> checked_arrivals(const StreamOptions& o);
// Fills the window statistics (latency percentiles, makespan) from the per-job times.
void summarise(StreamResult& r, std::pair<int, int> window);

}  // namespace kasoku::sched::detail
