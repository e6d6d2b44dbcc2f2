// The two-site environment network: correctness against naive loops, and kbuf's steady state.
#include <doctest/doctest.h>

#include "tensor_test_support.hpp"
#include "test_support.hpp"   // tests/support: ScopedEnv
#include "tool_recorder.hpp"  // tests/instances: Kokkos Tools events

#include <thread>

#include <cstdlib>

using namespace kbuf_tensor_test;

TEST_CASE_TEMPLATE("the staged loop reference equals the nine-index loop nest", T, double,
                   Kokkos::complex<double>) {
  const auto net = random_host_network<T>(3, 2, 11);
  CHECK(relative_error(reference_hraa(net), reference_hraa_direct(net)) < 1e-13);
}

TEST_CASE_TEMPLATE("the network and its expectation value match the naive loops", T, double,
                   Kokkos::complex<double>) {
  struct Size {
    std::size_t bond, phys;
  };
  for (const Size sz : {Size{3, 2}, Size{6, 2}, Size{5, 3}, Size{16, 2}}) {
    CAPTURE(sz.bond);
    CAPTURE(sz.phys);
    const auto host = random_host_network<T>(sz.bond, sz.phys, 5);
    const auto net = to_device<T, space>(host);
    const auto hraa = make_hraa(net);
    Alloc alloc;
    const T e = contract_network(alloc, net, hraa);
    const auto got = to_host(hraa);
    const auto ref = reference_hraa(host);
    CHECK(relative_error(got, ref) < 1e-12);
    if (sz.bond <= 6) CHECK(relative_error(got, reference_hraa_direct(host)) < 1e-12);
    CHECK(relative_error(e, reference_expectation_value(host, ref)) < 1e-12);
    CHECK(alloc.empty());
  }
}

TEST_CASE_TEMPLATE(
    "after one warm-up, repeated contractions serve every temporary from the buffer "
    "and keep the high-water mark",
    T, double, Kokkos::complex<double>) {
  const auto host = random_host_network<T>(8, 2, 3);
  const auto net = to_device<T, space>(host);
  const auto hraa = make_hraa(net);
  Alloc alloc;  // empty: the warm-up grows it
  Tmp tmp(alloc);

  const T e0 = contract_network(tmp, net, hraa);
  const auto first = to_host(hraa);
  CHECK(alloc.empty());
  CHECK(alloc.statistics().fallbacks > 0);  // nothing fitted in the empty buffer
  CHECK(alloc.capacity() >= alloc.high_water_mark());

  const auto warm = alloc.statistics();
  const std::size_t hwm = alloc.high_water_mark();
  const std::size_t capacity = alloc.capacity();
  const std::size_t per_network = tmp.count();
  CHECK(per_network == 7);
  for (int rep = 0; rep < 5; ++rep) {
    CAPTURE(rep);
    const T e = contract_network(tmp, net, hraa);
    CHECK(alloc.empty());
    CHECK(alloc.statistics().fallbacks == warm.fallbacks);
    CHECK(alloc.statistics().regrows == warm.regrows);
    CHECK(alloc.high_water_mark() == hwm);
    CHECK(alloc.capacity() == capacity);
    CHECK(alloc.statistics().temporaries == warm.temporaries + per_network * (rep + 1));
    CHECK(e == e0);
    CHECK(relative_error(to_host(hraa), first) == 0.0);
  }
  CHECK(tmp.count() == 6 * per_network);
}

TEST_CASE_TEMPLATE("kbuf temporaries and fresh Views with and without initialisation agree", T,
                   double, Kokkos::complex<double>) {
  const auto host = random_host_network<T>(10, 2, 9);
  const auto net = to_device<T, space>(host);
  Alloc alloc(1 << 10);  // too small at first: fallbacks, then regrowth
  Tmp kb(alloc);
  Tmp plain(TemporaryPolicy::fresh_views);
  Tmp zeroed(TemporaryPolicy::fresh_views_initialized);
  const auto h1 = make_hraa(net), h2 = make_hraa(net), h3 = make_hraa(net);
  T e1(0);
  for (int rep = 0; rep < 2; ++rep) e1 = contract_network(kb, net, h1);
  const T e2 = contract_network(plain, net, h2);
  const T e3 = contract_network(zeroed, net, h3);
  const auto r1 = to_host(h1), r2 = to_host(h2), r3 = to_host(h3);
  CHECK(relative_error(r1, r2) < 1e-14);
  CHECK(relative_error(r1, r3) < 1e-14);
  CHECK(relative_error(e1, e2) < 1e-14);
  CHECK(relative_error(e1, e3) < 1e-14);
  CHECK(relative_error(r1, reference_hraa(host)) < 1e-12);
  CHECK(kb.count() == 2 * plain.count());
  CHECK(plain.count() == zeroed.count());
  CHECK(plain.policy() == TemporaryPolicy::fresh_views);
  CHECK(plain.allocator() == nullptr);
  CHECK(kb.allocator() == &alloc);
}

