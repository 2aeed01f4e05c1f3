#include "kasoku/sched/cost_model.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "dispatcher_internal.hpp"
#include "kasoku/ckks/crypto.hpp"
#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/support/error.hpp"
#include "kasoku/support/threads.hpp"

namespace kasoku::sched {

namespace {

int kind_index(OpKind op) {
    if (op == OpKind::input) throw ParameterError("cost model: an input node is not a task");
    return static_cast<int>(op) - 1;
}
OpKind kind_at(int i) { return static_cast<OpKind>(i + 1); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double interpolate(const CostModel::LoadCurve& c, double busy) {
    if (c.empty()) return 1.0;
    if (busy <= c.front().first) return c.front().second;
    for (std::size_t i = 1; i < c.size(); ++i)
        if (busy <= c[i].first) {
            auto [x0, y0] = c[i - 1];
            auto [x1, y1] = c[i];
            return y0 + (y1 - y0) * (busy - x0) / double(x1 - x0);
        }
    if (c.size() == 1) return c.back().second;
    auto [x0, y0] = c[c.size() - 2];
    auto [x1, y1] = c.back();
    return y1 + (y1 - y0) * (busy - x1) / double(x1 - x0);
}

void check_table(const CostModel::Table& t, const std::string& what) {
    if (t.ms.empty() || t.nq_min < 1) throw ParameterError(what + " is empty or has nq_min < 1");
    for (const auto& row : t.ms) {
        if (row.empty()) throw ParameterError(what + " has a row without thread columns");
        for (double v : row)
            if (!(v > 0) || !std::isfinite(v)) throw ParameterError(what + " has a time that is not finite and > 0");
    }
}

// Threads beyond the columns take the last one; an nq outside the rows scales the nearest row linearly in nq.
double lookup(const CostModel::Table& t, int nq, int threads) {
    if (nq < 1 || threads < 1)
        throw ParameterError("cost model: nq and threads must be >= 1, got nq = " + std::to_string(nq) +
                             ", threads = " + std::to_string(threads));
    const int last = t.nq_min + static_cast<int>(t.ms.size()) - 1;
    const int row = std::clamp(nq, t.nq_min, last);
    const auto& r = t.ms[row - t.nq_min];
    const double v = r[std::min<std::size_t>(threads, r.size()) - 1];
    return row == nq ? v : v * nq / row;
}

std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            auto p = line.find(':');
            return p == std::string::npos ? line : line.substr(p + 2);
        }
    return "unknown CPU";
}

// The CPUs of team i of w threads, i * w .. (i + 1) * w - 1 of `cpus`, as the executor pins a task's threads
// (Runners): none (not pinned) for a single thread in all, or where `cpus` has fewer than the `needed` CPUs of all the
// teams.
std::vector<int> team_cpus(const std::vector<int>& cpus, int i, int w, int needed) {
    if (needed < 2 || cpus.size() < static_cast<std::size_t>(needed)) return {};
    return std::vector<int>(cpus.begin() + i * w, cpus.begin() + (i + 1) * w);
}

// Runs f on a thread of its own (whose affinity the caller's does not keep) and rethrows what it throws.
template <class F>
void on_thread(const F& f) {
    std::exception_ptr failed;
    std::thread([&] {
        try {
            f();
        } catch (...) {
            failed = std::current_exception();
        }
    }).join();
    if (failed) std::rethrow_exception(failed);
}

// A measuring thread runs its calls as a runner runs tasks: on a detail::Seat.
using detail::Seat;

// Time of one dispatch as the real executor does it: a condition-variable hand-off to a waiting thread pinned to a
// CPU of its own (a runner), which then engages its helpers and wakes them with an empty parallel loop (as a task of
// `threads` threads does at its first one) and hands back; the poster on another CPU where there is one. Without the
// waking (only the hand-off, on the poster's CPU) it measured 5 us on 2 Zen 5 threads, against 34 us with the OpenMP
// team's wake-up and pinning before, and the stream's light tasks then ran 50-90 us over the model.
double measure_overhead_ms(int threads, int reps) {
    const std::vector<int> cpus = usable_cpus();
    const std::vector<int> team = team_cpus(cpus, 0, threads, threads);
    std::mutex m;
    std::condition_variable cv;
    int posted = 0, served = 0;
    bool stop = false;
    std::chrono::steady_clock::time_point sent;
    std::vector<double> lat;
    std::thread worker([&] {
        Seat seat(threads);
        seat.sit(team, cpus);
        std::unique_lock lk(m);
        while (true) {
            cv.wait(lk, [&] { return stop || posted > served; });
            if (stop) return;
            lk.unlock();
            seat.run(threads, [&] { parallel_for(threads, static_cast<std::size_t>(threads), [](std::size_t) {}); });
            auto now = std::chrono::steady_clock::now();
            lk.lock();
            lat.push_back(std::chrono::duration<double, std::milli>(now - sent).count());
            ++served;
            cv.notify_all();
        }
    });
    on_thread([&] {
        if (cpus.size() > 1) unbind({cpus.back()});
        for (int r = 0; r < reps; ++r) {
            std::unique_lock lk(m);
            sent = std::chrono::steady_clock::now();
            ++posted;
            cv.notify_all();
            cv.wait(lk, [&] { return served == posted; });
        }
    });
    {
        std::lock_guard lk(m);
        stop = true;
    }
    cv.notify_all();
    worker.join();
    return median(lat);
}

}  // namespace

