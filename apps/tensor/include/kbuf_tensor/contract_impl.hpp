#ifndef KBUF_TENSOR_CONTRACT_IMPL_HPP
#define KBUF_TENSOR_CONTRACT_IMPL_HPP

/// @file
/// Definitions of the templates declared in contract.hpp. The kbuf_tensor library compiles
/// them for double and Kokkos::complex<double>; include this header to use other types.

#include <cstdint>

#include <KokkosKernels_config.h>
#include <KokkosBlas1_dot.hpp>
#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

#include <kbuf_tensor/contract.hpp>

// Kokkos Kernels 4.1 gave KokkosBlas::gemm and KokkosBlas::dot an execution space instance
// as their first argument; before, they ran on the default instance of the views' space.
// (Kokkos Kernels 3.x from Trilinos defines no version macro.)
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40100
#define KBUF_TENSOR_BLAS_TAKES_INSTANCE 1
#else
#define KBUF_TENSOR_BLAS_TAKES_INSTANCE 0
#endif

namespace kbuf_tensor {
namespace Impl {

/// out = op(in permuted). The output is walked in row-major order as `rows` rows of
/// `extent[rank - 1]` elements; a row's multi-index (all but the last dimension) is decoded with
/// the output extents and mapped to the input through the permuted strides. On host execution
/// spaces one work item is a row (one division per dimension per row, then a strided copy); on
/// devices one work item is an element (parallelism for small rows).
template <class T, class MemorySpace, bool Conjugate>
struct PermuteKernel {
  Kokkos::View<const T*, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryUnmanaged> in;
  Kokkos::View<T*, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryUnmanaged> out;
  int rank;                                      // >= 1, after merging
  Kokkos::Array<std::int64_t, max_rank> extent;  // output extents
  Kokkos::Array<std::int64_t, max_rank> stride;  // input stride of each output dimension

  KOKKOS_INLINE_FUNCTION static T op(const T& x) {
    if constexpr (Conjugate) {
      return conjugate(x);
    } else {
      return x;
    }
  }

  // Input offset of the first element of output row `row`.
  KOKKOS_INLINE_FUNCTION std::int64_t row_offset(std::int64_t row) const {
    std::int64_t offset = 0;
    for (int d = rank - 2; d > 0; --d) {
      const std::int64_t q = row / extent[d];
      offset += (row - q * extent[d]) * stride[d];
      row = q;
    }
    if (rank > 1) offset += row * stride[0];
    return offset;
  }

  struct ByRow {};
  KOKKOS_FUNCTION void operator()(ByRow, const std::int64_t row) const {
    const std::int64_t n = extent[rank - 1], s = stride[rank - 1];
    const std::int64_t from = row_offset(row);
    T* o = out.data() + row * n;
    const T* x = in.data() + from;
    if (s == 1) {
      for (std::int64_t j = 0; j < n; ++j) o[j] = op(x[j]);
    } else {
      for (std::int64_t j = 0; j < n; ++j) o[j] = op(x[j * s]);
    }
  }

