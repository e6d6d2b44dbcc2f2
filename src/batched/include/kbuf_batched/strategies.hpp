// The strategies that give the fits' kernels (fits.hpp) their memory, run and timed on the host:
// kbuf workspaces (per team, per thread), level-0/1 team scratch sized for the largest entry,
// and one flat View cut into fixed slots by hand (per team, per thread).
#ifndef KBUF_BATCHED_STRATEGIES_HPP
#define KBUF_BATCHED_STRATEGIES_HPP

#include <kbuf/kbuf.hpp>
#include <kbuf_batched/fits.hpp>
#include <kbuf_batched/problems.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace kbuf_batched {

/// What one strategy did.
struct StrategyResult {
  std::string name;  ///< "kbuf workspace", "level-1 scratch", "fixed slots"
  bool per_thread = false;
  bool ran = true;              ///< false: it could not run (the note says why)
  std::vector<double> seconds;  ///< each timed run (rounds before the first complete run: not)
  std::size_t bytes = 0;        ///< bytes it holds for the kernels' arrays
  int rounds = 1;               ///< runs until one completed (the workspace learns in these)
  int failed = 0;               ///< entries not fitted in the timed runs
  std::size_t fallbacks = 0;    ///< a workspace's takes served outside its slots and lanes
  std::vector<std::vector<double>> x;  ///< host copies of the fits, one per solver (last run)
  std::string note;
  /// The median of the timed runs.
  double median_seconds() const {
    if (seconds.empty()) return 0;
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
};

/// How the strategies run.
struct RunOptions {
  int repeat = 5;        ///< timed runs of each strategy
  unsigned methods = 7;  ///< bit i: solver i runs (team_methods / thread_methods)
  int max_rounds = 8;    ///< a workspace that has not completed after this many runs fails
};

namespace Impl {
// WorkspaceReport::fallbacks where the workspace reports it (0 otherwise).
template <class R>
auto fallbacks_of(const R& r, int) -> decltype(static_cast<std::size_t>(r.fallbacks)) {
  return static_cast<std::size_t>(r.fallbacks);
}
template <class R>
std::size_t fallbacks_of(const R&, long) {
  return 0;
}
}  // namespace Impl

/// Runs the strategies over one batch in memory space `Space`, on one instance of its execution
/// space. Host code: not thread-safe.
template <class Space>
class Runner {
 public:
  using exec = typename Space::execution_space;
  using team_policy = Kokkos::TeamPolicy<exec>;
  using token_type =
      Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global>;

  explicit Runner(const Batch& b, const exec& instance = exec())
      : batch_(b),
        instance_(instance),
        device_(b),
        x_("fits", rhs_count * b.coefficients, method_count),
        failed_("failed", 1) {
    for (int e = 0; e < b.count; ++e) {
      team_need_ = std::max(team_need_, team_need_bytes(b.m[e], b.n[e]));
      thread_need_ = std::max(thread_need_, thread_need_bytes(b.m[e], b.n[e]));
    }
  }

  /// The largest entry's need in the team and the thread kernels.
  std::size_t team_need() const { return team_need_; }
  std::size_t thread_need() const { return thread_need_; }
  const exec& instance() const { return instance_; }

  /// The per-team policy the team strategies run (one entry per team).
  team_policy policy() const { return team_policy(instance_, batch_.count, Kokkos::AUTO); }

  /// kbuf: a per_team workspace that starts from a guess of 0 bytes and learns, run until a
  /// run completes (rounds), then `repeat` timed runs.
  StrategyResult team_workspace(const RunOptions& o) {
    StrategyResult r;
    r.name = "kbuf workspace";
    kbuf::BufferAllocator<Space> alloc(instance_, 0);
    const TeamFit<Space> f = team_fit(o);
    const team_policy p = policy();
    return workspace_runs(
        r, o, alloc,
        [&](kbuf::Workspace<Space>& ws) {
          Kokkos::parallel_for("kbuf_batched: team, kbuf workspace", p,
                               TeamWithWorkspace<Space>{f, ws});
        },
        [&](kbuf::BufferAllocator<Space>& a) {
          return a.workspace(p, kbuf::per_team{0}, "kbuf_batched team fits");
        });
  }