CostModel::CostModel(std::string name, std::string machine, int hardware_threads, std::array<Table, kTaskKinds> ops,
                     std::array<LoadTable, kTaskKinds> load, double overhead_ms, Table align)
    : name_(std::move(name)),
      machine_(std::move(machine)),
      hardware_threads_(hardware_threads),
      ops_(std::move(ops)),
      load_(std::move(load)),
      overhead_ms_(overhead_ms),
      align_(std::move(align)) {
    if (hardware_threads_ < 1) throw ParameterError("cost model: hardware_threads must be >= 1");
    if (overhead_ms_ < 0 || !std::isfinite(overhead_ms_))
        throw ParameterError("cost model: overhead_ms must be finite and >= 0");
    if (!align_.ms.empty()) check_table(align_, "cost model alignment table");
    for (int k = 0; k < kTaskKinds; ++k) {
        check_table(ops_[k], std::string("cost model table '") + op_name(kind_at(k)) + "'");
        if (load_[k].empty()) load_[k] = {{1, {{1, 1.0}}}};
        check_load(load_[k], op_name(kind_at(k)));
    }
}

void CostModel::check_load(const LoadTable& rows, const char* kind) {
    bool ok = !rows.empty();
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const auto& c = rows[r].second;
        ok = ok && rows[r].first >= 1 && (r == 0 || rows[r].first > rows[r - 1].first) && !c.empty();
        for (std::size_t i = 0; i < c.size(); ++i)
            ok = ok && c[i].second > 0 && std::isfinite(c[i].second) && c[i].first >= 1 &&
                 (i == 0 || c[i].first > c[i - 1].first);
    }
    if (!ok)
        throw ParameterError("cost model load table '" + std::string(kind) +
                             "' needs widths >= 1 increasing, and per width busy counts >= 1 increasing with "
                             "finite factors > 0");
}

const CostModel::LevelLoads& CostModel::load_levels(OpKind op) const { return load_levels_[kind_index(op)]; }

CostModel CostModel::with_load_levels(std::array<LevelLoads, kTaskKinds> levels) const {
    for (int k = 0; k < kTaskKinds; ++k) {
        const auto& lv = levels[k];
        for (std::size_t i = 0; i < lv.size(); ++i) {
            if (lv[i].first < 1 || (i && lv[i].first <= lv[i - 1].first))
                throw ParameterError("cost model load levels of '" + std::string(op_name(kind_at(k))) +
                                     "' need nq >= 1 increasing");
            check_load(lv[i].second, op_name(kind_at(k)));
        }
    }
    CostModel c = *this;
    c.load_levels_ = std::move(levels);
    return c;
}

const CostModel::Table& CostModel::table(OpKind op) const { return ops_[kind_index(op)]; }
const CostModel::LoadTable& CostModel::load_table(OpKind op) const { return load_[kind_index(op)]; }

int CostModel::nq_min() const {
    int v = ops_[0].nq_min;
    for (const auto& t : ops_) v = std::max(v, t.nq_min);
    return v;
}
int CostModel::nq_max() const {
    int v = ops_[0].nq_min + static_cast<int>(ops_[0].ms.size()) - 1;
    for (const auto& t : ops_) v = std::min(v, t.nq_min + static_cast<int>(t.ms.size()) - 1);
    return v;
}

double CostModel::time_ms(OpKind op, int nq, int threads) const { return lookup(table(op), nq, threads); }

