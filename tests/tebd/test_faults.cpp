// The aliased-temporary fault changes the physics: the checks of the runs would see it.
#include <doctest/doctest.h>

#include "tebd_test_support.hpp"

#include <cmath>

using namespace kbuf_tebd_test;

TEST_CASE("an aliased temporary gives a wrong energy with kbuf, none with fresh Views") {
  RunParams p;
  p.model = Model::ising;
  p.field = 0.5;
  p.chi = 8;
  p.schedule = Schedule::quick();
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
