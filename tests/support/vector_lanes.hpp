// A model, on host threads, of a GPU's team with vector lanes: every thread of the team and every
// vector lane of each thread is a host thread of its own, as a GPU runs each lane as a device
// thread (a block of team size x vector length threads). Its members derive from
// kbuf::Impl::EmulatedTeamMember, so kbuf sees them as a device's: a per_thread arena made with
// `arena(team)` is shared by the vector lanes of one thread, a per_team arena by every lane of
// the team, and they meet for the arena's collective steps through `meet` (what Kokkos' single
// and barriers are on a GPU).
//
// `EmulatedTeams::run(f)` calls `f(member)` on league x team x vector host threads at once, each
// with its own member. A member's `vector_barrier()` and `team_barrier()` are what
// `Kokkos::single(PerThread)` with a fence, and `team_barrier()`, are to a kernel; a lane loop
// `for (j = member.lane(); j < n; j += member.vector_length())` is a `ThreadVectorRange`. A lane
// held longer than `hold_ms` at a meeting (its group never came: a deadlock on a GPU) is let go,
// counted in `overdue()` and said on stderr, so that the test ends and says so.
#ifndef KBUF_TEST_VECTOR_LANES_HPP
#define KBUF_TEST_VECTOR_LANES_HPP

#include <kbuf/kbuf.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kbuf_test {

class EmulatedTeams {
  // The lanes that meet together: one thread's vector lanes, or a whole team's.
  struct Group {
    int size = 0;
    std::mutex m;
    std::condition_variable cv;
    int arrived = 0;
    unsigned long long generation = 0;
    alignas(16) unsigned char value[64] = {};
  };

 public:
  EmulatedTeams(int league, int team, int vector, int hold_ms = 20000)
      : league_(league), team_(team), vector_(vector), hold_(hold_ms) {
    for (int t = 0; t < league * team; ++t) groups_.emplace_back(new Group());
    for (int l = 0; l < league; ++l) groups_.emplace_back(new Group());
    for (int t = 0; t < league * team; ++t) groups_[static_cast<std::size_t>(t)]->size = vector;
    for (int l = 0; l < league; ++l)
      groups_[static_cast<std::size_t>(league * team + l)]->size = team * vector;
  }
  EmulatedTeams(const EmulatedTeams&) = delete;
  EmulatedTeams& operator=(const EmulatedTeams&) = delete;

  class Member : public kbuf::Impl::EmulatedTeamMember {
   public:
    Member(EmulatedTeams& teams, int league_rank, int team_rank, int lane)
        : teams_(&teams), league_rank_(league_rank), team_rank_(team_rank), lane_(lane) {}
    KOKKOS_INLINE_FUNCTION int league_rank() const { return league_rank_; }
    KOKKOS_INLINE_FUNCTION int league_size() const { return teams_->league_; }
    KOKKOS_INLINE_FUNCTION int team_rank() const { return team_rank_; }
    KOKKOS_INLINE_FUNCTION int team_size() const { return teams_->team_; }
    KOKKOS_INLINE_FUNCTION int lane() const { return lane_; }
    int vector_length() const override { return teams_->vector_; }
    void meet(bool per_thread, void (*run)(void*, void*), void* ctx, void* out,
              std::size_t bytes) const override {
      teams_->meet(per_thread ? thread_group() : team_group(), run, ctx, out, bytes);
    }
    /// The thread's vector lanes meet (their writes before are seen after).
    void vector_barrier() const { meet(true, nullptr, nullptr, nullptr, 0); }
    /// Every lane of the team meets.
    void team_barrier() const { meet(false, nullptr, nullptr, nullptr, 0); }

   private:
    Group& thread_group() const {
      return *teams_->groups_[static_cast<std::size_t>(league_rank_ * teams_->team_ + team_rank_)];
    }
    Group& team_group() const {
      return *teams_->groups_[static_cast<std::size_t>(teams_->league_ * teams_->team_ +
                                                       league_rank_)];
    }
    EmulatedTeams* teams_;
    int league_rank_, team_rank_, lane_;
  };

  /// Calls `f(member)` on every lane of every thread of every team, each a host thread, all at
  /// once.
  template <class F>
  void run(F f) {
    const int n = league_ * team_ * vector_;
    std::atomic<int> started{0};
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i]() {
        const Member m(*this, i / (team_ * vector_), (i / vector_) % team_, i % vector_);
        ++started;
        while (started.load() < n) std::this_thread::yield();
        f(m);
      });
    }
    for (auto& t : threads) t.join();
  }

  /// Lanes let go at a meeting their group never completed: 0 when every lane came.
  int overdue() const { return overdue_.load(); }
  /// Meetings that ran a function (kbuf's single steps: slot claims, spills, the arena's end).
  long singles() const { return singles_.load(); }

 private:
  void meet(Group& g, void (*run)(void*, void*), void* ctx, void* out, std::size_t bytes) {
    if (bytes > sizeof(g.value)) {
      std::fprintf(stderr, "vector lanes model: a meeting's value of %zu bytes is too large\n",
                   bytes);
      std::abort();
    }
    std::unique_lock<std::mutex> lock(g.m);
    const unsigned long long generation = g.generation;
    if (++g.arrived == g.size) {
      // The last lane to arrive runs the step for all, as one lane does on a GPU.
      if (run != nullptr) {
        run(ctx, out);
        std::memcpy(g.value, out, bytes);
        ++singles_;
      }
      g.arrived = 0;
      ++g.generation;
      g.cv.notify_all();
      return;
    }
    if (!g.cv.wait_for(lock, hold_, [&] { return g.generation != generation; })) {
      ++overdue_;
      std::fprintf(stderr,
                   "vector lanes model: a lane held %lld ms is let go (its group did not "
                   "all come)\n",
                   static_cast<long long>(hold_.count()));
      return;
    }
    if (run != nullptr) std::memcpy(out, g.value, bytes);
  }

  const int league_, team_, vector_;
  const std::chrono::milliseconds hold_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::atomic<int> overdue_{0};
  std::atomic<long> singles_{0};
};

}  // namespace kbuf_test

#endif
