#include "kasoku/sched/scheduler.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>

#include "dispatcher_internal.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::sched {

// --- Policies ---
namespace {
constexpr const char* kPolicyNames[] = {"fixed-1", "fixed-half", "fixed-full", "dynamic", "kasoku"};

// kasoku's estimate of a task's time on n threads started now: the start-up overhead plus the unloaded time, its
// alignment included, slowed by the load it would run under and by the model's job factor.
double model_ms(const SchedulerView& v, int n) {
    const CostModel& c = *v.cost;
    const int busy = v.busy_threads + n;
    const double width = double(busy) / (std::max(v.running_tasks, 0) + 1);
    return c.overhead_ms() + c.loaded_task_ms(v.head.op, v.head.nq, v.head.align, n, busy, width) *
                                 c.job_factor(v.jobs_in_flight + v.head_starts_job);
}
// ... times what the executor has learnt of such tasks.
double estimate_ms(const SchedulerView& v, int n) {
    const auto* c = v.correction;
    const double f = c && static_cast<std::size_t>(n) <= c->size() ? (*c)[static_cast<std::size_t>(n) - 1] : 1.0;
    return model_ms(v, n) * f;
}
}  // namespace

const char* policy_name(Policy p) { return kPolicyNames[static_cast<int>(p)]; }

Policy policy_from_name(const std::string& name) {
    for (int i = 0; i < 5; ++i)
        if (name == kPolicyNames[i]) return static_cast<Policy>(i);
    throw ParameterError("unknown scheduling policy '" + name +
                         "': expected fixed-1, fixed-half, fixed-full, dynamic or kasoku");
}

std::vector<Policy> all_policies() {
    return {Policy::fixed_1, Policy::fixed_half, Policy::fixed_full, Policy::dynamic, Policy::kasoku};
}

int paper_demand(const ReadyTask& t) { return is_key_switching(t.op) ? 2 : 1; }

SchedulerView make_view(int total_threads, int busy_threads, int running_tasks, const ReadyTask& head,
                        const std::vector<ReadyTask>& others, const CostModel& cost) {
    SchedulerView v;
    v.total_threads = total_threads;
    v.busy_threads = busy_threads;
    v.running_tasks = running_tasks;
    v.head = head;
    v.cost = &cost;
    v.others = static_cast<int>(others.size());
    for (const auto& t : others) {
        v.others_paper_demand += paper_demand(t);
    }
    return v;
}

int decide_threads(Policy policy, const SchedulerView& v) {
    const int T = v.total_threads, n_c = v.busy_threads, free = T - n_c;
    if (free < 1) return 0;
    const ReadyTask& h = v.head;
    if (is_light(h.op)) return 1;
    const int nq = std::max(h.nq, 1), half = (nq + 1) / 2;
    auto fixed = [&](int want) {
        want = std::min(want, T);
        return free >= want ? want : 0;
    };
    switch (policy) {
        case Policy::fixed_1: return fixed(1);
        case Policy::fixed_half: return fixed(half);
        case Policy::fixed_full: return fixed(nq);
        case Policy::dynamic: {
            int n = 1;
            if (n_c + nq + v.others_paper_demand <= T) n = nq;
            else if (n_c + half + v.others <= T) n = half;
            else if (n_c + 2 + v.others <= T) n = 2;
            return std::min(n, nq);
        }
        case Policy::kasoku: {
            if (!v.cost) throw ParameterError("the kasoku policy needs a cost model");
            const CostModel& c = *v.cost;
            const double full_width_jobs = double(T) / nq;  // jobs whose tasks the machine runs at full width at once
            // 1. Under pressure (more jobs in the system than that), machine-level marginal gain: n more busy threads
            //    must raise the work done per unit time, the sum over the running tasks' kinds of their threads /
            //    (load_factor(busy) * job_factor(jobs in flight)), or the task waits (past that point the load slows
            //    the running tasks more than the new threads add). Without pressure latency comes first.
            int top = std::min(nq, T);
            if (n_c > 0 && v.jobs_in_system > full_width_jobs) {
                const int head_kind = static_cast<int>(h.op) - 1;
                std::array<int, kTaskKinds> by_kind = v.busy_by_kind;
                int counted = 0;
                for (int k : by_kind) counted += k;
                by_kind[head_kind] += std::max(n_c - counted, 0);
                auto rate = [&](int extra, int tasks, int jobs) {
                    const int busy = n_c + extra;
                    const double width = double(busy) / std::max(tasks, 1);
                    double r = 0;
                    for (int k = 0; k < kTaskKinds; ++k) {
                        const int threads = by_kind[k] + (k == head_kind ? extra : 0);
                        if (threads) r += threads / c.load_factor(static_cast<OpKind>(k + 1), busy, width);
                    }
                    return r / c.job_factor(jobs);
                };
                const double now_rate = rate(0, v.running_tasks, v.jobs_in_flight);
                while (top >= 1 && rate(top, v.running_tasks + 1, v.jobs_in_flight + v.head_starts_job) <= now_rate)
                    --top;
                if (top < 1) return 0;
            }
            // 2. The n with the lowest price: its expected finish (waiting for running tasks to free threads when
            //    that is sooner than starting narrower now) plus its thread-milliseconds charged to the jobs beyond a
            //    quarter of full_width_jobs, each of which they delay by about thread-ms / T, weighted by
            //    kThreadPrice. A light load is served wide, a backlog thriftily, with no switch between the two.
            constexpr double kThreadPrice = 16, kThriftFrom = 0.25;  // tuned in simulation (docs/SCHEDULING.md)
            const double excess = std::max(v.jobs_in_system - kThriftFrom * full_width_jobs, 0.0);
            int pick = 0;
            double best = std::numeric_limits<double>::infinity();
            for (int n = 1; n <= top; ++n) {
                double wait = 0;
                int avail = free;
                for (std::size_t i = 0; i < v.releases.size() && avail < n; ++i)
                    avail += v.releases[i].second, wait = v.releases[i].first;
                if (avail < n) continue;
                const double e = estimate_ms(v, n), price = wait + e + kThreadPrice * excess * n * e / T;
                if (price < best) best = price, pick = n;
            }
            return pick <= free ? pick : 0;
        }
    }
    return 0;
}