TEST_CASE("network_multiply_adds counts the pairwise order's multiply-adds") {
  // HRAA 2 D^3 d + D^3 d^2 + D^2 d^4 = 278528 at D = 32, d = 2; E adds D^3 d^2 + D^2 d^2.
  CHECK(network_multiply_adds(32, 2) == 278528.0 + 131072.0 + 4096.0);
  // The plans of the six steps add up to the same count; only the H step permutes.
  const NetworkPlan plan = plan_network<double>(4, 3);
  const ContractionPlan &p1 = plan.x1, &p2 = plan.x2, &p3 = plan.x3, &p4 = plan.hraa,
                        &p5 = plan.psi, &p6 = plan.energy;
  CHECK(p1.permutes() + p2.permutes() + p3.permutes() + p5.permutes() + p6.permutes() == 0);
  CHECK(p4.permutes() == 2);
  CHECK(p1.multiply_adds() + p2.multiply_adds() + p3.multiply_adds() + p4.multiply_adds() +
            p5.multiply_adds() + p6.multiply_adds() ==
        network_multiply_adds(4, 3));
}

TEST_CASE_TEMPLATE("a plan executed on tensors of other shapes throws and allocates nothing", T,
                   double, Kokkos::complex<double>) {
  const auto net = to_device<T, space>(random_host_network<T>(4, 2, 1));
  const auto hraa = make_hraa(net);
  const NetworkPlan other = plan_network<T>(5, 2);
  Alloc alloc;
  Tmp tmp(alloc);
  CHECK_THROWS_AS(contract_network(tmp, other, net, hraa), kbuf::logic_error);
  CHECK(alloc.empty());
  CHECK(tmp.count() == 0);
  const NetworkPlan plan = plan_network<T>(4, 2);
  const auto wrong = make_tensor<T, space>("HRAA", {4, 2, 2, 5});
  CHECK_THROWS_AS(contract_network(tmp, plan, net, wrong), kbuf::logic_error);
  CHECK(alloc.empty());
  const T e1 = contract_network(tmp, plan, net, hraa);
  const T e2 = contract_network(tmp, net, hraa);
  CHECK(e1 == e2);
}

using Exec = space::execution_space;

// The instances a test contracts on: two distinct ones where Kokkos makes them (partition_space,
// Kokkos >= 4.2; an OpenMP instance needs a thread of its own), else the default instance.
std::vector<Exec> test_instances() {
#if KOKKOS_VERSION >= 40200
  if (!std::is_same<Exec, Kokkos::DefaultHostExecutionSpace>::value || Exec().concurrency() >= 2) {
    return Kokkos::Experimental::partition_space(Exec(), std::vector<int>{1, 1});
  }
#endif
  return {Exec()};
}

