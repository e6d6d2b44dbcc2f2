// Truncated SVD through LAPACK on the host, with every array a temporary.
#include <kbuf_tebd/lapack.hpp>
#include <kbuf_tebd/svd.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace kbuf_tebd {

namespace {

constexpr bool host_accessible = Kokkos::SpaceAccessibility<Kokkos::HostSpace, space>::accessible;

using HostVector = Kokkos::View<double*, Kokkos::HostSpace>;

// The row-major rows x cols matrix at `a` (host memory, overwritten) is, read column-major,
// its transpose: cols x rows with leading dimension cols. Its SVD  A^T = U' S V'^T  gives
// A = V' S U'^T, so LAPACK's VT' (full x rows, column-major) is A's U (rows x full,
// row-major) and LAPACK's U' (cols x full, column-major) is A's Vt (full x cols, row-major):
// no transposition needed. Work arrays from `alloc_double` / `alloc_int`.
template <class AllocDouble, class AllocInt>
bool lapack_svd(bool divide_and_conquer, double* a, std::size_t rows, std::size_t cols, double* s,
                double* u_rowmajor, double* vt_rowmajor, AllocDouble alloc_double,
                AllocInt alloc_int) {
  const int m = static_cast<int>(cols), n = static_cast<int>(rows);
  const int full = std::min(m, n);
  const int lda = m, ldu = m, ldvt = full;
  int info = 0, lwork = -1;
  double query = 0;
  if (divide_and_conquer) {
    int iquery = 0;
    dgesdd_("S", &m, &n, a, &lda, s, vt_rowmajor, &ldu, u_rowmajor, &ldvt, &query, &lwork, &iquery,
            &info);
    if (info != 0)
      throw std::runtime_error("dgesdd workspace query: info = " + std::to_string(info));
    lwork = static_cast<int>(query);
    double* work = alloc_double(static_cast<std::size_t>(lwork));
    int* iwork = alloc_int(8 * static_cast<std::size_t>(full));
    dgesdd_("S", &m, &n, a, &lda, s, vt_rowmajor, &ldu, u_rowmajor, &ldvt, work, &lwork, iwork,
            &info);
  } else {
    dgesvd_("S", "S", &m, &n, a, &lda, s, vt_rowmajor, &ldu, u_rowmajor, &ldvt, &query, &lwork,
            &info);
    if (info != 0)
      throw std::runtime_error("dgesvd workspace query: info = " + std::to_string(info));
    lwork = static_cast<int>(query);
    double* work = alloc_double(static_cast<std::size_t>(lwork));
    dgesvd_("S", "S", &m, &n, a, &lda, s, vt_rowmajor, &ldu, u_rowmajor, &ldvt, work, &lwork,
            &info);
  }
  if (info < 0) {
    throw std::runtime_error(std::string(divide_and_conquer ? "dgesdd" : "dgesvd") + ": argument " +
                             std::to_string(-info) + " is invalid");
  }
  return info == 0;
}

// A NumericalError unless the rows x cols matrix at `a` (host memory) is finite: NaN or infinity
// must not reach LAPACK, which reports a bad argument and exits, or iterates without end.
void expect_finite(const double* a, std::size_t rows, std::size_t cols) {
  for (std::size_t i = 0; i < rows * cols; ++i) {
    if (!std::isfinite(a[i])) {
      throw NumericalError("kbuf_tebd::truncated_svd: the " + std::to_string(rows) + " x " +
                           std::to_string(cols) + " matrix holds " +
                           (std::isnan(a[i]) ? "NaN" : "infinity") + " at element " +
                           std::to_string(i) + ": its SVD cannot be computed");
    }
  }
}

}  // namespace

