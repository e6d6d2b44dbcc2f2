// Bond Hamiltonians, their imaginary-time gates, and the exact ground-state energies.
#include <kbuf_tebd/lapack.hpp>
#include <kbuf_tebd/model.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

namespace kbuf_tebd {

const char* to_string(Model model) noexcept {
  switch (model) {
    case Model::ising:
      return "ising";
    case Model::heisenberg:
      return "heisenberg";
  }
  return "?";
}

namespace {

using Matrix2 = std::array<double, 4>;

// a (x) b: row (s,t) = 2s+t, column (u,v) = 2u+v.
TwoSiteOperator kron(const Matrix2& a, const Matrix2& b) {
  TwoSiteOperator o{};
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < 2; ++t)
      for (int u = 0; u < 2; ++u)
        for (int v = 0; v < 2; ++v) o[(2 * s + t) * 4 + 2 * u + v] = a[2 * s + u] * b[2 * t + v];
  return o;
}

void add(TwoSiteOperator& o, double c, const TwoSiteOperator& x) {
  for (int i = 0; i < 16; ++i) o[i] += c * x[i];
}

constexpr Matrix2 one{1, 0, 0, 1};
constexpr Matrix2 sx{0, 1, 1, 0};
constexpr Matrix2 sz{1, 0, 0, -1};
// sigma_y = [[0, -i], [i, 0]]; sigma_y (x) sigma_y is real: (i)(i) = -1 on the corners,
// (-i)(i) = 1 in the middle. Written as i*sy = [[0, 1], [-1, 0]] taken twice, times -1.
constexpr Matrix2 isy{0, 1, -1, 0};

}  // namespace

TwoSiteOperator bond_hamiltonian(Model model, double field) {
  TwoSiteOperator h{};
  if (model == Model::ising) {
    add(h, -1.0, kron(sz, sz));
    add(h, -0.5 * field, kron(sx, one));
    add(h, -0.5 * field, kron(one, sx));
  } else {
    add(h, 0.25, kron(sx, sx));
    add(h, -0.25, kron(isy, isy));  // sy sy = (i sy)(i sy) / (i i) = -(i sy)(i sy)
    add(h, 0.25, kron(sz, sz));
  }
  return h;
}

namespace {

// exp(-tau (h - shift w_min)), w_min the smallest eigenvalue of h.
TwoSiteOperator gate(const TwoSiteOperator& h, double tau, bool shift) {
  // Symmetric: column-major and row-major agree. a <- eigenvectors (columns), w <- eigenvalues.
  TwoSiteOperator a = h;
  std::array<double, 4> w{};
  const int n = 4;
  int info = 0;
  int lwork = -1;
  double query = 0;
  dsyev_("V", "U", &n, a.data(), &n, w.data(), &query, &lwork, &info);
  lwork = static_cast<int>(query);
  std::array<double, 64> work{};
  if (info != 0 || lwork > static_cast<int>(work.size())) lwork = static_cast<int>(work.size());
  dsyev_("V", "U", &n, a.data(), &n, w.data(), work.data(), &lwork, &info);
  if (info != 0) {
    throw std::runtime_error("kbuf_tebd::imaginary_time_gate: dsyev failed, info = " +
                             std::to_string(info));
  }
  // G = Q diag(exp(-tau (w - s))) Q^T, Q(i, k) = a[i + 4k] (column-major).
  const double w_min = shift ? *std::min_element(w.begin(), w.end()) : 0.0;
  TwoSiteOperator g{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double sum = 0;
      for (int k = 0; k < 4; ++k) {
        sum += a[i + 4 * k] * std::exp(-tau * (w[k] - w_min)) * a[j + 4 * k];
      }
      g[i * 4 + j] = sum;
    }
  return g;
}

}  // namespace

TwoSiteOperator imaginary_time_gate(const TwoSiteOperator& h, double tau) {
  return gate(h, tau, false);
}

TwoSiteOperator normalised_imaginary_time_gate(const TwoSiteOperator& h, double tau) {
  return gate(h, tau, true);
}

namespace {

// Adaptive Simpson on [a, b] to an absolute tolerance, recursion depth bounded.
double simpson(const std::function<double(double)>& f, double a, double b, double fa, double fm,
               double fb, double whole, double tol, int depth) {
  const double m = 0.5 * (a + b);
  const double lm = 0.5 * (a + m), rm = 0.5 * (m + b);
  const double flm = f(lm), frm = f(rm);
  const double left = (m - a) / 6 * (fa + 4 * flm + fm);
  const double right = (b - m) / 6 * (fm + 4 * frm + fb);
  const double delta = left + right - whole;
  if (depth <= 0 || std::fabs(delta) <= 15 * tol) return left + right + delta / 15;
  return simpson(f, a, m, fa, flm, fm, left, tol / 2, depth - 1) +
         simpson(f, m, b, fm, frm, fb, right, tol / 2, depth - 1);
}

double integrate(const std::function<double(double)>& f, double a, double b, double tol) {
  // Start from 64 panels so that no feature narrower than the interval is missed.
  const int panels = 64;
  double sum = 0;
  for (int i = 0; i < panels; ++i) {
    const double x0 = a + (b - a) * i / panels, x1 = a + (b - a) * (i + 1) / panels;
    const double f0 = f(x0), f1 = f(x1), fm = f(0.5 * (x0 + x1));
    sum += simpson(f, x0, x1, f0, fm, f1, (x1 - x0) / 6 * (f0 + 4 * fm + f1), tol / panels, 40);
  }
  return sum;
}

}  // namespace

double exact_energy(Model model, double field) {
  if (model == Model::heisenberg) return 0.25 - std::log(2.0);
  const double pi = std::acos(-1.0);
  // e0(h) = e0(-h); for |h| > 1, e0(h) = |h| e0(1/|h|) (duality): the integrand stays of
  // order 1 and nothing overflows, whatever the field.
  const double a = std::fabs(field);
  const double h = a > 1 ? 1 / a : a;
  const double scale = a > 1 ? a : 1.0;
  // sqrt(1 + h^2 - 2h cos k) = sqrt((1 - h)^2 + 4h sin^2(k/2)): no cancellation near h = 1.
  auto f = [h](double k) {
    const double s = std::sin(0.5 * k);
    return std::sqrt((1 - h) * (1 - h) + 4 * h * s * s);
  };
  return -scale * integrate(f, 0.0, pi, 1e-15) / pi;
}

}  // namespace kbuf_tebd
