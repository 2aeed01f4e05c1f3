// The real executor: one scheduler thread (the caller) and opts.threads runner threads. A runner takes a placed task,
// calls the evaluator with the task's thread count (the runner and helpers of its own, a ThreadTeam, pinned to CPUs no
// other running task has) and reports back; the placed tasks never hold more than opts.threads threads, so a runner
// and its CPUs are always free for a placement.
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "dispatcher_internal.hpp"
#include "kasoku/sched/scheduler.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/threads.hpp"

namespace kasoku::sched {

ckks::Ciphertext detail::execute(const ckks::Evaluator& ev, const Node& n, const ckks::Ciphertext& a,
                                 const ckks::Ciphertext& b, int threads) {
    switch (n.op) {
        case OpKind::multiply: return ev.multiply(a, b, true, threads);
        case OpKind::square: return ev.square(a, true, threads);
        case OpKind::multiply_plain: return ev.multiply_scalar(a, n.constant, true, threads);
        case OpKind::add: return ev.add(a, b, threads);
        case OpKind::add_plain: return ev.add_scalar(a, n.constant, threads);
        case OpKind::rotate: return ev.rotate(a, n.step, threads);
        case OpKind::input: break;
    }
    throw ParameterError("scheduler: an input node is not a task");
}

std::vector<detail::CtPtr> detail::check_inputs(const Graph& g, const ckks::Evaluator& ev,
                                                const std::map<std::string, ckks::Ciphertext>& inputs) {
    std::vector<CtPtr> by_node(g.size());
    std::size_t used = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        const Node& n = g.nodes()[i];
        if (n.op == OpKind::input) {
            auto it = inputs.find(n.name);
            if (it == inputs.end())
                throw ParameterError("scheduler: the graph's input '" + n.name + "' has no ciphertext; pass inputs={'" +
                                     n.name + "': ct}");
            if (it->second.level() != n.level)
                throw LevelError("scheduler: input '" + n.name + "' is at level " + std::to_string(it->second.level()) +
                                 " but the graph declares level " + std::to_string(n.level) +
                                 "; build the graph with that level or drop the ciphertext to it");
            by_node[i] = std::make_shared<const ckks::Ciphertext>(it->second);
            ++used;
        } else if (n.op == OpKind::multiply || n.op == OpKind::square) {
            if (!ev.keys() || !ev.keys()->relin)
                throw MissingKeyError("scheduler: node " + std::to_string(i) + " (" + op_name(n.op) +
                                      ") needs the relinearisation key; make the evaluator from keys with relin=True");
        }
    }
    // Every missing Galois key at once, so that one keygen call fixes the graph.
    std::vector<std::int64_t> missing;
    for (std::int64_t step : g.rotation_steps())
        if (!ev.keys() || !ev.keys()->galois.count(ev.context().galois_element(step))) missing.push_back(step);
    if (!missing.empty()) {
        std::string list;
        for (std::int64_t s : missing) list += (list.empty() ? "" : ", ") + std::to_string(s);
        throw MissingKeyError("scheduler: the graph rotates by " + list +
                              " slot(s) without their Galois keys; make "
                              "the keys with keygen(rotations=graph.rotation_steps())");
    }
    if (used != inputs.size())
        for (const auto& [name, ct] : inputs) {
            bool known = false;
            for (const auto& n : g.nodes()) known = known || (n.op == OpKind::input && n.name == name);
            if (!known)
                throw ParameterError("scheduler: inputs has '" + name + "', which is not an input of the graph");
        }
    return by_node;
}

std::exception_ptr detail::run_task(std::unique_lock<std::mutex>& lk, const ckks::Evaluator& ev, const Graph& g,
                                    int node_id, int threads, std::vector<CtPtr>& vals, std::vector<int>& uses) {
    const Node& node = g.nodes()[node_id];
    std::vector<CtPtr> in;
    in.reserve(node.inputs.size());
    for (int i : node.inputs) in.push_back(vals[i]);
    lk.unlock();
    CtPtr out;
    std::exception_ptr error;
    try {
        out = std::make_shared<const ckks::Ciphertext>(execute(ev, node, *in.front(), *in.back(), threads));
    } catch (...) {
        error = std::current_exception();
    }
    in.clear();
    lk.lock();
    if (error) return error;
    vals[node_id] = std::move(out);
    for (int i : node.inputs)
        if (--uses[i] == 0) vals[i].reset();
    return nullptr;
}