CostModel CostModel::with_job_slowdown(double s) const {
    if (!(s >= 0) || !std::isfinite(s)) throw ParameterError("cost model: job_slowdown must be finite and >= 0");
    CostModel c = *this;
    c.job_slowdown_ = s;
    return c;
}

CostModel CostModel::scaled(double f) const {
    if (!(f > 0) || !std::isfinite(f)) throw ParameterError("cost model: a scale factor must be finite and > 0");
    CostModel c = *this;
    for (auto& t : c.ops_)
        for (auto& row : t.ms)
            for (double& v : row) v *= f;
    for (auto& row : c.align_.ms)
        for (double& v : row) v *= f;
    c.overhead_ms_ *= f;
    return c;
}

double CostModel::align_ms(int nq, int threads) const { return align_.ms.empty() ? 0.0 : lookup(align_, nq, threads); }

double CostModel::load_factor(OpKind op, int busy_threads, double mean_width, int nq) const {
    const auto& lv = load_levels(op);
    if (nq < 1 || lv.empty()) return factor_in(load_table(op), busy_threads, mean_width);
    if (nq <= lv.front().first) return factor_in(lv.front().second, busy_threads, mean_width);
    if (nq >= lv.back().first) return factor_in(lv.back().second, busy_threads, mean_width);
    std::size_t i = 1;
    while (lv[i].first < nq) ++i;
    const double a = double(nq - lv[i - 1].first) / (lv[i].first - lv[i - 1].first);
    return (1 - a) * factor_in(lv[i - 1].second, busy_threads, mean_width) +
           a * factor_in(lv[i].second, busy_threads, mean_width);
}

double CostModel::factor_in(const LoadTable& rows, int busy_threads, double mean_width) {
    const int busy = std::max(busy_threads, 1);
    double f;
    if (mean_width <= rows.front().first) {
        f = interpolate(rows.front().second, busy);
    } else if (mean_width >= rows.back().first) {
        // Tasks wider than the widest row: that row's curve at as many threads busy beside the task's own team
        // (busy - mean_width of them), so that a team alone on the machine has the factor 1 of a row's first point.
        // Read at `busy`, a 2-thread task alone on 2 CPUs took the one-thread row's point for two teams side by side
        // (1.16 for the plaintext products), and the stream's 2-thread plaintext products ran 0.80-0.88x the
        // simulator's times.
        const int w = rows.back().first;
        f = interpolate(rows.back().second, busy - mean_width + w);
    } else {
        std::size_t r = 1;
        while (rows[r].first < mean_width) ++r;
        const double w0 = std::log2(rows[r - 1].first), w1 = std::log2(rows[r].first);
        const double a = (std::log2(mean_width) - w0) / (w1 - w0);
        f = (1 - a) * interpolate(rows[r - 1].second, busy) + a * interpolate(rows[r].second, busy);
    }
    return std::max(f, 1e-9);
}

