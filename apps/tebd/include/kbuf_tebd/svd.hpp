#ifndef KBUF_TEBD_SVD_HPP
#define KBUF_TEBD_SVD_HPP

/// @file
/// Truncated singular value decomposition of a row-major matrix, every array (the working copy,
/// the factors, the singular values, LAPACK's workspace) a temporary.

#include <cstddef>
#include <stdexcept>

#include <kbuf_tensor/kbuf_tensor.hpp>

namespace kbuf_tebd {

/// A numerical failure inside a run: a matrix that holds NaN or infinity before its SVD, or an
/// SVD that LAPACK could not compute. The run's result is wrong (kbuf-tebd exits 1), not its
/// input.
class NumericalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using space = kbuf_tensor::default_memory_space;
using exec_space = space::execution_space;
using Temporaries = kbuf_tensor::Temporaries<space>;
using Tensor = kbuf_tensor::Tensor<double, space>;
using Vector = Kokkos::View<double*, Kokkos::LayoutRight, space>;

/// M = U diag(S) Vt, truncated to the `rank` largest singular values.
///
/// `u` is rows x full row-major (leading dimension `full` = min(rows, cols)); its first `rank`
/// columns are the kept left singular vectors. `vt` is full x cols row-major; its first `rank`
/// rows are the kept right singular vectors. `s` holds all `full` singular values, descending.
/// All three are temporaries of the `Temporaries` passed in: they live until the caller's
/// enclosing scope ends.
struct SvdResult {
  Vector u, s, vt;
  std::size_t rows = 0, cols = 0, full = 0;
  std::size_t rank = 0;        ///< singular values kept
  double kept_norm = 0;        ///< sqrt(sum of the kept s^2)
  double discarded = 0;        ///< sum of the discarded s^2 over the sum of all s^2
  bool used_fallback = false;  ///< dgesdd did not converge and dgesvd was used
};

/// The SVD of the row-major rows x cols matrix `m` (not changed: LAPACK works on a copy),
/// keeping at most `max_rank` singular values and none below `cutoff` times the largest.
/// LAPACK's dgesdd (divide and conquer) with a workspace sized by its lwork = -1 query; dgesvd
/// if dgesdd does not converge. LAPACK runs on the host: in a memory space the host cannot
/// read (CUDA, HIP), the matrix and the factors are copied through host mirrors, and the
/// host-side arrays are then managed host Views instead of temporaries.
/// @throws std::runtime_error if LAPACK fails; kbuf::logic_error for a zero max_rank.
SvdResult truncated_svd(Temporaries& tmp, const Vector& m, std::size_t rows, std::size_t cols,
                        std::size_t max_rank, double cutoff);

}  // namespace kbuf_tebd

#endif  // KBUF_TEBD_SVD_HPP
