// kasoku._kasoku.sched: task graphs, cost models and the two executors (python/kasoku/sched.py wraps them).
#include <nanobind/nanobind.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <mutex>

#include "bindings_internal.hpp"
#include "kasoku/sched/executor.hpp"
#include "kasoku/sched/scheduler.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/threads.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kasoku;
using namespace kasoku::sched;

namespace kasoku_py {

namespace {

StreamOptions options(int threads, const std::string& policy, std::optional<std::vector<double>> arrivals,
                      std::optional<std::pair<int, int>> window) {
    StreamOptions o;
    o.threads = resolve_threads(threads);
    o.policy = policy_from_name(policy);
    if (arrivals) o.arrivals_ms = std::move(*arrivals);
    if (window) o.window = *window;
    return o;
}

// A node as a dict: "op", "inputs", the computed "level", and the operation's own fields (op_schema).
nb::dict node_dict(const Node& n) {
    nb::dict d;
    d["op"] = op_name(n.op);
    d["inputs"] = n.inputs;
    d["level"] = n.level;
    for (const std::string f : op_info(n.op).fields) {
        if (f == "constant") d["constant"] = n.constant;
        else if (f == "step") d["step"] = n.step;
        else if (f == "name") d["name"] = n.name;
    }
    return d;
}

Node node_from(nb::handle h) {
    nb::dict d = nb::cast<nb::dict>(h);
    Node n;
    if (!d.contains("op")) throw ParameterError("task graph: every node needs an 'op'");
    n.op = op_from_name(nb::cast<std::string>(d["op"]));
    if (d.contains("inputs")) n.inputs = nb::cast<std::vector<int>>(d["inputs"]);
    if (d.contains("level")) n.level = nb::cast<int>(d["level"]);
    if (d.contains("constant")) n.constant = nb::cast<std::complex<double>>(d["constant"]);
    if (d.contains("step")) n.step = nb::cast<std::int64_t>(d["step"]);
    if (d.contains("name")) n.name = nb::cast<std::string>(d["name"]);
    return n;
}

// A job's inputs from the Python side: none is None, all of the evaluator's context.
std::map<std::string, ckks::Ciphertext> job_inputs(const KEvaluator& ev,
                                                   const std::map<std::string, const KCiphertext*>& inputs) {
    std::map<std::string, ckks::Ciphertext> in;
    for (const auto& [name, ct] : inputs) {
        if (!ct) throw ParameterError("scheduler: input '" + name + "' is None");
        if (ct->owner->ctx->uid() != ev.owner->ctx->uid())
            throw ParameterError("scheduler: input '" + name + "' belongs to another context than the evaluator");
        in.emplace(name, ct->ct);
    }
    return in;
}

// The online executor and the owners (contexts) of its jobs' evaluators, held until the job is collected.
struct PyExecutor {
    PyExecutor(const CostModel& c, int threads, const std::string& policy)
        : ex(c, resolve_threads(threads), policy_from_name(policy)) {}
    Executor ex;
    std::mutex m;
    std::map<std::uint64_t, OwnerPtr> owners;
};

}  // namespace

void bind_sched(nb::module_& parent) {
    nb::module_ m = parent.def_submodule(
        "sched", "Task graphs of HE operations, cost models and the scheduler (Suzuki, Ishimaki and Yamana).");

    nb::class_<Graph>(m, "Graph", "A DAG of fused HE tasks on ciphertexts of known levels; builders return node ids.")
        .def(nb::init<>())
        .def("input", &Graph::input, "name"_a, "level"_a, "An input ciphertext at `level`.")
        .def("multiply", &Graph::multiply, "a"_a, "b"_a,
             "Multiply + relinearise + rescale (the higher operand is dropped first).")
        .def("square", &Graph::square, "a"_a, "Square + relinearise + rescale.")
        .def("multiply_plain", &Graph::multiply_plain, "a"_a, "c"_a, "Product with a constant + rescale.")
        .def("add", &Graph::add, "a"_a, "b"_a, "Sum of two nodes (the higher operand is dropped first).")
        .def("add_plain", &Graph::add_plain, "a"_a, "c"_a, "Sum with a constant.")
        .def("rotate", &Graph::rotate, "a"_a, "step"_a, "Left rotation by `step` slots (a key switch).")
        .def("output", &Graph::output, "a"_a, "name"_a = "",
             "Marks a node as an output, under `name` (default: out<i>); its value is kept to the end.")
        .def("task_nq", &Graph::task_nq, "node"_a, "Primes of the ciphertexts the task computes on (level + 1).")
        .def("aligns", &Graph::aligns, "node"_a,
             "Whether the task's operands are at different levels (it brings the higher one down first).")
        .def("topological_order", &Graph::topological_order, "Node ids, every node after its operands.")
        .def("rotation_steps", &Graph::rotation_steps,
             "The distinct steps of the graph's rotations, ascending: keygen(rotations=g.rotation_steps()) makes "
             "the Galois keys it needs to run.")
        .def("__len__", &Graph::size)
        .def_prop_ro(
            "nodes",
            [](const Graph& g) {
                nb::list l;
                for (const auto& n : g.nodes()) l.append(node_dict(n));
                return l;
            },
            "The nodes as dicts: op, inputs, level (of the result), and constant / step / name where they apply.")
        .def_prop_ro("outputs", [](const Graph& g) { return g.outputs(); })
        .def_static(
            "from_nodes",
            [](nb::list nodes, std::vector<std::pair<int, std::string>> outputs) {
                std::vector<Node> v;
                for (auto h : nodes) v.push_back(node_from(h));
                return Graph::from_nodes(std::move(v), std::move(outputs));
            },
            "nodes"_a, "outputs"_a = std::vector<std::pair<int, std::string>>{},
            "A graph from node dicts (as .nodes gives them); operands may point anywhere. Raises ParameterError on a "
            "cycle and LevelError on a level underflow.");
    m.def(
        "op_schema",
        [] {
            nb::dict out;
            for (const OpInfo& o : op_schema()) {
                nb::dict d;
                d["arity"] = o.arity;
                nb::list fields;
                for (const char* f : o.fields) fields.append(f);
                d["fields"] = fields;
                out[o.name] = d;
            }
            return out;
        },
        "The task graph's schema, as the library defines it once: operation name -> {'arity': operands, 'fields': the "
        "node's own fields beyond 'op', 'inputs' and 'level' ('name' and 'level' for an input, 'constant', 'step')}, "
        "in the order of the operations. The service's checks (kasoku.service.wire) and ks.Client's job bodies use "
        "it.");
    m.def("maclaurin_exp", &maclaurin_exp, "order"_a = 6, "level"_a = 7,
          "e^x by its Maclaurin series to x^order: the source's workload (its Fig. 3 for order 6).");
    m.def("bsgs_polynomial", &bsgs_polynomial, "degree"_a = 31, "level"_a = 7,
          "A polynomial of that degree by baby-step giant-step (Paterson-Stockmeyer): input 'x', output 'poly'.");
    m.def("matmul_like", &matmul_like, "d"_a = 4, "level"_a = 7,
          "The tasks of one encrypted d x d matrix product (Jiang et al.): inputs 'A', 'B', output 'AB'.");
    m.def("random_dag", &random_dag, "tasks"_a = 24, "seed"_a = 1, "level"_a = 7,
          "A seeded random DAG of fused tasks over inputs 'x' and 'y', its dangling results summed into 'out'.");

    nb::class_<CostModel>(m, "CostModel", "T(op, nq, threads) of one task, a load factor and a start-up overhead.")
        .def_ro_static("DEFAULT_REPS", &CostModel::kDefaultReps, "measure's rounds unless told.")
        .def_static("from_paper", &CostModel::from_paper,
                    "The source's Xeon Phi 7230F tables (Suzuki, Ishimaki and Yamana Tables 1-5).")
        .def_static(
            "measure",
            [](const ckks::Parameters& p, int max_threads, int reps, const std::optional<nb::callable>& progress,
               const std::vector<Graph>& mix) {
                std::function<void(int, int)>
                    cb;  // the callable is the caller's: no reference counting without the GIL
                if (progress)
                    cb = [&f = *progress](int d, int t) {
                        nb::gil_scoped_acquire g;
                        f(d, t);
                    };
                return CostModel::measure(p, max_threads, reps, cb, mix);
            },
            "params"_a, "max_threads"_a = 0, "reps"_a = CostModel::kDefaultReps, "progress"_a.none() = nb::none(),
            "mix"_a = std::vector<Graph>{},
            "Times every task kind on this machine (nq = 2..levels+1, threads 1..max_threads; 0 = all cores), and "
            "each kind under contention: on a team of w threads while other teams of w threads run the tasks of the "
            "graphs in `mix` (the stream's operation mix; empty: every kind in turn), up to max_threads busy.",
            ReleaseGil())
        .def_static("from_json", &CostModel::from_json, "text"_a, "A cost model from to_json's text.")
        .def_static(
            "from_dict",
            [](nb::dict d) {
                return CostModel::from_json(nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(d)));
            },
            "d"_a, "A model from a dict in the file format of save() (tables per operation, load tables).")
        .def(
            "to_dict", [](const CostModel& c) { return nb::module_::import_("json").attr("loads")(c.to_json()); },
            "The model as a dict (to_json parsed).")
        .def_static("load", &CostModel::load, "path"_a, "A cost model from a file save wrote.")
        .def("to_json", &CostModel::to_json, "The model as JSON text (its tables, machine and name).")
        .def("save", &CostModel::save, "path"_a, "Writes to_json to a file (load reads it back).")
        .def(
            "time_ms",
            [](const CostModel& c, const std::string& op, int nq, int threads) {
                return c.time_ms(op_from_name(op), nq, threads);
            },
            "op"_a, "nq"_a, "threads"_a = 1, "Unloaded ms of one task.")
        .def(
            "align_ms", &CostModel::align_ms, "nq"_a, "threads"_a = 1,
            "Unloaded ms of bringing a task's higher operand down to its nq (0 when the model has no alignment table).")
        .def(
            "load_factor",
            [](const CostModel& c, const std::string& op, int busy, double width, int nq) {
                return c.load_factor(op_from_name(op), busy, width, nq);
            },
            "op"_a, "busy_threads"_a, "mean_width"_a = 1.0, "nq"_a = 0,
            "How much slower a task of kind `op` at `nq` primes runs with `busy_threads` threads busy, tasks "
            "`mean_width` threads wide on average (1: unloaded). A measured model has load tables at three levels "
            "(\"load_levels\" in its file), interpolated in nq; nq = 0 takes the top level's.")
        .def_prop_ro("name", &CostModel::name)
        .def_prop_ro("machine", &CostModel::machine)
        .def_prop_ro("hardware_threads", &CostModel::hardware_threads)
        .def_prop_ro("overhead_ms", &CostModel::overhead_ms)
        .def_prop_ro("job_slowdown", &CostModel::job_slowdown)
        .def("scaled", &CostModel::scaled, "f"_a,
             "The same model with every time (tasks, alignment, overhead) times f: a machine that much slower, or a "
             "model that far off (simulate's truth=).")
        .def("with_job_slowdown", &CostModel::with_job_slowdown, "s"_a,
             "A copy where every task also slows by 1 + s * (jobs in flight): a what-if beyond the source's tables.")
        .def_prop_ro("nq_min", &CostModel::nq_min)
        .def_prop_ro("nq_max", &CostModel::nq_max);

