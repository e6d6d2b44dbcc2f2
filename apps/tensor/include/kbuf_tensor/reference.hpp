#ifndef KBUF_TENSOR_REFERENCE_HPP
#define KBUF_TENSOR_REFERENCE_HPP

/// @file
/// Naive references on the host: plain loops over every index, no GEMM, no permutes, no kbuf.

#include <array>
#include <cstddef>

#include <kbuf_tensor/contract.hpp>
#include <kbuf_tensor/tensor.hpp>

namespace kbuf_tensor {

/// `C[c_labels] = op(A)[a_labels] op(B)[b_labels]` by one loop nest over all distinct labels
/// (output labels outside, summed labels inside). Same label rules as `contract`.
/// @throws kbuf::logic_error for bad labels.
template <class T>
HostTensor<T> reference_contract(const char* c_labels, const HostTensor<T>& a, const char* a_labels,
                                 const HostTensor<T>& b, const char* b_labels,
                                 Conj conj = Conj::none) {
  // Validates the labels and gives C's shape; the plan itself is not used.
  const ContractionPlan plan = plan_contraction(a.shape, a_labels, b.shape, b_labels, c_labels);
  static constexpr const char* call = "kbuf_tensor::reference_contract";
  const Labels la = Labels::parse(a_labels, call);
  const Labels lb = Labels::parse(b_labels, call);
  const Labels lc = Labels::parse(c_labels, call);

  // All distinct labels: C's first, then the summed ones (in A's order).
  constexpr int max_labels = 2 * max_rank;
  std::array<std::size_t, max_labels> extent{};
  std::array<std::size_t, max_labels> stride_a{}, stride_b{}, stride_c{};
  int n = 0;
  auto strides = [](const Shape& s) {
    std::array<std::size_t, max_rank> st{};
    std::size_t x = 1;
    for (int d = s.rank - 1; d >= 0; --d) {
      st[static_cast<std::size_t>(d)] = x;
      x *= s[d];
    }
    return st;
  };
  const auto sa = strides(a.shape), sb = strides(b.shape), sc = strides(plan.c);
  auto add = [&](std::string_view name, std::size_t ext) {
    const auto u = static_cast<std::size_t>(n++);
    extent[u] = ext;
    const int ia = la.find(name), ib = lb.find(name), ic = lc.find(name);
    stride_a[u] = ia >= 0 ? sa[static_cast<std::size_t>(ia)] : 0;
    stride_b[u] = ib >= 0 ? sb[static_cast<std::size_t>(ib)] : 0;
    stride_c[u] = ic >= 0 ? sc[static_cast<std::size_t>(ic)] : 0;
  };
  for (int l = 0; l < lc.rank; ++l) add(lc[l], plan.c[l]);
  for (int i = 0; i < la.rank; ++i)
    if (lc.find(la[i]) < 0) add(la[i], a.shape[i]);

  HostTensor<T> c(plan.c);
  std::size_t total = 1;
  for (int u = 0; u < n; ++u) total *= extent[static_cast<std::size_t>(u)];
  std::array<std::size_t, max_labels> idx{};
  const bool ca = conj_of_a(conj), cb = conj_of_b(conj);
  for (std::size_t it = 0; it < total; ++it) {
    std::size_t oa = 0, ob = 0, oc = 0;
    for (int u = 0; u < n; ++u) {
      const auto s = static_cast<std::size_t>(u);
      oa += idx[s] * stride_a[s];
      ob += idx[s] * stride_b[s];
      oc += idx[s] * stride_c[s];
    }
    const T x = ca ? conjugate(a.data[oa]) : a.data[oa];
    const T y = cb ? conjugate(b.data[ob]) : b.data[ob];
    c.data[oc] += x * y;
    for (int u = n - 1; u >= 0; --u) {  // odometer, last label fastest
      const auto s = static_cast<std::size_t>(u);
      if (++idx[s] < extent[s]) break;
      idx[s] = 0;
    }
  }
  return c;
}

}  // namespace kbuf_tensor

#endif  // KBUF_TENSOR_REFERENCE_HPP