SvdResult truncated_svd(Temporaries& tmp, const Vector& m, std::size_t rows, std::size_t cols,
                        std::size_t max_rank, double cutoff) {
  KBUF_EXPECTS(max_rank > 0, "kbuf_tebd::truncated_svd: max_rank = 0");
  KBUF_EXPECTS(m.extent(0) == rows * cols, "kbuf_tebd::truncated_svd: a matrix of ", m.extent(0),
               " elements is not ", rows, " x ", cols);
  KBUF_EXPECTS(rows <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
                   cols <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
               "kbuf_tebd::truncated_svd: ", rows, " x ", cols, " exceeds LAPACK's int sizes");
  SvdResult r;
  r.rows = rows;
  r.cols = cols;
  r.full = std::min(rows, cols);
  r.s = tmp.allocate<double>(r.full);
  r.u = tmp.allocate<double>(rows * r.full);
  r.vt = tmp.allocate<double>(r.full * cols);
  const auto& exec = tmp.execution_space_instance();

  if constexpr (host_accessible) {
    Vector a = tmp.allocate<double>(rows * cols);  // LAPACK overwrites its input
    auto copy_input = [&] {
      Kokkos::deep_copy(exec, a, m);
      exec.fence();
    };
    // The handles are kept until LAPACK is done: a fresh managed View lives only as long as
    // one does (a kbuf temporary until the caller's scope ends).
    Vector work;
    Kokkos::View<int*, Kokkos::LayoutRight, space> iwork;
    auto alloc_double = [&](std::size_t n) {
      work = tmp.allocate<double>(n);
      return work.data();
    };
    auto alloc_int = [&](std::size_t n) {
      iwork = tmp.allocate<int>(n);
      return iwork.data();
    };
    copy_input();
    expect_finite(a.data(), rows, cols);
    if (!lapack_svd(true, a.data(), rows, cols, r.s.data(), r.u.data(), r.vt.data(), alloc_double,
                    alloc_int)) {
      copy_input();
      r.used_fallback = true;
      if (!lapack_svd(false, a.data(), rows, cols, r.s.data(), r.u.data(), r.vt.data(),
                      alloc_double, alloc_int)) {
        throw NumericalError("kbuf_tebd::truncated_svd: dgesdd and dgesvd did not converge");
      }
    }
  } else {
    // Device memory: LAPACK runs on host mirrors (managed host Views, not temporaries), and the
    // factors are copied back into the temporaries. cuSOLVER / rocSOLVER would keep them on
    // the device; this path only keeps such builds compiling and correct.
    HostVector a("kbuf_tebd::svd input", rows * cols), s("kbuf_tebd::svd s", r.full),
        u("kbuf_tebd::svd u", rows * r.full), vt("kbuf_tebd::svd vt", r.full * cols);
    std::vector<HostVector> work;
    std::vector<Kokkos::View<int*, Kokkos::HostSpace>> iwork;
    auto alloc_double = [&](std::size_t n) {
      work.emplace_back("kbuf_tebd::svd work", n);
      return work.back().data();
    };
    auto alloc_int = [&](std::size_t n) {
      iwork.emplace_back("kbuf_tebd::svd iwork", n);
      return iwork.back().data();
    };
    Kokkos::deep_copy(a, m);
    expect_finite(a.data(), rows, cols);
    if (!lapack_svd(true, a.data(), rows, cols, s.data(), u.data(), vt.data(), alloc_double,
                    alloc_int)) {
      Kokkos::deep_copy(a, m);
      r.used_fallback = true;
      if (!lapack_svd(false, a.data(), rows, cols, s.data(), u.data(), vt.data(), alloc_double,
                      alloc_int)) {
        throw NumericalError("kbuf_tebd::truncated_svd: dgesdd and dgesvd did not converge");
      }
    }
    Kokkos::deep_copy(exec, r.s, s);
    Kokkos::deep_copy(exec, r.u, u);
    Kokkos::deep_copy(exec, r.vt, vt);
    exec.fence();
  }

  // The rank kept, from the singular values on the host.
  auto s_host = Kokkos::create_mirror_view(r.s);  // the temporary itself on host builds
  if constexpr (!host_accessible) Kokkos::deep_copy(s_host, r.s);
  double total = 0;
  for (std::size_t i = 0; i < r.full; ++i) total += s_host(i) * s_host(i);
  const double largest = r.full > 0 ? s_host(0) : 0.0;
  std::size_t k = 0;
  double kept = 0;
  while (k < r.full && k < max_rank && s_host(k) > cutoff * largest) {
    kept += s_host(k) * s_host(k);
    ++k;
  }
  if (k == 0 && r.full > 0) {  // a zero matrix: keep one vector so that shapes stay valid
    k = 1;
    kept = s_host(0) * s_host(0);
  }
  // The weight discarded, summed from the discarded values themselves: exactly 0 when nothing
  // is discarded, and no cancellation when little is (total - kept would leave rounding of the
  // order of machine epsilon, whose bits depend on how the compiler contracts the two sums).
  double dropped = 0;
  for (std::size_t i = k; i < r.full; ++i) dropped += s_host(i) * s_host(i);
  r.rank = k;
  r.kept_norm = std::sqrt(kept);
  r.discarded = total > 0 ? dropped / total : 0.0;
  return r;
}

}  // namespace kbuf_tebd
