#ifndef KBUF_TEBD_ITEBD_HPP
#define KBUF_TEBD_ITEBD_HPP

/// @file
/// The infinite MPS of a two-site unit cell in Vidal's Gamma-Lambda form, the two-site update
/// of imaginary-time iTEBD, the energy per site, and checks of the canonical form.
///
///   ... Lambda[1] Gamma[0] Lambda[0] Gamma[1] Lambda[1] Gamma[0] Lambda[0] ...
///
/// Gamma[x] is a chi_left x d x chi_right tensor (row-major), Lambda[0] sits between site A
/// (x = 0) and site B (x = 1), Lambda[1] between B and the next A. Both are persistent managed
/// Views that are replaced by ones of the new size when the bond dimension changes; everything
/// a step computes on the way is a temporary of the `Temporaries` passed in.

#include <cstddef>
#include <cstdint>

#include <kbuf_tebd/model.hpp>
#include <kbuf_tebd/svd.hpp>

namespace kbuf_tebd {

/// The Gamma-Lambda form of a two-site-periodic infinite MPS.
struct State {
  Tensor gamma[2];   ///< Gamma[x]: [chi_left, d, chi_right]
  Vector lambda[2];  ///< Lambda[0] between A and B, Lambda[1] between B and A; sum of squares 1

  /// Bond dimension of Lambda[x].
  [[nodiscard]] std::size_t chi(int x) const noexcept { return lambda[x].extent(0); }
};

/// A product state of bond dimension 1 with random (seeded, reproducible) site vectors.
State random_product_state(std::uint64_t seed);

/// A two-site operator as a [d, d, d, d] tensor in the memory space (a managed View).
Tensor to_tensor(const TwoSiteOperator& op, const char* label);

/// Test-only faults, to show that the tests catch a wrong temporary.
struct Faults {
  /// With kbuf temporaries: the scaled right tensor of theta is handed out over the scaled
  /// left tensor while that is still live (the allocator's position is reset between them),
  /// as an allocator that released too early would. No effect with fresh Views.
  bool alias_theta_factors = false;
  /// With kbuf temporaries: after warm-up, every convergence check also takes a temporary one
  /// byte larger than the buffer, which only a fallback can serve, as in a run whose warm-up
  /// missed a need. No effect with fresh Views.
  bool late_fallback = false;
};

/// What one bond update did.
struct UpdateInfo {
  std::size_t rank = 0;       ///< the new bond dimension
  double discarded = 0;       ///< the relative weight truncated away
  bool svd_fallback = false;  ///< dgesdd did not converge, dgesvd was used
};

/// theta[a,s,t,c] = Lambda[y][a] Gamma[x][a,s,b] Lambda[x][b] Gamma[y][b,t,c] Lambda[y][c]
/// (y = 1 - x), a temporary of `tmp` (its pieces too). Without `right_lambda`, the last factor
/// Lambda[y][c] is left out: the unit cell's MPS tensor M[a,(s,t),c].
Tensor two_site_theta(Temporaries& tmp, const State& st, int x, const Faults& faults = {},
                      bool right_lambda = true);

/// One update of bond x (between Gamma[x] and Gamma[1-x]) by a two-site gate: theta, gate
/// applied, SVD truncated to at most `chi_max` values and none below `cutoff` times the
/// largest, new Lambda[x] = S / |S|, Gamma[x] = Lambda[y]^-1 U, Gamma[y] = Vt Lambda[y]^-1.
UpdateInfo update_bond(Temporaries& tmp, State& st, int x, const Tensor& gate, std::size_t chi_max,
                       double cutoff, const Faults& faults = {});

/// <theta| h |theta> / <theta|theta> on bond x: the bond's energy if the state is in canonical
/// form. Imaginary-time gates are not unitary, so after a step it is only close to it (off by
/// O(dt)), and so is this energy: cheap, for progress reports.
double bond_energy(Temporaries& tmp, const State& st, int x, const Tensor& h,
                   const Faults& faults = {});

/// Energy per site from `bond_energy`: the mean of the two bonds' (see there).
double energy_per_site(Temporaries& tmp, const State& st, const Tensor& h,
                       const Faults& faults = {});

/// The energy of bond x with the exact environments of the infinite chain: with the unit cell
/// tensor M (see two_site_theta) and its transfer matrix E(X) = sum_{s,t} M_st^T X M_st, the
/// left and right fixed points l, r by power iteration from the canonical form's (l = 1,
/// r = Lambda[y]^2) until they change by less than `tolerance` (relative, Frobenius) or after
/// `max_iterations`; then <h> = tr(l E_h(r)) / tr(l E(r)). Every tensor is a temporary.
struct EnvironmentEnergy {
  double energy = 0;
  std::size_t iterations = 0;  ///< the larger of the two bonds' power iterations
  bool converged = false;
};
EnvironmentEnergy bond_energy_environment(Temporaries& tmp, const State& st, int x, const Tensor& h,
                                          double tolerance = 1e-13,
                                          std::size_t max_iterations = 20000,
                                          const Faults& faults = {});

/// The energy per site with exact environments: the mean of the two bonds'.
EnvironmentEnergy energy_per_site_environment(Temporaries& tmp, const State& st, const Tensor& h,
                                              double tolerance = 1e-13,
                                              std::size_t max_iterations = 20000,
                                              const Faults& faults = {});

/// Canonical-form checks, on host copies (not on the step's path). Left: max over b, b' of
/// |sum_{a,s} Lambda_l[a]^2 Gamma[a,s,b] Gamma[a,s,b'] - delta_bb'|; right: max over a, a' of
/// |sum_{s,b} Gamma[a,s,b] Lambda_r[b]^2 Gamma[a',s,b] - delta_aa'| (Lambda_l, Lambda_r: the
/// bonds left and right of site x).
double left_canonical_error(const State& st, int x);
double right_canonical_error(const State& st, int x);
/// |sum Lambda[x]^2 - 1|.
double lambda_norm_error(const State& st, int x);

}  // namespace kbuf_tebd

#endif  // KBUF_TEBD_ITEBD_HPP
