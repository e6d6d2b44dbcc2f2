#ifndef KBUF_TENSOR_TENSOR_HPP
#define KBUF_TENSOR_TENSOR_HPP

/// @file
/// Dense tensors of rank 0 to 6 in a Kokkos memory space, their host copies, and index labels.
///
/// Storage is row-major (`Kokkos::LayoutRight`): the last index runs fastest, so a tensor
/// `T[i0, ..., ik]` whose leading indices are grouped into rows and trailing indices into
/// columns is a row-major matrix without any copy.

#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>
#include <kbuf/kbuf.hpp>
#include <kbuf_tensor/memory_space.hpp>

namespace kbuf_tensor {

/// The largest rank a tensor may have.
inline constexpr int max_rank = 6;

/// The extents of a tensor: `rank` of them, row-major. Rank 0 is a scalar (one element).
struct Shape {
  int rank = 0;
  std::array<std::size_t, max_rank> extents{};

  Shape() = default;
  /// @throws kbuf::logic_error for more than `max_rank` extents.
  Shape(std::initializer_list<std::size_t> list) {
    KBUF_EXPECTS(list.size() <= static_cast<std::size_t>(max_rank), "kbuf_tensor::Shape: rank ",
                 list.size(), " exceeds the maximum ", max_rank);
    for (std::size_t e : list) extents[static_cast<std::size_t>(rank++)] = e;
  }
  /// Number of elements: the product of the extents (1 for rank 0).
  [[nodiscard]] std::size_t size() const noexcept {
    std::size_t n = 1;
    for (int i = 0; i < rank; ++i) n *= extents[static_cast<std::size_t>(i)];
    return n;
  }
  [[nodiscard]] std::size_t operator[](int i) const noexcept {
    return extents[static_cast<std::size_t>(i)];
  }
  friend bool operator==(const Shape& x, const Shape& y) noexcept {
    if (x.rank != y.rank) return false;
    for (int i = 0; i < x.rank; ++i)
      if (x[i] != y[i]) return false;
    return true;
  }
  friend bool operator!=(const Shape& x, const Shape& y) noexcept { return !(x == y); }
};

/// "[2, 3, 4]".
std::string to_string(const Shape& shape);

/// A dense row-major tensor in `MemorySpace`: a 1-D View of `shape.size()` elements plus the
/// shape. The View either owns its memory (a managed allocation) or is an unmanaged view of a
/// `kbuf::BufferAllocator`'s buffer; copying a Tensor copies the handle, not the data. Its data
/// may live in device memory: host code must not dereference it (use `to_host`).
template <class T, class MemorySpace = default_memory_space>
struct Tensor {
  using value_type = T;
  using memory_space = MemorySpace;
  using execution_space = typename MemorySpace::execution_space;
  using data_view = Kokkos::View<T*, Kokkos::LayoutRight, MemorySpace>;

  data_view data;
  Shape shape;

  [[nodiscard]] int rank() const noexcept { return shape.rank; }
  [[nodiscard]] std::size_t extent(int i) const noexcept { return shape[i]; }
  [[nodiscard]] std::size_t size() const noexcept { return shape.size(); }
};

/// A tensor on the host, for references and checks: row-major elements in a std::vector.
template <class T>
struct HostTensor {
  std::vector<T> data;
  Shape shape;

  HostTensor() = default;
  explicit HostTensor(const Shape& s) : data(s.size(), T(0)), shape(s) {}
  [[nodiscard]] std::size_t size() const noexcept { return data.size(); }
};

/// True for `Kokkos::complex<R>`.
template <class T>
struct is_complex : std::false_type {};
template <class R>
struct is_complex<Kokkos::complex<R>> : std::true_type {};

/// The complex conjugate (identity for real types); usable in device code.
template <class T>
KOKKOS_INLINE_FUNCTION T conjugate(const T& x) {
  if constexpr (is_complex<T>::value) {
    return Kokkos::conj(x);
  } else {
    return x;
  }
}

/// |x| on the host, for error measures.
template <class T>
double magnitude(const T& x) {
  if constexpr (is_complex<T>::value) {
    return std::abs(std::complex<double>(x.real(), x.imag()));
  } else {
    return std::abs(static_cast<double>(x));
  }
}

/// "double" or "complex<double>".
template <class T>
const char* type_name() {
  if constexpr (std::is_same<T, double>::value) {
    return "double";
  } else if constexpr (std::is_same<T, Kokkos::complex<double>>::value) {
    return "complex<double>";
  } else if constexpr (std::is_same<T, float>::value) {
    return "float";
  } else {
    return "other";
  }
}

/// A managed tensor of `shape` with uninitialised elements.
template <class T, class MemorySpace = default_memory_space>
Tensor<T, MemorySpace> make_tensor(const std::string& label, const Shape& shape) {
  Tensor<T, MemorySpace> t;
  t.data = typename Tensor<T, MemorySpace>::data_view(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, label), shape.size());
  t.shape = shape;
  return t;
}

