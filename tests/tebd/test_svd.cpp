// The truncated SVD against the untruncated one, for every source of temporaries.
#include <doctest/doctest.h>

#include "tebd_test_support.hpp"

#include <cmath>

using namespace kbuf_tebd_test;

namespace {

// |M - U_k diag(S_k) Vt_k|_F^2 on the host.
double residual2(const std::vector<double>& m, const SvdResult& r, std::size_t k) {
  const auto u = to_host(r.u), s = to_host(r.s), vt = to_host(r.vt);
  double sum = 0;
  for (std::size_t i = 0; i < r.rows; ++i)
    for (std::size_t j = 0; j < r.cols; ++j) {
      double x = 0;
      for (std::size_t q = 0; q < k; ++q) x += u[i * r.full + q] * s[q] * vt[q * r.cols + j];
      const double d = m[i * r.cols + j] - x;
      sum += d * d;
    }
  return sum;
}

// max |U^T U - 1| over the first k columns and |Vt Vt^T - 1| over the first k rows.
double orthonormality(const SvdResult& r, std::size_t k) {
  const auto u = to_host(r.u), vt = to_host(r.vt);
  double err = 0;
  for (std::size_t p = 0; p < k; ++p)
    for (std::size_t q = 0; q < k; ++q) {
      double uu = 0, vv = 0;
      for (std::size_t i = 0; i < r.rows; ++i) uu += u[i * r.full + p] * u[i * r.full + q];
      for (std::size_t j = 0; j < r.cols; ++j) vv += vt[p * r.cols + j] * vt[q * r.cols + j];
      const double one = p == q ? 1.0 : 0.0;
      err = std::max({err, std::fabs(uu - one), std::fabs(vv - one)});
    }
  return err;
}

}  // namespace

TEST_CASE("truncated SVD: the untruncated one reproduces the matrix, for every source") {
  const std::size_t shapes[][2] = {{1, 1}, {2, 8}, {8, 2}, {12, 12}, {20, 14}, {14, 20}};
  for (TemporaryPolicy policy : all_policies) {
    for (const auto& shape : shapes) {
      CAPTURE(std::string(kbuf_tensor::to_string(policy)));
      CAPTURE(shape[0]);
      CAPTURE(shape[1]);
      Source src(policy);
      const std::size_t rows = shape[0], cols = shape[1];
      const std::vector<double> m = random_values(rows * cols, rows * 100 + cols);
      const Vector dm = to_device(m);
      {
        auto scope = src.tmp->scope();
        const SvdResult r = truncated_svd(*src.tmp, dm, rows, cols, 1000, 0.0);
        CHECK(r.full == std::min(rows, cols));
        CHECK(r.rank == r.full);
        CHECK(r.discarded == doctest::Approx(0.0));
        double norm2 = 0;
        for (double x : m) norm2 += x * x;
        CHECK(residual2(m, r, r.rank) <= 1e-26 * norm2 * 100);
        CHECK(orthonormality(r, r.rank) <= 1e-13);
        const auto s = to_host(r.s);
        for (std::size_t i = 1; i < s.size(); ++i) CHECK(s[i] <= s[i - 1]);
        CHECK(to_host(dm) == m);  // the input is left alone
      }
      if (src.alloc) CHECK(src.alloc->empty());
    }
  }
}

TEST_CASE("truncated SVD: the truncation keeps the leading values, the best rank-k error") {
  const std::size_t rows = 16, cols = 12;
  const std::vector<double> m = random_values(rows * cols, 7);
  const Vector dm = to_device(m);
  Source full_src(TemporaryPolicy::fresh_views);
  auto full_scope = full_src.tmp->scope();
  const SvdResult full = truncated_svd(*full_src.tmp, dm, rows, cols, 1000, 0.0);
  const auto s_full = to_host(full.s);
  double total = 0;
  for (double x : s_full) total += x * x;
  for (TemporaryPolicy policy : all_policies) {
    for (std::size_t k : {1, 3, 7, 11}) {
      CAPTURE(std::string(kbuf_tensor::to_string(policy)));
      CAPTURE(k);
      Source src(policy);
      auto scope = src.tmp->scope();
      const SvdResult r = truncated_svd(*src.tmp, dm, rows, cols, k, 0.0);
      REQUIRE(r.rank == k);
      const auto s = to_host(r.s);
      double kept = 0, discarded = 0;
      for (std::size_t i = 0; i < s_full.size(); ++i) {
        CHECK(s[i] == doctest::Approx(s_full[i]).epsilon(1e-13));
        (i < k ? kept : discarded) += s_full[i] * s_full[i];
      }
      CHECK(r.kept_norm == doctest::Approx(std::sqrt(kept)).epsilon(1e-13));
      CHECK(r.discarded == doctest::Approx(discarded / total).epsilon(1e-12));
      // Eckart-Young: the truncated factors miss exactly the discarded weight.
      CHECK(residual2(m, r, k) == doctest::Approx(discarded).epsilon(1e-10));
      CHECK(orthonormality(r, k) <= 1e-13);
    }
  }
}

TEST_CASE("truncated SVD: the cutoff drops values below it (a matrix of rank 3)") {
  const std::size_t rows = 10, cols = 9, rank = 3;
  const auto a = random_values(rows * rank, 11), b = random_values(rank * cols, 12);
  std::vector<double> m(rows * cols, 0.0);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      for (std::size_t q = 0; q < rank; ++q) m[i * cols + j] += a[i * rank + q] * b[q * cols + j];
  Source src(TemporaryPolicy::kbuf);
  auto scope = src.tmp->scope();
  const SvdResult r = truncated_svd(*src.tmp, to_device(m), rows, cols, 100, 1e-10);
  CHECK(r.rank == rank);
  CHECK(r.discarded <= 1e-28);
  CHECK(residual2(m, r, rank) <= 1e-24);
}

TEST_CASE("truncated SVD: bad arguments are refused") {
  Source src(TemporaryPolicy::kbuf);
  auto scope = src.tmp->scope();
  const Vector m = to_device(random_values(6, 1));
  CHECK_THROWS_AS(truncated_svd(*src.tmp, m, 2, 3, 0, 0.0), kbuf::logic_error);
  CHECK_THROWS_AS(truncated_svd(*src.tmp, m, 2, 4, 5, 0.0), kbuf::logic_error);
}
