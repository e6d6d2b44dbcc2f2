#ifndef KBUF_TENSOR_CONTRACT_HPP
#define KBUF_TENSOR_CONTRACT_HPP

/// @file
/// Pairwise contraction of dense tensors: transpose-transpose-GEMM-transpose.
///
/// `C[c...] = sum over shared labels of op(A)[a...] * op(B)[b...]`, where op is the identity
/// or the complex conjugate. Indices are named by labels, a comma-separated list per tensor
/// ("a,t1,b"). Every label appears in exactly two of A, B, C: in A and B it is summed over, in
/// A or B and C it is free. (Batch indices shared by all three, and traces, are not supported.)
///
/// The contraction is one `KokkosBlas::gemm` on matrix-shaped operands. An operand is used in
/// place, as the matrix or its transpose ("N", "T", or "C" for a conjugated one), when its
/// free and summed indices already form the needed blocks; otherwise it is first permuted into
/// a temporary. The product is written straight into C when C's labels are the GEMM's row
/// labels followed by its column labels, else into a temporary that is then permuted into C.
/// Among the ways to orient the GEMM, the one that permutes the fewest elements is chosen. A
/// full contraction (rank-0 result) is a `KokkosBlas::dot` where the conjugations allow it.
/// Every temporary comes from the `Temporaries` passed in and is released before the call
/// returns (a kbuf scope); the output of `contract` is allocated from it before that scope.
/// Every kernel runs on the temporaries' execution space instance (the allocator's, for kbuf;
/// the default instance unless one was given) and no call fences anything else, so host
/// threads that contract on distinct instances do not wait for each other's work. Kokkos
/// Kernels before 4.1 run GEMM and dot on the default instance only: there the instance is
/// fenced before and the default instance after each of them.

#include <array>
#include <cstddef>

#include <kbuf_tensor/temporaries.hpp>
#include <kbuf_tensor/tensor.hpp>

namespace kbuf_tensor {

/// Which operands enter conjugated.
enum class Conj { none, a, b, both };

[[nodiscard]] constexpr bool conj_of_a(Conj c) noexcept {
  return c == Conj::a || c == Conj::both;
}
[[nodiscard]] constexpr bool conj_of_b(Conj c) noexcept {
  return c == Conj::b || c == Conj::both;
}

/// How one pairwise contraction is carried out. Computed on the host from shapes and labels.
struct ContractionPlan {
  Shape a;                          ///< shape of A the plan was made for
  Shape b;                          ///< shape of B the plan was made for
  Shape c;                          ///< shape of the result
  bool swap = false;                ///< the GEMM computes with B as its left operand: C^T-oriented
  bool permute_a = false;           ///< A is permuted into a temporary first
  bool permute_b = false;           ///< B is permuted into a temporary first
  bool permute_c = false;           ///< the product goes to a temporary, then is permuted into C
  char op_a = 'N';                  ///< GEMM op of A as stored (after any permute): 'N', 'T' or 'C'
  char op_b = 'N';                  ///< GEMM op of B
  bool conj_a = false;              ///< A enters conjugated (by its permute, else by op_a == 'C')
  bool conj_b = false;              ///< B enters conjugated
  std::size_t m = 0, n = 0, k = 0;  ///< GEMM sizes: C(m x n) = op(left)(m x k) op(right)(k x n)

  // For the permutes: dimension j of the permuted tensor is dimension perm[j] of the source.
  std::array<int, max_rank> perm_a{};
  std::array<int, max_rank> perm_b{};
  std::array<int, max_rank> perm_c{};  ///< from the product (rows then columns) to C
  Shape product;                       ///< the product's shape as a tensor (rows then columns)

