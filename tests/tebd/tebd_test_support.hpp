// Helpers shared by the kbuf_tebd tests.
#ifndef KBUF_TEBD_TEST_SUPPORT_HPP
#define KBUF_TEBD_TEST_SUPPORT_HPP

#include <kbuf_tebd/kbuf_tebd.hpp>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace kbuf_tebd_test {

using namespace kbuf_tebd;
using kbuf_tensor::TemporaryPolicy;
using Alloc = kbuf::BufferAllocator<space>;

inline const TemporaryPolicy all_policies[] = {TemporaryPolicy::kbuf, TemporaryPolicy::fresh_views,
                                               TemporaryPolicy::fresh_views_initialized};

/// Temporaries of one policy, with their allocator (kbuf) owned alongside.
struct Source {
  std::unique_ptr<Alloc> alloc;
  std::unique_ptr<Temporaries> tmp;

  explicit Source(TemporaryPolicy policy) {
    if (policy == TemporaryPolicy::kbuf) {
      alloc = std::make_unique<Alloc>();
      tmp = std::make_unique<Temporaries>(*alloc);
    } else {
      tmp = std::make_unique<Temporaries>(policy);
    }
  }
};

/// A host copy of a View's elements.
inline std::vector<double> to_host(const Vector& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

/// A managed View holding `values`.
inline Vector to_device(const std::vector<double>& values) {
  Vector v("test vector", values.size());
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < values.size(); ++i) h(i) = values[i];
  Kokkos::deep_copy(v, h);
  return v;
}

/// Uniform random numbers in [-1, 1].
inline std::vector<double> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

}  // namespace kbuf_tebd_test

#endif  // KBUF_TEBD_TEST_SUPPORT_HPP