std::vector<double> poisson_arrivals(double mean_ms, int jobs, std::uint64_t seed) {
    if (!(mean_ms > 0) || !std::isfinite(mean_ms)) throw ParameterError("poisson: mean_ms must be finite and > 0");
    if (jobs < 1) throw ParameterError("poisson: jobs must be >= 1, got " + std::to_string(jobs));
    std::mt19937_64 rng(seed);
    std::vector<double> t(jobs);
    double now = 0;
    for (int i = 0; i < jobs; ++i) {
        const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
        now += -mean_ms * std::log1p(-u);
        t[i] = now;
    }
    return t;
}

// --- Dispatcher ---
namespace detail {

Plan::Plan(Graph graph, const CostModel& cost) : g(std::move(graph)), succ(g.successors()), priority(g.size(), 0) {
    const auto order = g.topological_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {  // longest path to the end, one thread, unloaded
        const int v = *it;
        double tail = 0;
        for (int s : succ[v]) tail = std::max(tail, priority[s]);
        const Node& n = g.nodes()[v];
        priority[v] = tail + (n.op == OpKind::input ? 0 : cost.task_ms(n.op, g.task_nq(v), g.aligns(v), 1));
        if (n.op != OpKind::input) ++tasks;
    }
}

Dispatcher::Dispatcher(const CostModel& cost, Policy policy, int threads)
    : cost_(cost), policy_(policy), threads_(threads) {
    if (threads < 1) throw ParameterError("scheduler: threads must be >= 1, got " + std::to_string(threads));
    result.threads_used.assign(threads + 1, 0);
    for (int k = 0; k < kTaskKinds; ++k) {
        log_ratio_[k].assign(threads, 0.0);
        correction_[k].assign(threads, 1.0);
        seen_[k].assign(threads, 0);
        from_[k].assign(threads, -1);
    }
}

std::vector<int> nearest_observed(const std::vector<int>& seen) {
    const int n = static_cast<int>(seen.size());
    std::vector<int> below(n, -1), above(n, -1), from(n, -1);  // the nearest observed width at or below / above each
    for (int i = 0, last = -1; i < n; ++i) below[i] = last = seen[i] ? i : last;
    for (int i = n - 1, last = -1; i >= 0; --i) above[i] = last = seen[i] ? i : last;
    for (int i = 0; i < n; ++i) {
        const int b = below[i], a = above[i];
        from[i] = b < 0 ? a : a < 0 ? b : (i - b <= a - i ? b : a);
    }
    return from;
}

std::vector<StreamResult::Correction> Dispatcher::corrections() const {
    std::vector<StreamResult::Correction> out;
    for (int k = 0; k < kTaskKinds; ++k)
        for (int n = 1; n <= threads_; ++n)
            if (seen_[k][n - 1]) out.push_back({static_cast<OpKind>(k + 1), n, seen_[k][n - 1], correction_[k][n - 1]});
    return out;
}

Dispatcher::Dispatcher(const Graph& g, const CostModel& cost, Policy policy, int threads, std::size_t jobs)
    : Dispatcher(cost, policy, threads) {
    batch_plan_ = std::make_shared<const Plan>(g, cost);
    result.arrival_ms.assign(jobs, 0);
    result.start_ms.assign(jobs, -1);
    result.finish_ms.assign(jobs, -1);
}

void Dispatcher::make_ready(int job, int node, double now) {
    const Plan& p = *jobs_.at(job).plan;
    ReadyTask t{job, node, p.g.nodes()[node].op, p.g.task_nq(node), p.priority[node], p.g.aligns(node), now};
    others_paper_ += paper_demand(t);
    ready_.insert(t);
}

int Dispatcher::add(std::shared_ptr<const Plan> plan, double now) {
    const int job = next_job_++;
    Job& j = jobs_[job];
    j.plan = std::move(plan);
    record(result.arrival_ms, job, now);
    j.remaining = j.plan->tasks;
    if (j.remaining == 0) {
        record(result.start_ms, job, now);
        record(result.finish_ms, job, now);
        jobs_.erase(job);
        return job;
    }
    ++in_system_;
    const Graph& g = j.plan->g;
    j.pending.resize(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) j.pending[i] = static_cast<int>(g.nodes()[i].inputs.size());
    for (std::size_t i = 0; i < g.size(); ++i)
        if (g.nodes()[i].op == OpKind::input)
            for (int s : j.plan->succ[i])
                if (--j.pending[s] == 0) make_ready(job, s, now);
    return job;
}

void Dispatcher::arrive(int job, double now) {
    if (job != next_job_) throw InternalError("dispatcher: jobs arrive in order");
    add(batch_plan_, now);
}

std::vector<Placement> Dispatcher::place(double now) {
    std::vector<Placement> out;
    while (!ready_.empty()) {
        const ReadyTask head = *ready_.begin();
        Job& job = jobs_.at(head.job);
        // the other ready tasks from running totals instead of a list
        SchedulerView v = make_view(threads_, busy_, running_, head, {}, cost_);
        v.jobs_in_system = in_system_;
        v.jobs_in_flight = in_flight_;
        v.busy_by_kind = busy_by_kind_;
        v.head_starts_job = !job.started;
        v.others = static_cast<int>(ready_.size()) - 1;
        v.others_paper_demand = others_paper_ - paper_demand(head);
        if (policy_ == Policy::kasoku) {
            for (const auto& [end, th] : ends_) v.releases.emplace_back(std::max(end - now, 0.0), th);
            v.correction = &correction_[static_cast<int>(head.op) - 1];
        }
        const int n = decide_threads(policy_, v);
        if (n < 1) break;
        const double expected = estimate_ms(v, n);
        advance(now);
        ready_.erase(ready_.begin());
        others_paper_ -= paper_demand(head);
        busy_ += n;
        busy_by_kind_[static_cast<int>(head.op) - 1] += n;
        ++running_;
        ++job.running;
        if (!job.started) job.started = true, ++in_flight_, record(result.start_ms, head.job, now);
        ++result.threads_used[n];
        std::size_t entry = 0;
        if (batch_plan_) {  // batch streams keep the trace (an open stream's would grow without end)
            entry = result.tasks.size();
            result.tasks.push_back({head.job, head.node, head.op, head.nq, n, head.ready_ms, now, -1, expected});
        }
        out.push_back({head.job, head.node, n, now, now + expected, entry,
                       double(busy_) / running_,  // the mean width of the running tasks, this one included
                       busy_area_, in_flight_});
        ends_.emplace(now + expected, n);
    }
    return out;
}

void Dispatcher::abort(int job) {
    auto it = jobs_.find(job);
    if (it == jobs_.end() || it->second.aborted) return;
    Job& j = it->second;
    j.aborted = true;
    for (auto r = ready_.begin(); r != ready_.end();)
        if (r->job == job) others_paper_ -= paper_demand(*r), r = ready_.erase(r);
        else ++r;
    j.remaining = j.running;  // the tasks running now still report; nothing else of the job starts
    if (j.remaining == 0) {
        --in_system_;
        if (j.started) --in_flight_;
        jobs_.erase(it);
    }
}

void Dispatcher::advance(double now) {
    if (now > last_ms_) busy_area_ += busy_ * (now - last_ms_), last_ms_ = now;
}

void Dispatcher::finish(const Placement& p, double now) {
    advance(now);
    busy_ -= p.threads;
    Job& j = jobs_.at(p.job);
    busy_by_kind_[static_cast<int>(j.plan->g.nodes()[p.node].op) - 1] -= p.threads;
    --running_;
    --j.running;
    for (auto it = ends_.find(p.expected_end_ms); it != ends_.end(); ++it)
        if (it->second == p.threads) {
            ends_.erase(it);
            break;
        }
    result.busy_thread_ms += p.threads * (now - p.start_ms);
    if (const double took = now - p.start_ms; took > 0) {
        // The model's time for the task under the load it ran beside (the mean of the busy threads over its run), and
        // the mean of log(observed / that) over 8 tasks at the model's time (a prior) and the first 8 tasks of a kind
        // and thread count, then an exponential one of weight 1/16: it settles fast and follows a load that changes.
        // Thread counts not run yet take the nearest run one's (nearest_observed), which is then their prior.
        // The simulator's own tasks thus teach it next to nothing; a real machine teaches it where the model is
        // wrong. Ratios are clamped to [1/4, 4], and the prior keeps one stalled task (a page fault storm, a
        // preempted runner) from swinging it: without it, a stream's first plaintext product, 2.1-4.6x the model on
        // cold memory, set that kind's one-thread estimate and kasoku never ran the kind on one thread again (Zen 5,
        // 2 threads; docs/SCHEDULING.md).
        const Graph& g = j.plan->g;
        const OpKind op = g.nodes()[p.node].op;
        const int busy = std::max(static_cast<int>(std::lround((busy_area_ - p.busy_area) / took)), p.threads);
        const double model = cost_.overhead_ms() +
                             cost_.loaded_task_ms(op, g.task_nq(p.node), g.aligns(p.node), p.threads, busy, p.width) *
                                 cost_.job_factor(p.jobs_in_flight);
        const int k = static_cast<int>(op) - 1, i = p.threads - 1;
        const double r = std::clamp(took / model, 0.25, 4.0);
        constexpr int kPrior = 8;
        const int seen = ++seen_[k][i];
        if (seen == 1) from_[k] = nearest_observed(seen_[k]);  // a width run the first time: who borrows from whom
        log_ratio_[k][i] += (std::log(r) - log_ratio_[k][i]) / std::min(seen + kPrior, 16);
        correction_[k][i] = std::exp(log_ratio_[k][i]);
        for (int n = 0; n < threads_; ++n)  // the widths not run yet that take width i's
            if (n != i && from_[k][n] == i) log_ratio_[k][n] = log_ratio_[k][i], correction_[k][n] = correction_[k][i];
    }
    if (batch_plan_ && p.trace_entry < result.tasks.size()) result.tasks[p.trace_entry].end_ms = now;
    if (!j.aborted)
        for (int s : j.plan->succ[p.node])
            if (--j.pending[s] == 0) make_ready(p.job, s, now);
    if (--j.remaining == 0) {
        --in_system_;
        --in_flight_;
        record(result.finish_ms, p.job, now);
        jobs_.erase(p.job);
    }
}

// Fills the window statistics of r from its per-job times.
void summarise(StreamResult& r, std::pair<int, int> window) {
    const int jobs = static_cast<int>(r.arrival_ms.size());
    r.window_first = window.first == 0 && window.second == 0 ? 1 : window.first;
    r.window_last = window.first == 0 && window.second == 0 ? jobs : window.second;
    const auto lat = r.latencies_ms();
    std::vector<double> s = lat;
    std::sort(s.begin(), s.end());
    auto pct = [&](double q) {  // linear interpolation between closest ranks (NumPy's default)
        const double pos = q * (s.size() - 1);
        const std::size_t lo = static_cast<std::size_t>(std::floor(pos)), hi = std::min(lo + 1, s.size() - 1);
        return s[lo] + (s[hi] - s[lo]) * (pos - lo);
    };
    r.p50_ms = pct(0.50);
    r.p95_ms = pct(0.95);
    r.p99_ms = pct(0.99);
    double sum = 0, last = 0;
    for (int j = r.window_first - 1; j < r.window_last; ++j)
        sum += lat[j - r.window_first + 1], last = std::max(last, r.finish_ms[j]);
    r.mean_ms = sum / lat.size();
    r.makespan_ms = last - r.arrival_ms[r.window_first - 1];
    r.span_ms = *std::max_element(r.finish_ms.begin(), r.finish_ms.end()) - r.arrival_ms.front();
}

std::vector<double> checked_arrivals(const StreamOptions& o) {
    std::vector<double> a = o.arrivals_ms.empty() ? std::vector<double>{0.0} : o.arrivals_ms;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!std::isfinite(a[i]) || a[i] < 0 || (i && a[i] < a[i - 1]))
            throw ParameterError("scheduler: arrival times must be finite, >= 0 and non-decreasing (entry " +
                                 std::to_string(i) + " is " + std::to_string(a[i]) + ")");
    const int jobs = static_cast<int>(a.size());
    const auto [w0, w1] = o.window;
    if (!(w0 == 0 && w1 == 0) && !(1 <= w0 && w0 <= w1 && w1 <= jobs))
        throw ParameterError("scheduler: window (" + std::to_string(w0) + ", " + std::to_string(w1) +
                             ") must satisfy 1 <= first <= last <= jobs = " + std::to_string(jobs) +
                             " (1-based, inclusive)");
    if (o.threads < 1) throw ParameterError("scheduler: threads must be >= 1, got " + std::to_string(o.threads));
    return a;
}

}  // namespace detail