    m.def("poisson_arrivals", &poisson_arrivals, "mean_ms"_a, "jobs"_a, "seed"_a = 1);
    m.def("policies", [] {
        std::vector<std::string> v;
        for (Policy p : all_policies()) v.push_back(policy_name(p));
        return v;
    });

    nb::class_<TaskRecord>(m, "TaskRecord",
                           "One task of a stream as it ran (ms from the stream's start): when its "
                           "operands were ready, its start and end, its threads and the dispatcher's "
                           "expected duration for it there.")
        .def_ro("job", &TaskRecord::job)
        .def_ro("node", &TaskRecord::node)
        .def_prop_ro("op", [](const TaskRecord& t) { return std::string(op_name(t.op)); })
        .def_ro("nq", &TaskRecord::nq)
        .def_ro("threads", &TaskRecord::threads)
        .def_ro("ready_ms", &TaskRecord::ready_ms)
        .def_ro("start_ms", &TaskRecord::start_ms)
        .def_ro("end_ms", &TaskRecord::end_ms)
        .def_ro("expected_ms", &TaskRecord::expected_ms);

    nb::class_<StreamResult>(m, "StreamResult")
        .def_ro("arrival_ms", &StreamResult::arrival_ms)
        .def_ro("start_ms", &StreamResult::start_ms)
        .def_ro("finish_ms", &StreamResult::finish_ms)
        .def_ro("window_first", &StreamResult::window_first)
        .def_ro("window_last", &StreamResult::window_last)
        .def_ro("makespan_ms", &StreamResult::makespan_ms)
        .def_ro("p50_ms", &StreamResult::p50_ms)
        .def_ro("p95_ms", &StreamResult::p95_ms)
        .def_ro("p99_ms", &StreamResult::p99_ms)
        .def_ro("mean_ms", &StreamResult::mean_ms)
        .def_ro("busy_thread_ms", &StreamResult::busy_thread_ms)
        .def_ro("span_ms", &StreamResult::span_ms)
        .def_ro("threads_used", &StreamResult::threads_used)
        .def_ro("tasks", &StreamResult::tasks, "every task, in start order (the stream's trace)")
        .def_prop_ro(
            "corrections",
            [](const StreamResult& r) {
                nb::list l;
                for (const auto& c : r.corrections) {
                    nb::dict d;
                    d["op"] = op_name(c.op);
                    d["threads"] = c.threads;
                    d["tasks"] = c.tasks;
                    d["factor"] = c.factor;
                    l.append(d);
                }
                return l;
            },
            "what the dispatcher learnt: per task kind and thread count, the ratio of observed to estimated task "
            "times (the kasoku policy's correction) and the tasks it was learnt from")
        .def("latencies_ms", &StreamResult::latencies_ms);