// --- The source's tables (Xeon Phi 7230F, SEAL 3.2, N = 2^15, log q = 60) ---
CostModel CostModel::from_paper() {
    // Table 1: one thread, nq = 2..8.
    const std::vector<double> add_plain1{1, 1, 2, 2, 2, 3, 3}, add1{1, 2, 2, 3, 3, 4, 4},
        mul_plain1{6, 9, 11, 14, 17, 20, 22}, mul1{14, 21, 27, 34, 40, 48, 55}, square1{10, 15, 19, 25, 29, 34, 39};
    // Tables 2 and 3: relinearisation and rescaling, nq = 2..8 by 1..12 threads.
    const std::vector<std::vector<double>> relin{
        {33, 17, 18, 18, 17, 17, 18, 18, 17, 17, 17, 18},   {65, 43, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22},
        {101, 51, 53, 27, 27, 27, 27, 27, 27, 27, 27, 27},  {151, 91, 60, 60, 32, 32, 31, 31, 31, 32, 32, 32},
        {203, 106, 69, 71, 69, 37, 37, 36, 36, 37, 37, 36}, {271, 155, 119, 79, 80, 80, 41, 41, 42, 42, 42, 41},
        {349, 177, 131, 89, 89, 90, 88, 47, 47, 46, 47, 46}};
    const std::vector<std::vector<double>> rescale{
        {31, 16, 16, 12, 11, 11, 12, 12, 11, 12, 12, 12},  {53, 27, 22, 18, 18, 14, 14, 14, 14, 15, 14, 14},
        {72, 37, 30, 25, 25, 21, 21, 17, 17, 17, 17, 17},  {96, 49, 39, 31, 27, 27, 27, 23, 23, 19, 20, 19},
        {116, 59, 46, 38, 34, 30, 30, 30, 30, 27, 27, 22}, {140, 69, 54, 45, 41, 37, 32, 32, 33, 33, 33, 29},
        {162, 80, 64, 52, 48, 43, 39, 35, 35, 35, 35, 35}};
    // The coefficient-wise products parallelise over the nq primes (§4.2): ceil(nq / t) / nq of their time.
    auto split = [](double t1, int nq, int t) {
        const int rounds = (nq + t - 1) / t;  // ceil(nq / t): whole rounds of t primes
        return t1 * rounds / nq;
    };
    std::array<Table, kTaskKinds> ops;
    for (auto& t : ops) t.nq_min = 2;
    for (int nq = 2; nq <= 8; ++nq) {
        const int i = nq - 2;
        std::vector<double> mul, sq, mp, ad, ap, rot;
        for (int t = 1; t <= 12; ++t) {
            mul.push_back(split(mul1[i], nq, t) + relin[i][t - 1] + rescale[i][t - 1]);
            sq.push_back(split(square1[i], nq, t) + relin[i][t - 1] + rescale[i][t - 1]);
            mp.push_back(split(mul_plain1[i], nq, t) + rescale[i][t - 1]);
            rot.push_back(relin[i][t - 1]);  // not in the source: a rotation is one key switch, as relinearisation
        }
        ad.push_back(add1[i]);  // additions run on one thread in the source
        ap.push_back(add_plain1[i]);
        ops[kind_index(OpKind::multiply)].ms.push_back(mul);
        ops[kind_index(OpKind::square)].ms.push_back(sq);
        ops[kind_index(OpKind::multiply_plain)].ms.push_back(mp);
        ops[kind_index(OpKind::add)].ms.push_back(ad);
        ops[kind_index(OpKind::add_plain)].ms.push_back(ap);
        ops[kind_index(OpKind::rotate)].ms.push_back(rot);
    }
    // Tables 4 and 5: latency at nq = 8 of M concurrent operations of t threads each (rows t = 1, 2, 4, 8; columns
    // M = 2..256; 0 = not measured). A row is a load curve over busy threads B = M * t: its latency over its M = 2
    // entry (which matches Tables 2-3).
    const int ts[] = {1, 2, 4, 8};
    const double relin_load[4][8] = {{348, 344, 346, 340, 359, 435, 1091, 2787},
                                     {174, 179, 178, 192, 224, 519, 1388, 0},
                                     {89, 91, 98, 122, 256, 674, 0, 0},
                                     {51, 52, 69, 131, 322, 0, 0, 0}};
    const double rescale_load[4][8] = {{162, 159, 160, 158, 167, 202, 335, 968},
                                       {81, 83, 82, 89, 103, 157, 436, 0},
                                       {53, 53, 57, 67, 94, 205, 0, 0},
                                       {36, 38, 48, 68, 140, 0, 0, 0}};
    // A task's rows blend the two tables by the share of its one-thread time at nq = 8 that is key switching.
    auto blend = [&](double w_relin) {
        LoadTable rows;
        for (int r = 0; r < 4; ++r) {
            LoadCurve c;
            for (int j = 0, m = 2; j < 8; ++j, m *= 2)
                if (relin_load[r][j] > 0)
                    c.emplace_back(m * ts[r], w_relin * relin_load[r][j] / relin_load[r][0] +
                                                  (1 - w_relin) * rescale_load[r][j] / rescale_load[r][0]);
            rows.emplace_back(ts[r], std::move(c));
        }
        return rows;
    };
    const LoadTable lr = blend(1.0), ls = blend(0.0);
    std::array<LoadTable, kTaskKinds> load;
    load[kind_index(OpKind::multiply)] = blend((55.0 + 349) / (55 + 349 + 162));
    load[kind_index(OpKind::square)] = blend((39.0 + 349) / (39 + 349 + 162));
    load[kind_index(OpKind::multiply_plain)] = ls;
    load[kind_index(OpKind::add)] = ls;
    load[kind_index(OpKind::add_plain)] = ls;
    load[kind_index(OpKind::rotate)] = lr;
    return CostModel(
        "paper",
        "Intel Xeon Phi 7230F (64 cores, 256 threads), SEAL 3.2, N = 2^15 (Suzuki, Ishimaki and Yamana Tables 1-5)",
        256, std::move(ops), std::move(load), 0.0);
}

