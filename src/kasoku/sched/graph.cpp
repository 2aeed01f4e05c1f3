#include "kasoku/sched/graph.hpp"

#include <algorithm>
#include <array>
#include <random>
#include <string>

#include "kasoku/support/error.hpp"

namespace kasoku::sched {

const std::vector<OpInfo>& op_schema() {
    static const std::vector<OpInfo> schema = {
        {OpKind::input, "input", 0, {"name", "level"}},
        {OpKind::multiply, "multiply", 2, {}},
        {OpKind::square, "square", 1, {}},
        {OpKind::multiply_plain, "multiply_plain", 1, {"constant"}},
        {OpKind::add, "add", 2, {}},
        {OpKind::add_plain, "add_plain", 1, {"constant"}},
        {OpKind::rotate, "rotate", 1, {"step"}},
    };
    return schema;
}

const OpInfo& op_info(OpKind op) {
    const auto k = static_cast<std::size_t>(op);
    if (k >= op_schema().size())
        throw ParameterError("task graph: operation kind " + std::to_string(k) + " is none of the " +
                             std::to_string(op_schema().size()) + " kinds (OpKind::input .. OpKind::rotate)");
    return op_schema()[k];
}

const char* op_name(OpKind op) { return op_info(op).name; }

OpKind op_from_name(const std::string& name) {
    std::string all;
    for (const OpInfo& o : op_schema()) {
        if (name == o.name) return o.op;
        all += (all.empty() ? "" : ", ") + std::string(o.name);
    }
    throw ParameterError("unknown operation '" + name + "': expected one of " + all);
}

bool is_key_switching(OpKind op) { return op == OpKind::multiply || op == OpKind::square || op == OpKind::rotate; }
bool is_light(OpKind op) { return op == OpKind::add || op == OpKind::add_plain; }

namespace {

std::size_t arity(OpKind op) { return static_cast<std::size_t>(op_info(op).arity); }

// The level a task computes at: its lowest operand's (the others are dropped to it).
int operand_level(const Node& n, const std::vector<Node>& nodes) {
    int in = nodes[n.inputs[0]].level;
    for (int i : n.inputs) in = std::min(in, nodes[i].level);
    return in;
}

// Level of a node's result from its operands' levels; LevelError when a rescale has no level left.
int result_level(const Node& n, int id, const std::vector<Node>& nodes) {
    const int in = operand_level(n, nodes);
    const bool rescales = n.op == OpKind::multiply || n.op == OpKind::square || n.op == OpKind::multiply_plain;
    if (!rescales) return in;
    if (in < 1)
        throw LevelError("task graph: node " + std::to_string(id) + " (" + op_name(n.op) +
                         ") needs an operand at level >= 1 to rescale, but its operand is at level " +
                         std::to_string(in) + "; start from a higher input level or use fewer multiplications");
    return in - 1;
}

}  // namespace

void Graph::check_id(int id, const char* what) const {
    if (id < 0 || id >= static_cast<int>(nodes_.size()))
        throw ParameterError(std::string("task graph: ") + what + " refers to node " + std::to_string(id) +
                             ", but the graph has nodes 0.." + std::to_string(static_cast<int>(nodes_.size()) - 1));
}

int Graph::add_node(Node n) {
    for (int i : n.inputs) check_id(i, op_name(n.op));
    if (n.op != OpKind::input) n.level = result_level(n, static_cast<int>(nodes_.size()), nodes_);
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size()) - 1;
}

int Graph::input(const std::string& name, int level) {
    if (level < 0)
        throw ParameterError("task graph: input '" + name + "' has level " + std::to_string(level) + ", expected >= 0");
    for (const auto& n : nodes_)
        if (n.op == OpKind::input && n.name == name)
            throw ParameterError("task graph: an input named '" + name + "' exists already; input names must differ");
    Node n;
    n.name = name;
    n.level = level;
    return add_node(std::move(n));
}

namespace {
Node task(OpKind op, std::vector<int> inputs, std::complex<double> c = {}, std::int64_t step = 0) {
    Node n;
    n.op = op;
    n.inputs = std::move(inputs);
    n.constant = c;
    n.step = step;
    return n;
}
}  // namespace