    m.def(
        "simulate",
        [](const Graph& g, const CostModel& c, int threads, const std::string& policy,
           std::optional<std::vector<double>> arrivals, std::optional<std::pair<int, int>> window,
           const CostModel* truth) {
            return simulate(g, c, options(threads, policy, std::move(arrivals), window), truth);
        },
        "graph"_a, "cost"_a, "threads"_a, "policy"_a, "arrivals"_a.none() = nb::none(), "window"_a.none() = nb::none(),
        "truth"_a.none() = nb::none(), ReleaseGil());

    m.def(
        "run",
        [](const Graph& g, const KEvaluator& ev, const std::map<std::string, const KCiphertext*>& inputs,
           const CostModel& c, int threads, const std::string& policy, std::optional<std::vector<double>> arrivals,
           std::optional<std::pair<int, int>> window, int keep_outputs) {
            const auto in = job_inputs(ev, inputs);
            RunResult res = run(g, *ev.ev, in, c, options(threads, policy, std::move(arrivals), window), keep_outputs);
            std::vector<std::map<std::string, KCiphertext>> outs;
            for (auto& job : res.outputs) {
                auto& d = outs.emplace_back();
                for (auto& [name, ct] : job) d.emplace(name, KCiphertext{ev.owner, std::move(ct)});
            }
            return std::make_pair(std::move(res.stream), std::move(outs));
        },
        "graph"_a, "evaluator"_a, "inputs"_a, "cost"_a, "threads"_a, "policy"_a, "arrivals"_a.none() = nb::none(),
        "window"_a.none() = nb::none(), "keep_outputs"_a = 1, ReleaseGil());

