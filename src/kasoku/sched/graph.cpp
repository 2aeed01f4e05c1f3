#include "kasoku/sched/graph.hpp"

#include <algorithm>
#include <string>

#include "kasoku/support/error.hpp"

namespace kasoku::sched {

namespace {
constexpr const char* kNames[] = {"input", "multiply", "square", "multiply_plain", "add", "add_plain", "rotate"};
}

const char* op_name(OpKind op) { return kNames[static_cast<int>(op)]; }

OpKind op_from_name(const std::string& name) {
    for (int i = 0; i <= kTaskKinds; ++i)
        if (name == kNames[i]) return static_cast<OpKind>(i);
    throw ParameterError("unknown operation '" + name +
                         "': expected one of input, multiply, square, multiply_plain, add, add_plain, rotate");
}

bool is_key_switching(OpKind op) { return op == OpKind::multiply || op == OpKind::square || op == OpKind::rotate; }
bool is_light(OpKind op) { return op == OpKind::add || op == OpKind::add_plain; }

namespace {

std::size_t arity(OpKind op) {
    switch (op) {
        case OpKind::input: return 0;
        case OpKind::multiply:
        case OpKind::add: return 2;
        default: return 1;
    }
}

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
    if (level < 0) throw ParameterError("task graph: input '" + name + "' has level " + std::to_string(level) + ", expected >= 0");
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

Graph Graph::from_nodes(std::vector<Node> nodes, std::vector<std::pair<int, std::string>> outputs) {
    Graph g;
    g.nodes_ = std::move(nodes);
    for (std::size_t i = 0; i < g.nodes_.size(); ++i) {
        const Node& n = g.nodes_[i];
        if (n.inputs.size() != arity(n.op))
            throw ParameterError("task graph: node " + std::to_string(i) + " (" + op_name(n.op) + ") has " +
                                 std::to_string(n.inputs.size()) + " operands, expected " + std::to_string(arity(n.op)));
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
    for (auto& [id, name] : outputs) g.output(id, name);
    return g;
}

int Graph::task_nq(int id) const {
    check_id(id, "task_nq");
    const Node& n = nodes_[id];
    return (n.op == OpKind::input ? n.level : operand_level(n, nodes_)) + 1;
}

bool Graph::aligns(int id) const {
    check_id(id, "aligns");
    const Node& n = nodes_[id];
    for (int i : n.inputs)
        if (nodes_[i].level != nodes_[n.inputs[0]].level) return true;
    return false;
}

Graph maclaurin_exp(int order, int level) {
    if (order < 1) throw ParameterError("maclaurin_exp: order must be >= 1, got " + std::to_string(order));
    Graph g;
    const int x = g.input("x", level);
    // The coefficients first, on x at the top level: c_k = x / k! for k = 2..order.
    std::vector<int> coef(order + 1, -1), pw(order + 1, -1);
    double factorial = 1;
    for (int k = 2; k <= order; ++k) coef[k] = g.multiply_plain(x, 1.0 / (factorial *= k));
    // The powers x^2..x^(order-1) at the least depth (a square when k is a power of two, else x^high * x^(k-high)),
    // then the terms t_k = c_k * x^(k-1) = x^k / k!.
    pw[1] = x;
    for (int k = 2; k < order; ++k) {
        int high = 1;
        while (2 * high <= k) high *= 2;
        pw[k] = (k == high) ? g.square(pw[k / 2]) : g.multiply(pw[high], pw[k - high]);
    }
    std::vector<int> terms{g.add_plain(x, 1.0)};
    for (int k = 2; k <= order; ++k) terms.push_back(g.multiply(coef[k], pw[k - 1]));
    while (terms.size() > 1) {  // balanced sum: pairs of neighbours
        std::vector<int> next;
        for (std::size_t i = 0; i + 1 < terms.size(); i += 2) next.push_back(g.add(terms[i], terms[i + 1]));
        if (terms.size() % 2) next.push_back(terms.back());
        terms = std::move(next);
    }
    g.output(terms[0], "exp");
    return g;
}

}  // namespace kasoku::sched