int Graph::multiply(int a, int b) { return add_node(task(OpKind::multiply, {a, b})); }
int Graph::square(int a) { return add_node(task(OpKind::square, {a})); }
int Graph::multiply_plain(int a, std::complex<double> c) { return add_node(task(OpKind::multiply_plain, {a}, c)); }
int Graph::add(int a, int b) { return add_node(task(OpKind::add, {a, b})); }
int Graph::add_plain(int a, std::complex<double> c) { return add_node(task(OpKind::add_plain, {a}, c)); }
int Graph::rotate(int a, std::int64_t step) { return add_node(task(OpKind::rotate, {a}, {}, step)); }

void Graph::output(int a, const std::string& name) {
    check_id(a, "output");
    outputs_.emplace_back(a, name.empty() ? "out" + std::to_string(outputs_.size()) : name);
}

std::vector<std::vector<int>> Graph::successors() const {
    std::vector<std::vector<int>> s(nodes_.size());
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        for (int j : nodes_[i].inputs) s[j].push_back(static_cast<int>(i));
    return s;
}

std::vector<int> Graph::topological_order() const {
    const auto succ = successors();
    std::vector<int> pending(nodes_.size()), order, stack;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        pending[i] = static_cast<int>(nodes_[i].inputs.size());
        if (pending[i] == 0) stack.push_back(static_cast<int>(i));
    }
    while (!stack.empty()) {
        int v = stack.back();
        stack.pop_back();
        order.push_back(v);
        for (int s : succ[v])
            if (--pending[s] == 0) stack.push_back(s);
    }
    if (order.size() != nodes_.size()) {
        auto it = std::find_if(pending.begin(), pending.end(), [](int p) { return p > 0; });
        throw ParameterError("task graph has a cycle (node " + std::to_string(it - pending.begin()) +
                             " depends on itself through its inputs); a task graph must be acyclic");
    }
    return order;
}

Graph Graph::from_nodes(std::vector<Node> nodes, const std::vector<std::pair<int, std::string>>& outputs) {
    Graph g;
    g.nodes_ = std::move(nodes);
    for (std::size_t i = 0; i < g.nodes_.size(); ++i) {
        const Node& n = g.nodes_[i];
        if (n.inputs.size() != arity(n.op))
            throw ParameterError("task graph: node " + std::to_string(i) + " (" + op_name(n.op) + ") has " +
                                 std::to_string(n.inputs.size()) + " operands, expected " +
                                 std::to_string(arity(n.op)));
        for (int j : n.inputs) g.check_id(j, op_name(n.op));
        if (n.op == OpKind::input && n.level < 0)
            throw ParameterError("task graph: input node " + std::to_string(i) + " has a negative level");
        for (std::size_t j = 0; j < i && n.op == OpKind::input; ++j)
            if (g.nodes_[j].op == OpKind::input && g.nodes_[j].name == n.name)
                throw ParameterError("task graph: input nodes " + std::to_string(j) + " and " + std::to_string(i) +
                                     " are both named '" + n.name + "'; input names must differ");
    }
    for (int v : g.topological_order())
        if (g.nodes_[v].op != OpKind::input) g.nodes_[v].level = result_level(g.nodes_[v], v, g.nodes_);
    for (const auto& [id, name] : outputs) g.output(id, name);
    return g;
}

int Graph::task_nq(int id) const {
    check_id(id, "task_nq");
    const Node& n = nodes_[id];
    return (n.op == OpKind::input ? n.level : operand_level(n, nodes_)) + 1;
}

std::vector<std::int64_t> Graph::rotation_steps() const {
    std::vector<std::int64_t> steps;
    for (const Node& n : nodes_)
        if (n.op == OpKind::rotate) steps.push_back(n.step);
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    return steps;
}

bool Graph::aligns(int id) const {
    check_id(id, "aligns");
    const Node& n = nodes_[id];
    for (int i : n.inputs)
        if (nodes_[i].level != nodes_[n.inputs[0]].level) return true;
    return false;
}

