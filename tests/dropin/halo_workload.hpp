// The workload the drop-in tests run through the halo library: four halos over 300 owned
// elements of 3 components, passes of gather, update and scatter, and the same passes on the
// host with plain loops as the reference. Integer arithmetic in doubles, exact: every run must
// give the reference's bits.
#ifndef KBUF_TEST_HALO_WORKLOAD_HPP
#define KBUF_TEST_HALO_WORKLOAD_HPP

#include <Kokkos_Core.hpp>

#include "halo.hpp"

#include <cstddef>
#include <vector>

namespace halo_workload {

constexpr std::size_t num_owned = 300;
constexpr std::size_t comps = 3;
constexpr std::size_t num_halos = 4;            // ghost counts differ between them
constexpr std::size_t steps = 2 * num_halos;    // one pass: every halo twice
constexpr std::size_t max_ghost = 60 + 37 * 3;  // the largest halo's ghosts
constexpr std::size_t rows = num_owned + max_ghost;
constexpr long modulus = 1009;

inline std::size_t num_ghost(std::size_t k) {
  return 60 + 37 * k;
}
// The owned element ghost i of halo k copies: owned elements are copied by up to three ghosts.
inline int export_id(std::size_t k, std::size_t i) {
  return static_cast<int>((i * 7 + k * 13) % num_owned);
}
inline double initial(std::size_t i, std::size_t c) {
  return static_cast<double>((i * 31 + c * 7) % 101);
}

// The step between gather and scatter, on the owned elements and the halo's ghosts: integer
// arithmetic in doubles, exact (every value stays far below 2^53), so every run must give the
// same bits as the host reference.
struct Update {
  halo::Data data;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    for (std::size_t c = 0; c < data.extent(1); ++c) {
      const long v = static_cast<long>(data(i, c));
      data(i, c) = static_cast<double>((v * 3 + static_cast<long>(i + c)) % modulus);
    }
  }
};
struct Fill {
  halo::Data data;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    for (std::size_t c = 0; c < data.extent(1); ++c) {
      data(i, c) = static_cast<double>((i * 31 + c * 7) % 101);
    }
  }
};

// The halos, made once (their export ids are the caller's, not per-call buffers).
inline std::vector<halo::Halo> make_halos() {
  std::vector<halo::Halo> halos;
  for (std::size_t k = 0; k < num_halos; ++k) {
    halo::Ids ids("export_ids", num_ghost(k));
    auto host = Kokkos::create_mirror_view(ids);
    for (std::size_t i = 0; i < num_ghost(k); ++i) host(i) = export_id(k, i);
    Kokkos::deep_copy(ids, host);
    halos.emplace_back(num_owned, ids);
  }
  return halos;
}

// Particle data in its initial state.
inline halo::Data make_data() {
  halo::Data data("particles", rows, comps);
  Kokkos::parallel_for("fill", Kokkos::RangePolicy<halo::execution_space>(0, rows), Fill{data});
  Kokkos::fence();
  return data;
}

// One pass: `steps` steps of gather, update, scatter. Only kernels over ranges, fences and
// copies between Views: what Kokkos 3.4's Serial backend can take from several threads at once.
inline void run_pass(const std::vector<halo::Halo>& halos, const halo::Data& data) {
  for (std::size_t s = 0; s < steps; ++s) {
    const halo::Halo& h = halos[s % num_halos];
    halo::gather(h, data);
    Kokkos::parallel_for("update",
                         Kokkos::RangePolicy<halo::execution_space>(0, num_owned + h.num_ghost()),
                         Update{data});
    Kokkos::fence();
    halo::scatter(h, data);
  }
}

inline std::vector<double> to_host(const halo::Data& data) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), data);
  return std::vector<double>(host.data(), host.data() + rows * comps);
}

// The same passes on the host with plain loops.
inline std::vector<double> reference(std::size_t passes) {
  std::vector<double> d(rows * comps);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t c = 0; c < comps; ++c) d[i * comps + c] = initial(i, c);
  }
  for (std::size_t p = 0; p < passes; ++p) {
    for (std::size_t s = 0; s < steps; ++s) {
      const std::size_t k = s % num_halos;
      for (std::size_t i = 0; i < num_ghost(k); ++i) {  // gather
        for (std::size_t c = 0; c < comps; ++c) {
          d[(num_owned + i) * comps + c] = d[export_id(k, i) * comps + c];
        }
      }
      for (std::size_t i = 0; i < num_owned + num_ghost(k); ++i) {  // update
        for (std::size_t c = 0; c < comps; ++c) {
          const long v = static_cast<long>(d[i * comps + c]);
          d[i * comps + c] = static_cast<double>((v * 3 + static_cast<long>(i + c)) % modulus);
        }
      }
      for (std::size_t i = 0; i < num_ghost(k); ++i) {  // scatter
        for (std::size_t c = 0; c < comps; ++c) {
          d[export_id(k, i) * comps + c] += d[(num_owned + i) * comps + c];
        }
      }
    }
  }
  return d;
}

}  // namespace halo_workload

#endif
