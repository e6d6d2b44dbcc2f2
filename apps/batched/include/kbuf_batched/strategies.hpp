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
#include <functional>
#include <memory>
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
  std::size_t fallbacks = 0;    ///< a workspace's takes served outside its slots and lanes while
                                ///< it learned (its rounds), where the workspace reports them
  std::size_t allocator_fallbacks = 0;  ///< a workspace's allocator: fallbacks, all runs
  std::size_t allocator_regrows = 0;    ///< and regrowths of its buffer
  std::vector<std::vector<double>> x;   ///< host copies of the fits, one per solver (last run)
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

/// Runs the strategies over one batch in memory space `Space`, on one instance of its execution
/// space: each strategy's warm-up first (a workspace's rounds), then RunOptions::repeat timed
/// runs of every strategy, interleaved, so that a machine's changing load weighs on all of them
/// alike. Host code: not thread-safe.
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

  /// The per-team policy the team strategies run (one entry per team).
  team_policy policy() const { return team_policy(instance_, batch_.count, Kokkos::AUTO); }

  /// Teams that can be in flight at once (team size 1 on the host): what scratch is held for.
  std::size_t teams_in_flight() const {
    return std::min<std::size_t>(static_cast<std::size_t>(instance_.concurrency()),
                                 static_cast<std::size_t>(batch_.count));
  }

  /// The team kernels (an entry per team) from, in this order: a kbuf per_team workspace that
  /// starts from a guess of 0 bytes and learns (rounds: runs until one completes), level-0
  /// scratch of the largest entry's need where it fits (else level 1), and one flat View cut
  /// into a fixed slot per UniqueToken value, each the largest entry's need.
  std::vector<StrategyResult> team(const RunOptions& o) {
    const TeamFit<Space> f = fit<TeamFit<Space>>(o);
    const team_policy p = policy();
    std::vector<Plan> plans;

    // kbuf workspace.
    auto alloc = std::make_shared<kbuf::BufferAllocator<Space>>(
        instance_, 0, kbuf::BufferAllocator<Space>::default_alignment, "kbuf_batched team");
    plans.push_back(workspace_plan(alloc, [=](kbuf::BufferAllocator<Space>& a) {
      auto ws = a.workspace(p, kbuf::per_team{0}, "kbuf_batched team fits");
      Kokkos::parallel_for("kbuf_batched: team, kbuf workspace", p,
                           TeamWithWorkspace<Space>{f, ws});
      return ws;
    }));

    // Level-0/1 scratch.
    {
      Plan s;
      const std::size_t need = team_need_;
      team_policy p0 = policy();
      p0.set_scratch_size(0, Kokkos::PerTeam(need));
      const int level = need <= static_cast<std::size_t>(p0.scratch_size_max(0)) ? 0 : 1;
      team_policy ps = policy();
      ps.set_scratch_size(level, Kokkos::PerTeam(need));
      s.r.name = "level-" + std::to_string(level) + " scratch";
      s.r.bytes = teams_in_flight() * need;
      const std::size_t most = static_cast<std::size_t>(ps.scratch_size_max(level));
      if (need > most) {
        s.r.ran = false;
        s.r.note = "needs " + std::to_string(need) + " B per team, level " + std::to_string(level) +
                   " holds " + std::to_string(most) + " B";
      } else {
        s.r.note = std::to_string(teams_in_flight()) + " teams in flight x " +
                   std::to_string(need) + " B, the largest entry's need";
        s.once = [=]() {
          Kokkos::parallel_for("kbuf_batched: team, scratch", ps,
                               TeamWithScratch<Space>{f, level, need});
          instance_.fence();
        };
      }
      plans.push_back(std::move(s));
    }

    // Fixed slots.
    plans.push_back(slots_plan<TeamWithSlots<Space>>(f, team_need_, p));
    return run(plans, o);
  }

#if KBUF_BATCHED_THREAD_SOLVERS
  /// The thread kernels (an entry per thread of a RangePolicy) from a kbuf per_thread workspace
  /// (an arena per UniqueToken value), learning as in team(), and from fixed slots.
  std::vector<StrategyResult> thread(const RunOptions& o) {
    const ThreadFit<Space> f = fit<ThreadFit<Space>>(o);
    const Kokkos::RangePolicy<exec> p(instance_, 0, batch_.count);
    const token_type token(instance_);
    std::vector<Plan> plans;
    auto alloc = std::make_shared<kbuf::BufferAllocator<Space>>(
        instance_, 0, kbuf::BufferAllocator<Space>::default_alignment, "kbuf_batched thread");
    plans.push_back(workspace_plan(alloc, [=](kbuf::BufferAllocator<Space>& a) {
      auto ws = a.workspace(p, kbuf::per_thread{0}, "kbuf_batched thread fits");
      Kokkos::parallel_for("kbuf_batched: thread, kbuf workspace", p,
                           ThreadWithWorkspace<Space>{f, ws, token});
      return ws;
    }));
    plans.push_back(slots_plan<ThreadWithSlots<Space>>(f, thread_need_, p));
    for (Plan& plan : plans) plan.r.per_thread = true;
    return run(plans, o);
  }
