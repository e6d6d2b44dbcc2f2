// The halo library's gather and scatter, built as Cabana 0.6.1 builds them (Cabana_Halo.hpp,
// Cabana_CommunicationPlan.hpp): a Gather or Scatter object holds the halo, the data and two
// buffer members; its constructor makes them empty, reserve() reallocates them zero-filled to
// the sizes of this call, apply() packs, sends, receives and unpacks; the free functions make
// one per call, so every call allocates fresh buffers.
//
// kbuf adopted as an optional dependency (kbuf_optional.hpp, copied from kbuf as it is: with
// kbuf when the library's build links kbuf::kbuf, plain Views without it, the same calls either
// way), in four places (marked "kbuf:"), each what Cabana's adoption changes too:
// 1. the library's owner, once: its scopes serve its own buffers only;
// 2. the empty buffers of the constructor: temporary of zero extents (no memory);
// 3. reallocate(): temporary where Kokkos::realloc allocated and zero-filled (no fill kept:
//    every element is written before it is read);
// 4. the free functions open a scope before they make their Gather or Scatter.
// temporary returns the plain View type of the members; with no current allocator, or outside
// the library's own scopes, it allocates as before: this library behaves as it did until its
// caller makes an allocator current, and a gather its caller keeps (KeptGather) holds plain
// Views whatever scope the caller opened around its construction.
#include "halo.hpp"

#include "kbuf_optional.hpp"

namespace halo {
namespace {

// [adopt_owner]
// kbuf: the library's owner: a scope of "halo" serves the temporaries of "halo" only.
struct halo_owner {
  static constexpr const char* name = "halo";
};
using buffers = kbuf_optional_v1::library<halo_owner>;
// [adopt_owner]

// The communication buffers: one row per element sent or received, one column per component
// (Cabana's CommunicationDataSlice::buffer_type).
using buffer_type = Kokkos::View<double**, Kokkos::LayoutRight, memory_space>;
using policy = Kokkos::RangePolicy<execution_space>;

// Owned elements into the send buffer, through the steering (the export ids).
struct PackOwned {
  buffer_type send;
  Data data;
  Ids steering;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    for (std::size_t c = 0; c < send.extent(1); ++c) send(i, c) = data(steering(i), c);
  }
};

// The receive buffer into the ghosts.
struct UnpackGhosts {
  buffer_type recv;
  Data data;
  std::size_t num_owned;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    for (std::size_t c = 0; c < recv.extent(1); ++c) data(num_owned + i, c) = recv(i, c);
  }
};

// The ghosts into the send buffer.
struct PackGhosts {
  buffer_type send;
  Data data;
  std::size_t num_owned;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    for (std::size_t c = 0; c < send.extent(1); ++c) send(i, c) = data(num_owned + i, c);
  }
};

// The receive buffer added into the owned elements the ghosts copy (several ghosts may copy one).
struct AddToOwned {
  buffer_type recv;
  Data data;
  Ids steering;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    for (std::size_t c = 0; c < recv.extent(1); ++c) {
      Kokkos::atomic_add(&data(steering(i), c), recv(i, c));
    }
  }
};

// Cabana's CommunicationData: the halo, the data, the buffers, and reserve().
class CommunicationData {
 public:
  CommunicationData(const Halo& halo, const Data& data)
      : halo_(halo),
        data_(data),
        // kbuf: was buffer_type(Kokkos::ViewAllocateWithoutInitializing("send_buffer"), 0, 0)
        send_buffer_(
            buffers::temporary<double**, Kokkos::LayoutRight, memory_space>("send_buffer", 0, 0)),
        // kbuf: was buffer_type(Kokkos::ViewAllocateWithoutInitializing("recv_buffer"), 0, 0)
        recv_buffer_(
            buffers::temporary<double**, Kokkos::LayoutRight, memory_space>("recv_buffer", 0, 0)) {}

 protected:
  // Grows the buffers to what this call sends and receives (Cabana: reserveImpl).
  void reserve(std::size_t num_send, std::size_t num_recv) {
    if (num_send > send_buffer_.extent(0)) reallocate(send_buffer_, "send_buffer", num_send);
    if (num_recv > recv_buffer_.extent(0)) reallocate(recv_buffer_, "recv_buffer", num_recv);
  }

  // The message to the neighbour, which is this process: Cabana posts MPI_Irecv and MPI_Send.
  void send_and_receive(std::size_t n) const {
    const std::pair<std::size_t, std::size_t> rows(0, n);
    Kokkos::deep_copy(Kokkos::subview(recv_buffer_, rows, Kokkos::ALL),
                      Kokkos::subview(send_buffer_, rows, Kokkos::ALL));
  }

  Halo halo_;
  Data data_;
  buffer_type send_buffer_;
  buffer_type recv_buffer_;

 private:
  // [adopt_buffer]
  void reallocate(buffer_type& buffer, const char* label, std::size_t rows) const {
    // kbuf: was Kokkos::realloc(buffer, rows, data_.extent(1)), which allocates and zero-fills;
    // every element is written (packed, or received) before it is read, so no fill is kept
    buffer = buffers::temporary<double**, Kokkos::LayoutRight, memory_space>(label, rows,
                                                                             data_.extent(1));
  }
  // [adopt_buffer]
};

class Gather : public CommunicationData {
 public:
  Gather(const Halo& halo, const Data& data) : CommunicationData(halo, data) {
    reserve(halo.num_ghost(), halo.num_ghost());
  }
  void apply() {
    const std::size_t n = halo_.num_ghost();
    Kokkos::parallel_for("halo::gather::pack", policy(0, n),
                         PackOwned{send_buffer_, data_, halo_.export_ids()});
    Kokkos::fence();
    send_and_receive(n);
    Kokkos::parallel_for("halo::gather::unpack", policy(0, n),
                         UnpackGhosts{recv_buffer_, data_, halo_.num_owned()});
    Kokkos::fence();
  }
};

class Scatter : public CommunicationData {
 public:
  Scatter(const Halo& halo, const Data& data) : CommunicationData(halo, data) {
    reserve(halo.num_ghost(), halo.num_ghost());
  }
  void apply() {
    const std::size_t n = halo_.num_ghost();
    Kokkos::parallel_for("halo::scatter::pack", policy(0, n),
                         PackGhosts{send_buffer_, data_, halo_.num_owned()});
    Kokkos::fence();
    send_and_receive(n);
    Kokkos::parallel_for("halo::scatter::add", policy(0, n),
                         AddToOwned{recv_buffer_, data_, halo_.export_ids()});
    Kokkos::fence();
  }
};

}  // namespace

// [adopt_scope]
void gather(const Halo& halo, const Data& data) {
  auto scope = buffers::scope<memory_space>();  // kbuf: releases this call's buffers at '}'
  Gather g(halo, data);
  g.apply();
}
// [adopt_scope]

void scatter(const Halo& halo, const Data& data) {
  auto scope = buffers::scope<memory_space>();  // kbuf: releases this call's buffers at '}'
  Scatter s(halo, data);
  s.apply();
}

// Cabana's createGather: the object its caller keeps, built outside the library's scopes.
struct KeptGather::State {
  Gather gather;
};

KeptGather::KeptGather(const Halo& halo, const Data& data)
    : state_(new State{Gather(halo, data)}) {}
KeptGather::~KeptGather() = default;
KeptGather::KeptGather(KeptGather&&) noexcept = default;
KeptGather& KeptGather::operator=(KeptGather&&) noexcept = default;
void KeptGather::apply() {
  state_->gather.apply();
}

}  // namespace halo
