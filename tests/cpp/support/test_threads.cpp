// The thread layer under every parallel loop (support/threads.hpp): CPU affinity, the ThreadTeam that runs a
// scheduler runner's loops, and the benchmarks' RegionRecorder (src/kasoku/support/region_recorder.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>
#ifdef __linux__
#include <sched.h>
#endif

#include "kasoku/support/error.hpp"
#include "kasoku/support/threads.hpp"
#include "support/region_recorder.hpp"

using namespace kasoku;

#ifdef __linux__
namespace {
// The CPUs the calling thread may run on.
std::vector<int> affinity() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> out;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) out.push_back(c);
    return out;
}
}  // namespace

// unbind() keeps the calling thread to the CPUs given (one: pins it) and lets it go anywhere again. On a thread of its
// own, so that the test's thread keeps its affinity.
TEST(SupportThreads, UnbindPinsTheCallingThreadToItsCpus) {
    const std::vector<int> cpus = usable_cpus();
    ASSERT_FALSE(cpus.empty());
    EXPECT_EQ(cpus, affinity());
    std::thread([&] {
        unbind({cpus.back()});
        EXPECT_EQ(affinity(), std::vector<int>{cpus.back()});
        unbind({});  // nothing to do
        EXPECT_EQ(affinity(), std::vector<int>{cpus.back()});
        unbind(cpus);
        EXPECT_EQ(affinity(), cpus);
    }).join();
    EXPECT_EQ(affinity(), cpus);
}

// A ThreadTeam engaged on a thread runs its parallel_for calls: every index once for every schedule and count, on at
// most `threads` threads, the helpers on the CPUs given (cpus[i] for helper i; the owner where it was), a nested call
// on the thread that makes it; and back to OpenMP once disengaged.
TEST(SupportThreads, ThreadTeamRunsEveryIndexOnceOnItsPinnedHelpers) {
    const std::vector<int> cpus = usable_cpus();
    ThreadTeam team(3);
    std::thread([&] {
        for (int threads : {2, 3}) {
            const std::vector<int> pins = cpus.size() >= static_cast<std::size_t>(threads)
                                              ? std::vector<int>(cpus.rbegin(), cpus.rbegin() + threads)
                                              : std::vector<int>{};
            const ThreadTeam::Engaged engaged(team, threads, pins);
            EXPECT_THROW(ThreadTeam::Engaged(team, 2, pins), ParameterError);  // one team per thread at a time
            for (Schedule how : {Schedule::interleaved, Schedule::contiguous, Schedule::dynamic})
                for (std::size_t count : {0u, 1u, 2u, 5u, 64u, 1000u})
                    for (int region = 0; region < 20; ++region) {  // regions one after another, as a task's
                        std::vector<int> hits(count, 0);
                        std::vector<std::thread::id> by(count);
                        std::vector<std::vector<int>> where(count);
                        parallel_for(
                            threads, count,
                            [&](std::size_t i) {
                                ++hits[i];
                                by[i] = std::this_thread::get_id();
                                if (i % 97 == 0) where[i] = affinity();
                                if (count < 2) return;  // a serial loop, not a region: its calls may use the team
                                int nested = 0;         // within a region: on this thread, serially
                                parallel_for(threads, 4, [&](std::size_t) {
                                    EXPECT_EQ(std::this_thread::get_id(), by[i]);
                                    ++nested;
                                });
                                EXPECT_EQ(nested, 4);
                            },
                            how);
                        ASSERT_EQ(hits, std::vector<int>(count, 1)) << threads << " threads, count " << count;
                        std::set<std::thread::id> ids(by.begin(), by.end());
                        EXPECT_LE(ids.size(), static_cast<std::size_t>(threads));
                        for (std::size_t i = 0; i < count; i += 97)
                            if (by[i] != std::this_thread::get_id() && !pins.empty()) {
                                const auto slot = std::find(pins.begin(), pins.end(), where[i].front());
                                EXPECT_EQ(where[i].size(), 1u);
                                EXPECT_NE(slot, pins.begin()) << "a helper on the owner's CPU";
                                EXPECT_NE(slot, pins.end()) << "a helper on a CPU not given";
                            }
                    }
        }
        int ran = 0;  // disengaged: the team runs nothing (parallel_for goes to OpenMP)
        EXPECT_FALSE(ThreadTeam::run(
            2, 2, [](void* r, std::size_t) { ++*static_cast<int*>(r); }, &ran, 0));
        EXPECT_EQ(ran, 0);
    }).join();
    EXPECT_THROW(ThreadTeam::Engaged(team, 4, cpus), ParameterError);  // more threads than the team has
    EXPECT_FALSE(ThreadTeam::in_region());
}
#endif