#endif

 private:
  // One strategy: its result so far, its warm-up (one run; true once a run completed; may be
  // empty), one run of its kernel, fenced, and what it adds to the result after a timed run.
  struct Plan {
    StrategyResult r;
    std::function<bool(StrategyResult&)> warm_up;
    std::function<void()> once;
    std::function<void(StrategyResult&)> after;
  };

  template <class Fit>
  Fit fit(const RunOptions& o) const {
    Fit f;
    f.b = device_;
    f.x = x_;
    f.failed = failed_;
    f.methods = o.methods;
    return f;
  }

  // A learning workspace: `launch(alloc)` makes it, runs the kernel and returns it unfinished.
  template <class Launch>
  Plan workspace_plan(const std::shared_ptr<kbuf::BufferAllocator<Space>>& alloc,
                      const Launch& launch) {
    Plan w;
    w.r.name = "kbuf workspace";
    auto last = std::make_shared<kbuf::WorkspaceReport>();
    auto bytes = std::make_shared<std::size_t>(0);
    const auto once = [=]() {
      auto scope = alloc->scope();
      kbuf::Workspace<Space> ws = launch(*alloc);
      *last = ws.finish();
      *bytes = ws.bytes();
    };
    w.once = once;
    w.warm_up = [this, once, last](StrategyResult& r) {
      once();
      r.fallbacks += last->fallbacks;
      return last->complete() && failures() == 0;
    };
    w.after = [alloc, last, bytes](StrategyResult& r) {
      r.bytes = *bytes;
      r.allocator_fallbacks = alloc->statistics().fallbacks;  // since it was made
      r.allocator_regrows = alloc->statistics().regrows;
      r.note = "slot " + std::to_string(last->slot_bytes) + " B x " + std::to_string(last->slots) +
               ", lanes " + std::to_string(last->spill_lanes) + " x " +
               std::to_string(last->lane_bytes) + " B, " + std::to_string(last->spilling_arenas) +
               " spilled, " + std::to_string(last->lanes_missed) + " found every lane taken";
    };
    return w;
  }

  // One flat View of a slot of `slot` bytes per UniqueToken value, the functor F over it.
  template <class F, class Fit, class Policy>
  Plan slots_plan(const Fit& f, std::size_t slot, const Policy& p) {
    Plan s;
    s.r.name = "fixed slots";
    const token_type token(instance_);
    const Kokkos::View<unsigned char*, Space> slots(
        Kokkos::view_alloc(std::string("kbuf_batched fixed slots"), Kokkos::WithoutInitializing),
        slot * static_cast<std::size_t>(token.size()));
    s.r.bytes = slots.span();
    s.r.note = std::to_string(token.size()) + " slots x " + std::to_string(slot) +
               " B, the largest entry's need, offsets by hand";
    s.once = [=]() {
      Kokkos::parallel_for("kbuf_batched: fixed slots", p, F{f, slots, slot, token});
      instance_.fence();
    };
    return s;
  }

  std::vector<StrategyResult> run(std::vector<Plan>& plans, const RunOptions& o) {
    for (Plan& plan : plans) {
      if (!plan.r.ran || !plan.warm_up) continue;
      plan.r.rounds = 0;
      bool complete = false;
      while (!complete && plan.r.rounds < o.max_rounds) {
        clear();
        complete = plan.warm_up(plan.r);
        ++plan.r.rounds;
      }
      if (!complete) {
        plan.r.failed = failures();
        plan.r.note = "no complete run in " + std::to_string(plan.r.rounds) + " rounds";
        plan.r.x = fits();
        plan.once = nullptr;
      }
    }
    for (int k = 0; k < o.repeat; ++k) {
      for (Plan& plan : plans) {
        if (!plan.r.ran || !plan.once) continue;
        clear();
        Kokkos::Timer timer;
        plan.once();
        plan.r.seconds.push_back(timer.seconds());
        plan.r.failed += failures();
        if (plan.after) plan.after(plan.r);
        if (k + 1 == o.repeat) plan.r.x = fits();
      }
    }
    std::vector<StrategyResult> out;
    for (Plan& plan : plans) out.push_back(std::move(plan.r));
    return out;
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
