// The Gamma-Lambda update: canonical form, energies with and without environments, faults.
#include <doctest/doctest.h>

#include "tebd_test_support.hpp"

#include <cmath>

using namespace kbuf_tebd_test;

namespace {

// A random real orthogonal 4x4 matrix (Gram-Schmidt of random rows): a "unitary" gate.
TwoSiteOperator random_orthogonal(std::uint64_t seed) {
  auto v = random_values(16, seed);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < i; ++j) {
      double dot = 0;
      for (int k = 0; k < 4; ++k) dot += v[i * 4 + k] * v[j * 4 + k];
      for (int k = 0; k < 4; ++k) v[i * 4 + k] -= dot * v[j * 4 + k];
    }
    double norm = 0;
    for (int k = 0; k < 4; ++k) norm += v[i * 4 + k] * v[i * 4 + k];
    for (int k = 0; k < 4; ++k) v[i * 4 + k] /= std::sqrt(norm);
  }
  TwoSiteOperator g{};
  for (int i = 0; i < 16; ++i) g[i] = v[i];
  return g;
}

double max_canonical_error(const State& st) {
  double e = 0;
  for (int x = 0; x < 2; ++x) {
    e = std::max(
        {e, left_canonical_error(st, x), right_canonical_error(st, x), lambda_norm_error(st, x)});
  }
  return e;
}

}  // namespace

TEST_CASE("the random product state is canonical") {
  const State st = random_product_state(3);
  CHECK(st.chi(0) == 1);
  CHECK(st.chi(1) == 1);
  CHECK(max_canonical_error(st) <= 1e-15);
}

TEST_CASE("an update leaves the updated pair exactly left and right canonical") {
  // Imaginary-time gates are not orthogonal: only Gamma[x] (left, against Lambda[y]) and
  // Gamma[y] (right, against Lambda[y]) are canonical by construction, and Lambda[x] is
  // normalised.
  for (TemporaryPolicy policy : all_policies) {
    CAPTURE(std::string(kbuf_tensor::to_string(policy)));
    Source src(policy);
    State st = random_product_state(5);
    const Tensor gate =
        to_tensor(imaginary_time_gate(bond_hamiltonian(Model::heisenberg, 0.0), 0.3), "gate");
    for (int i = 0; i < 8; ++i) {
      const int x = i % 2;
      update_bond(*src.tmp, st, x, gate, 6, 1e-12);
      CAPTURE(i);
      CHECK(left_canonical_error(st, x) <= 1e-12);
      CHECK(right_canonical_error(st, 1 - x) <= 1e-12);
      CHECK(lambda_norm_error(st, x) <= 1e-13);
    }
    CHECK(st.chi(0) == 6);
    if (src.alloc) CHECK(src.alloc->empty());
  }
}

TEST_CASE("orthogonal gates keep the whole state canonical, and both energies agree") {
  Source src(TemporaryPolicy::kbuf);
  State st = random_product_state(9);
  // Bond dimensions 2, 4, ..., 64: no truncation (a seventh update would need 128).
  for (int i = 0; i < 6; ++i) {
    const Tensor gate = to_tensor(random_orthogonal(100 + i), "gate");
    const UpdateInfo info = update_bond(*src.tmp, st, i % 2, gate, 64, 1e-14);
    // Only singular values below the cutoff (1e-14 of the largest) are dropped, at most 64 of
    // them: their weight is below 64 cutoff^2 of the total.
    CHECK(info.discarded <= 64 * 1e-14 * 1e-14);
  }
  CHECK(st.chi(1) == 64);
  CHECK(max_canonical_error(st) <= 1e-10);
  const Tensor h = to_tensor(bond_hamiltonian(Model::ising, 0.8), "h");
  for (int x = 0; x < 2; ++x) {
    const EnvironmentEnergy e = bond_energy_environment(*src.tmp, st, x, h);
    CHECK(e.converged);
    CHECK(e.energy == doctest::Approx(bond_energy(*src.tmp, st, x, h)).epsilon(1e-10));
  }
  CHECK(src.alloc->empty());
}

TEST_CASE("after imaginary-time steps the state is canonical up to O(dt)") {
  Source src(TemporaryPolicy::kbuf);
  State st = random_product_state(1);
  const TwoSiteOperator h = bond_hamiltonian(Model::ising, 1.5);
  double previous = 1;
  for (double dt : {0.05, 0.005, 0.0005}) {
    const Tensor gate = to_tensor(imaginary_time_gate(h, dt), "gate");
    for (int i = 0; i < 1000; ++i) update_bond(*src.tmp, st, i % 2, gate, 8, 1e-10);
    const double err = max_canonical_error(st);
    CAPTURE(dt);
    CHECK(err <= 12 * dt);  // measured: about 8 dt
    CHECK(err < previous);  // falls with dt
    previous = err;
  }
}

