// The batch on the host: neighbourhoods, data, LAPACK's fits and the checks.
#include <kbuf_batched/problems.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

extern "C" {
void dgels_(const char* trans, const int* m, const int* n, const int* nrhs, double* a,
            const int* lda, double* b, const int* ldb, double* work, const int* lwork, int* info);
void dgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, double* a,
             const int* lda, double* s, double* u, const int* ldu, double* vt, const int* ldvt,
             double* work, const int* lwork, int* info);
}

namespace kbuf_batched {

namespace {

// The smooth function behind f1 (not a polynomial: its fit leaves a residual).
double smooth(double x, double y) {
  return std::sin(2 * x + 1) * std::cos(3 * y) + std::exp(0.25 * x * y);
}

}  // namespace

Batch make_batch(const BatchOptions& o) {
  if (o.rare_m < 2 * basis_size(3)) {
    throw std::invalid_argument("kbuf_batched::make_batch: rare_m " + std::to_string(o.rare_m) +
                                " is below 20, twice the cubic basis");
  }
  Batch b;
  b.count = o.entries;
  std::mt19937 rng(o.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> degree(1, 3);
  const double pi = std::acos(-1.0);
  const double golden_angle = pi * (3 - std::sqrt(5.0));
  double phi[16];
  for (int e = 0; e < o.entries; ++e) {
    int d = degree(rng);
    int n = basis_size(d);
    int m = std::uniform_int_distribution<int>(std::max(8, 2 * n), 64)(rng);
    if (o.rare_every > 0 && std::uniform_int_distribution<int>(0, o.rare_every - 1)(rng) == 0) {
      d = 3;
      n = basis_size(d);
      m = o.rare_m;
      ++b.rare;
    }
    b.m.push_back(m);
    b.n.push_back(n);
    b.degree.push_back(d);
    b.pt_at.push_back(b.points);
    b.c_at.push_back(b.coefficients);
    b.points += static_cast<std::size_t>(m);
    b.coefficients += static_cast<std::size_t>(n);
    b.max_m = std::max(b.max_m, m);
    b.max_n = std::max(b.max_n, n);
    const double cx = 10 * unit(rng), cy = 10 * unit(rng), h = 0.05 + 0.45 * unit(rng);
    b.cx.push_back(cx);
    b.cy.push_back(cy);
    b.h.push_back(h);
    for (int k = 0; k < n; ++k) b.exact.push_back(2 * unit(rng) - 1);
    const double* c = b.exact.data() + b.c_at.back();
    // The m nearest points of a quasi-uniform cloud, as a neighbour search returns them: a
    // sunflower (Vogel) spiral filling the disc of radius h, turned by a random angle, each
    // point moved at random by up to a third of the spacing.
    const double turn = 2 * pi * unit(rng), spacing = h * std::sqrt(pi / m);
    for (int j = 0; j < m; ++j) {
      const double r = h * std::sqrt((j + 0.5) / m), t = turn + j * golden_angle;
      const double jr = spacing / 3 * std::sqrt(unit(rng)), jt = 2 * pi * unit(rng);
      double x = r * std::cos(t) + jr * std::cos(jt), y = r * std::sin(t) + jr * std::sin(jt);
      const double norm = std::sqrt(x * x + y * y);
      if (norm > h) {  // back into the disc
        x *= h / norm;
        y *= h / norm;
      }
      x += cx;
      y += cy;
      b.px.push_back(x);
      b.py.push_back(y);
      basis(d, (x - cx) / h, (y - cy) / h, phi);
      double f = 0;
      for (int k = 0; k < n; ++k) f += c[k] * phi[k];
      b.f0.push_back(f);
      b.f1.push_back(smooth(x, y));
    }
  }
  return b;
}

void weighted_system(const Batch& b, int e, std::vector<double>& a, std::vector<double>& rhs) {
  const int m = b.m[e], n = b.n[e];
  a.assign(static_cast<std::size_t>(m) * n, 0.0);
  rhs.assign(static_cast<std::size_t>(m) * rhs_count, 0.0);
  double phi[16];
  for (int j = 0; j < m; ++j) {
    const std::size_t p = b.pt_at[e] + static_cast<std::size_t>(j);
    const double u = (b.px[p] - b.cx[e]) / b.h[e], v = (b.py[p] - b.cy[e]) / b.h[e];
    const double sw = std::sqrt(weight(std::sqrt(u * u + v * v)));
    basis(b.degree[e], u, v, phi);
    for (int k = 0; k < n; ++k) a[static_cast<std::size_t>(k) * m + j] = sw * phi[k];
    rhs[j] = sw * b.f0[p];
    rhs[static_cast<std::size_t>(m) + j] = sw * b.f1[p];
  }
}

Reference lapack_reference(const Batch& b) {
  Reference r;
  r.x.resize(rhs_count * b.coefficients);
  r.kappa.resize(static_cast<std::size_t>(b.count));
  std::vector<double> a, rhs, work, s;
  for (int e = 0; e < b.count; ++e) {
    const int m = b.m[e], n = b.n[e], nrhs = rhs_count;
    // Conditioning: the singular values of W^1/2 P.
    weighted_system(b, e, a, rhs);
    s.resize(static_cast<std::size_t>(n));
    int info = 0, lwork = -1, one = 1;
    double query = 0, dummy = 0;
    dgesvd_("N", "N", &m, &n, a.data(), &m, s.data(), &dummy, &one, &dummy, &one, &query, &lwork,
            &info);
    lwork = static_cast<int>(query);
    work.resize(static_cast<std::size_t>(lwork));
    dgesvd_("N", "N", &m, &n, a.data(), &m, s.data(), &dummy, &one, &dummy, &one, work.data(),
            &lwork, &info);
    if (info != 0) throw std::runtime_error("dgesvd: info " + std::to_string(info));
    const double kappa = s[n - 1] > 0 ? s[0] / s[n - 1] : std::numeric_limits<double>::infinity();
    r.kappa[e] = kappa;
    r.max_kappa = std::max(r.max_kappa, kappa);
    // The fit: dgels on W^1/2 P, both right-hand sides.
    weighted_system(b, e, a, rhs);
    lwork = -1;
    dgels_("N", &m, &n, &nrhs, a.data(), &m, rhs.data(), &m, &query, &lwork, &info);
    lwork = static_cast<int>(query);
    work.resize(static_cast<std::size_t>(lwork));
    dgels_("N", &m, &n, &nrhs, a.data(), &m, rhs.data(), &m, work.data(), &lwork, &info);
    if (info != 0) throw std::runtime_error("dgels: info " + std::to_string(info));
    for (int c = 0; c < nrhs; ++c) {
      for (int k = 0; k < n; ++k) {
        r.x[rhs_count * b.c_at[e] + static_cast<std::size_t>(c) * n + k] =
            rhs[static_cast<std::size_t>(c) * m + k];
      }
    }
  }
  return r;
}

double error_bound(double kappa, int m, int n) {
  return 10 * std::sqrt(static_cast<double>(m) * n) * std::numeric_limits<double>::epsilon() *
         kappa * kappa;
}

Errors errors(const Batch& b, const Reference& r, const std::vector<double>& x) {
  Errors out;
  double worst = 0;
  const auto relative = [](const double* got, const double* want, int n) {
    double num = 0, den = 0;
    for (int k = 0; k < n; ++k) {
      num += (got[k] - want[k]) * (got[k] - want[k]);
      den += want[k] * want[k];
    }
    return std::sqrt(num / (den > 0 ? den : 1));
  };
  for (int e = 0; e < b.count; ++e) {
    const int n = b.n[e];
    const std::size_t at = rhs_count * b.c_at[e];
    double here = 0;
    for (int c = 0; c < rhs_count; ++c) {
      const std::size_t o = at + static_cast<std::size_t>(c) * n;
      const double err = relative(x.data() + o, r.x.data() + o, n);
      keep_worst(out.vs_lapack, err);
      keep_worst(here, err);
    }
    const double err = relative(x.data() + at, b.exact.data() + b.c_at[e], n);
    keep_worst(out.vs_exact, err);
    keep_worst(here, err);
    if (keep_worst(worst, here)) out.worst_entry = e;
  }
  return out;
}

}  // namespace kbuf_batched
