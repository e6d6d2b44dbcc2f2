#ifndef KBUF_IMPL_MPI_SUPPORT_HPP
#define KBUF_IMPL_MPI_SUPPORT_HPP

/// @file
/// What `kbuf/mpi.hpp` builds on: the MPI datatype of a View's elements, the message size of a
/// View, the error text of an MPI return code, and the check that MPI is running. Not part of
/// the API; included by `kbuf/mpi.hpp` only.

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <kbuf/impl/errors.hpp>

namespace kbuf {
namespace Impl {

/// The MPI datatype of `T` when MPI has one for it (arithmetic types, Kokkos::complex of float
/// and double); `MPI_BYTE` otherwise, in which case a message counts bytes.
template <class T>
struct mpi_datatype {
  static constexpr bool exact = false;
  static MPI_Datatype get() noexcept { return MPI_BYTE; }
};

#define KBUF_IMPL_MPI_DATATYPE(T, MPI_T)                 \
  template <>                                            \
  struct mpi_datatype<T> {                               \
    static constexpr bool exact = true;                  \
    static MPI_Datatype get() noexcept { return MPI_T; } \
  }
KBUF_IMPL_MPI_DATATYPE(char, MPI_CHAR);
KBUF_IMPL_MPI_DATATYPE(signed char, MPI_SIGNED_CHAR);
KBUF_IMPL_MPI_DATATYPE(unsigned char, MPI_UNSIGNED_CHAR);
KBUF_IMPL_MPI_DATATYPE(short, MPI_SHORT);
KBUF_IMPL_MPI_DATATYPE(unsigned short, MPI_UNSIGNED_SHORT);
KBUF_IMPL_MPI_DATATYPE(int, MPI_INT);
KBUF_IMPL_MPI_DATATYPE(unsigned, MPI_UNSIGNED);
KBUF_IMPL_MPI_DATATYPE(long, MPI_LONG);
KBUF_IMPL_MPI_DATATYPE(unsigned long, MPI_UNSIGNED_LONG);
KBUF_IMPL_MPI_DATATYPE(long long, MPI_LONG_LONG);
KBUF_IMPL_MPI_DATATYPE(unsigned long long, MPI_UNSIGNED_LONG_LONG);
KBUF_IMPL_MPI_DATATYPE(float, MPI_FLOAT);
KBUF_IMPL_MPI_DATATYPE(double, MPI_DOUBLE);
KBUF_IMPL_MPI_DATATYPE(long double, MPI_LONG_DOUBLE);
KBUF_IMPL_MPI_DATATYPE(Kokkos::complex<float>, MPI_C_FLOAT_COMPLEX);
KBUF_IMPL_MPI_DATATYPE(Kokkos::complex<double>, MPI_C_DOUBLE_COMPLEX);
#undef KBUF_IMPL_MPI_DATATYPE

/// The MPI datatype of a `std::size_t` (the words of `kbuf::Statistics`).
inline MPI_Datatype mpi_size_t() noexcept {
  static_assert(sizeof(std::size_t) == 8 || sizeof(std::size_t) == 4,
                "kbuf/mpi.hpp: std::size_t must have 32 or 64 bits");
  return sizeof(std::size_t) == 8 ? MPI_UINT64_T : MPI_UINT32_T;
}

/// A message over the whole of a View: its address, its element count in `datatype`.
struct mpi_message {
  void* data;
  int count;
  MPI_Datatype datatype;
};

/// The message that covers `v`, or `kbuf::logic_error` naming `call` when there is none: a View
/// whose elements are not contiguous (a strided subview: pack it first), or one whose count
/// does not fit MPI's `int`.
template <class View>
mpi_message message_of(const View& v, const char* call) {
  static_assert(Kokkos::is_view<View>::value, "kbuf::mpi: the buffer must be a Kokkos::View");
  using T = typename View::non_const_value_type;
  static_assert(std::is_trivially_copyable<T>::value,
                "kbuf::mpi: a message's elements must be trivially copyable");
  const std::size_t n = v.size();
  KBUF_EXPECTS(n <= 1 || v.span_is_contiguous(), call, ": a view of ", n,
               " elements that are not contiguous (a strided subview?); pack it into a "
               "contiguous temporary first");
  constexpr bool exact = mpi_datatype<T>::exact;
  const std::size_t count_limit = static_cast<std::size_t>(INT_MAX) / (exact ? 1 : sizeof(T));
  KBUF_EXPECTS(n <= count_limit, call, ": a view of ", n, " elements of ", sizeof(T),
               " bytes is more than one MPI message can count (", INT_MAX, ")");
  const std::size_t count = exact ? n : n * sizeof(T);
  return {const_cast<void*>(static_cast<const void*>(v.data())), static_cast<int>(count),
          mpi_datatype<T>::get()};
}

/// MPI's text for the return code `code`.
inline std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return concat("MPI error ", code);
  return std::string(text, static_cast<std::size_t>(length));
}

/// `kbuf::logic_error` naming `call` unless MPI is initialised and not yet finalised.
inline void expect_mpi_running(const char* call) {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  KBUF_EXPECTS(initialized != 0 && finalized == 0, call, ": MPI is ",
               initialized == 0 ? "not initialized (call MPI_Init first)" : "already finalized");
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_MPI_SUPPORT_HPP
