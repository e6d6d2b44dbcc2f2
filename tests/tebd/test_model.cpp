// Bond Hamiltonians, gates against a dense matrix exponential, and the exact energies.
#include <doctest/doctest.h>

#include "tebd_test_support.hpp"

#include <cmath>

using namespace kbuf_tebd_test;

namespace {

using Matrix = TwoSiteOperator;

Matrix multiply(const Matrix& a, const Matrix& b) {
  Matrix c{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 4; ++k) c[i * 4 + j] += a[i * 4 + k] * b[k * 4 + j];
  return c;
}

double max_abs_diff(const Matrix& a, const Matrix& b) {
  double m = 0;
  for (int i = 0; i < 16; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// exp(-tau h) by scaling and squaring of a Taylor series: independent of the eigensolver.
Matrix expm_taylor(const Matrix& h, double tau) {
  int squarings = 0;
  double scale = tau;
  double norm = 0;
  for (double x : h) norm = std::max(norm, std::fabs(x));
  while (std::fabs(scale) * norm * 4 > 0.1) {
    scale /= 2;
    ++squarings;
  }
  Matrix x{};
  for (int i = 0; i < 16; ++i) x[i] = -scale * h[i];
  Matrix sum{}, term{};
  for (int i = 0; i < 4; ++i) sum[i * 5] = term[i * 5] = 1;
  for (int n = 1; n <= 30; ++n) {
    term = multiply(term, x);
    for (double& t : term) t /= n;
    for (int i = 0; i < 16; ++i) sum[i] += term[i];
  }
  for (int i = 0; i < squarings; ++i) sum = multiply(sum, sum);
  return sum;
}

}  // namespace

TEST_CASE("bond Hamiltonians: symmetric, with the textbook spectra") {
  for (Model m : {Model::ising, Model::heisenberg}) {
    const Matrix h = bond_hamiltonian(m, 0.7);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) CHECK(h[i * 4 + j] == h[j * 4 + i]);
  }
  // Heisenberg: S.S has the singlet at -3/4 and the triplet at 1/4: S.S = (P_swap)/2 - 1/4.
  const Matrix h = bond_hamiltonian(Model::heisenberg, 0.0);
  Matrix swap_half{};
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < 2; ++t) swap_half[(2 * s + t) * 4 + 2 * t + s] = 0.5;
  for (int i = 0; i < 4; ++i) swap_half[i * 5] -= 0.25;
  CHECK(max_abs_diff(h, swap_half) == doctest::Approx(0.0));
  // Ising without a field: -sz sz, diagonal -1, 1, 1, -1.
  const Matrix zz = bond_hamiltonian(Model::ising, 0.0);
  CHECK(zz[0] == -1.0);
  CHECK(zz[5] == 1.0);
  CHECK(zz[10] == 1.0);
  CHECK(zz[15] == -1.0);
  // The field term: -h/2 (sx 1 + 1 sx) couples |00> to |01> and |10>.
  const Matrix hx = bond_hamiltonian(Model::ising, 2.0);
  CHECK(hx[0 * 4 + 1] == -1.0);
  CHECK(hx[0 * 4 + 2] == -1.0);
  CHECK(hx[0 * 4 + 3] == 0.0);
}

TEST_CASE("gates: exp(-tau h) agrees with a Taylor matrix exponential") {
  for (Model m : {Model::ising, Model::heisenberg}) {
    for (double field : {0.0, 0.5, 1.0, 1.5}) {
      const Matrix h = bond_hamiltonian(m, field);
      for (double tau : {1e-4, 0.005, 0.05, 0.1, 1.0, 3.0}) {
        CAPTURE(std::string(to_string(m)));
        CAPTURE(field);
        CAPTURE(tau);
        const Matrix g = imaginary_time_gate(h, tau);
        const Matrix ref = expm_taylor(h, tau);
        double scale = 0;
        for (double x : ref) scale = std::max(scale, std::fabs(x));
        CHECK(max_abs_diff(g, ref) <= 1e-13 * scale);
      }
    }
  }
}

