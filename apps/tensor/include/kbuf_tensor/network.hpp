#ifndef KBUF_TENSOR_NETWORK_HPP
#define KBUF_TENSOR_NETWORK_HPP

/// @file
/// The two-site environment network of TensorOperations' tests, and its expectation value.
///
///   HRAA[a,s1,s2,c] = rhoL[a,a'] A1[a',t1,b] A2[b,t2,c'] rhoR[c',c] H[s1,s2,t1,t2]
///   E               = conj(A1[a,s1,b]) conj(A2[b,s2,c]) HRAA[a,s1,s2,c]
///
/// a, a', b, c, c' are bond indices of dimension D; s1, s2, t1, t2 physical ones of dimension d.
/// rhoL and rhoR are the left and right environments of the two-site MPS |psi> = A1 A2, H a
/// two-site operator, so E = <psi| (rhoL x H x rhoR) |psi>: the two-site energy with
/// environments. HRAA is the operator applied to the ket, the network a DMRG-style two-site
/// update evaluates.
///
/// Pairwise order (multiply-adds per step):
///   X1[a,t1,b]      = rhoL[a,a'] A1[a',t1,b]        D^3 d     (GEMM, no permute)
///   X2[b,t2,c]      = A2[b,t2,c'] rhoR[c',c]        D^3 d     (GEMM, no permute)
///   X3[a,t1,t2,c]   = X1[a,t1,b] X2[b,t2,c]         D^3 d^2   (GEMM, no permute)
///   HRAA[a,s1,s2,c] = X3[a,t1,t2,c] H[s1,s2,t1,t2]  D^2 d^4   (X3 and product permuted)
///   Psi[a,s1,s2,c]  = A1[a,s1,b] A2[b,s2,c]         D^3 d^2   (GEMM, no permute)
///   E               = conj(Psi) . HRAA              D^2 d^2   (GEMM 'C','N', 1 x 1)
/// HRAA costs 2 D^3 d + D^3 d^2 + D^2 d^4 (278,528 at D = 32, d = 2). Absorbing the
/// environments into the single-site tensors first keeps every D^3 step at most d^2; starting
/// with A1 A2 costs 3 D^3 d^2 + D^2 d^4 (409,600), rhoL (A1 (A2 rhoR)) D^3 d + 2 D^3 d^2
/// + D^2 d^4 (344,064), and touching H before both bond sums are done costs D^3 d^4 or more.
/// The first three steps need no permute because row-major A1, A2 are already (a' | t1 b)
/// and (b t2 | c') matrices; only the H step (summing the middle indices t1, t2 of X3 and
/// interleaving the output) needs two. Temporaries per network: X1, X2, X3, the permuted X3,
/// the product before its permute, Psi and the 1-element E: seven.

#include <cstddef>
#include <cstdint>
#include <string>

#include <Kokkos_Core.hpp>
#include <kbuf/kbuf.hpp>

#include <kbuf_tensor/contract.hpp>
#include <kbuf_tensor/reference.hpp>
#include <kbuf_tensor/temporaries.hpp>
#include <kbuf_tensor/tensor.hpp>