TEST_CASE_TEMPLATE(
    "a contraction runs every kernel on its temporaries' instance and fences no other", T, double,
    Kokkos::complex<double>) {
  const auto host = random_host_network<T>(8, 2, 21);
  const auto net = to_device<T, space>(host);
  const auto ref = reference_hraa(host);
  const T ref_e = reference_expectation_value(host, ref);
  for (const Exec& exec : test_instances()) {
    const auto hraa = make_hraa(net);
    Alloc alloc(exec);
    Tmp kb(alloc);
    Tmp fresh(TemporaryPolicy::fresh_views, exec);
    const NetworkPlan plan = plan_network<T>(8, 2);
    contract_network(kb, plan, net, hraa);  // warm-up: grows the buffer
    exec.fence();
    T e(0);
    {
      kbuf_test::ToolRecorder rec;
      e = contract_network(kb, plan, net, hraa);
#if KOKKOS_VERSION >= 40000
      const std::uint32_t id = Kokkos::Tools::Experimental::device_id(exec);
      std::size_t permutes = 0;
      for (const auto& ev : rec.events()) {
        CAPTURE(ev.name);
        if (ev.kind == kbuf_test::ToolEvent::kernel) {
          CHECK(ev.device_id == id);  // permutes, and GEMM kernels where they are Kokkos kernels
          permutes += ev.name == "kbuf::permute" ? 1 : 0;
        }
      }
      CHECK(permutes == 2);  // the H step permutes X3 and its product
#if KBUF_TENSOR_BLAS_TAKES_INSTANCE
      CHECK(rec.global_fences() == 0);  // nothing freed, and GEMM/dot take the instance
#endif
#endif
    }
    CHECK(relative_error(to_host(hraa), ref) < 1e-12);
    CHECK(relative_error(e, ref_e) < 1e-12);
    const auto h2 = make_hraa(net);
    CHECK(relative_error(contract_network(fresh, plan, net, h2), ref_e) < 1e-12);
    CHECK(relative_error(to_host(h2), ref) < 1e-12);
  }
}

TEST_CASE_TEMPLATE("threads contracting on their own instances get the reference results", T,
                   double, Kokkos::complex<double>) {
#if KOKKOS_VERSION < 30500
  // Kokkos 3.4's Serial backend shares one scratch buffer between all kernels with no lock:
  // kernels from several host threads race. Nothing to run concurrently there.
  MESSAGE("Kokkos " << KOKKOS_VERSION << ": kernels from several host threads are not safe");
#else
  const std::vector<Exec> instances = test_instances();
  const std::size_t n = instances.size() < 2 ? 2 : instances.size();
  std::vector<HostNetwork<T> > hosts;
  std::vector<Network<T, space> > nets;
  std::vector<Tensor<T, space> > results;
  for (std::size_t t = 0; t < n; ++t) {
    hosts.push_back(random_host_network<T>(12, 2, 30 + t));
    nets.push_back(to_device<T, space>(hosts.back()));
    results.push_back(make_hraa(nets.back()));
  }
  std::vector<T> energies(n);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      Alloc alloc(instances[t % instances.size()]);
      Tmp tmp(alloc);
      const NetworkPlan plan = plan_network<T>(12, 2);
      for (int rep = 0; rep < 20; ++rep)
        energies[t] = contract_network(tmp, plan, nets[t], results[t]);
      alloc.execution_space_instance().fence();
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t t = 0; t < n; ++t) {
    CAPTURE(t);
    const auto ref = reference_hraa(hosts[t]);
    CHECK(relative_error(to_host(results[t]), ref) < 1e-12);
    CHECK(relative_error(energies[t], reference_expectation_value(hosts[t], ref)) < 1e-12);
  }
#endif
}

TEST_CASE_TEMPLATE("pass-through mode contracts the network to the same bits as the buffer", T,
                   double, Kokkos::complex<double>) {
  const auto host = random_host_network<T>(9, 2, 21);
  const auto net = to_device<T, space>(host);
  const auto h_buffer = make_hraa(net), h_pass = make_hraa(net);
  Alloc buffered(1 << 10);  // fallbacks first, then a regrown buffer
  T e_buffer(0);
  for (int rep = 0; rep < 2; ++rep) e_buffer = contract_network(buffered, net, h_buffer);
  REQUIRE(!buffered.passthrough());

  Alloc pass = [] {
    const kbuf_test::ScopedEnv on("KBUF_PASSTHROUGH", "1");  // read when the allocator is made
    return Alloc(1 << 10);
  }();
  REQUIRE(pass.passthrough());
  T e_pass(0);
  for (int rep = 0; rep < 2; ++rep) e_pass = contract_network(pass, net, h_pass);
  CHECK(e_pass == e_buffer);
  CHECK(relative_error(to_host(h_pass), to_host(h_buffer)) == 0.0);
  CHECK(pass.capacity() == 0);
  CHECK(pass.statistics().fallbacks ==
        buffered.statistics().temporaries + buffered.statistics().fallbacks);
  CHECK(pass.high_water_mark() == buffered.high_water_mark());
  CHECK(pass.empty());
}
