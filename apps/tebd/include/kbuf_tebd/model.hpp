#ifndef KBUF_TEBD_MODEL_HPP
#define KBUF_TEBD_MODEL_HPP

/// @file
/// The two spin chains kbuf-tebd solves: their bond Hamiltonians, the imaginary-time gates
/// exp(-tau h) of those bonds, and the exact ground-state energies per site.

#include <array>
#include <string>

namespace kbuf_tebd {

/// Physical dimension of a site (spin 1/2).
inline constexpr int phys_dim = 2;

/// A two-site operator O[s,t,u,v] = <s t| O |u v>, row index s*2+t, column u*2+v: a 4x4
/// real matrix in row-major order.
using TwoSiteOperator = std::array<double, 16>;

/// The chains.
enum class Model {
  ising,       ///< H = -sum sz_i sz_{i+1} - h sum sx_i (Pauli matrices)
  heisenberg,  ///< H = sum S_i . S_{i+1} (spin 1/2, S = sigma/2)
};

/// "ising", "heisenberg".
const char* to_string(Model model) noexcept;

/// The term of one bond, such that H = sum over bonds of it: for Ising the field is shared
/// equally between the bond's two sites, -sz sz - (h/2)(sx 1 + 1 sx); for Heisenberg
/// S.S = (sx sx + sy sy + sz sz)/4 (sy sy is real). `field` is ignored for Heisenberg.
TwoSiteOperator bond_hamiltonian(Model model, double field);

/// exp(-tau h) of a symmetric two-site operator, from its eigendecomposition (LAPACK dsyev).
/// @throws std::runtime_error if dsyev fails.
TwoSiteOperator imaginary_time_gate(const TwoSiteOperator& h, double tau);

/// exp(-tau (h - e_min)), e_min the smallest eigenvalue of h: exp(-tau h) times the positive
/// factor exp(tau e_min), which a normalised state does not see. Its largest eigenvalue is 1
/// and every entry at most 1 for any tau >= 0 and any field, where exp(-tau h) overflows once
/// tau |h| passes about 700. What the evolution applies.
/// @throws std::runtime_error if dsyev fails.
TwoSiteOperator normalised_imaginary_time_gate(const TwoSiteOperator& h, double tau);

/// The exact ground-state energy per site in the thermodynamic limit.
/// Ising: e0(h) = -(1/pi) int_0^pi sqrt(1 + h^2 - 2h cos k) dk (Pfeuty), by adaptive Simpson
/// quadrature to about 1e-15; e0(1) = -4/pi. Heisenberg: e0 = 1/4 - ln 2 (Hulthen).
double exact_energy(Model model, double field);

}  // namespace kbuf_tebd

#endif  // KBUF_TEBD_MODEL_HPP