namespace kbuf_tensor {

/// The network's input tensors on the host.
template <class T>
struct HostNetwork {
  std::size_t bond = 0;  ///< D
  std::size_t phys = 0;  ///< d
  HostTensor<T> rhoL;    ///< [a, a']            D x D
  HostTensor<T> A1;      ///< [a', t1, b]        D x d x D
  HostTensor<T> A2;      ///< [b, t2, c']        D x d x D
  HostTensor<T> rhoR;    ///< [c', c]            D x D
  HostTensor<T> H;       ///< [s1, s2, t1, t2]   d x d x d x d
};

/// The network's input tensors in `MemorySpace` (managed Views).
template <class T, class MemorySpace = default_memory_space>
struct Network {
  std::size_t bond = 0;
  std::size_t phys = 0;
  Tensor<T, MemorySpace> rhoL, A1, A2, rhoR, H;
};

/// Random inputs (elements uniform in [-1, 1), real and imaginary parts), reproducible from
/// `seed`.
template <class T>
HostNetwork<T> random_host_network(std::size_t bond, std::size_t phys, std::uint64_t seed = 1) {
  const std::size_t D = bond, d = phys;
  HostNetwork<T> net;
  net.bond = D;
  net.phys = d;
  net.rhoL = random_host_tensor<T>({D, D}, seed * 10 + 1);
  net.A1 = random_host_tensor<T>({D, d, D}, seed * 10 + 2);
  net.A2 = random_host_tensor<T>({D, d, D}, seed * 10 + 3);
  net.rhoR = random_host_tensor<T>({D, D}, seed * 10 + 4);
  net.H = random_host_tensor<T>({d, d, d, d}, seed * 10 + 5);
  return net;
}

/// Device copies of the inputs.
template <class T, class MemorySpace = default_memory_space>
Network<T, MemorySpace> to_device(const HostNetwork<T>& h) {
  Network<T, MemorySpace> net;
  net.bond = h.bond;
  net.phys = h.phys;
  net.rhoL = to_device<T, MemorySpace>(h.rhoL, "rhoL");
  net.A1 = to_device<T, MemorySpace>(h.A1, "A1");
  net.A2 = to_device<T, MemorySpace>(h.A2, "A2");
  net.rhoR = to_device<T, MemorySpace>(h.rhoR, "rhoR");
  net.H = to_device<T, MemorySpace>(h.H, "H");
  return net;
}

/// The shape of HRAA: [D, d, d, D].
inline Shape hraa_shape(std::size_t bond, std::size_t phys) {
  return {bond, phys, phys, bond};
}

/// A managed, uninitialised output tensor for HRAA.
template <class T, class MemorySpace>
Tensor<T, MemorySpace> make_hraa(const Network<T, MemorySpace>& net,
                                 const std::string& label = "HRAA") {
  return make_tensor<T, MemorySpace>(label, hraa_shape(net.bond, net.phys));
}

/// Multiply-adds of one `contract_network` (HRAA, then E), in the order above.
inline double network_multiply_adds(std::size_t bond, std::size_t phys) {
  const double D = static_cast<double>(bond), d = static_cast<double>(phys);
  const double hraa = 2 * D * D * D * d + D * D * D * d * d + D * D * d * d * d * d;
  const double energy = D * D * D * d * d + D * D * d * d;
  return hraa + energy;
}

/// The plans of the network's six pairwise contractions for one (D, d) and element type.
/// Making them once per size and reusing them takes the label analysis off the
/// per-contraction path, as TensorOperations' `@tensor` does at macro expansion.
struct NetworkPlan {
  std::size_t bond = 0;
  std::size_t phys = 0;
  ContractionPlan x1;      ///< X1[a,t1,b]      = rhoL[a,a'] A1[a',t1,b]
  ContractionPlan x2;      ///< X2[b,t2,c]      = A2[b,t2,c'] rhoR[c',c]
  ContractionPlan x3;      ///< X3[a,t1,t2,c]   = X1[a,t1,b] X2[b,t2,c]
  ContractionPlan hraa;    ///< HRAA[a,s1,s2,c] = X3[a,t1,t2,c] H[s1,s2,t1,t2]
  ContractionPlan psi;     ///< Psi[a,s1,s2,c]  = A1[a,s1,b] A2[b,s2,c]
  ContractionPlan energy;  ///< E               = conj(Psi)[a,s1,s2,c] HRAA[a,s1,s2,c]
};

/// Plans the network for bond dimension `bond` and physical dimension `phys`.
template <class T>
NetworkPlan plan_network(std::size_t bond, std::size_t phys) {
  const std::size_t D = bond, d = phys;
  NetworkPlan p;
  p.bond = D;
  p.phys = d;
  const Shape mat{D, D}, site{D, d, D}, op{d, d, d, d};
  p.x1 = plan_contraction(mat, "a,a'", site, "a',t1,b", "a,t1,b");
  p.x2 = plan_contraction(site, "b,t2,c'", mat, "c',c", "b,t2,c");
  p.x3 = plan_contraction(p.x1.c, "a,t1,b", p.x2.c, "b,t2,c", "a,t1,t2,c");
  p.hraa = plan_contraction(p.x3.c, "a,t1,t2,c", op, "s1,s2,t1,t2", "a,s1,s2,c");
  p.psi = plan_contraction(site, "a,s1,b", site, "b,s2,c", "a,s1,s2,c");
  p.energy = plan_contraction(p.psi.c, "a,s1,s2,c", p.hraa.c, "a,s1,s2,c", "",
                              is_complex<T>::value ? Conj::a : Conj::none);
  return p;
}

/// HRAA into `hraa` (shape [D, d, d, D], not a temporary), every intermediate from `tmp`:
/// X1, X2, X3 and the contractions' own temporaries, all released before it returns. Work is
/// submitted to `tmp.execution_space_instance()` and may still run when it returns.
/// @throws kbuf::logic_error if the tensors do not have the shapes `plan` was made for.
template <class T, class MemorySpace>
void contract_hraa(Temporaries<MemorySpace>& tmp, const NetworkPlan& plan,
                   const Network<T, MemorySpace>& net, const Tensor<T, MemorySpace>& hraa) {
  auto scope = tmp.scope();
  const auto x1 = contract(tmp, plan.x1, net.rhoL, net.A1);
  const auto x2 = contract(tmp, plan.x2, net.A2, net.rhoR);
  const auto x3 = contract(tmp, plan.x3, x1, x2);
  execute(tmp, plan.hraa, x3, net.H, hraa);
}

/// E = conj(A1[a,s1,b]) conj(A2[b,s2,c]) HRAA[a,s1,s2,c], with Psi = A1 A2 and the 1-element
/// result as temporaries from `tmp`. Copies E to the host on `tmp.execution_space_instance()`
/// and fences that instance (only).
template <class T, class MemorySpace>
T expectation_value(Temporaries<MemorySpace>& tmp, const NetworkPlan& plan,
                    const Network<T, MemorySpace>& net, const Tensor<T, MemorySpace>& hraa) {
  auto scope = tmp.scope();
  const auto psi = contract(tmp, plan.psi, net.A1, net.A2);
  const auto e = contract(tmp, plan.energy, psi, hraa);
  T value(0);
  Kokkos::View<T*, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host(&value, 1);
  const auto& space = tmp.execution_space_instance();
  Kokkos::deep_copy(space, host, e.data);
  space.fence();
  return value;
}

/// The whole workload: HRAA into `hraa`, then E, which it returns. Seven temporaries from
/// `tmp`, all released before it returns; with a kbuf allocator that has seen one call, a
/// second call of the same sizes takes them all from the buffer without growing it.
/// @throws kbuf::logic_error if the tensors do not have the shapes `plan` was made for.
template <class T, class MemorySpace>
T contract_network(Temporaries<MemorySpace>& tmp, const NetworkPlan& plan,
                   const Network<T, MemorySpace>& net, const Tensor<T, MemorySpace>& hraa) {
  contract_hraa(tmp, plan, net, hraa);
  return expectation_value(tmp, plan, net, hraa);
}

/// As above, planning the network on the way (host work: the label analysis of six
/// contractions, about a microsecond).
template <class T, class MemorySpace>
T contract_network(Temporaries<MemorySpace>& tmp, const Network<T, MemorySpace>& net,
                   const Tensor<T, MemorySpace>& hraa) {
  return contract_network(tmp, plan_network<T>(net.bond, net.phys), net, hraa);
}

/// As above, with temporaries from `alloc`.
template <class T, class MemorySpace>
T contract_network(kbuf::BufferAllocator<MemorySpace>& alloc, const Network<T, MemorySpace>& net,
                   const Tensor<T, MemorySpace>& hraa) {
  Temporaries<MemorySpace> tmp(alloc);
  return contract_network(tmp, net, hraa);
}

// ---- References (host, plain loops) ---------------------------------------------------------

/// HRAA by plain loops in the same pairwise order as `contract_hraa` (reference_contract for
/// each step): cheap enough for any D, independent of the GEMM/permute code.
template <class T>
HostTensor<T> reference_hraa(const HostNetwork<T>& net) {
  const auto x1 = reference_contract("a,t1,b", net.rhoL, "a,a'", net.A1, "a',t1,b");
  const auto x2 = reference_contract("b,t2,c", net.A2, "b,t2,c'", net.rhoR, "c',c");
  const auto x3 = reference_contract("a,t1,t2,c", x1, "a,t1,b", x2, "b,t2,c");
  return reference_contract("a,s1,s2,c", x3, "a,t1,t2,c", net.H, "s1,s2,t1,t2");
}

/// HRAA by one loop nest over all nine indices: D^5 d^4 multiply-adds, for small D only.
template <class T>
HostTensor<T> reference_hraa_direct(const HostNetwork<T>& net) {
  const std::size_t D = net.bond, d = net.phys;
  HostTensor<T> out(hraa_shape(D, d));
  auto at2 = [](const HostTensor<T>& t, std::size_t i, std::size_t j) {
    return t.data[i * t.shape[1] + j];
  };
  auto at3 = [](const HostTensor<T>& t, std::size_t i, std::size_t j, std::size_t k) {
    return t.data[(i * t.shape[1] + j) * t.shape[2] + k];
  };
  for (std::size_t a = 0; a < D; ++a)
    for (std::size_t s1 = 0; s1 < d; ++s1)
      for (std::size_t s2 = 0; s2 < d; ++s2)
        for (std::size_t c = 0; c < D; ++c) {
          T sum(0);
          for (std::size_t ap = 0; ap < D; ++ap)
            for (std::size_t t1 = 0; t1 < d; ++t1)
              for (std::size_t b = 0; b < D; ++b)
                for (std::size_t t2 = 0; t2 < d; ++t2)
                  for (std::size_t cp = 0; cp < D; ++cp)
                    sum += at2(net.rhoL, a, ap) * at3(net.A1, ap, t1, b) * at3(net.A2, b, t2, cp) *
                           at2(net.rhoR, cp, c) * net.H.data[((s1 * d + s2) * d + t1) * d + t2];
          out.data[((a * d + s1) * d + s2) * D + c] = sum;
        }
  return out;
}

/// E by one loop nest: sum over a, s1, b, s2, c of conj(A1) conj(A2) HRAA.
template <class T>
T reference_expectation_value(const HostNetwork<T>& net, const HostTensor<T>& hraa) {
  const std::size_t D = net.bond, d = net.phys;
  T sum(0);
  for (std::size_t a = 0; a < D; ++a)
    for (std::size_t s1 = 0; s1 < d; ++s1)
      for (std::size_t b = 0; b < D; ++b)
        for (std::size_t s2 = 0; s2 < d; ++s2)
          for (std::size_t c = 0; c < D; ++c)
            sum += conjugate(net.A1.data[(a * d + s1) * D + b]) *
                   conjugate(net.A2.data[(b * d + s2) * D + c]) *
                   hraa.data[((a * d + s1) * d + s2) * D + c];
  return sum;
}

}  // namespace kbuf_tensor

#endif  // KBUF_TENSOR_NETWORK_HPP
