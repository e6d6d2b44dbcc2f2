// The batch of weighted least-squares polynomial fits (GMLS-like) on the host: the neighbourhoods,
// the data, LAPACK's solutions and the checks of what the kernels computed. Host code only; the
// kernels are in fits.hpp.
#ifndef KBUF_BATCHED_PROBLEMS_HPP
#define KBUF_BATCHED_PROBLEMS_HPP

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace kbuf_batched {

/// Right-hand sides per entry: 0 is a polynomial of the basis's degree (reproduced exactly),
/// 1 a smooth function that is not (a true least-squares residual).
inline constexpr int rhs_count = 2;

/// Support radius of the weight, in units of the neighbourhood's radius: every point has a
/// weight of at least w(1) = (1 - 1/1.5)^4 (1 + 4/1.5) = 0.045.
inline constexpr double weight_support = 1.5;

/// The polynomials of degree <= `degree` in two variables: (d + 1)(d + 2) / 2.
KOKKOS_INLINE_FUNCTION constexpr int basis_size(int degree) {
  return (degree + 1) * (degree + 2) / 2;
}

/// The scaled monomials u^a v^b, a + b <= degree, by total degree, then by falling a:
/// 1, u, v, u^2, uv, v^2, u^3, u^2 v, u v^2, v^3. `phi` holds basis_size(degree) values.
KOKKOS_INLINE_FUNCTION void basis(int degree, double u, double v, double* phi) {
  int k = 0;
  for (int d = 0; d <= degree; ++d) {
    for (int a = d; a >= 0; --a) {
      double p = 1;
      for (int i = 0; i < a; ++i) p *= u;
      for (int i = 0; i < d - a; ++i) p *= v;
      phi[k++] = p;
    }
  }
}

/// The weight of a point at scaled distance r (0 <= r <= 1) from the target: Wendland's C2
/// function with support weight_support.
KOKKOS_INLINE_FUNCTION double weight(double r) {
  const double q = r / weight_support;
  const double s = 1 - q;
  return s * s * s * s * (1 + 4 * q);
}

/// What a batch is made of.
struct BatchOptions {
  int entries = 4000;
  int rare_every =
      500;           ///< one rare large neighbourhood in this many entries, on average (0: none)
  int rare_m = 512;  ///< points of a rare neighbourhood
  unsigned seed = 2026;
};

/// The batch on the host. Entry e: m[e] points (px, py from pt_at[e]) around the target
/// (cx[e], cy[e]) within radius h[e], a basis of degree[e] (n[e] polynomials), the data f0 (a
/// polynomial of that degree with coefficients `exact`, from c_at[e]) and f1 at the points.
/// A fit's coefficients are stored rhs by rhs: n[e] values for f0, then n[e] for f1, from
/// rhs_count * c_at[e].
struct Batch {
  int count = 0;
  int rare = 0;  ///< entries with a rare large neighbourhood
  std::vector<int> m, n, degree;
  std::vector<std::size_t> pt_at, c_at;
  std::vector<double> px, py, f0, f1;
  std::vector<double> cx, cy, h;
  std::vector<double> exact;     ///< f0's coefficients, n[e] per entry from c_at[e]
  std::size_t points = 0;        ///< sum of m
  std::size_t coefficients = 0;  ///< sum of n
  int max_m = 0;
  int max_n = 0;
};

/// A batch: degrees 1 to 3 at random, m from max(8, 2 n) to 64 points (a jittered sunflower
/// spiral filling the disc around the target, as a neighbour search on a quasi-uniform cloud
/// returns them), and a rare neighbourhood of options.rare_m points and degree 3 one entry in
/// rare_every on average.
/// @throws std::invalid_argument for a rare_m below 20 (twice the cubic basis).
Batch make_batch(const BatchOptions& options);

/// The weighted matrix W^1/2 P of entry e (m x n, column-major) and W^1/2 [f0 f1] (m x 2,
/// column-major), computed on the host as the kernels compute them.
void weighted_system(const Batch& b, int e, std::vector<double>& a, std::vector<double>& rhs);

/// LAPACK's reference: dgels on W^1/2 P for both right-hand sides of every entry, stored as the
/// kernels store their fits. Also the 2-norm condition number of each W^1/2 P (dgesvd).
struct Reference {
  std::vector<double> x;      ///< rhs_count * sum of n
  std::vector<double> kappa;  ///< per entry
  double max_kappa = 0;
};
/// @throws std::runtime_error when LAPACK reports an error.
Reference lapack_reference(const Batch& b);

/// The tolerance of every check: each fit within it of the exact coefficients (f0) and of
/// LAPACK's (f0 and f1), relative, in the 2-norm. It follows from the conditioning: a
/// backward-stable solver (Householder QR, UTV, SVD) errs by about c eps kappa on the
/// zero-residual polynomial and c eps kappa^2 tan(theta) on the other right-hand side, one
/// through the normal equations (LU, Gesv) by about c eps kappa^2 on both, kappa the 2-norm
/// condition number of W^1/2 P (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
/// chapters 19 and 20). The worst-case constants c are of the order of m n; rounding errors of
/// independent signs make them of the order of sqrt(m n) with high probability (Higham and Mary,
/// SIAM J. Sci. Comput. 41(5), 2019). error_bound(kappa, m, n) = 10 sqrt(m n) eps kappa^2 bounds
/// every solver's error with a margin of 10 on that constant; the job checks that it stays below
/// the tolerance for every entry of its batch (its sunflower neighbourhoods keep kappa near 30 at
/// most), so that the tolerance is one the numerics promise, not one a build happened to meet.
inline constexpr double tolerance = 1e-10;
double error_bound(double kappa, int m, int n);

/// The largest relative errors of a set of fits (host copy, stored like Reference::x).
/// Makes `worst` the larger of it and `value`, a NaN in either the result, and says whether it
/// changed: a NaN once seen stays (`!(value <= worst)` alone would let a later number replace it).
inline bool keep_worst(double& worst, double value) {
  if (std::isnan(worst) || value <= worst) return false;
  worst = value;
  return true;
}

struct Errors {
  double vs_lapack = 0;  ///< max over entries and rhs of |x - x_lapack| / |x_lapack|
  double vs_exact = 0;   ///< max over entries of |x_f0 - exact| / |exact|
  int worst_entry = -1;  ///< the entry of the larger of the two
  bool within(double tol) const { return vs_lapack <= tol && vs_exact <= tol; }  // NaN: false
};
Errors errors(const Batch& b, const Reference& r, const std::vector<double>& x);

}  // namespace kbuf_batched

#endif  // KBUF_BATCHED_PROBLEMS_HPP
