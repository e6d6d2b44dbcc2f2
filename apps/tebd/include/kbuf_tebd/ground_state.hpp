#ifndef KBUF_TEBD_GROUND_STATE_HPP
#define KBUF_TEBD_GROUND_STATE_HPP

/// @file
/// Imaginary-time evolution to the ground state: second-order Trotter steps
/// exp(-dt/2 H_AB) exp(-dt H_BA) exp(-dt/2 H_AB) over a decreasing schedule of time steps.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <kbuf_tebd/itebd.hpp>

namespace kbuf_tebd {

/// One time step of the schedule and the most Trotter steps taken at it.
struct Stage {
  double dt;
  std::size_t max_steps;
};

/// The time steps and when to leave each.
struct Schedule {
  /// Decreasing time steps. The first stage evolves the initial product state and is the
  /// longest; the later ones remove the Trotter error (O(dt^2) in the state) step by step.
  std::vector<Stage> stages{{0.1, 4000},   {0.05, 1000},  {0.02, 1000}, {0.01, 1000},
                            {0.005, 1000}, {0.002, 1000}, {0.001, 1000}};
  /// Trotter steps between two checks of convergence (and progress reports).
  std::size_t steps_per_check = 10;
  /// A stage is left when the energy (the canonical-form estimate) changes by less than this
  /// per unit of imaginary time between two checks (and at least two checks were made).
  double tolerance = 1e-9;

  /// A short schedule for tests: three time steps, at most 300 steps each.
  static Schedule quick();
};

/// One run's parameters.
struct RunParams {
  Model model = Model::ising;
  double field = 1.0;
  std::size_t chi = 32;  ///< the largest bond dimension
  /// Singular values below cutoff times the largest are dropped (bounds Lambda^-1).
  double cutoff = 1e-10;
  Schedule schedule;
  std::uint64_t seed = 2007;  ///< of the initial random product state
  Faults faults;              ///< test-only
  /// When given: the memory allocations made so far in the memory space (a counter's, e.g.
  /// kbuf_timing::AllocationCounter's for this thread). The run then records how many it made,
  /// and how many of them after warm-up.
  std::function<std::size_t()> allocations;
};

/// The state at one check (after a whole number of Trotter steps).
struct TracePoint {
  std::size_t step = 0;  ///< Trotter steps so far
  double dt = 0;
  double energy = 0;              ///< the canonical-form estimate (energy_per_site)
  double energy_environment = 0;  ///< with exact environments, at the end of a time step; else 0
  std::size_t chi = 0;            ///< the larger of the two bond dimensions now
  std::size_t chi_bonds[2] = {0, 0};
  /// max over both bonds of |Lambda - Lambda_before|_2 / (steps dt) since the previous check
  double lambda_rate = 0;
  /// |energy - energy at the previous check| / (steps dt); the stage's first check: 0
  double energy_rate = 0;
  double seconds = 0;  ///< since the run started
  // The allocator's figures (kbuf; zero otherwise), since the run started.
  std::size_t capacity = 0, high_water_mark = 0, peak_used = 0, fallbacks = 0, regrows = 0;
  std::size_t temporaries = 0;  ///< handed out by the Temporaries since the run started
};

/// A run's outcome.
struct RunResult {
  double energy = 0;  ///< per site, with exact environments (energy_per_site_environment)
  double exact = 0;
  std::size_t steps = 0;
  double seconds = 0;           ///< wall time of the whole run (evolution and checks)
  std::size_t chi_reached = 0;  ///< the largest bond dimension the state had
  /// The step at which warm-up ended: the bond dimensions had stopped growing, and every kind
  /// of work had run at them (the updates of both bonds, a convergence check and the energy
  /// with exact environments), so every temporary had had its largest size once.
  std::size_t step_warm = 0;
  std::size_t temporaries = 0;
  std::size_t fallbacks = 0, regrows = 0;         ///< kbuf only
  std::size_t fallbacks_warming_up = 0;           ///< up to step_warm
  std::size_t fallbacks_after_warm_up = 0;        ///< after it
  std::size_t capacity = 0, high_water_mark = 0;  ///< kbuf only, at the end
  /// Memory allocations in the memory space during the run, and after warm-up (with
  /// RunParams::allocations; else 0).
  std::size_t allocations = 0, allocations_after_warm_up = 0;
  bool svd_fallback = false;               ///< some SVD needed dgesvd
  std::size_t environment_iterations = 0;  ///< of the final energy's power iterations
  bool environment_converged = false;
  std::vector<TracePoint> trace;
};

/// Progress reports, one per check.
using ProgressFn = std::function<void(const TracePoint&)>;

/// Evolves a random product state to the ground state of `p.model` and returns the energy per
/// site. With kbuf temporaries the allocator's counters restart (`reset_peaks`) at the start.
RunResult ground_state(Temporaries& tmp, const RunParams& p, const ProgressFn& progress = {});

}  // namespace kbuf_tebd

#endif  // KBUF_TEBD_GROUND_STATE_HPP