// Jobs spread as parallel_for's teams take them: interleaved (thread k: k, k + T, ...), contiguous (consecutive
// ranges), dynamic (each job to the thread free first, in index order); never more threads than jobs.
TEST(SupportThreads, RegionMakespanSpreadsJobsAsTheTeamTakesThem) {
    const std::vector<double> jobs{5, 1, 1, 1, 1, 1};
    EXPECT_DOUBLE_EQ(RegionRecorder::makespan(Schedule::interleaved, 2, jobs), 7);  // {5, 1, 1} and {1, 1, 1}
    EXPECT_DOUBLE_EQ(RegionRecorder::makespan(Schedule::contiguous, 2, jobs), 7);   // {5, 1, 1} and {1, 1, 1}
    EXPECT_DOUBLE_EQ(RegionRecorder::makespan(Schedule::dynamic, 2, jobs), 5);      // the 1s all go to the other
    EXPECT_DOUBLE_EQ(RegionRecorder::makespan(Schedule::contiguous, 3, {1, 2, 3, 4, 5, 6}), 11);  // {5, 6}
    EXPECT_DOUBLE_EQ(RegionRecorder::makespan(Schedule::interleaved, 3, {1, 2, 3, 4, 5, 6}), 9);  // {3, 6}
    EXPECT_DOUBLE_EQ(RegionRecorder::makespan(Schedule::dynamic, 3, {1, 2, 3, 4, 5, 6}), 9);  // {1, 4}, {2, 5}, {3, 6}
    EXPECT_DOUBLE_EQ(RegionRecorder::makespan(Schedule::dynamic, 16, {2, 3}), 3);
    EXPECT_DOUBLE_EQ(RegionRecorder::makespan(Schedule::interleaved, 1, {2, 3}), 5);
    EXPECT_DOUBLE_EQ(RegionRecorder::makespan(Schedule::dynamic, 4, {}), 0);
}

// While a recorder lives, a region that would open a team runs on the calling thread, each job once and timed; loops
// nested in a job, one-thread and one-job loops are not regions; another thread's loops are its own; the recorder ends
// with its scope, and a second one on the same thread is refused.
TEST(SupportThreads, RegionRecorderRunsEachRegionOnTheCallingThread) {
    const auto me = std::this_thread::get_id();
    std::vector<int> runs(10, 0);
    bool elsewhere = false;
    {
        RegionRecorder rec;
        EXPECT_THROW(RegionRecorder{}, ParameterError);
        parallel_for(
            4, runs.size(),
            [&](std::size_t i) {
                ++runs[i];
                elsewhere |= std::this_thread::get_id() != me;
                parallel_for(4, 3, [&](std::size_t) { elsewhere |= std::this_thread::get_id() != me; });
                std::this_thread::sleep_for(std::chrono::microseconds(i == 0 ? 2000 : 100));
            },
            Schedule::dynamic);
        parallel_for(1, 5, [&](std::size_t) {});
        parallel_for(8, 1, [&](std::size_t) {});
        parallel_for(8, 3, [&](std::size_t) {});
        std::thread other([] { parallel_for(2, 4, [](std::size_t) {}); });
        other.join();
        ASSERT_EQ(rec.regions().size(), 2u);
        const auto& g = rec.regions()[0];
        EXPECT_EQ(g.how, Schedule::dynamic);
        EXPECT_EQ(g.threads, 4);
        ASSERT_EQ(g.jobs.size(), 10u);
        EXPECT_GE(g.jobs[0], 0.0019);
        for (double j : g.jobs) EXPECT_GE(j, 0.00009);
        EXPECT_GE(g.end - g.start, 0.0028);
        EXPECT_NE(g.site.find("RegionRecorderRunsEachRegionOnTheCallingThread"), std::string::npos) << g.site;
        EXPECT_EQ(rec.regions()[1].threads, 3);  // 3 jobs: a team of 3
        EXPECT_EQ(rec.regions()[1].how, Schedule::interleaved);
        EXPECT_GE(rec.elapsed(), g.end);
    }
    EXPECT_EQ(runs, std::vector<int>(10, 1));
    EXPECT_FALSE(elsewhere);
    EXPECT_FALSE(RegionRecorder::recording());
    RegionRecorder again;  // the first one ended
    EXPECT_TRUE(RegionRecorder::recording());
}