  /// Level-0 team scratch of the largest entry's need where it fits, else level 1.
  StrategyResult team_scratch(const RunOptions& o) {
    StrategyResult r;
    const TeamFit<Space> f = team_fit(o);
    const std::size_t need = team_need_;
    team_policy p0 = policy();
    p0.set_scratch_size(0, Kokkos::PerTeam(need));
    const int level = need <= static_cast<std::size_t>(p0.scratch_size_max(0)) ? 0 : 1;
    team_policy p = policy();
    p.set_scratch_size(level, Kokkos::PerTeam(need));
    r.name = "level-" + std::to_string(level) + " scratch";
    const std::size_t most = static_cast<std::size_t>(p.scratch_size_max(level));
    r.bytes = teams_in_flight() * need;
    if (need > most) {
      r.ran = false;
      r.note = "needs " + std::to_string(need) + " B per team, level " + std::to_string(level) +
               " holds " + std::to_string(most) + " B";
      return r;
    }
    for (int k = 0; k < o.repeat; ++k) {
      clear();
      Kokkos::Timer timer;
      Kokkos::parallel_for("kbuf_batched: team, scratch", p,
                           TeamWithScratch<Space>{f, level, need});
      instance_.fence();
      r.seconds.push_back(timer.seconds());
      r.failed += failures();
    }
    r.x = fits();
    r.note = std::to_string(teams_in_flight()) + " teams in flight x " + std::to_string(need) +
             " B, the largest entry's need";
    return r;
  }

  /// One flat View of a slot per UniqueToken value, each the largest entry's need.
  StrategyResult team_slots(const RunOptions& o) {
    StrategyResult r;
    r.name = "fixed slots";
    const TeamFit<Space> f = team_fit(o);
    const token_type token(instance_);
    const std::size_t slot = team_need_;
    const Kokkos::View<unsigned char*, Space> slots(
        Kokkos::view_alloc(std::string("kbuf_batched fixed slots"), Kokkos::WithoutInitializing),
        slot * static_cast<std::size_t>(token.size()));
    r.bytes = slots.span();
    const team_policy p = policy();
    for (int k = 0; k < o.repeat; ++k) {
      clear();
      Kokkos::Timer timer;
      Kokkos::parallel_for("kbuf_batched: team, fixed slots", p,
                           TeamWithSlots<Space>{f, slots, slot, token});
      instance_.fence();
      r.seconds.push_back(timer.seconds());
      r.failed += failures();
    }
    r.x = fits();
    r.note = std::to_string(token.size()) + " slots x " + std::to_string(slot) +
             " B, the largest entry's need, offsets by hand";
    return r;
  }

#if KBUF_BATCHED_THREAD_SOLVERS
  /// kbuf: a per_thread workspace (one arena per UniqueToken value), learning as team_workspace.
  StrategyResult thread_workspace(const RunOptions& o) {
    StrategyResult r;
    r.name = "kbuf workspace";
    r.per_thread = true;
    kbuf::BufferAllocator<Space> alloc(instance_, 0);
    const ThreadFit<Space> f = thread_fit(o);
    const token_type token(instance_);
    const Kokkos::RangePolicy<exec> p(instance_, 0, batch_.count);
    return workspace_runs(
        r, o, alloc,
        [&](kbuf::Workspace<Space>& ws) {
          Kokkos::parallel_for("kbuf_batched: thread, kbuf workspace", p,
                               ThreadWithWorkspace<Space>{f, ws, token});
        },
        [&](kbuf::BufferAllocator<Space>& a) {
          return a.workspace(p, kbuf::per_thread{0}, "kbuf_batched thread fits");
        });
  }