  struct ByElement {};
  KOKKOS_FUNCTION void operator()(ByElement, const std::int64_t i) const {
    const std::int64_t n = extent[rank - 1];
    const std::int64_t row = i / n;
    const std::int64_t j = i - row * n;
    out(i) = op(in(row_offset(row) + j * stride[rank - 1]));
  }
};

template <class T, class MemorySpace, bool Conjugate>
void launch_permute(const typename MemorySpace::execution_space& space, const T* src,
                    const Shape& src_shape, const std::array<int, max_rank>& perm, T* dst,
                    std::size_t n) {
  using exec = typename MemorySpace::execution_space;
  using kernel_type = PermuteKernel<T, MemorySpace, Conjugate>;
  kernel_type kernel;
  kernel.in = decltype(kernel.in)(src, n);
  kernel.out = decltype(kernel.out)(dst, n);
  std::array<std::int64_t, max_rank> src_stride{};
  std::int64_t s = 1;
  for (int d = src_shape.rank - 1; d >= 0; --d) {
    src_stride[static_cast<std::size_t>(d)] = s;
    s *= static_cast<std::int64_t>(src_shape[d]);
  }
  // Output dimensions with their input strides; extent-1 dimensions dropped, and neighbours
  // that are neighbours in the same order in the input merged into one.
  int rank = 0;
  for (int j = 0; j < src_shape.rank; ++j) {
    const auto p = static_cast<std::size_t>(perm[static_cast<std::size_t>(j)]);
    const auto e = static_cast<std::int64_t>(src_shape.extents[p]);
    if (e == 1) continue;
    if (rank > 0 && kernel.stride[rank - 1] == src_stride[p] * e) {
      kernel.extent[rank - 1] *= e;
      kernel.stride[rank - 1] = src_stride[p];
    } else {
      kernel.extent[rank] = e;
      kernel.stride[rank] = src_stride[p];
      ++rank;
    }
  }
  if (rank == 0) {  // a single element
    kernel.extent[0] = 1;
    kernel.stride[0] = 1;
    rank = 1;
  }
  kernel.rank = rank;
  const auto total = static_cast<std::int64_t>(n);
  if constexpr (Kokkos::SpaceAccessibility<exec, Kokkos::HostSpace>::accessible) {
    const std::int64_t rows = total / kernel.extent[rank - 1];
    Kokkos::parallel_for(
        "kbuf::permute",
        Kokkos::RangePolicy<exec, typename kernel_type::ByRow, Kokkos::IndexType<std::int64_t>>(
            space, 0, rows),
        kernel);
  } else {
    Kokkos::parallel_for(
        "kbuf::permute",
        Kokkos::RangePolicy<exec, typename kernel_type::ByElement, Kokkos::IndexType<std::int64_t>>(
            space, 0, total),
        kernel);
  }
}

/// dst = op(src permuted by perm), a kernel on `space`; n = number of elements (both).
template <class T, class MemorySpace>
void permute_raw(const typename MemorySpace::execution_space& space, const T* src,
                 const Shape& src_shape, const std::array<int, max_rank>& perm, T* dst, bool conj) {
  const std::size_t n = src_shape.size();
  if (n == 0) return;
  if (conj && is_complex<T>::value) {
    launch_permute<T, MemorySpace, true>(space, src, src_shape, perm, dst, n);
  } else {
    launch_permute<T, MemorySpace, false>(space, src, src_shape, perm, dst, n);
  }
}

/// C = alpha op(A) op(B) + beta C on `space`. Before Kokkos Kernels 4.1 the GEMM runs on the
/// default instance: `space` is fenced before it and the default instance after it, so the
/// order of work on `space` holds either way.
template <class ExecSpace, class AV, class BV, class CV, class T>
void gemm_on(const ExecSpace& space, const char* opa, const char* opb, const T& alpha, const AV& a,
             const BV& b, const T& beta, const CV& c) {
#if KBUF_TENSOR_BLAS_TAKES_INSTANCE
  KokkosBlas::gemm(space, opa, opb, alpha, a, b, beta, c);
#else
  space.fence();
  KokkosBlas::gemm(opa, opb, alpha, a, b, beta, c);
  ExecSpace().fence();
#endif
}

/// r() = sum conj(x) y on `space` (see gemm_on for Kokkos Kernels before 4.1). A host
/// execution space reduces into host memory only (Kokkos 3.4's Serial asserts it): where it
/// works on memory the host may not touch, the dot goes to a host value, then into r by a fill
/// on `space`.
template <class ExecSpace, class RV, class XV, class YV>
void dot_on(const ExecSpace& space, const RV& r, const XV& x, const YV& y) {
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible &&
                !Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                            typename RV::memory_space>::accessible) {
#if KBUF_TENSOR_BLAS_TAKES_INSTANCE
    const auto value = KokkosBlas::dot(space, x, y);
#else
    space.fence();
    const auto value = KokkosBlas::dot(x, y);
#endif
    Kokkos::deep_copy(space, r, value);
  } else {
#if KBUF_TENSOR_BLAS_TAKES_INSTANCE
    KokkosBlas::dot(space, r, x, y);
#else
    space.fence();
    KokkosBlas::dot(r, x, y);
    ExecSpace().fence();
#endif
  }
}

Shape permuted_shape(const Shape& s, const std::array<int, max_rank>& perm);
std::array<int, max_rank> label_permutation(const char* dst_labels, const char* src_labels,
                                            const Shape& src_shape, const char* call);

}  // namespace Impl

template <class T, class MemorySpace>
void permute_into(const typename MemorySpace::execution_space& space,
                  const Tensor<T, MemorySpace>& src, const std::array<int, max_rank>& perm,
                  const Tensor<T, MemorySpace>& dst, bool conj) {
  const Shape expected = Impl::permuted_shape(src.shape, perm);
  KBUF_EXPECTS(dst.shape == expected, "kbuf_tensor::permute_into: destination shape ",
               to_string(dst.shape), " is not the permuted source shape ", to_string(expected));
  Impl::permute_raw<T, MemorySpace>(space, src.data.data(), src.shape, perm, dst.data.data(), conj);
}

template <class T, class MemorySpace>
void permute_into(const typename MemorySpace::execution_space& space,
                  const Tensor<T, MemorySpace>& dst, const char* dst_labels,
                  const Tensor<T, MemorySpace>& src, const char* src_labels, bool conj) {
  const auto perm =
      Impl::label_permutation(dst_labels, src_labels, src.shape, "kbuf_tensor::permute_into");
  permute_into(space, src, perm, dst, conj);
}