detail::Runners::Runners(std::mutex& m, int threads, std::function<std::optional<Task>(const Placement&)> task,
                         std::function<void(const Placement&, std::exception_ptr)> ended)
    : m_(m), task_(std::move(task)), ended_(std::move(ended)) {
    if (threads > 1) {
        cpus_ = usable_cpus();
        if (cpus_.size() < static_cast<std::size_t>(threads)) cpus_.clear();  // more runners than CPUs: not pinned
        busy_.assign(cpus_.size(), 0);
    }
    width_ = threads;
    threads_.reserve(static_cast<std::size_t>(threads));
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

void detail::Runners::push(const std::vector<Placement>& placed) {
    queue_.insert(queue_.end(), placed.begin(), placed.end());
    for (std::size_t i = 0; i < placed.size(); ++i) cv_.notify_one();  // a runner each (a runner placing takes one)
}

void detail::Runners::close() {
    closing_ = true;
    cv_.notify_all();
}

detail::Runners::~Runners() {
    {
        std::lock_guard lk(m_);
        closing_ = true;
    }
    cv_.notify_all();
    join();
}

void detail::Runners::join() {
    for (auto& t : threads_)
        if (t.joinable()) t.join();
}

void detail::Runners::loop() {
    Seat seat(width_);  // a wide task's other threads: its helpers (made when first needed)
    std::unique_lock lk(m_);
    while (true) {
        cv_.wait(lk, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;  // closing
        const Placement p = queue_.front();
        queue_.pop_front();
        std::exception_ptr error;
        if (std::optional<Task> t = task_(p)) {
            // The free CPUs the task's threads take: the runner's own CPU first where it is free, then the lowest.
            // Taken lowest first, a job's two first tasks on an idle 2-CPU machine had their runners swap CPUs: the
            // runner woken second, still pinned to the CPU the first had just taken, waited there before it could
            // move. Placed to started 1.16 ms (mean; 0.04 ms for the job's later tasks), 0.12 ms with the runner's
            // own CPU first (SCHED, e^x at D = 150, Zen 5).
            std::vector<std::size_t> mine;
            for (std::size_t c = 0; c < cpus_.size(); ++c)
                if (cpus_[c] == seat.pinned() && !busy_[c]) mine.push_back(c);
            for (std::size_t c = 0; c < cpus_.size() && mine.size() < std::size_t(p.threads); ++c)
                if (!busy_[c] && (mine.empty() || c != mine.front())) mine.push_back(c);
            // Not pinned where there are more runners than CPUs (no cpus_), or, never expected, too few are free.
            if (mine.size() != std::size_t(p.threads)) mine.clear();
            std::vector<int> team;
            for (std::size_t c : mine) {
                busy_[c] = 1;
                team.push_back(cpus_[c]);
            }
            lk.unlock();
            seat.sit(std::move(team), cpus_);
            lk.lock();
            error =
                seat.run(p.threads, [&] { return run_task(lk, *t->ev, *t->g, p.node, p.threads, *t->vals, *t->uses); });
            for (std::size_t c : mine) busy_[c] = 0;
        }
        ended_(p, error);
    }
}

std::vector<int> detail::use_counts(const Graph& g, const std::vector<std::vector<int>>& succ) {
    std::vector<int> uses(g.size(), 0);
    for (std::size_t i = 0; i < g.size(); ++i) uses[i] = static_cast<int>(succ[i].size());
    for (const auto& [id, name] : g.outputs()) ++uses[id];
    return uses;
}

void check_job(const Graph& g, const ckks::Evaluator& ev, const std::map<std::string, ckks::Ciphertext>& inputs) {
    detail::check_inputs(g, ev, inputs);
}

RunResult run(const Graph& g, const ckks::Evaluator& ev, const std::map<std::string, ckks::Ciphertext>& inputs,
              const CostModel& cost, const StreamOptions& opts, int keep_outputs) {
    const auto arrivals = detail::checked_arrivals(opts);
    const auto input_values = detail::check_inputs(g, ev, inputs);
    const std::size_t jobs = arrivals.size();
    detail::Dispatcher d(g, cost, opts.policy, opts.threads, jobs);
    const auto uses0 = detail::use_counts(g, g.successors());

    struct JobState {
        std::vector<detail::CtPtr> vals;
        std::vector<int> uses;
    };
    std::vector<JobState> state(jobs);
    RunResult result;
    result.outputs.resize(std::min<std::size_t>(std::max(keep_outputs, 0), jobs));

    std::mutex m;
    std::condition_variable cv_sched;
    std::exception_ptr error;
    std::size_t done = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    // The evaluator is the caller's, alive for the whole call.
    const std::shared_ptr<const ckks::Evaluator> evp(std::shared_ptr<const ckks::Evaluator>(), &ev);
    // Under the lock: the jobs that have arrived by `now` join, and what the policy lets start starts. Called by the
    // scheduler thread at arrivals and by the runner whose task ended, which so goes on without waking the scheduler.
    std::size_t next = 0;  // the next job to arrive
    std::function<void(double)> admit_and_place;
    detail::Runners runners(
        m, opts.threads,
        [&](const detail::Placement& p) -> std::optional<detail::Runners::Task> {
            if (error) return std::nullopt;
            return detail::Runners::Task{evp, &g, &state[p.job].vals, &state[p.job].uses};
        },
        [&](const detail::Placement& p, std::exception_ptr e) {
            if (e || error) {  // the first error ends the run: nothing more is placed or started
                if (!error) error = e;
                runners.clear();
                runners.close();
                cv_sched.notify_all();
                return;
            }
            const double now = elapsed();
            d.finish(p, now);
            JobState& js = state[p.job];
            if (d.job_done(p.job)) {
                ++done;
                if (static_cast<std::size_t>(p.job) < result.outputs.size())
                    for (const auto& [id, name] : g.outputs()) result.outputs[p.job].emplace(name, *js.vals[id]);
                JobState().vals.swap(js.vals);
                std::vector<int>().swap(js.uses);
            }
            admit_and_place(now);
            if (done == jobs) cv_sched.notify_one();
        });
    admit_and_place = [&](double now) {
        for (; next < jobs && arrivals[next] <= now; ++next) {
            state[next].vals = input_values;
            state[next].uses = uses0;
            d.arrive(static_cast<int>(next), arrivals[next]);
            if (d.job_done(static_cast<int>(next))) ++done;
        }
        runners.push(d.place(now));
    };

    {
        std::unique_lock lk(m);
        while (!error && done < jobs) {
            admit_and_place(elapsed());
            if (done == jobs) break;
            if (next < jobs)
                cv_sched.wait_until(lk, t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                 std::chrono::duration<double, std::milli>(arrivals[next])));
            else cv_sched.wait(lk);
        }
        runners.close();
    }
    runners.join();
    if (error) std::rethrow_exception(error);
    result.stream = std::move(d.result);
    result.stream.corrections = d.corrections();
    detail::summarise(result.stream, opts.window);
    return result;
}

}  // namespace kasoku::sched
