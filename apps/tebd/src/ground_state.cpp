// The imaginary-time evolution: stages of decreasing time step, checks of convergence.
#include <kbuf_tebd/ground_state.hpp>

#include <kbuf_timing/harness.hpp>  // the clock and timing code kbuf-demo and kbuf-bench use

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace kbuf_tebd {

Schedule Schedule::quick() {
  Schedule s;
  s.stages = {{0.1, 300}, {0.02, 300}, {0.005, 300}};
  s.tolerance = 1e-7;
  return s;
}

namespace {

using host_vector = std::vector<double>;

host_vector to_host(const Vector& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return host_vector(h.data(), h.data() + h.extent(0));
}

double distance(const host_vector& a, const host_vector& b) {
  const std::size_t n = std::max(a.size(), b.size());
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = i < a.size() ? a[i] : 0.0, y = i < b.size() ? b[i] : 0.0;
    sum += (x - y) * (x - y);
  }
  return std::sqrt(sum);
}

}  // namespace

RunResult ground_state(Temporaries& tmp, const RunParams& p, const ProgressFn& progress) {
  const auto start = kbuf_timing::clock_type::now();
  auto seconds = [&] { return kbuf_timing::seconds_since(start); };
  kbuf::BufferAllocator<space>* alloc = tmp.allocator();
  if (alloc != nullptr) alloc->reset_peaks();
  const std::size_t count0 = tmp.count();
  auto allocations = [&p] { return p.allocations ? p.allocations() : std::size_t{0}; };
  const std::size_t allocations0 = allocations();
  std::size_t allocations_warm = 0;

  RunResult r;
  r.exact = exact_energy(p.model, p.field);
  const TwoSiteOperator h = bond_hamiltonian(p.model, p.field);
  const Tensor h_tensor = to_tensor(h, "kbuf_tebd::H");
  State st = random_product_state(p.seed);
  std::size_t step = 0;

  auto check = [&](double dt) {
    TracePoint t;
    t.step = step;
    t.dt = dt;
    t.energy = energy_per_site(tmp, st, h_tensor, p.faults);
    t.chi = std::max(st.chi(0), st.chi(1));
    t.chi_bonds[0] = st.chi(0);
    t.chi_bonds[1] = st.chi(1);
    t.seconds = seconds();
    if (alloc != nullptr) {
      const kbuf::Statistics s = alloc->statistics();
      t.capacity = alloc->capacity();
      t.high_water_mark = alloc->high_water_mark();
      t.peak_used = s.peak_used;
      t.fallbacks = s.fallbacks;
      t.regrows = s.regrows;
    }
    t.temporaries = tmp.count() - count0;
    r.trace.push_back(t);
    if (progress) progress(t);
    return t;
  };

  // Warm-up ends once the bond dimensions have stopped growing and every kind of work has run
  // at them: the updates of both bonds (an update of bond x reads both dimensions; its SVD's
  // size is set by the other bond's), the convergence check, and the energy with exact
  // environments (at the end of a stage only). Every scope has then had its largest
  // temporaries once, and the buffer has grown to hold them: fallbacks from then on are those
  // "after warm-up". (Where the SVD's arrays are host mirrors rather than temporaries, as in
  // CUDA and HIP builds, the environment energy holds more at once than a bond update.)
  enum Work { update_bond_0, update_bond_1, convergence_check, environment_energy, kinds };
  std::size_t largest[2] = {st.chi(0), st.chi(1)};
  bool pending[kinds] = {true, true, true, true};
  bool warm = false;
  auto done = [&](Work w) {
    bool grew = false;
    for (int b = 0; b < 2; ++b) {
      if (st.chi(b) > largest[b]) {
        largest[b] = st.chi(b);
        grew = true;
      }
    }
    if (grew) {  // this work read the old dimensions: every kind waits again
      for (bool& k : pending) k = true;
      warm = false;
      return;
    }
    if (warm) return;
    pending[w] = false;
    for (const bool k : pending) {
      if (k) return;
    }
    warm = true;
    r.step_warm = step;
    r.fallbacks_warming_up = alloc != nullptr ? alloc->statistics().fallbacks : 0;
    allocations_warm = allocations();
  };

  // Every stage's gates up front: the run allocates nothing of its own once it is warm.
  std::vector<std::pair<Tensor, Tensor>> gates;
  for (const Stage& stage : p.schedule.stages) {
    gates.emplace_back(
        to_tensor(normalised_imaginary_time_gate(h, stage.dt / 2), "kbuf_tebd::gate(dt/2)"),
        to_tensor(normalised_imaginary_time_gate(h, stage.dt), "kbuf_tebd::gate(dt)"));
  }
  for (std::size_t stage_index = 0; stage_index < p.schedule.stages.size(); ++stage_index) {
    const Stage& stage = p.schedule.stages[stage_index];
    const double dt = stage.dt;
    const Tensor& half = gates[stage_index].first;
    const Tensor& whole = gates[stage_index].second;
    std::size_t at_this_dt = 0, checks = 0;
    double previous_energy = 0;
    while (at_this_dt < stage.max_steps) {
      const host_vector before[2] = {to_host(st.lambda[0]), to_host(st.lambda[1])};
      const std::size_t n = std::min(p.schedule.steps_per_check, stage.max_steps - at_this_dt);
      // n second-order steps  AB(dt/2) BA(dt) AB(dt/2)  with the adjacent half steps on AB
      // merged: AB(dt/2) [BA(dt) AB(dt)]^(n-1) BA(dt) AB(dt/2).
      auto update = [&](int x, const Tensor& gate) {
        const UpdateInfo info = update_bond(tmp, st, x, gate, p.chi, p.cutoff, p.faults);
        r.svd_fallback = r.svd_fallback || info.svd_fallback;
        done(x == 0 ? update_bond_0 : update_bond_1);
      };
      update(0, half);
      for (std::size_t i = 0; i + 1 < n; ++i) {
        update(1, whole);
        update(0, whole);
      }
      update(1, whole);
      update(0, half);
      step += n;
      at_this_dt += n;
      const double energy = check(dt).energy;
      done(convergence_check);
      if (warm && p.faults.late_fallback && alloc != nullptr) {
        auto scope = alloc->scope();
        (void)alloc->allocate<unsigned char*>(alloc->capacity() + 1);
      }
      const double tau = static_cast<double>(n) * dt;
      const double change = std::max(distance(before[0], to_host(st.lambda[0])),
                                     distance(before[1], to_host(st.lambda[1])));
      r.trace.back().lambda_rate = change / tau;
      const double energy_rate = std::fabs(energy - previous_energy) / tau;
      r.trace.back().energy_rate = energy_rate;
      previous_energy = energy;
      if (++checks >= 2 && energy_rate < p.schedule.tolerance) break;
    }
    // The energy with exact environments at the end of each time step.
    const EnvironmentEnergy e =
        energy_per_site_environment(tmp, st, h_tensor, 1e-13, 20000, p.faults);
    r.trace.back().energy_environment = e.energy;
    r.energy = e.energy;
    r.environment_iterations = e.iterations;
    r.environment_converged = e.converged;
    done(environment_energy);
  }

  r.steps = step;
  r.seconds = seconds();
  r.temporaries = tmp.count() - count0;
  r.chi_reached = std::max(largest[0], largest[1]);
  if (!warm) {  // warming up until the end
    r.step_warm = step;
    r.fallbacks_warming_up = alloc != nullptr ? alloc->statistics().fallbacks : 0;
    allocations_warm = allocations();
  }
  r.allocations = allocations() - allocations0;
  r.allocations_after_warm_up = allocations() - allocations_warm;
  if (alloc != nullptr) {
    const kbuf::Statistics s = alloc->statistics();
    r.fallbacks = s.fallbacks;
    r.regrows = s.regrows;
    r.fallbacks_after_warm_up = s.fallbacks - r.fallbacks_warming_up;
    r.capacity = alloc->capacity();
    r.high_water_mark = alloc->high_water_mark();
  }
  return r;
}

}  // namespace kbuf_tebd
