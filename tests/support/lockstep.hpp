// A model, on host threads, of one wavefront of a GPU whose lanes run in lockstep (AMD's, and
// NVIDIA's before sm_70): the hooks of kbuf::Impl::NoLockstep, given to the debug team check
// (kbuf/impl/workspace_device.hpp) in its place.
//
// Each lane is a host thread; `Wavefront::lane(i)` is the hook object lane i passes. The model
// holds the threads as the hardware holds its lanes:
// - `enter()` (called by the test before each collective): every lane starts it together;
// - `step()` (a loop's top): every lane still in the loop runs the iteration together; `done()`:
//   the lane has left the loop, and waits at its end for the others;
// - `branch(taken)`: every lane (still in the loop) arrives; the lanes of the side that runs
//   first go on, the others are held until every lane of that side has reached `join()`; then
//   they run; `join()` returns when every lane has come to it. Which side runs first is the
//   model's setting, as it is the compiler's on the GPU: hipcc 5.2 at -O3 runs the side whose
//   condition is false first in kbuf 0.6.0's check.
// A lane held longer than `hold_ms` (a lane that waits on a held lane of its own wavefront: what
// hangs a GPU) is let go, counted in `overdue()` and said on stderr, so that the test ends and
// says so.
#ifndef KBUF_TEST_LOCKSTEP_HPP
#define KBUF_TEST_LOCKSTEP_HPP

#include <kbuf/kbuf.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

namespace kbuf_test {

class Wavefront {
 public:
  /// `lanes` lanes; `taken_first`: at a branch, the side whose condition is true runs first.
  Wavefront(int lanes, bool taken_first, int hold_ms = 30000)
      : lanes_(lanes), taken_first_(taken_first), hold_(hold_ms) {}
  Wavefront(const Wavefront&) = delete;
  Wavefront& operator=(const Wavefront&) = delete;

  /// Lane i's hooks (what the check calls).
  class Lane {
   public:
    // Host code only; callable from the check, which is host and device code.
    Lane(Wavefront& w) : w_(&w) {}
    KOKKOS_INLINE_FUNCTION void step() const { KBUF_IMPL_IF_ON_HOST((w_->step();)) }
    KOKKOS_INLINE_FUNCTION void branch(bool taken) const {
      KBUF_IMPL_IF_ON_HOST((w_->branch(taken);))
      (void)taken;
    }
    KOKKOS_INLINE_FUNCTION void join() const { KBUF_IMPL_IF_ON_HOST((w_->join();)) }
    KOKKOS_INLINE_FUNCTION void done() const { KBUF_IMPL_IF_ON_HOST((w_->done();)) }

   private:
    Wavefront* w_;
  };

  /// Every lane calls it before a collective: they start it together, all in its loops.
  void enter() {
    std::unique_lock<std::mutex> lock(m_);
    const unsigned long long gen = enter_gen_;
    if (++entered_ == lanes_) {
      entered_ = 0;
      active_ = lanes_;
      ++enter_gen_;
      cv_.notify_all();
      return;
    }
    wait(lock, [&] { return enter_gen_ != gen; });
  }

  /// Lanes the model had to let go (held past `hold_ms`): 0 when no lane waited on a held one.
  int overdue() const {
    std::lock_guard<std::mutex> lock(m_);
    return overdue_;
  }
  /// Branches at which both sides had lanes (the lanes parted).
  int parted() const {
    std::lock_guard<std::mutex> lock(m_);
    return parted_;
  }

 private:
  template <class Pred>
  void wait(std::unique_lock<std::mutex>& lock, Pred pred) {
    if (!cv_.wait_for(lock, hold_, pred)) {
      ++overdue_;
      std::fprintf(stderr,
                   "lockstep model: a lane held %lld ms is let go (a lane of its wavefront "
                   "waited on it)\n",
                   static_cast<long long>(hold_.count()));
    }
  }

  void step() {
    std::unique_lock<std::mutex> lock(m_);
    const unsigned long long gen = step_gen_;
    ++stepped_;
    if (!release_step()) wait(lock, [&] { return step_gen_ != gen; });
  }
  // Lets an iteration go once every lane still in the loop has come to its top.
  bool release_step() {
    if (stepped_ == 0 || stepped_ < active_) return false;
    stepped_ = 0;
    ++step_gen_;
    cv_.notify_all();
    return true;
  }

  // A lane that has left the loop waits at its end until every lane has (the lanes meet there
  // again), so that the branches after the loop have them all.
  void done() {
    std::unique_lock<std::mutex> lock(m_);
    const unsigned long long gen = done_gen_;
    --active_;
    ++left_;
    release_step();
    if (active_ == 0) {
      active_ = left_;
      left_ = 0;
      ++done_gen_;
      cv_.notify_all();
      return;
    }
    wait(lock, [&] { return done_gen_ != gen; });
  }

  void branch(bool taken) {
    std::unique_lock<std::mutex> lock(m_);
    const unsigned long long gen = branch_gen_;
    const bool first = taken == taken_first_;
    ++arrived_;
    if (first) ++first_;
    if (arrived_ == active_) {
      if (first_ > 0 && first_ < arrived_) ++parted_;
      second_may_run_ = first_ == 0;
      decided_ = true;
      cv_.notify_all();
    } else {
      wait(lock, [&] { return branch_gen_ != gen || decided_; });
    }
    if (!first) wait(lock, [&] { return branch_gen_ != gen || second_may_run_; });
    lane_first_local() = first;
  }

  void join() {
    std::unique_lock<std::mutex> lock(m_);
    const unsigned long long gen = branch_gen_;
    ++joined_;
    if (lane_first_local() && ++first_joined_ == first_) {
      second_may_run_ = true;
      cv_.notify_all();
    }
    if (joined_ == arrived_) {
      arrived_ = first_ = joined_ = first_joined_ = 0;
      decided_ = second_may_run_ = false;
      ++branch_gen_;
      cv_.notify_all();
      return;
    }
    wait(lock, [&] { return branch_gen_ != gen; });
  }

  // Which side this thread took at its current branch.
  static bool& lane_first_local() {
    thread_local bool first = false;
    return first;
  }

  const int lanes_;
  const bool taken_first_;
  const std::chrono::milliseconds hold_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  int overdue_ = 0, parted_ = 0;
  // enter()
  int entered_ = 0;
  unsigned long long enter_gen_ = 0;
  // step() and done()
  int active_ = 0, stepped_ = 0, left_ = 0;
  unsigned long long step_gen_ = 0, done_gen_ = 0;
  // branch() and join()
  int arrived_ = 0, first_ = 0, joined_ = 0, first_joined_ = 0;
  bool decided_ = false, second_may_run_ = false;
  unsigned long long branch_gen_ = 0;
};

}  // namespace kbuf_test

#endif