  /// Number of permutes (0 to 3).
  [[nodiscard]] int permutes() const noexcept {
    return int(permute_a) + int(permute_b) + int(permute_c);
  }
  /// Temporaries the contraction takes besides its result.
  [[nodiscard]] int temporaries() const noexcept { return permutes(); }
  /// Multiply-adds of the GEMM.
  [[nodiscard]] double multiply_adds() const noexcept {
    return static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

/// Plans `C[c_labels] = op(A)[a_labels] * op(B)[b_labels]`.
/// @throws kbuf::logic_error (naming the labels) if a label list does not match its tensor's
/// rank, a label is repeated within a tensor, appears in only one tensor or in all three, or
/// summed extents differ.
ContractionPlan plan_contraction(const Shape& a, const char* a_labels, const Shape& b,
                                 const char* b_labels, const char* c_labels,
                                 Conj conj = Conj::none);

/// `dst = op(src)` permuted: dimension j of dst is dimension perm[j] of src; op conjugates when
/// `conj`. A Kokkos kernel on the instance `space` (asynchronous on devices).
/// @throws kbuf::logic_error if dst's shape is not src's permuted shape.
template <class T, class MemorySpace>
void permute_into(const typename MemorySpace::execution_space& space,
                  const Tensor<T, MemorySpace>& src, const std::array<int, max_rank>& perm,
                  const Tensor<T, MemorySpace>& dst, bool conj = false);

/// As above, on the default instance.
template <class T, class MemorySpace>
void permute_into(const Tensor<T, MemorySpace>& src, const std::array<int, max_rank>& perm,
                  const Tensor<T, MemorySpace>& dst, bool conj = false) {
  permute_into(typename MemorySpace::execution_space(), src, perm, dst, conj);
}

/// `dst[dst_labels] = op(src)[src_labels]` (same labels, any order), a kernel on `space`.
/// @throws kbuf::logic_error if the labels are not a permutation of each other or the shapes
/// do not match.
template <class T, class MemorySpace>
void permute_into(const typename MemorySpace::execution_space& space,
                  const Tensor<T, MemorySpace>& dst, const char* dst_labels,
                  const Tensor<T, MemorySpace>& src, const char* src_labels, bool conj = false);

/// As above, on the default instance.
template <class T, class MemorySpace>
void permute_into(const Tensor<T, MemorySpace>& dst, const char* dst_labels,
                  const Tensor<T, MemorySpace>& src, const char* src_labels, bool conj = false) {
  permute_into(typename MemorySpace::execution_space(), dst, dst_labels, src, src_labels, conj);
}

/// Executes `plan` with temporaries from `tmp` (released before it returns), writing into `c`,
/// on `tmp.execution_space_instance()`; the work may still run when it returns.
/// A plan made once and executed many times takes the label analysis off the per-contraction
/// path, as TensorOperations' `@tensor` does at macro expansion.
/// @throws kbuf::logic_error if a, b or c do not have the shapes the plan was made for.
template <class T, class MemorySpace>
void execute(Temporaries<MemorySpace>& tmp, const ContractionPlan& plan,
             const Tensor<T, MemorySpace>& a, const Tensor<T, MemorySpace>& b,
             const Tensor<T, MemorySpace>& c);

/// `C[c_labels] = op(A)[a_labels] op(B)[b_labels]` into an existing tensor `c`.
/// @throws kbuf::logic_error for bad labels (see plan_contraction) or if c has the wrong shape.
template <class T, class MemorySpace>
void contract_into(Temporaries<MemorySpace>& tmp, const Tensor<T, MemorySpace>& c,
                   const char* c_labels, const Tensor<T, MemorySpace>& a, const char* a_labels,
                   const Tensor<T, MemorySpace>& b, const char* b_labels, Conj conj = Conj::none);

/// Executes `plan` into a result that is itself a temporary from `tmp`, allocated before the
/// contraction's own temporaries (so it outlives them).
/// @throws kbuf::logic_error if a or b do not have the shapes the plan was made for.
template <class T, class MemorySpace>
Tensor<T, MemorySpace> contract(Temporaries<MemorySpace>& tmp, const ContractionPlan& plan,
                                const Tensor<T, MemorySpace>& a, const Tensor<T, MemorySpace>& b) {
  KBUF_EXPECTS(a.shape == plan.a && b.shape == plan.b, "kbuf_tensor::contract: operands of shapes ",
               to_string(a.shape), " and ", to_string(b.shape), ", the plan was made for ",
               to_string(plan.a), " and ", to_string(plan.b));
  Tensor<T, MemorySpace> c;
  c.shape = plan.c;
  c.data = tmp.template allocate<T>(plan.c.size());
  execute(tmp, plan, a, b, c);
  return c;
}

/// `C[c_labels] = op(A)[a_labels] op(B)[b_labels]`, the result itself a temporary from `tmp`
/// (allocated before the contraction's own temporaries, so it outlives them).
/// @throws kbuf::logic_error for bad labels (see plan_contraction).
template <class T, class MemorySpace>
Tensor<T, MemorySpace> contract(Temporaries<MemorySpace>& tmp, const char* c_labels,
                                const Tensor<T, MemorySpace>& a, const char* a_labels,
                                const Tensor<T, MemorySpace>& b, const char* b_labels,
                                Conj conj = Conj::none) {
  if constexpr (!is_complex<T>::value) conj = Conj::none;  // conjugation is the identity
  return contract(tmp, plan_contraction(a.shape, a_labels, b.shape, b_labels, c_labels, conj), a,
                  b);
}

template <class T, class MemorySpace>
void contract_into(Temporaries<MemorySpace>& tmp, const Tensor<T, MemorySpace>& c,
                   const char* c_labels, const Tensor<T, MemorySpace>& a, const char* a_labels,
                   const Tensor<T, MemorySpace>& b, const char* b_labels, Conj conj) {
  if constexpr (!is_complex<T>::value) conj = Conj::none;
  const ContractionPlan plan =
      plan_contraction(a.shape, a_labels, b.shape, b_labels, c_labels, conj);
  KBUF_EXPECTS(c.shape == plan.c, "kbuf_tensor::contract_into: output '", c_labels, "' has shape ",
               to_string(c.shape), ", the contraction gives ", to_string(plan.c));
  execute(tmp, plan, a, b, c);
}

// The library instantiates these for double and Kokkos::complex<double> in the applications'
// memory space (memory_space.hpp); include <kbuf_tensor/contract_impl.hpp> for other types.
#define KBUF_TENSOR_DECLARE(EXTERN, T, MS)                                                         \
  EXTERN template void permute_into<T, MS>(const typename MS::execution_space&,                    \
                                           const Tensor<T, MS>&, const std::array<int, max_rank>&, \
                                           const Tensor<T, MS>&, bool);                            \
  EXTERN template void permute_into<T, MS>(const typename MS::execution_space&,                    \
                                           const Tensor<T, MS>&, const char*,                      \
                                           const Tensor<T, MS>&, const char*, bool);               \
  EXTERN template void execute<T, MS>(Temporaries<MS>&, const ContractionPlan&,                    \
                                      const Tensor<T, MS>&, const Tensor<T, MS>&,                  \
                                      const Tensor<T, MS>&);
KBUF_TENSOR_DECLARE(extern, double, default_memory_space)
KBUF_TENSOR_DECLARE(extern, Kokkos::complex<double>, default_memory_space)

}  // namespace kbuf_tensor

#endif  // KBUF_TENSOR_CONTRACT_HPP
