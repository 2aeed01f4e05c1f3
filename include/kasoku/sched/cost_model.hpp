// Cost model T(op, nq, threads) of the scheduler (Suzuki, Ishimaki and Yamana §4, docs/DESIGN.md §3.2): the time of one
// fused task on an idle machine, by its kind, the primes nq of its operands and its thread count (the shape of the
// source's Tables 1-3), times a load factor for the threads busy at once across the machine (its Tables 4-5), plus a
// start-up overhead per task, plus the alignment of an operand from a higher level where the task has one
// (Graph::aligns). Measured here (measure), read from JSON (load / from_json), or built from the source's own tables
// (from_paper) so that its Xeon Phi can be simulated on any machine. Errors: ParameterError for invalid tables (empty,
// nq_min < 1, times not finite and > 0, load curves out of order), hardware_threads < 1, a negative overhead or job
// slowdown, an input node or nq / threads < 1 in a lookup, or measure's reps < 1 or parameters without a level;
// SerializationError for a file that cannot be read, written or parsed as a cost model.
#pragma once
#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kasoku/ckks/parameters.hpp"
#include "kasoku/sched/graph.hpp"

namespace kasoku::sched {

class CostModel {
public:
    // ms of one task on an idle machine: rows nq = nq_min, nq_min + 1, ...; columns threads = 1, 2, ...
    struct Table {
        int nq_min = 1;
        std::vector<std::vector<double>> ms;
    };
    // Slowdown of a task while `busy` threads run in all: points (busy, factor), busy increasing, interpolated
    // linearly and extended flat to the left and linearly (by the last segment) to the right.
    using LoadCurve = std::vector<std::pair<int, double>>;
    // One curve per width of the concurrent tasks (threads per task: the rows of the source's Tables 4-5), widths
    // increasing. The factor at (busy, mean width) interpolates between the two nearest rows in log2(width); wider
    // than the widest row w, it is that row's at busy - mean width + w (the same threads busy beside the task's team).
    using LoadTable = std::vector<std::pair<int, LoadCurve>>;

    CostModel() = default;
    // A model from tables: a time table and a load curve for every task kind, indexed by OpKind - 1 (multiply,
    // square, multiply_plain, add, add_plain, rotate), and optionally the alignment table (rows: the task's nq; empty:
    // alignment is free).
    // @throws ParameterError for hardware_threads < 1, an overhead that is negative or not finite, a table that is
    //     empty, has nq_min < 1, a row without columns or a time that is not finite and > 0, or a load table whose
    //     widths or busy counts are not >= 1 and increasing or whose factors are not finite and > 0
    CostModel(std::string name, std::string machine, int hardware_threads, std::array<Table, kTaskKinds> ops,
              std::array<LoadTable, kTaskKinds> load, double overhead_ms, Table align);
    CostModel(std::string name, std::string machine, int hardware_threads, std::array<Table, kTaskKinds> ops,
              std::array<LoadTable, kTaskKinds> load, double overhead_ms)
        : CostModel(std::move(name), std::move(machine), hardware_threads, std::move(ops), std::move(load), overhead_ms,
                    Table{1, {}}) {}  // the same checks

    // The source's Xeon Phi 7230F with SEAL 3.2 at N = 2^15 (nq = 2..8): Tables 1-3 give the task times, Tables 4-5
    // the load curves. See docs/SCHEDULING.md for how the tables combine. No alignment table: SEAL's ModDrop keeps
    // the scale and takes a few ms, folded into the task (§7.1).
    static CostModel from_paper();
    // Times every task kind on this machine at params, for nq = 2..levels+1 and 1..max_threads threads (median of
    // `reps` rounds; at 5, two models measured minutes apart on 2 Zen 5 threads differed by a tenth); the contention:
    // per team width w = 1, 2, 4, ... and m = 2, 4, ... teams of w threads (up to max_threads busy), each task kind
    // on one team at nq = 2, the middle level and the top while the m - 1 others run the stream's operation mix (the
    // tasks of the graphs in `mix`, round and round; empty: every kind in turn), its median over its time alone
    // giving the point (w, busy = m w) of that level's load table (load_levels; the top's is the load table); the
    // overhead of one dispatch; and the alignment of an operand one level up (kasoku keeps canonical scales, so that
    // is a constant product and a rescale: an add across levels minus an add at one level).
    // progress(done, total) if given.
    // @throws ParameterError for a negative max_threads, reps < 1, parameters without a level to rescale, or
    //     parameters that Context::create refuses
    // @throws Error if the OS has no randomness to give
    // @throws what `progress` throws
    static constexpr int kDefaultReps = 11;  // measure's rounds unless told (Python: CostModel.DEFAULT_REPS)
    static CostModel measure(const ckks::Parameters& params, int max_threads, int reps = kDefaultReps,
                             const std::function<void(int, int)>& progress = {}, const std::vector<Graph>& mix = {});
    // @throws SerializationError for text that is not a kasoku cost model (malformed JSON, another format, a missing
    //     table) or whose tables the constructor refuses
    static CostModel from_json(const std::string& text);
    // @throws SerializationError for a file that cannot be read, or as from_json
    static CostModel load(const std::string& path);
    std::string to_json() const;
    // @throws SerializationError for a file that cannot be opened or written
    void save(const std::string& path) const;

