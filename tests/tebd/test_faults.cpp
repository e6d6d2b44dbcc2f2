// Faults the checks must see: an aliased temporary changes the physics, a need the warm-up
// missed shows as fallbacks after warm-up; and the allocations a run makes, counted.
#include <doctest/doctest.h>

#include "tebd_test_support.hpp"

#include <kbuf_timing/allocations.hpp>

#include <cmath>

using namespace kbuf_tebd_test;

namespace {

// A short Ising run at chi = 8 (quick schedule).
RunParams quick_ising(double field) {
  RunParams p;
  p.model = Model::ising;
  p.field = field;
  p.chi = 8;
  p.schedule = Schedule::quick();
  return p;
}

}  // namespace

TEST_CASE("an aliased temporary gives a wrong energy with kbuf, none with fresh Views") {
  RunParams p = quick_ising(0.5);
  p.faults.alias_theta_factors = true;
  for (TemporaryPolicy policy : all_policies) {
    CAPTURE(std::string(kbuf_tensor::to_string(policy)));
    Source src(policy);
    double error = 0;
    try {
      const RunResult r = ground_state(*src.tmp, p);
      error = std::fabs(r.energy - r.exact) / std::fabs(r.exact);
    } catch (const std::exception& e) {  // LAPACK may refuse the garbage
      MESSAGE("the faulty run threw: " << e.what());
      error = 1;
    }
    if (policy == TemporaryPolicy::kbuf) {
      CHECK(!(error <= 1e-2));  // far outside any tolerance (or not a number)
    } else {
      CHECK(error <= 1e-8);  // fresh Views cannot alias: the fault has no effect
    }
  }
}

TEST_CASE("a need the warm-up missed is counted as fallbacks after warm-up") {
  RunParams p = quick_ising(0.5);
  {
    Source src(TemporaryPolicy::kbuf);
    const RunResult r = ground_state(*src.tmp, p);
    CHECK(r.fallbacks_after_warm_up == 0);
    CHECK(r.fallbacks == r.fallbacks_warming_up);
  }
  p.faults.late_fallback = true;
  Source src(TemporaryPolicy::kbuf);
  const RunResult r = ground_state(*src.tmp, p);
  CHECK(r.step_warm < r.steps);  // warm-up ended before the run did: there were checks after it
  CHECK(r.fallbacks_after_warm_up > 0);
  CHECK(r.fallbacks_after_warm_up == r.fallbacks - r.fallbacks_warming_up);
  CHECK(src.alloc->empty());
}

TEST_CASE("after warm-up kbuf allocates nothing in the memory space, fresh Views allocate") {
  const kbuf_timing::AllocationCounter counter(kbuf_tebd::space::name());
  RunParams p = quick_ising(1.5);
  p.allocations = [] { return kbuf_timing::AllocationCounter::now().allocations; };
  std::size_t kbuf_allocations = 0;
  for (TemporaryPolicy policy : all_policies) {
    CAPTURE(std::string(kbuf_tensor::to_string(policy)));
    Source src(policy);  // the allocator before the counter counts: made above it, as here
    const auto before = kbuf_timing::AllocationCounter::now();
    const RunResult r = ground_state(*src.tmp, p);
    const auto made = kbuf_timing::AllocationCounter::now() - before;
    CHECK(r.allocations == made.allocations);
    CHECK(r.step_warm < r.steps);
    if (policy == TemporaryPolicy::kbuf) {
      CHECK(r.allocations > 0);  // its buffers while it grew, the state's tensors
      CHECK(r.allocations_after_warm_up == 0);
      kbuf_allocations = r.allocations;
    } else {
      // Every temporary is an allocation: at least one per temporary after warm-up.
      CHECK(r.allocations > 10 * kbuf_allocations);
      CHECK(r.allocations_after_warm_up > 0);
    }
  }
}