TEST_CASE("normalised gates: exp(-tau h) times a positive factor, every entry at most 1") {
  for (double field : {0.5, 1.0, 1e3, -1e10, 1e100, 1e150}) {
    CAPTURE(field);
    const Matrix h = bond_hamiltonian(Model::ising, field);
    for (double tau : {0.0005, 0.05, 0.1}) {
      CAPTURE(tau);
      const Matrix g = normalised_imaginary_time_gate(h, tau);
      double largest = 0;
      for (double x : g) {
        CHECK(std::isfinite(x));
        largest = std::max(largest, std::fabs(x));
      }
      CHECK(largest <= 1 + 1e-15);
      // g_ii >= v_i^2 for the unit eigenvector v of the eigenvalue 1, and some v_i^2 >= 1/4
      CHECK(largest >= 0.25 * (1 - 1e-14));
      if (std::fabs(tau * field) < 100) {  // exp(-tau h) itself is representable
        const Matrix plain = imaginary_time_gate(h, tau);
        double ratio_num = 0, ratio_den = 0;
        for (int i = 0; i < 16; ++i) {
          ratio_num += plain[i] * g[i];
          ratio_den += g[i] * g[i];
        }
        const double c = ratio_num / ratio_den;  // plain = c g, c = exp(-tau e_min) > 0
        CHECK(c > 0);
        Matrix scaled{};
        for (int i = 0; i < 16; ++i) scaled[i] = c * g[i];
        double scale = 0;
        for (double x : plain) scale = std::max(scale, std::fabs(x));
        CHECK(max_abs_diff(scaled, plain) <= 1e-13 * scale);
      }
    }
  }
}

TEST_CASE("gates: a group in tau (G(a) G(b) = G(a + b), G(0) = 1)") {
  const Matrix h = bond_hamiltonian(Model::ising, 1.3);
  const Matrix ab = multiply(imaginary_time_gate(h, 0.03), imaginary_time_gate(h, 0.07));
  CHECK(max_abs_diff(ab, imaginary_time_gate(h, 0.1)) <= 1e-14);
  Matrix one{};
  for (int i = 0; i < 4; ++i) one[i * 5] = 1;
  CHECK(max_abs_diff(imaginary_time_gate(h, 0.0), one) <= 1e-15);
}

TEST_CASE("exact energies: known values, duality and a brute-force sum") {
  const double pi = std::acos(-1.0);
  CHECK(exact_energy(Model::ising, 1.0) == doctest::Approx(-4.0 / pi).epsilon(1e-14));
  CHECK(exact_energy(Model::ising, 0.0) == doctest::Approx(-1.0).epsilon(1e-14));
  CHECK(exact_energy(Model::heisenberg, 0.0) ==
        doctest::Approx(0.25 - std::log(2.0)).epsilon(1e-15));
  // Kramers-Wannier duality: e0(h) = h e0(1/h).
  for (double h : {0.5, 0.9, 1.1, 2.0}) {
    CAPTURE(h);
    CHECK(exact_energy(Model::ising, h) ==
          doctest::Approx(h * exact_energy(Model::ising, 1.0 / h)).epsilon(1e-13));
  }
  // The sign of the field does not matter.
  CHECK(exact_energy(Model::ising, -0.7) ==
        doctest::Approx(exact_energy(Model::ising, 0.7)).epsilon(1e-14));
  // A plain midpoint sum: slow, but independent of the adaptive quadrature.
  for (double h : {0.5, 1.5}) {
    const int n = 200000;
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      const double k = pi * (i + 0.5) / n;
      sum += std::sqrt(1 + h * h - 2 * h * std::cos(k));
    }
    CHECK(exact_energy(Model::ising, h) == doctest::Approx(-sum / n).epsilon(1e-11));
  }
  // Large field: e0 = -h - 1/(4h) + O(h^-3).
  CHECK(exact_energy(Model::ising, 100.0) == doctest::Approx(-100.0 - 1.0 / 400).epsilon(1e-9));
}