// --- Measurement on this machine ---
CostModel CostModel::measure(const ckks::Parameters& params, int max_threads, int reps,
                             const std::function<void(int, int)>& progress, const std::vector<Graph>& mix) {
    max_threads = resolve_threads(max_threads);
    if (reps < 1) throw ParameterError("CostModel.measure: reps must be >= 1, got " + std::to_string(reps));
    if (params.levels < 1) throw ParameterError("CostModel.measure: the parameters need at least one level to rescale");
    auto ctx = ckks::Context::create(params, max_threads);
    ckks::KeyGenerator kg(ctx);
    const auto sk = kg.secret_key();
    auto keys = std::make_shared<ckks::EvaluationKeys>(kg.evaluation_keys(sk, true, {1}, false));
    ckks::Evaluator ev(ctx, keys);
    ckks::Encoder enc(ctx);
    ckks::Encryptor encryptor(ctx);
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<std::complex<double>> vals(ctx->slots());
    for (auto& v : vals) v = u(rng);
    const int top = params.levels;
    auto fresh = [&](int level) {
        return encryptor.encrypt_symmetric(enc.encode(vals, ctx->scale_at(level), level), sk);
    };

    // A task on ciphertexts of its own, as a stream's jobs compute: the kinds with two operands (multiply, add) take
    // a and b, two ciphertexts, so that they read both (one ciphertext as both operands read half the memory: a SCHED
    // multiplication on one Zen 5 thread took 2-3 % less on (a, a) than on (a, b)); constants 0.5 (product) and 1
    // (sum); rotation by one slot.
    auto run_op = [&](Seat& seat, OpKind op, const ckks::Ciphertext& a, const ckks::Ciphertext& b, int t) {
        Node n;
        n.op = op;
        n.constant = op == OpKind::multiply_plain ? 0.5 : 1.0;
        n.step = 1;
        return seat.run(t, [&] { return detail::execute(ev, n, a, b, t); });
    };
    // Calls that follow each other take their operands from pairs of ciphertexts in turn (cts: an even number), so that
    // no call reads what the call before it read: it would find them in the caches (a SCHED square after a product
    // of the ciphertext it squares: 5-6 % under the stream's squares).
    auto run_next = [&](Seat& seat, OpKind op, const std::vector<ckks::Ciphertext>& cts, std::size_t& c, int t) {
        const std::size_t i = 2 * (c++ % (cts.size() / 2));
        return run_op(seat, op, cts[i], cts[i + 1], t);
    };
    auto ms_of = [](const auto& f) {  // one call of f, in ms
        const auto t0 = std::chrono::steady_clock::now();
        f();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    auto time_fn = [&](const auto& f, int n) {
        std::vector<double> ms;
        f();  // warm-up (scratch memory, caches)
        for (int r = 0; r < n; ++r) ms.push_back(ms_of(f));
        return median(ms);
    };

    // Contention points: per team width w (1, 2, 4, ..., max_threads), m = 2, 4, ... teams of w threads (and the
    // most that fit): busy = m * w threads.
    std::vector<std::pair<int, int>> points;  // (width, teams)
    for (int w = 1; w <= max_threads; w *= 2) {
        for (int m = 2; m * w <= max_threads; m *= 2) points.emplace_back(w, m);
        if (const int most = max_threads / w; most > 1 && (most & (most - 1)) != 0) points.emplace_back(w, most);
    }
    const int total = (reps + 1) + static_cast<int>(points.size()) + 1;
    int done = 0;
    auto tick = [&] {
        ++done;
        if (progress) progress(done, total);
    };

    // Every entry (kind, nq, threads) is timed once per round, in `reps` rounds after a warm-up round, and takes the
    // median of its rounds: its calls are spread over the whole measurement instead of back to back, so a burst of
    // the machine's noise moves one call of many entries rather than every call of a few. Three models measured one
    // after another (2 Zen 5 threads, reps 5): the entries of the key-switching kinds differed by 3.0-5.4 % (median
    // over the entries, three such triples) and up to 8-119 % with each entry's calls back to back; by 1.8-2.6 % and
    // up to 6-11 % interleaved (four triples).
    // The calls run on a thread of their own as a runner of the executor runs a task, its threads pinned to CPUs of
    // their own as the executor pins a task's (Seat: a ThreadTeam engaged for each call); each round times
    // every entry of one thread count before the next count, so that a team's calls follow each other as a stream's
    // tasks of that width do. On 2 Zen 5 threads a pinned team took 4-5 % longer than the same calls from an
    // unpinned caller (SCHED rotation 4.65 -> 4.86 ms, multiplication 5.1 -> 5.35 ms), and the stream's 2-thread
    // tasks had run 1.07-1.12x the table measured unpinned; a team's calls alternated with one-thread calls took
    // 1.2-1.8x, its second thread woken each time.
    constexpr int kInputs = 4;  // ciphertexts per level (and per team below), two pairs taken in turn (run_next)
    std::vector<std::vector<ckks::Ciphertext>> at(static_cast<std::size_t>(top));  // at[i]: kInputs at nq = 2 + i
    for (int c = 0; c < kInputs; ++c) {
        const auto ct = fresh(top);
        for (int nq = 2; nq <= top + 1; ++nq) at[static_cast<std::size_t>(nq - 2)].push_back(ev.drop_limbs(ct, nq - 1));
    }
    // The alignment at task nq = 2..top, timed in the same rounds: an add of operands at levels nq and nq - 1, each at
    // its level's canonical scale as products leave them, minus the add at level nq - 1. Timed back to back instead, it
    // came out 5-14 % below the same add among other calls (SCHED, one Zen 5 thread, nq = 7 and 4), and the streams'
    // additions ran 1.12-1.14x the model.
    std::vector<std::pair<ckks::Ciphertext, ckks::Ciphertext>> aligned;  // aligned[i]: the operands at nq = 2 + i
    for (int nq = 2; nq <= top; ++nq) aligned.emplace_back(fresh(nq), fresh(nq - 1));
    std::size_t next = 0;
    const std::size_t threads_n = static_cast<std::size_t>(max_threads);
    std::vector<std::vector<double>> calls(kTaskKinds * at.size() * threads_n), align_calls(aligned.size() * threads_n);
    const std::vector<int> cpus = usable_cpus();  // team i on CPUs of its own (team_cpus)
    on_thread([&] {
        Seat seat(max_threads);
        for (int round = -1; round < reps; ++round) {
            for (int t = 1; t <= max_threads; ++t) {
                seat.sit(team_cpus(cpus, 0, t, max_threads), cpus);
                for (std::size_t i = 0; i < at.size(); ++i) {
                    for (int k = 0; k < kTaskKinds; ++k) {
                        const double ms = ms_of([&] { return run_next(seat, kind_at(k), at[i], next, t); });
                        if (round >= 0) calls[(k * at.size() + i) * threads_n + t - 1].push_back(ms);
                    }
                    if (i < aligned.size()) {
                        const double ms = ms_of([&] {
                            return seat.run(t, [&] { return ev.add(aligned[i].first, aligned[i].second, t); });
                        });
                        if (round >= 0) align_calls[i * threads_n + t - 1].push_back(ms);
                    }
                }
            }
            tick();
        }
    });
    std::array<Table, kTaskKinds> ops;
    for (int k = 0; k < kTaskKinds; ++k) {
        ops[k].nq_min = 2;
        for (std::size_t i = 0; i < at.size(); ++i) {
            std::vector<double> row;
            for (std::size_t t = 0; t < threads_n; ++t)
                row.push_back(std::max(median(calls[(k * at.size() + i) * threads_n + t]), 1e-6));
            ops[k].ms.push_back(std::move(row));
        }
    }
    Table align{2, {}};
    for (std::size_t i = 0; i < aligned.size(); ++i) {
        std::vector<double> row;
        for (std::size_t t = 0; t < threads_n; ++t)
            row.push_back(
                std::max(median(align_calls[i * threads_n + t]) - ops[kind_index(OpKind::add)].ms[i][t], 1e-3));
        align.ms.push_back(std::move(row));
    }
    // Contention: each task kind timed on a team of w threads at the top level while m - 1 other teams of w threads
    // run the stream's operation mix (the tasks of `mix`, in order, round and round) beside it; the factor is its
    // median over its time alone. Microbenchmarks only: nothing here looks at a stream's results.
    std::vector<OpKind> kinds;
    for (const Graph& g : mix)
        for (const Node& n : g.nodes())
            if (n.op != OpKind::input) kinds.push_back(n.op);
    if (kinds.empty())
        for (int k = 0; k < kTaskKinds; ++k) kinds.push_back(kind_at(k));  // no stream given: every kind in turn
    // Each team computes on ciphertexts of its own, a few in turn, as a stream's jobs do: a team that reuses one
    // ciphertext keeps it in the caches, and teams that share one share their caches (on 16 threads of the GPU
    // machine's Xeon that measured no contention at all, while the stream's tasks ran 1.0-1.7x their estimates).
    const int teams = points.empty() ? 0 : max_threads;
    std::vector<std::vector<ckks::Ciphertext>> own(static_cast<std::size_t>(teams));
    for (auto& v : own)
        for (int c = 0; c < kInputs; ++c) v.push_back(fresh(top));
    // Runs f(seat) on a thread of its own seated on team 0's CPUs of width w, and rethrows what it throws.
    auto on_team0 = [&](int w, const auto& f) {
        on_thread([&] {
            Seat seat(max_threads);
            seat.sit(team_cpus(cpus, 0, w, max_threads), cpus);
            f(seat);
        });
    };
    // Team 0 is timed at three levels: the top (its own ciphertexts), the middle and nq = 2 (the table's inputs, which
    // no other team reads), since the contention depends on the level: on 2 Zen 5 cores a key switch beside another
    // slowed by 0-5 % at SCHED's top level and by 4-10 % at nq 5-7 (a smaller key and operands fit the shared L3
    // alone, not beside the other team's), and a model with the top level's factors alone was 7-11 % under e^x's
    // products in the stream (docs/SCHEDULING.md, "Two real threads").
    std::vector<int> level_nqs{2, (2 + top + 1) / 2, top + 1};
    level_nqs.erase(std::unique(level_nqs.begin(), level_nqs.end()), level_nqs.end());
    const std::size_t n_levels = level_nqs.size();
    auto time_team0 = [&](Seat& seat, OpKind op, int w, std::size_t l) {
        const int nq = level_nqs[l];
        const auto& cts = nq == top + 1 ? own[0] : at[static_cast<std::size_t>(nq - 2)];
        std::size_t c = 0;
        return time_fn([&] { return run_next(seat, op, cts, c, w); }, std::max(reps, 3) * (is_light(op) ? 20 : 1));
    };
    // The reference of a point: the same loop on team 0's CPUs with no other team running (the table's entries are
    // timed in rounds among the other entries, which leaves their caches colder than this loop's).
    // alone_ms[(level * kTaskKinds + kind) * threads_n + width - 1]
    std::vector<double> alone_ms(n_levels * kTaskKinds * threads_n, 0.0);
    auto at_point = [&](std::size_t l, int k, int w) { return (l * kTaskKinds + std::size_t(k)) * threads_n + w - 1; };
    for (int w = 1; 2 * w <= max_threads; w *= 2)
        on_team0(w, [&](Seat& seat) {
            for (std::size_t l = 0; l < n_levels; ++l)
                for (int k = 0; k < kTaskKinds; ++k) alone_ms[at_point(l, k, w)] = time_team0(seat, kind_at(k), w, l);
        });
    std::array<LevelLoads, kTaskKinds> levels;
    for (auto& lv : levels)
        for (int nq : level_nqs) lv.emplace_back(nq, LoadTable{{1, {{1, 1.0}}}});
    for (auto [w, m] : points) {
        std::atomic<bool> stop{false};
        std::atomic<int> started{0};
        std::vector<std::thread> others;
        others.reserve(static_cast<std::size_t>(m - 1));
        for (int i = 0; i < m - 1; ++i)
            others.emplace_back([&, i, w] {
                Seat seat(max_threads);
                seat.sit(team_cpus(cpus, i + 1, w, max_threads), cpus);
                const auto& cts = own[static_cast<std::size_t>(i) + 1];
                std::size_t c = 0;
                for (std::size_t j = static_cast<std::size_t>(i) * 7 % kinds.size(); !stop;
                     j = (j + 1) % kinds.size()) {
                    run_next(seat, kinds[j], cts, c, w);
                    if (j == static_cast<std::size_t>(i) * 7 % kinds.size()) started.fetch_add(1);
                }
            });
        while (started.load() < m - 1) std::this_thread::yield();  // every other team past its first task
        std::exception_ptr failed;
        try {
            on_team0(w, [&, w = w, m = m](Seat& seat) {  // the measured team: team 0, on a thread of its own
                for (std::size_t l = 0; l < n_levels; ++l)
                    for (int k = 0; k < kTaskKinds; ++k) {
                        const double f =
                            std::max(time_team0(seat, kind_at(k), w, l) / alone_ms[at_point(l, k, w)], 1.0);
                        auto& rows = levels[k][l].second;
                        if (rows.back().first != w) rows.emplace_back(w, LoadCurve{{w, 1.0}});
                        rows.back().second.emplace_back(m * w, f);
                    }
            });
        } catch (...) {
            failed = std::current_exception();
        }
        stop = true;
        for (auto& t : others) t.join();
        if (failed) std::rethrow_exception(failed);
        tick();
    }
    const double overhead = measure_overhead_ms(max_threads, 51);
    tick();
    // The load tables: the top level's (what a caller without the task's nq gets), and every level's.
    std::array<LoadTable, kTaskKinds> load;
    for (int k = 0; k < kTaskKinds; ++k) load[k] = levels[k].back().second;
    return CostModel("measured " + (params.name.empty() ? std::string("parameters") : params.name), cpu_model(),
                     kasoku::hardware_threads(), std::move(ops), std::move(load), overhead, std::move(align))
        .with_load_levels(points.empty() ? std::array<LevelLoads, kTaskKinds>{} : std::move(levels));
}

// --- JSON ---
std::string CostModel::to_json() const {
    nlohmann::ordered_json j;
    j["format"] = "kasoku-sched-cost-model";
    j["version"] = 1;
    j["name"] = name_;
    j["machine"] = machine_;
    j["hardware_threads"] = hardware_threads_;
    j["overhead_ms"] = overhead_ms_;
    for (int k = 0; k < kTaskKinds; ++k) {
        j["ops"][op_name(kind_at(k))] = {{"nq_min", ops_[k].nq_min}, {"ms", ops_[k].ms}};
        j["load"][op_name(kind_at(k))] = load_[k];
        if (!load_levels_[k].empty()) j["load_levels"][op_name(kind_at(k))] = load_levels_[k];
    }
    if (!align_.ms.empty()) j["align"] = {{"nq_min", align_.nq_min}, {"ms", align_.ms}};
    if (job_slowdown_ > 0) j["job_slowdown"] = job_slowdown_;
    return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);  // a name's invalid UTF-8 as U+FFFD
}