std::vector<double> StreamResult::latencies_ms() const {
    std::vector<double> v;
    for (int j = window_first - 1; j < window_last; ++j) v.push_back(finish_ms[j] - arrival_ms[j]);
    return v;
}

// --- Discrete-event simulation ---
StreamResult simulate(const Graph& g, const CostModel& cost, const StreamOptions& opts, const CostModel* truth) {
    const CostModel& real = truth ? *truth : cost;
    const auto arrivals = detail::checked_arrivals(opts);
    detail::Dispatcher d(g, cost, opts.policy, opts.threads, arrivals.size());
    struct Running {
        detail::Placement p;
        OpKind op;
        int nq;
        bool align;
        double task_ms;  // unloaded ms of the task (without the start-up overhead)
        double work;     // unloaded ms left
    };
    std::vector<Running> running;
    std::size_t next = 0;
    double now = 0;
    while (true) {
        for (const auto& p : d.place(now)) {
            const OpKind op = g.nodes()[p.node].op;
            const int nq = g.task_nq(p.node);
            const bool align = g.aligns(p.node);
            const double ms = real.task_ms(op, nq, align, p.threads);
            running.push_back({p, op, nq, align, ms, real.overhead_ms() + ms});
        }
        if (running.empty() && next == arrivals.size()) break;
        const int busy = d.busy_threads();
        const double width = running.empty() ? 1.0 : double(busy) / running.size();
        std::vector<double> rate(running.size());
        const double job_factor = real.job_factor(d.jobs_in_flight());
        double dt = next < arrivals.size() ? arrivals[next] - now : std::numeric_limits<double>::infinity();
        std::size_t first_done = running.size();
        for (std::size_t i = 0; i < running.size(); ++i) {
            // the task's own mix of curves (its operation, its alignment)
            const Running& r = running[i];
            rate[i] = r.task_ms / (real.loaded_task_ms(r.op, r.nq, r.align, r.p.threads, busy, width) * job_factor);
            const double t = running[i].work / rate[i];
            if (t < dt) dt = t, first_done = i;
        }
        dt = std::max(dt, 0.0);
        now = first_done == running.size() ? arrivals[next] : now + dt;
        for (std::size_t i = 0; i < running.size(); ++i) running[i].work -= dt * rate[i];
        if (first_done < running.size()) running[first_done].work = 0;
        while (next < arrivals.size() && arrivals[next] <= now) d.arrive(static_cast<int>(next++), now);
        for (std::size_t i = 0; i < running.size();) {
            if (running[i].work <= 1e-9) {
                d.finish(running[i].p, now);
                running[i] = running.back();
                running.pop_back();
            } else {
                ++i;
            }
        }
    }
    StreamResult r = std::move(d.result);
    r.corrections = d.corrections();
    for (std::size_t j = 0; j < arrivals.size(); ++j) r.arrival_ms[j] = arrivals[j];
    detail::summarise(r, opts.window);
    return r;
}

}  // namespace kasoku::sched