    m.def(
        "check_job",
        [](const Graph& g, const KEvaluator& ev, const std::map<std::string, const KCiphertext*>& inputs) {
            const auto in = job_inputs(ev, inputs);
            check_job(g, *ev.ev, in);
        },
        "graph"_a, "evaluator"_a, "inputs"_a,
        "Checks a job as run and Executor.submit do before it starts (inputs by name and level, keys): raises "
        "ParameterError, LevelError or MissingKeyError.",
        ReleaseGil());

    nb::class_<PyExecutor>(
        m, "Executor",
        "The online executor: jobs of any graph, each with its evaluator and inputs, join at any time and run on "
        "`threads` threads under the policy (the scheduler of Suzuki, Ishimaki and Yamana for a server).")
        .def(nb::init<const CostModel&, int, const std::string&>(), "cost"_a, "threads"_a = 0, "policy"_a = "kasoku",
             "threads: 0 = all cores.")
        .def(
            "submit",
            [](PyExecutor& self, const Graph& g, const KEvaluator& ev,
               const std::map<std::string, const KCiphertext*>& inputs) {
                const auto in = job_inputs(ev, inputs);
                std::lock_guard lk(self.m);  // the owner is recorded before the job can be collected
                const auto id = self.ex.submit(g, ev.ev, in);
                self.owners.emplace(id, ev.owner);
                return id;
            },
            "graph"_a, "evaluator"_a, "inputs"_a,
            "Checks the job (inputs by name and level, keys) and queues it; returns its id. Raises ParameterError, "
            "LevelError or MissingKeyError for a job that cannot run.",
            ReleaseGil())
        .def(
            "collect",
            [](PyExecutor& self, double timeout_s, std::size_t max) {
                std::vector<Executor::Finished> done;
                {
                    nb::gil_scoped_release r;
                    done = self.ex.collect(timeout_s * 1000.0, max);
                }
                nb::list out;
                std::lock_guard lk(self.m);
                for (auto& f : done) {
                    auto it = self.owners.find(f.id);
                    OwnerPtr owner = it->second;
                    self.owners.erase(it);
                    nb::dict d;
                    d["id"] = f.id;
                    if (f.error.empty()) {
                        nb::dict o;
                        for (auto& [name, ct] : f.outputs)
                            o[nb::str(name.c_str())] = nb::cast(KCiphertext{owner, std::move(ct)});
                        d["outputs"] = o;
                        d["error"] = nb::none();
                    } else {
                        d["outputs"] = nb::none();
                        d["error"] = f.error;
                    }
                    d["queued_ms"] = f.queued_ms;
                    d["run_ms"] = f.run_ms;
                    out.append(d);
                }
                return out;
            },
            "timeout_s"_a = 0.0, "max"_a = static_cast<std::size_t>(-1),
            "The jobs finished since the last call, as dicts: id, outputs (name -> Ciphertext; None on error), error "
            "(None or the task's message), queued_ms, run_ms. Waits up to timeout_s for the first one.")
        .def_prop_ro("jobs_in_system", [](const PyExecutor& s) { return s.ex.jobs_in_system(); })
        .def_prop_ro("busy_threads", [](const PyExecutor& s) { return s.ex.busy_threads(); })
        .def_prop_ro("threads", [](const PyExecutor& s) { return s.ex.threads(); })
        .def(
            "close", [](PyExecutor& s) { s.ex.close(); },
            "Stops taking jobs, drops the queued ones, waits for the "
            "running tasks.",
            ReleaseGil());

    m.def(
        "decide_threads",
        [](const std::string& policy, const CostModel& c, int total_threads, int busy_threads, const std::string& op,
           int nq, std::vector<std::pair<std::string, int>> others, int running_tasks, int jobs_in_system,
           std::vector<std::pair<double, int>> releases) {
            std::vector<ReadyTask> rest;
            for (const auto& [o, q] : others) rest.push_back({0, 0, op_from_name(o), q, 0});
            ReadyTask head{0, 0, op_from_name(op), nq, 0};
            SchedulerView v = make_view(total_threads, busy_threads, running_tasks, head, rest, c);
            v.jobs_in_system = jobs_in_system;
            v.releases = std::move(releases);
            return decide_threads(policy_from_name(policy), v);
        },
        "policy"_a, "cost"_a, "total_threads"_a, "busy_threads"_a, "op"_a, "nq"_a,
        "others"_a = std::vector<std::pair<std::string, int>>{}, "running_tasks"_a = 0, "jobs_in_system"_a = 0,
        "releases"_a = std::vector<std::pair<double, int>>{},
        "The threads a policy gives a head task (0: wait) in a constructed state; others = [(op, nq), ...].");
}

}  // namespace kasoku_py