CostModel CostModel::from_json(const std::string& text) {
    try {
        const auto j = nlohmann::json::parse(text);
        if (j.value("format", "") != "kasoku-sched-cost-model")
            throw SerializationError(
                "cost model: not a kasoku cost-model file (its \"format\" is not kasoku-sched-cost-model)");
        auto table = [](const nlohmann::json& t) {
            return Table{t.at("nq_min").get<int>(), t.at("ms").get<std::vector<std::vector<double>>>()};
        };
        std::array<Table, kTaskKinds> ops;
        std::array<LoadTable, kTaskKinds> load;
        for (int k = 0; k < kTaskKinds; ++k) {
            const std::string n = op_name(kind_at(k));
            if (!j.at("ops").contains(n)) throw SerializationError("cost model: the file has no table for '" + n + "'");
            ops[k] = table(j["ops"][n]);
            if (j.contains("load") && j["load"].contains(n)) load[k] = j["load"][n].get<LoadTable>();
        }
        Table align;
        if (j.contains("align")) {
            align = table(j["align"]);
            if (align.ms.empty())
                throw SerializationError("cost model: the alignment table is empty; leave it out instead");
        }
        std::array<LevelLoads, kTaskKinds> levels;
        for (int k = 0; k < kTaskKinds; ++k)
            if (j.contains("load_levels") && j["load_levels"].contains(op_name(kind_at(k))))
                levels[k] = j["load_levels"][op_name(kind_at(k))].get<LevelLoads>();
        return CostModel(j.value("name", ""), j.value("machine", ""), j.value("hardware_threads", 1), std::move(ops),
                         std::move(load), j.value("overhead_ms", 0.0), std::move(align))
            .with_job_slowdown(j.value("job_slowdown", 0.0))
            .with_load_levels(std::move(levels));
    } catch (const nlohmann::json::exception& e) {
        throw SerializationError(std::string("cost model: malformed JSON (") + e.what() +
                                 "); write it with CostModel.save");
    } catch (const ParameterError& e) {
        throw SerializationError(std::string("cost model: ") + e.what());
    }
}

CostModel CostModel::load(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw SerializationError("cost model: cannot open '" + path + "' for reading");
    std::stringstream ss;
    ss << f.rdbuf();
    return from_json(ss.str());
}

void CostModel::save(const std::string& path) const {
    std::ofstream f(path);
    if (!f) throw SerializationError("cost model: cannot open '" + path + "' for writing");
    f << to_json() << "\n";
    if (!f) throw SerializationError("cost model: writing '" + path + "' failed");
}

}  // namespace kasoku::sched