  /// One flat View of a slot per UniqueToken value, each the largest entry's need.
  StrategyResult thread_slots(const RunOptions& o) {
    StrategyResult r;
    r.name = "fixed slots";
    r.per_thread = true;
    const ThreadFit<Space> f = thread_fit(o);
    const token_type token(instance_);
    const std::size_t slot = thread_need_;
    const Kokkos::View<unsigned char*, Space> slots(
        Kokkos::view_alloc(std::string("kbuf_batched fixed slots"), Kokkos::WithoutInitializing),
        slot * static_cast<std::size_t>(token.size()));
    r.bytes = slots.span();
    const Kokkos::RangePolicy<exec> p(instance_, 0, batch_.count);
    for (int k = 0; k < o.repeat; ++k) {
      clear();
      Kokkos::Timer timer;
      Kokkos::parallel_for("kbuf_batched: thread, fixed slots", p,
                           ThreadWithSlots<Space>{f, slots, slot, token});
      instance_.fence();
      r.seconds.push_back(timer.seconds());
      r.failed += failures();
    }
    r.x = fits();
    r.note = std::to_string(token.size()) + " slots x " + std::to_string(slot) +
             " B, the largest entry's need, offsets by hand";
    return r;
  }
#endif

  /// Teams that can be in flight at once (team size 1 on the host): what scratch is held for.
  std::size_t teams_in_flight() const {
    return std::min<std::size_t>(static_cast<std::size_t>(instance_.concurrency()),
                                 static_cast<std::size_t>(batch_.count));
  }

 private:
  TeamFit<Space> team_fit(const RunOptions& o) const {
    TeamFit<Space> f;
    f.b = device_;
    f.x = x_;
    f.failed = failed_;
    f.methods = o.methods;
    return f;
  }
#if KBUF_BATCHED_THREAD_SOLVERS
  ThreadFit<Space> thread_fit(const RunOptions& o) const {
    ThreadFit<Space> f;
    f.b = device_;
    f.x = x_;
    f.failed = failed_;
    f.methods = o.methods;
    return f;
  }
#endif

  // Runs of a learning workspace: until one completes (rounds), then o.repeat timed ones.
  template <class Launch, class Make>
  StrategyResult workspace_runs(StrategyResult& r, const RunOptions& o,
                                kbuf::BufferAllocator<Space>& alloc, const Launch& launch,
                                const Make& make) {
    kbuf::WorkspaceReport last;
    int runs = 0;
    bool complete = false;
    while (static_cast<int>(r.seconds.size()) < o.repeat) {
      clear();
      Kokkos::Timer timer;
      auto scope = alloc.scope();
      kbuf::Workspace<Space> ws = make(alloc);
      launch(ws);
      last = ws.finish();
      const double t = timer.seconds();
      ++runs;
      if (!complete) {
        if (last.complete() && failures() == 0) {
          complete = true;
          r.rounds = runs;
        } else if (runs >= o.max_rounds) {
          r.rounds = runs;
          r.failed = failures();
          r.ran = true;
          r.note = "no complete run in " + std::to_string(runs) + " rounds";
          r.x = fits();
          return r;
        }
        if (!complete) continue;
      }
      r.seconds.push_back(t);
      r.bytes = ws.bytes();
      r.failed += failures();
      r.fallbacks += Impl::fallbacks_of(last, 0);
    }
    r.x = fits();
    r.note = "slot " + std::to_string(last.slot_bytes) + " B x " + std::to_string(last.slots) +
             ", lanes " + std::to_string(last.spill_lanes) + " x " +
             std::to_string(last.lane_bytes) + " B, " + std::to_string(last.spilling_arenas) +
             " spilled";
    return r;
  }

  void clear() {
    Kokkos::deep_copy(instance_, x_, 0.0);
    Kokkos::deep_copy(instance_, failed_, 0);
    instance_.fence();
  }

  int failures() const {
    int h = 0;
    Kokkos::deep_copy(h, Kokkos::subview(failed_, 0));
    return h;
  }

  std::vector<std::vector<double>> fits() const {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x_);
    std::vector<std::vector<double>> out(method_count);
    for (int k = 0; k < method_count; ++k) {
      out[k].resize(h.extent(0));
      for (std::size_t i = 0; i < h.extent(0); ++i) out[k][i] = h(i, k);
    }
    return out;
  }

  const Batch& batch_;
  exec instance_;
  DeviceBatch<Space> device_;
  FitsView<Space> x_;
  Kokkos::View<int*, Space> failed_;
  std::size_t team_need_ = 0;
  std::size_t thread_need_ = 0;
};

}  // namespace kbuf_batched

#endif  // KBUF_BATCHED_STRATEGIES_HPP