namespace {

// pw[k] = x^k for k = 2..top at the least depth: a square when k is a power of two, else x^high * x^(k - high).
void least_depth_powers(Graph& g, std::vector<int>& pw, int top) {
    for (int k = 2; k <= top; ++k) {
        int high = 1;
        while (2 * high <= k) high *= 2;
        pw[k] = (k == high) ? g.square(pw[k / 2]) : g.multiply(pw[high], pw[k - high]);
    }
}

// The balanced sum of terms: pairs of neighbours, level by level.
int balanced_sum(Graph& g, std::vector<int> terms) {
    while (terms.size() > 1) {
        std::vector<int> next;
        for (std::size_t i = 0; i + 1 < terms.size(); i += 2) next.push_back(g.add(terms[i], terms[i + 1]));
        if (terms.size() % 2) next.push_back(terms.back());
        terms = std::move(next);
    }
    return terms[0];
}

}  // namespace

Graph maclaurin_exp(int order, int level) {
    if (order < 1) throw ParameterError("maclaurin_exp: order must be >= 1, got " + std::to_string(order));
    Graph g;
    const int x = g.input("x", level);
    // The coefficients first, on x at the top level: c_k = x / k! for k = 2..order.
    std::vector<int> coef(order + 1, -1), pw(order + 1, -1);
    double factorial = 1;
    for (int k = 2; k <= order; ++k) coef[k] = g.multiply_plain(x, 1.0 / (factorial *= k));
    // The powers x^2..x^(order-1), then the terms t_k = c_k * x^(k-1) = x^k / k!, summed with 1 + x.
    pw[1] = x;
    least_depth_powers(g, pw, order - 1);
    std::vector<int> terms{g.add_plain(x, 1.0)};
    for (int k = 2; k <= order; ++k) terms.push_back(g.multiply(coef[k], pw[k - 1]));
    g.output(balanced_sum(g, std::move(terms)), "exp");
    return g;
}

Graph bsgs_polynomial(int degree, int level) {
    if (degree < 2) throw ParameterError("bsgs_polynomial: degree must be >= 2, got " + std::to_string(degree));
    int k = 1;  // baby steps: the smallest power of two above sqrt((degree + 1) / 2)
    while (k * k * 2 <= degree + 1) k *= 2;
    Graph g;
    const int x = g.input("x", level);
    std::vector<int> pw(k + 1, -1);
    pw[1] = x;
    least_depth_powers(g, pw, k);
    const int blocks = degree / k + 1;
    std::vector<int> giant{pw[k]};  // x^k, x^2k, x^4k, ...: one per pairing round
    while ((std::size_t(1) << giant.size()) < std::size_t(blocks)) giant.push_back(g.square(giant.back()));
    // Block b: c_bk + sum_i c_(bk+i) x^i (coefficients 1 / (index + 1): any nonzero value gives the same tasks). The
    // top block may be the constant alone (-1 here): its product with a giant power is a plaintext product.
    std::vector<int> parts;
    for (int b = 0; b < blocks; ++b) {
        std::vector<int> terms;
        for (int i = 1; i < k && b * k + i <= degree; ++i)
            terms.push_back(g.multiply_plain(pw[i], 1.0 / (b * k + i + 1)));
        parts.push_back(terms.empty() ? -1 : g.add_plain(balanced_sum(g, std::move(terms)), 1.0 / (b * k + 1)));
    }
    // Pairwise: q_j = p_2j + p_(2j+1) * x^(k 2^round), until one is left.
    for (std::size_t round = 0; parts.size() > 1; ++round) {
        std::vector<int> next;
        for (std::size_t j = 0; j + 1 < parts.size(); j += 2) {
            const int high = parts[j + 1] < 0 ? g.multiply_plain(giant[round], 1.0 / (degree + 1))
                                              : g.multiply(parts[j + 1], giant[round]);
            next.push_back(g.add(parts[j], high));
        }
        if (parts.size() % 2) next.push_back(parts.back());
        parts = std::move(next);
    }
    g.output(parts[0], "poly");
    return g;
}