/// A host copy of `t` (through a host mirror; works for device memory).
template <class T, class MemorySpace>
HostTensor<T> to_host(const Tensor<T, MemorySpace>& t) {
  HostTensor<T> h(t.shape);
  Kokkos::View<T*, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> dst(
      h.data.data(), h.data.size());
  Kokkos::deep_copy(dst, t.data);
  return h;
}

/// Copies `h` into the tensor `t` of the same shape.
/// @throws kbuf::logic_error if the shapes differ.
template <class T, class MemorySpace>
void copy_to_device(const HostTensor<T>& h, const Tensor<T, MemorySpace>& t) {
  KBUF_EXPECTS(h.shape == t.shape, "kbuf_tensor::copy_to_device: host shape ", to_string(h.shape),
               " differs from device shape ", to_string(t.shape));
  Kokkos::View<const T*, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> src(
      h.data.data(), h.data.size());
  Kokkos::deep_copy(t.data, src);
}

/// A managed tensor holding a copy of `h`.
template <class T, class MemorySpace = default_memory_space>
Tensor<T, MemorySpace> to_device(const HostTensor<T>& h, const std::string& label) {
  auto t = make_tensor<T, MemorySpace>(label, h.shape);
  copy_to_device(h, t);
  return t;
}

/// A host tensor of `shape` with elements uniform in [-1, 1) (real and imaginary parts),
/// reproducible from `seed`.
template <class T>
HostTensor<T> random_host_tensor(const Shape& shape, std::uint64_t seed) {
  HostTensor<T> h(shape);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (auto& x : h.data) {
    if constexpr (is_complex<T>::value) {
      const double re = dist(gen);
      const double im = dist(gen);
      x = T(re, im);
    } else {
      x = static_cast<T>(dist(gen));
    }
  }
  return h;
}

/// Normwise relative difference max|x - y| / max|y| (max|x - y| if y is all zero).
/// @throws kbuf::logic_error if the shapes differ.
template <class T>
double relative_error(const HostTensor<T>& x, const HostTensor<T>& y) {
  KBUF_EXPECTS(x.shape == y.shape, "kbuf_tensor::relative_error: shapes ", to_string(x.shape),
               " and ", to_string(y.shape), " differ");
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = magnitude(T(x.data[i] - y.data[i]));
    const double s = magnitude(y.data[i]);
    if (d > diff) diff = d;
    if (s > scale) scale = s;
  }
  return scale > 0 ? diff / scale : diff;
}

/// |x - y| / |y| (|x - y| if y is zero).
template <class T>
double relative_error(const T& x, const T& y) {
  const double d = magnitude(T(x - y));
  const double s = magnitude(y);
  return s > 0 ? d / s : d;
}

// ---- Index labels ---------------------------------------------------------------------------

/// The index labels of one tensor, parsed from a comma-separated list such as "a', t1, b"
/// (whitespace around names is ignored; "" is rank 0). Names are views into the caller's
/// string, which must outlive the Labels.
struct Labels {
  int rank = 0;
  std::array<std::string_view, max_rank> names{};

  /// @throws kbuf::logic_error for more than `max_rank` names, an empty name, or a repeated name
  /// (`call` names the calling function in the message).
  static Labels parse(const char* list, const char* call);

  [[nodiscard]] const std::string_view& operator[](int i) const noexcept {
    return names[static_cast<std::size_t>(i)];
  }
  /// Position of `name`, or -1.
  [[nodiscard]] int find(std::string_view name) const noexcept {
    for (int i = 0; i < rank; ++i)
      if (same(names[static_cast<std::size_t>(i)], name)) return i;
    return -1;
  }

 private:
  // Labels are a few characters: an inline loop beats a call to memcmp.
  static bool same(std::string_view x, std::string_view y) noexcept {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i] != y[i]) return false;
    return true;
  }
};

/// "a,t1,b".
std::string to_string(const Labels& labels);

}  // namespace kbuf_tensor

#endif  // KBUF_TENSOR_TENSOR_HPP
