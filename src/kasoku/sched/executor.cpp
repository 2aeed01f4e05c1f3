// The online executor: `threads` runner threads and no scheduler thread of its own. Placing tasks is done under the
// lock by whoever changes the state (a submission, a finished task), as sched::run's scheduler does at its events;
// the placed tasks never hold more than `threads` threads, so a runner is always free for a placement.
#include "kasoku/sched/executor.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "dispatcher_internal.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::sched {

namespace {
std::string message(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    } catch (...) {
        return "unknown error";
    }
}
}  // namespace

struct Executor::State {
    State(CostModel c, Policy policy, int threads)
        : cost(std::move(c)),
          d(cost, policy, threads),
          runners(
              m, threads, [this](const detail::Placement& p) { return task(p); },
              [this](const detail::Placement& p, std::exception_ptr e) { ended(p, e); }) {}

    struct Job {
        std::shared_ptr<const detail::Plan> plan;
        std::shared_ptr<const ckks::Evaluator> ev;
        std::vector<detail::CtPtr> vals;  // by node; released when their last user ends
        std::vector<int> uses;
        double submit_ms = 0, start_ms = -1;
        std::string error;
    };

    const CostModel cost;
    std::mutex m;
    std::condition_variable cv_done;
    detail::Dispatcher d;
    std::map<int, Job> jobs;  // submitted and not finished, by the dispatcher's id
    std::deque<Finished> done;
    const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    detail::Runners runners;  // last: its threads start once the rest is made

    double now() const {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }

    // Under the lock: starts what the policy lets start.
    void place(double t) {
        const std::vector<detail::Placement> placed = d.place(t);
        for (const auto& p : placed) {
            Job& j = jobs.at(p.job);
            if (j.start_ms < 0) j.start_ms = t;
        }
        runners.push(placed);
    }

    // Under the lock: a job the dispatcher has ended goes to `done`.
    void retire(int id, double t) {
        auto it = jobs.find(id);
        Job& j = it->second;
        Finished f;
        f.id = static_cast<std::uint64_t>(id);
        f.error = std::move(j.error);
        f.queued_ms = (j.start_ms < 0 ? t : j.start_ms) - j.submit_ms;
        f.run_ms = j.start_ms < 0 ? 0 : t - j.start_ms;
        if (f.error.empty())
            for (const auto& [node, name] : j.plan->g.outputs()) f.outputs.emplace(name, *j.vals[node]);
        jobs.erase(it);
        done.push_back(std::move(f));
        cv_done.notify_all();
    }

    // Under the lock (Runners): a task of a job that has ended (an error, or close()) placed before it ended is not run.
    std::optional<detail::Runners::Task> task(const detail::Placement& p) {
        Job& j = jobs.at(p.job);
        if (!j.error.empty()) return std::nullopt;
        return detail::Runners::Task{j.ev, &j.plan->g, &j.vals, &j.uses};
    }

    // Under the lock (Runners). The job stays valid: it is erased only by retire(), after its last running task.
    void ended(const detail::Placement& p, const std::exception_ptr& e) {
        Job& j = jobs.at(p.job);
        if (e) {
            if (j.error.empty())
                j.error = "node " + std::to_string(p.node) + " (" + op_name(j.plan->g.nodes()[p.node].op) +
                          "): " + message(e);
            d.abort(p.job);
        }
        const double t = now();
        d.finish(p, t);
        if (d.job_done(p.job)) retire(p.job, t);
        if (!runners.closing()) place(t);
    }
};

Executor::Executor(CostModel cost, int threads, Policy policy) : threads_(threads) {
    if (threads < 1) throw ParameterError("executor: threads must be >= 1, got " + std::to_string(threads));
    s_ = std::make_unique<State>(std::move(cost), policy, threads);
}

Executor::~Executor() { close(); }

std::uint64_t Executor::submit(const Graph& g, std::shared_ptr<const ckks::Evaluator> ev,
                               const std::map<std::string, ckks::Ciphertext>& inputs) {
    if (!ev) throw ParameterError("executor: the evaluator is null");
    auto vals = detail::check_inputs(g, *ev, inputs);
    auto plan = std::make_shared<const detail::Plan>(g, s_->cost);
    auto uses = detail::use_counts(g, plan->succ);

    std::unique_lock lk(s_->m);
    if (s_->runners.closing()) throw ParameterError("executor: closed; make a new one to submit jobs");
    const double t = s_->now();
    const int jid = s_->d.add(plan, t);
    s_->jobs.emplace(jid, State::Job{plan, std::move(ev), std::move(vals), std::move(uses), t, -1, {}});
    if (s_->d.job_done(jid)) s_->retire(jid, t);
    s_->place(t);
    return static_cast<std::uint64_t>(jid);
}

std::vector<Executor::Finished> Executor::collect(double timeout_ms, std::size_t max) {
    std::unique_lock lk(s_->m);
    if (s_->done.empty() && timeout_ms > 0)
        s_->cv_done.wait_for(lk, std::chrono::duration<double, std::milli>(timeout_ms),
                             [&] { return !s_->done.empty(); });
    std::vector<Finished> out;
    while (!s_->done.empty() && out.size() < max) {
        out.push_back(std::move(s_->done.front()));
        s_->done.pop_front();
    }
    return out;
}

int Executor::jobs_in_system() const {
    std::lock_guard lk(s_->m);
    return static_cast<int>(s_->jobs.size());
}

int Executor::busy_threads() const {
    std::lock_guard lk(s_->m);
    return s_->d.busy_threads();
}

void Executor::close() {
    {
        std::lock_guard lk(s_->m);
        if (s_->runners.closing()) return;
        s_->runners.close();
        for (auto& [id, job] : s_->jobs) {  // their running tasks still end; the jobs end without outputs
            if (job.error.empty()) job.error = "the executor closed";
            s_->d.abort(id);
        }
    }
    s_->runners.join();
}

}  // namespace kasoku::sched