template <class T, class MemorySpace>
void execute(Temporaries<MemorySpace>& tmp, const ContractionPlan& plan,
             const Tensor<T, MemorySpace>& a, const Tensor<T, MemorySpace>& b,
             const Tensor<T, MemorySpace>& c) {
  using matrix = Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryUnmanaged>;
  using const_matrix =
      Kokkos::View<const T**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryUnmanaged>;
  using temporary = typename Temporaries<MemorySpace>::template view<T>;
  KBUF_EXPECTS(a.shape == plan.a && b.shape == plan.b && c.shape == plan.c,
               "kbuf_tensor::execute: tensors of shapes ", to_string(a.shape), ", ",
               to_string(b.shape), " -> ", to_string(c.shape), ", the plan was made for ",
               to_string(plan.a), ", ", to_string(plan.b), " -> ", to_string(plan.c));

  // Every kernel goes to the temporaries' instance: with kbuf, the one the allocator is bound
  // to, so the memory its scope releases is reused in stream order.
  const auto& space = tmp.execution_space_instance();
  // Temporaries live until the end of this function; with kbuf the scope then releases them.
  auto scope = tmp.scope();
  temporary ta, tb, tc;
  const T* pa = a.data.data();
  const T* pb = b.data.data();
  T* pc = c.data.data();
  if (plan.permute_a) {
    ta = tmp.template allocate<T>(a.size());
    Impl::permute_raw<T, MemorySpace>(space, pa, a.shape, plan.perm_a, ta.data(), plan.conj_a);
    pa = ta.data();
  }
  if (plan.permute_b) {
    tb = tmp.template allocate<T>(b.size());
    Impl::permute_raw<T, MemorySpace>(space, pb, b.shape, plan.perm_b, tb.data(), plan.conj_b);
    pb = tb.data();
  }
  if (plan.permute_c) {
    tc = tmp.template allocate<T>(c.size());
    pc = tc.data();
  }

  // Stored matrix shapes: 'N' stores op(X) itself, 'T'/'C' its transpose.
  const std::size_t m = plan.m, n = plan.n, k = plan.k;
  const T one(1), zero(0);
  // A full contraction (a 1 x 1 product) is a dot product of two vectors in the same index
  // order. KokkosBlas::dot computes sum conj(x) y; blocked GEMM kernels would pad the 1 x 1
  // product to a whole tile (Kokkos Kernels' own: 24 x 64, hundreds of times the work).
  const bool ca = is_complex<T>::value && plan.conj_a && !plan.permute_a;  // still to apply
  const bool cb = is_complex<T>::value && plan.conj_b && !plan.permute_b;
  if (m == 1 && n == 1 && k > 0 && !(ca && cb) && (ca || cb || !is_complex<T>::value)) {
    using vector =
        Kokkos::View<const T*, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryUnmanaged>;
    using scalar = Kokkos::View<T, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryUnmanaged>;
    const vector va(pa, k), vb(pb, k);
    if (cb) {
      Impl::dot_on(space, scalar(pc), vb, va);
    } else {
      Impl::dot_on(space, scalar(pc), va, vb);
    }
  } else if (k == 0) {  // an empty sum; Kokkos Kernels would scale C on the default instance
    Kokkos::deep_copy(space, matrix(pc, m, n), zero);
  } else if (!plan.swap) {  // C(m x n) = op(A)(m x k) op(B)(k x n)
    const_matrix ma(pa, plan.op_a == 'N' ? m : k, plan.op_a == 'N' ? k : m);
    const_matrix mb(pb, plan.op_b == 'N' ? k : n, plan.op_b == 'N' ? n : k);
    const char opa[2] = {plan.op_a, '\0'};
    const char opb[2] = {plan.op_b, '\0'};
    Impl::gemm_on(space, opa, opb, one, ma, mb, zero, matrix(pc, m, n));
  } else {  // C(m x n) = op(B)(m x k) op(A)(k x n)
    const_matrix mb(pb, plan.op_b == 'N' ? m : k, plan.op_b == 'N' ? k : m);
    const_matrix ma(pa, plan.op_a == 'N' ? k : n, plan.op_a == 'N' ? n : k);
    const char opb[2] = {plan.op_b, '\0'};
    const char opa[2] = {plan.op_a, '\0'};
    Impl::gemm_on(space, opb, opa, one, mb, ma, zero, matrix(pc, m, n));
  }

  if (plan.permute_c) {
    Impl::permute_raw<T, MemorySpace>(space, pc, plan.product, plan.perm_c, c.data.data(), false);
  }
}

}  // namespace kbuf_tensor

#endif  // KBUF_TENSOR_CONTRACT_IMPL_HPP