namespace {

// The energy of bond x on the host: the dense transfer matrix E[(a,a2),(c,c2)] =
// sum_st M[a,s,t,c] M[a2,s,t,c2] of the unit cell M = Lambda[y] Gamma[x] Lambda[x] Gamma[y],
// its dominant left and right eigenvectors by plain power iteration, and
// <h> = l E_h r / l E r. Loops only: independent of the contractions under test.
double reference_bond_energy(const State& st, int x, const TwoSiteOperator& h) {
  const int y = 1 - x;
  const std::size_t n = st.chi(y), m = st.chi(x), d = 2;
  const auto gx = to_host(st.gamma[x].data), gy = to_host(st.gamma[y].data);
  const auto lx = to_host(st.lambda[x]), ly = to_host(st.lambda[y]);
  std::vector<double> cell(n * d * d * n, 0.0), hcell(n * d * d * n, 0.0);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t s = 0; s < d; ++s)
      for (std::size_t t = 0; t < d; ++t)
        for (std::size_t c = 0; c < n; ++c)
          for (std::size_t b = 0; b < m; ++b)
            cell[((a * d + s) * d + t) * n + c] +=
                ly[a] * gx[(a * d + s) * m + b] * lx[b] * gy[(b * d + t) * n + c];
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t c = 0; c < n; ++c)
      for (std::size_t st2 = 0; st2 < d * d; ++st2)
        for (std::size_t uv = 0; uv < d * d; ++uv)
          hcell[(a * d * d + st2) * n + c] += h[st2 * 4 + uv] * cell[(a * d * d + uv) * n + c];
  const std::size_t nn = n * n;
  std::vector<double> e(nn * nn, 0.0), eh(nn * nn, 0.0);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t a2 = 0; a2 < n; ++a2)
      for (std::size_t c = 0; c < n; ++c)
        for (std::size_t c2 = 0; c2 < n; ++c2)
          for (std::size_t q = 0; q < d * d; ++q) {
            e[(a * n + a2) * nn + c * n + c2] +=
                cell[(a * d * d + q) * n + c] * cell[(a2 * d * d + q) * n + c2];
            eh[(a * n + a2) * nn + c * n + c2] +=
                hcell[(a * d * d + q) * n + c] * cell[(a2 * d * d + q) * n + c2];
          }
  std::vector<double> l(nn, 1.0), r(nn, 1.0);
  for (int it = 0; it < 20000; ++it) {
    std::vector<double> l2(nn, 0.0), r2(nn, 0.0);
    for (std::size_t i = 0; i < nn; ++i)
      for (std::size_t j = 0; j < nn; ++j) {
        l2[j] += l[i] * e[i * nn + j];
        r2[i] += e[i * nn + j] * r[j];
      }
    double nl = 0, nr = 0;
    for (std::size_t i = 0; i < nn; ++i) {
      nl += l2[i] * l2[i];
      nr += r2[i] * r2[i];
    }
    for (std::size_t i = 0; i < nn; ++i) {
      l[i] = l2[i] / std::sqrt(nl);
      r[i] = r2[i] / std::sqrt(nr);
    }
  }
  double num = 0, den = 0;
  for (std::size_t i = 0; i < nn; ++i)
    for (std::size_t j = 0; j < nn; ++j) {
      num += l[i] * eh[i * nn + j] * r[j];
      den += l[i] * e[i * nn + j] * r[j];
    }
  return num / den;
}

}  // namespace

TEST_CASE("the environment energy of a non-canonical state agrees with a dense reference") {
  // After imaginary-time steps the state is canonical only up to O(dt): the canonical
  // estimate is off by about that much, the environment energy is the iMPS's exact one.
  for (TemporaryPolicy policy : all_policies) {
    CAPTURE(std::string(kbuf_tensor::to_string(policy)));
    Source src(policy);
    State st = random_product_state(2);
    const TwoSiteOperator h = bond_hamiltonian(Model::heisenberg, 0.0);
    const Tensor gate = to_tensor(imaginary_time_gate(h, 0.2), "gate");
    for (int i = 0; i < 200; ++i) update_bond(*src.tmp, st, i % 2, gate, 4, 1e-10);
    REQUIRE(st.chi(0) == 4);
    const Tensor ht = to_tensor(h, "h");
    for (int x = 0; x < 2; ++x) {
      CAPTURE(x);
      const double ref = reference_bond_energy(st, x, h);
      const EnvironmentEnergy e = bond_energy_environment(*src.tmp, st, x, ht);
      CHECK(e.converged);
      CHECK(e.energy == doctest::Approx(ref).epsilon(1e-11));
      // The canonical estimate differs from it (by O(dt)), or this test would prove nothing.
      CHECK(std::fabs(bond_energy(*src.tmp, st, x, ht) - ref) > 1e-6);
    }
  }
}
