// Not an installed header: the project's benchmarks and tests include it from src/kasoku.
#pragma once
#include <cstddef>
#include <string>
#include <typeinfo>
#include <vector>

#include "kasoku/support/threads.hpp"

namespace kasoku {

// What a team's parallel regions would cost on more threads than this machine has: while a RegionRecorder lives on a
// thread, each parallel_for of that thread that would open a team runs its jobs one after another on the calling thread
// instead, timing each, and records the region (nested loops run inside their job, as in a team). An operation run so
// with {T} threads lays its work out as on T threads (the same jobs), and makespan() spreads each region's jobs over T
// threads as the team would: what the operation's time on T threads would be if its threads ran as fast as one alone
// and met at no cost, the ceiling that the split of its work into jobs leaves (bench_thread_pairs --granularity).
// An instrument for benchmarks and tests: it records only in a build configured with KASOKU_INSTRUMENTS (on with
// KASOKU_BUILD_TESTS or KASOKU_BUILD_BENCH), where ThreadTeam::run hands it the calling thread's regions; elsewhere
// its constructor says how to get one. makespan() is plain arithmetic and works in every build.
class RegionRecorder {
public:
    struct Region {
        std::string site;          // the loop's body: its lambda's demangled type, which names the enclosing function
        Schedule how;              // as parallel_for was given it
        int threads;               // the team it would have had: min(threads asked for, jobs)
        double start, end;         // seconds since the recorder began
        std::vector<double> jobs;  // each job's seconds, in index order
    };
    // Starts recording the calling thread's regions.
    // @throws ParameterError where the calling thread records already
    RegionRecorder();
    ~RegionRecorder();
    RegionRecorder(const RegionRecorder&) = delete;
    RegionRecorder& operator=(const RegionRecorder&) = delete;

    const std::vector<Region>& regions() const { return regions_; }
    // Seconds since the recorder began.
    double elapsed() const;
    // When `jobs` of these seconds end on `threads` threads (each job's time its own, the threads otherwise idle)
    // shared as `how` shares them: interleaved and contiguous as parallel_for assigns them, dynamic as list scheduling
    // in index order (each job to the thread that is free first).
    static double makespan(Schedule how, int threads, const std::vector<double>& jobs);

    // For parallel_for: whether the calling thread records, and the recording run of one region.
    static bool recording();
    static void run(int threads, std::size_t count, void (*fn)(void*, std::size_t), void* ctx, Schedule how,
                    const std::type_info& body);

private:
    std::vector<Region> regions_;
    double begin_;
};

}  // namespace kasoku
