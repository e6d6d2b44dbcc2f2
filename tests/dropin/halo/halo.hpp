// halo: a small particle-halo library shaped like Cabana's (Cabana_Halo.hpp of Cabana 0.6.1), for
// kbuf's drop-in tests. It is compiled on its own (kbuf_test_halo, and as a shared library
// built with hidden visibility) and knows nothing of its callers: its free functions gather()
// and scatter() build a Gather or a Scatter on every call, and those allocate fresh send and
// receive buffers, zero-filled, as Cabana's do; a KeptGather is built once and applied at every
// step, as Cabana's createGather gives. Nothing about kbuf shows in this header. Inside
// (halo.cpp), kbuf is an optional dependency: the buffers are temporaries under the library's
// own scopes when the library is built with kbuf (plain Views, exactly as before, until a caller
// makes an allocator current), and plain Views when it is built without.
//
// One process holds everything: the "neighbour" a buffer is sent to is this process itself, so
// the message is a deep_copy from the send buffer into the receive buffer, where Cabana posts
// MPI_Send and MPI_Irecv.
#ifndef KBUF_TEST_HALO_HPP
#define KBUF_TEST_HALO_HPP

#include <Kokkos_Core.hpp>

#if defined(KBUF_TEST_HALO_FOREIGN) && KBUF_TEST_HALO_FOREIGN
#include "foreign_kernels.hpp"
#endif

#include <cstddef>
#include <memory>

#if defined(_WIN32)
#define HALO_API
#else
#define HALO_API __attribute__((visibility("default")))
#endif

namespace halo {

/// Where the library's data and buffers live: the default execution space's memory, or, in the
/// build over the foreign space (tests/support/foreign_space.hpp), that space.
#if defined(KBUF_TEST_HALO_FOREIGN) && KBUF_TEST_HALO_FOREIGN
using memory_space = kbuf_test::foreign_space;
#else
using memory_space = Kokkos::DefaultExecutionSpace::memory_space;
#endif
/// The execution space of the library's kernels.
using execution_space = memory_space::execution_space;
/// Particle data: one row per element (the owned ones first, then the ghosts), one column per
/// component.
using Data = Kokkos::View<double**, Kokkos::LayoutRight, memory_space>;
/// Element indices.
using Ids = Kokkos::View<int*, memory_space>;

/// Which owned element each ghost copies: ghost i (row num_owned() + i of the data) is a copy of
/// owned element export_ids()(i). An owned element may have any number of ghosts.
class Halo {
 public:
  Halo(std::size_t num_owned, const Ids& export_ids)
      : num_owned_(num_owned), export_ids_(export_ids) {}
  std::size_t num_owned() const { return num_owned_; }
  std::size_t num_ghost() const { return export_ids_.extent(0); }
  const Ids& export_ids() const { return export_ids_; }

 private:
  std::size_t num_owned_;
  Ids export_ids_;
};

/// Sets every ghost's components to those of the owned element it copies. Allocates its send
/// and receive buffers on every call.
HALO_API void gather(const Halo& halo, const Data& data);

/// Adds every ghost's components into the owned element it copies (the ghosts stay as they
/// are). Allocates its send and receive buffers on every call.
HALO_API void scatter(const Halo& halo, const Data& data);

/// A gather built once and applied at every step (Cabana's createGather): its buffers are
/// allocated when it is built and live as long as it, whatever scopes its caller opened then.
class HALO_API KeptGather {
 public:
  KeptGather(const Halo& halo, const Data& data);
  ~KeptGather();
  KeptGather(KeptGather&&) noexcept;
  KeptGather& operator=(KeptGather&&) noexcept;
  /// Sets every ghost's components to those of the owned element it copies.
  void apply();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace halo

#endif