Graph matmul_like(int d, int level) {
    if (d < 2) throw ParameterError("matmul_like: d must be >= 2, got " + std::to_string(d));
    Graph g;
    const int a = g.input("A", level), b = g.input("B", level);
    // sigma(A): the 2d - 1 diagonals of the permutation, rotations times plaintext masks, summed.
    std::vector<int> sigma_terms, tau_terms;
    for (int i = -(d - 1); i < d; ++i) sigma_terms.push_back(g.multiply_plain(i ? g.rotate(a, i) : a, 1.0));
    const int sigma = balanced_sum(g, std::move(sigma_terms));
    for (int i = 0; i < d; ++i) tau_terms.push_back(g.multiply_plain(i ? g.rotate(b, std::int64_t(i) * d) : b, 1.0));
    const int tau = balanced_sum(g, std::move(tau_terms));
    // Shifts of both, one product per k, and the sum.
    std::vector<int> products{g.multiply(sigma, tau)};
    for (int k = 1; k < d; ++k) {
        const int ak = g.rotate(sigma, k);
        const int bk = g.add(g.multiply_plain(g.rotate(tau, std::int64_t(k) * d), 1.0),
                             g.multiply_plain(g.rotate(tau, std::int64_t(k) * d - std::int64_t(d) * d), 1.0));
        products.push_back(g.multiply(ak, bk));
    }
    g.output(balanced_sum(g, std::move(products)), "AB");
    return g;
}

Graph random_dag(int tasks, std::uint64_t seed, int level) {
    if (tasks < 1) throw ParameterError("random_dag: tasks must be >= 1, got " + std::to_string(tasks));
    if (level < 1) throw ParameterError("random_dag: level must be >= 1, got " + std::to_string(level));
    Graph g;
    g.input("x", level);
    g.input("y", level);
    std::vector<bool> used(2, false);  // whether a task uses a node's result
    std::mt19937_64 rng(seed);
    auto uniform = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    // kinds by weight: multiply 30, square 10, multiply_plain 15, add 20, add_plain 5, rotate 20
    constexpr std::array<std::pair<OpKind, int>, 6> kWeights{{{OpKind::multiply, 30},
                                                              {OpKind::square, 10},
                                                              {OpKind::multiply_plain, 15},
                                                              {OpKind::add, 20},
                                                              {OpKind::add_plain, 5},
                                                              {OpKind::rotate, 20}}};
    auto pick = [&](bool rescales) {  // among the 8 newest nodes, those with a level left when the task rescales
        std::vector<int> c;
        for (int v = static_cast<int>(g.size()) - 1; v >= 0 && c.size() < 8; --v)
            if (!rescales || g.nodes()[v].level >= 1) c.push_back(v);
        return c.empty() ? -1 : c[uniform(c.size())];
    };
    for (int t = 0; t < tasks; ++t) {
        int w = static_cast<int>(rng() % 100);
        OpKind op = OpKind::add;
        for (const auto& [kind, weight] : kWeights)
            if ((w -= weight) < 0) {
                op = kind;
                break;
            }
        const bool rescales = op == OpKind::multiply || op == OpKind::square || op == OpKind::multiply_plain;
        const int a = pick(rescales), b = pick(rescales);
        if (a < 0) op = OpKind::rotate;  // nothing has a level left to rescale: a rotation instead
        const int u = a < 0 ? pick(false) : a, v = b < 0 ? pick(false) : b;
        int id = 0;
        switch (op) {
            case OpKind::multiply: id = g.multiply(u, v); break;
            case OpKind::square: id = g.square(u); break;
            case OpKind::multiply_plain: id = g.multiply_plain(u, 0.5); break;
            case OpKind::add: id = g.add(u, v); break;
            case OpKind::add_plain: id = g.add_plain(u, 0.5); break;
            default: id = g.rotate(u, 1 + static_cast<std::int64_t>(uniform(16))); break;
        }
        used.resize(g.size(), false);
        for (int in : g.nodes()[id].inputs) used[in] = true;
    }
    std::vector<int> sinks;
    for (std::size_t v = 0; v < g.size(); ++v)
        if (!used[v] && g.nodes()[v].op != OpKind::input) sinks.push_back(static_cast<int>(v));
    g.output(balanced_sum(g, std::move(sinks)), "out");
    return g;
}

}  // namespace kasoku::sched
