// A host model of an asynchronous execution space instance, for the tests of temporaries
// ordered between instances (kbuf/instance_order.hpp). Serial and OpenMP instances finish
// their kernels before the call returns, so the host cannot show the hazard of a GPU stream:
// here work submitted to an instance runs later, in submission order, on a thread of its own,
// so that memory reused without an order is read or written while the late work still runs.
// A held instance runs nothing until it is let go, which makes "late" deterministic.
//
// Copies refer to the same instance (as Kokkos instances do). kbuf::instance_order is
// specialized for it: an event is a count of the work submitted; a wait is work that blocks the
// instance's thread (never the host) until the other instance has run that much; a host wait
// blocks the host and is counted (AsyncInstance::host_waits()).
#ifndef KBUF_TEST_ASYNC_INSTANCE_HPP
#define KBUF_TEST_ASYNC_INSTANCE_HPP

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <kbuf/instance_order.hpp>

namespace kbuf_test {

class AsyncInstance {
 public:
  struct Event {
    std::shared_ptr<void> state;  // the instance's (kept alive by the event)
    std::uint64_t ticket = 0;     // reached when the instance has run this much work
  };

  explicit AsyncInstance(std::string name) : s_(std::make_shared<State>(std::move(name))) {
    s_->worker = std::thread([s = s_.get()] { s->run(); });
  }

  /// Runs `work` on the instance's thread after everything submitted before it.
  void submit(std::function<void()> work) const {
    {
      std::lock_guard<std::mutex> lock(s_->m);
      s_->queue.push_back(std::move(work));
      ++s_->submitted;
    }
    s_->cv.notify_all();
  }
  /// Holds the instance: it runs nothing until `go()`.
  void hold() const {
    std::lock_guard<std::mutex> lock(s_->m);
    s_->held = true;
  }
  void go() const {
    {
      std::lock_guard<std::mutex> lock(s_->m);
      s_->held = false;
    }
    s_->cv.notify_all();
  }
  /// The host waits until everything submitted so far has run.
  void fence() const { wait_for(s_.get(), submitted()); }
  Event record() const { return Event{s_, submitted()}; }
  /// The instance's later work comes after `e` (its thread waits; the host does not).
  void wait(const Event& e) const {
    State* other = static_cast<State*>(e.state.get());
    if (other == s_.get()) return;
    submit([state = e.state, t = e.ticket] { wait_for(static_cast<State*>(state.get()), t); });
  }
  static void host_wait(const Event& e) {
    ++host_wait_count();
    wait_for(static_cast<State*>(e.state.get()), e.ticket);
  }
  std::uintptr_t key() const noexcept { return reinterpret_cast<std::uintptr_t>(s_.get()); }
  const std::string& name() const noexcept { return s_->name; }
  /// Host waits on events of any model instance, since the program started.
  static std::size_t host_waits() { return host_wait_count().load(); }

 private:
  struct State {
    explicit State(std::string n) : name(std::move(n)) {}
    ~State() {
      {
        std::lock_guard<std::mutex> lock(m);
        held = false;
        stop = true;
      }
      cv.notify_all();
      if (worker.joinable()) worker.join();
    }
    void run() {
      std::unique_lock<std::mutex> lock(m);
      for (;;) {
        cv.wait(lock, [this] { return (!held && !queue.empty()) || (stop && queue.empty()); });
        if (queue.empty()) return;
        std::function<void()> work = std::move(queue.front());
        queue.pop_front();
        lock.unlock();
        work();
        lock.lock();
        ++done;
        cv.notify_all();
      }
    }
    std::string name;
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::function<void()>> queue;
    std::uint64_t submitted = 0;
    std::uint64_t done = 0;
    bool held = false;
    bool stop = false;
    std::thread worker;
  };

  std::uint64_t submitted() const {
    std::lock_guard<std::mutex> lock(s_->m);
    return s_->submitted;
  }
  static void wait_for(State* s, std::uint64_t ticket) {
    std::unique_lock<std::mutex> lock(s->m);
    s->cv.wait(lock, [&] { return s->done >= ticket; });
  }
  static std::atomic<std::size_t>& host_wait_count() {
    static std::atomic<std::size_t> n{0};
    return n;
  }

  std::shared_ptr<State> s_;
};

}  // namespace kbuf_test

namespace kbuf {

template <>
struct is_instance<kbuf_test::AsyncInstance> : std::true_type {};

template <>
struct instance_order<kbuf_test::AsyncInstance, void> {
  using I = kbuf_test::AsyncInstance;
  using event = I::Event;
  static std::uintptr_t key(const I& exec) noexcept { return exec.key(); }
  static event record(const I& exec) { return exec.record(); }
  static void wait(const I& exec, const event& e) { exec.wait(e); }
  static void host_wait(const event& e) { I::host_wait(e); }
  static void release(event&) noexcept {}
  static std::string describe(const I& exec) { return "model instance '" + exec.name() + "'"; }
  template <class MemorySpace>
  static void fill(const I& exec, void* p, std::size_t n, unsigned char byte) {
    exec.submit([p, n, byte] { std::memset(p, byte, n); });
  }
  template <class MemorySpace>
  static std::size_t count_other(const I& exec, const void* p, std::size_t n, unsigned char byte) {
    auto other = std::make_shared<std::size_t>(0);
    exec.submit([p, n, byte, other] {
      const auto* b = static_cast<const unsigned char*>(p);
      for (std::size_t i = 0; i < n; ++i) *other += b[i] != byte ? 1 : 0;
    });
    exec.fence();
    return *other;
  }
};

}  // namespace kbuf

#endif  // KBUF_TEST_ASYNC_INSTANCE_HPP
