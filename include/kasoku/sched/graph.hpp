// Task graphs of HE operations (Suzuki, Ishimaki and Yamana, docs/DESIGN.md §3.2). A node is one fused task on
// ciphertexts of known levels:
// multiply / square (tensor + relinearise + rescale), multiply_plain (by a constant, then rescale), add, add_plain,
// rotate. Level alignment (ModDrop) and copies are folded into the task that needs them, as in the source.
// Errors: ParameterError for an unknown operation name, a node id that does not exist, a negative input level, two
// inputs of one name, a cycle, or maclaurin_exp's order < 1; LevelError when an operand has no level left.
#pragma once
#include <complex>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kasoku::sched {

enum class OpKind { input, multiply, square, multiply_plain, add, add_plain, rotate };
inline constexpr int kTaskKinds = 6;  // every kind but input
// The graph's schema, written once: each operation's name, operand count and own fields of a node (beyond "op",
// "inputs" and the computed "level": "name" and "level" for an input, "constant", "step"). The Python binding's node
// dicts, ks.sched.op_schema() and from it the service's wire checks and ks.Client's job bodies are made from it.
struct OpInfo {
    OpKind op;
    const char* name;
    int arity;
    std::vector<const char*> fields;
};
const std::vector<OpInfo>& op_schema();  // in OpKind order
// @throws ParameterError for a value outside OpKind's (a cast integer)
const OpInfo& op_info(OpKind op);
// @throws ParameterError as op_info
const char* op_name(OpKind op);
// @throws ParameterError for a name that is no operation's (the message names the kinds)
OpKind op_from_name(const std::string& name);
// multiply, square and rotate switch keys (the heavy tasks of the source).
bool is_key_switching(OpKind op);
// add and add_plain: the tasks that always run on one thread.
bool is_light(OpKind op);

struct Node {
    OpKind op = OpKind::input;
    std::vector<int> inputs;          // node ids
    int level = 0;                    // level of the result
    std::complex<double> constant{};  // multiply_plain, add_plain
    std::int64_t step = 0;            // rotate
    std::string name;                 // input
};

class Graph {
public:
    // Builders: each returns the new node's id. Operands are ids returned earlier; levels are checked here.
    // @throws ParameterError for a negative level or a name that another input has
    int input(const std::string& name, int level);
    // The operand at the higher level is dropped first; multiply, square and multiply_plain rescale.
    // @throws ParameterError for an operand id that is not a node of the graph
    // @throws LevelError if the (lower) operand has no level left to rescale
    int multiply(int a, int b);
    // @throws ParameterError for an operand id that is not a node of the graph
    // @throws LevelError if the operand has no level left to rescale
    int square(int a);
    // @throws ParameterError for an operand id that is not a node of the graph
    // @throws LevelError if the operand has no level left to rescale
    int multiply_plain(int a, std::complex<double> c);
    // @throws ParameterError for an operand id that is not a node of the graph
    int add(int a, int b);
    // @throws ParameterError for an operand id that is not a node of the graph
    int add_plain(int a, std::complex<double> c);
    // @throws ParameterError for an operand id that is not a node of the graph
    int rotate(int a, std::int64_t step);
    // Names node a an output (empty name: "out" and its index among the outputs).
    // @throws ParameterError for an id that is not a node of the graph
    void output(int a, const std::string& name = "");

    // A graph from a node list whose inputs may point anywhere (e.g. read from a file). Levels of non-input nodes
    // are recomputed.
    // @throws ParameterError for a node with the wrong number of operands or an operand id that is no node, an input
    //     of negative level, two inputs of one name, an output id that is no node, or a cycle (naming a node on it)
    // @throws LevelError if a node that rescales has no level left
    static Graph from_nodes(std::vector<Node> nodes, const std::vector<std::pair<int, std::string>>& outputs);

    const std::vector<Node>& nodes() const { return nodes_; }
    const std::vector<std::pair<int, std::string>>& outputs() const { return outputs_; }
    std::size_t size() const { return nodes_.size(); }
    // Primes of the ciphertexts a task computes on (the source's n_q): the level of its (aligned) operands + 1.
    // @throws ParameterError for an id that is not a node of the graph
    int task_nq(int id) const;
    // Whether a task's operands are at different levels, so that it first brings the higher one down to the lower
    // (with canonical scales: a constant product and a rescale, priced by CostModel::align_ms).
    // @throws ParameterError for an id that is not a node of the graph
    bool aligns(int id) const;
    // Successor lists and a topological order (inputs first).
    std::vector<std::vector<int>> successors() const;
    std::vector<int> topological_order() const;
    // The distinct steps of its rotations, ascending: what keygen(rotations=...) needs for the graph to run.
    std::vector<std::int64_t> rotation_steps() const;

private:
    int add_node(Node n);
    void check_id(int id, const char* what) const;
    std::vector<Node> nodes_;
    std::vector<std::pair<int, std::string>> outputs_;
};

// e^x by its Maclaurin series to x^order, the source's workload (§7.1, Fig. 3 for order 6): the coefficients
// c_k = x / k! first (plaintext products at the top level), the powers x^2..x^(order-1) at the least depth, the terms
// c_k * x^(k-1), and their balanced sum with 1 + x. Order 6: 20 tasks (5 plaintext products, 9 products, 6
// additions), 4.7 s on one thread and a 1.6 s critical path by the source's Table 1-3 times, as its §7.1 reports
// (4 s and 2 s). The input is named "x", the output "exp".
// @throws ParameterError for order < 1 or a negative level
// @throws LevelError if `level` is too low for the depth
Graph maclaurin_exp(int order = 6, int level = 7);

// Workloads beyond the source's, for checking a policy on graphs it was not tuned on (docs/SCHEDULING.md).
// A polynomial of `degree` in the power basis by baby-step giant-step (Paterson-Stockmeyer): baby powers x^2..x^k
// (k the smallest power of two above sqrt((degree + 1) / 2)), giant powers x^k, x^2k, x^4k, ... by squaring, the blocks
// c_0 + c_1 x + ... + c_(k-1) x^(k-1) by plaintext products and sums, combined pairwise with the giant powers.
// Input "x", output "poly".
// @throws ParameterError for degree < 2 or a negative level
// @throws LevelError if `level` is too low for the depth
Graph bsgs_polynomial(int degree = 31, int level = 7);
// The task structure of one encrypted d x d matrix product (Jiang et al., Manabe et al.): sigma(A) and tau(B) as
// rotations times plaintext diagonals summed, then for k = 1..d-1 a column shift of sigma(A) (one rotation) and a row
// shift of tau(B) (two rotations, two plaintext masks, a sum), the d products and their sum. Inputs "A", "B", output
// "AB".
// @throws ParameterError for d < 2 or a negative level
// @throws LevelError if `level` < 3
Graph matmul_like(int d = 4, int level = 7);
// A random DAG of `tasks` fused tasks over two inputs "x" and "y" (seeded): each task draws its kind (products and
// rotations most often) and its operands among the 8 newest nodes that can take it, so the graph is deep and
// branching; every dangling result joins a balanced sum, the output "out".
// @throws ParameterError for tasks < 1 or level < 1
Graph random_dag(int tasks = 24, std::uint64_t seed = 1, int level = 7);

}  // namespace kasoku::sched