    // Unloaded ms of a task; threads beyond the table's columns take its last column, and an nq outside the table
    // scales the nearest row linearly in nq (every operation is linear in the primes).
    // @throws ParameterError for an input node (not a task) or nq or threads < 1
    double time_ms(OpKind op, int nq, int threads) const;
    // Unloaded ms of bringing a task's higher operand down to its nq (0 without an alignment table), same lookup.
    // @throws ParameterError for nq or threads < 1 (with an alignment table)
    double align_ms(int nq, int threads) const;
    // Unloaded ms of a whole task: time_ms plus align_ms when the task aligns its operands.
    // @throws ParameterError for an input node or nq or threads < 1
    double task_ms(OpKind op, int nq, bool align, int threads) const {
        return time_ms(op, nq, threads) + (align ? align_ms(nq, threads) : 0.0);
    }
    // Slowdown while busy_threads threads run in tasks of mean_width threads each, for a task at nq primes: where the
    // model has load tables by level (load_levels), interpolated linearly in nq between the two nearest levels and
    // the nearest one's outside them; else (or nq < 1) the load table of its kind.
    // @throws ParameterError for an input node
    double load_factor(OpKind op, int busy_threads, double mean_width = 1, int nq = 0) const;
    // ms of a whole task under that load: its operation slowed by its kind's curve, its alignment (a constant
    // product and a rescale) by multiply_plain's, both at the task's nq.
    // @throws ParameterError for an input node or nq or threads < 1
    double loaded_task_ms(OpKind op, int nq, bool align, int threads, int busy_threads, double mean_width) const {
        return time_ms(op, nq, threads) * load_factor(op, busy_threads, mean_width, nq) +
               (align ? align_ms(nq, threads) * load_factor(OpKind::multiply_plain, busy_threads, mean_width, nq)
                      : 0.0);
    }
    // Load tables measured at several levels, per kind: (nq, table) with nq increasing (empty: none, the kind's
    // load table serves every nq). On 2 Zen 5 cores a key switch beside another slowed by 0-5 % at the top level of
    // SCHED (nq 8) and by 4-10 % at nq 5-7, where its key and operands fit the shared L3 alone but not beside the
    // other's (docs/SCHEDULING.md, "Contention by level").
    using LevelLoads = std::vector<std::pair<int, LoadTable>>;
    const LevelLoads& load_levels(OpKind op) const;
    // This model with load tables by level (indexed as the load tables).
    // @throws ParameterError for levels whose nq are not >= 1 and increasing or whose tables the constructor refuses
    CostModel with_load_levels(std::array<LevelLoads, kTaskKinds> levels) const;
    double overhead_ms() const { return overhead_ms_; }
    // A what-if beyond the source's tables (0 unless set): every task slows by a further 1 + s * J while J jobs are
    // in flight (started, not finished), e.g. from their ciphertexts' share of caches and memory. The source's §8
    // explains fixed-half's lead by fewer jobs in flight; this prices that explanation (docs/SCHEDULING.md).
    double job_slowdown() const { return job_slowdown_; }
    // This model with job_slowdown s.
    // @throws ParameterError for an s that is negative or not finite
    CostModel with_job_slowdown(double s) const;
    // The same model with every time (tasks, alignment, overhead) times f > 0: a machine that much slower, or a model
    // that far off (simulate's `truth`).
    // @throws ParameterError for an f that is not finite and > 0
    CostModel scaled(double f) const;
    double job_factor(int jobs_in_flight) const { return 1.0 + job_slowdown_ * std::max(jobs_in_flight, 0); }
    const std::string& name() const { return name_; }
    const std::string& machine() const { return machine_; }
    int hardware_threads() const { return hardware_threads_; }
    int nq_min() const;
    int nq_max() const;
    // @throws ParameterError for an input node
    const Table& table(OpKind op) const;
    // @throws ParameterError for an input node
    const LoadTable& load_table(OpKind op) const;
    const Table& align_table() const { return align_; }

private:
    static void check_load(const LoadTable& rows, const char* kind);
    static double factor_in(const LoadTable& rows, int busy_threads, double mean_width);
    std::string name_, machine_;
    int hardware_threads_ = 1;
    std::array<Table, kTaskKinds> ops_{};
    std::array<LoadTable, kTaskKinds> load_{};
    std::array<LevelLoads, kTaskKinds> load_levels_{};
    double overhead_ms_ = 0;
    Table align_{};
    double job_slowdown_ = 0;
};

}  // namespace kasoku::sched
