// The Gamma-Lambda state, the two-site update of imaginary-time iTEBD, and the energy.
#include <kbuf_tebd/itebd.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace kbuf_tebd {

namespace {

using policy = Kokkos::RangePolicy<exec_space, Kokkos::IndexType<std::int64_t>>;
constexpr std::size_t d = phys_dim;

// A persistent tensor of `shape`: `old` itself when it already has that shape (its contents
// are about to be overwritten), else a new managed View.
Tensor persistent_tensor(const Tensor& old, const kbuf_tensor::Shape& shape,
                         const exec_space& exec) {
  if (old.shape == shape && old.data.extent(0) == shape.size()) return old;
  Tensor t;
  t.shape = shape;
  t.data = Vector(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kbuf_tebd::Gamma"),
                  shape.size());
  return t;
}

Vector persistent_vector(const Vector& old, std::size_t n, const exec_space& exec) {
  if (old.extent(0) == n) return old;
  return Vector(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kbuf_tebd::Lambda"), n);
}

double dot(const exec_space& exec, const Vector& a, const Vector& b) {
  double sum = 0;
  Kokkos::parallel_reduce(
      "kbuf_tebd::dot", policy(exec, 0, static_cast<std::int64_t>(a.extent(0))),
      KOKKOS_LAMBDA(std::int64_t i, double& acc) { acc += a(i) * b(i); }, sum);
  return sum;
}

}  // namespace

State random_product_state(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  State st;
  for (int x = 0; x < 2; ++x) {
    st.gamma[x].shape = {1, d, 1};
    st.gamma[x].data = Vector("kbuf_tebd::Gamma", d);
    auto g = Kokkos::create_mirror_view(st.gamma[x].data);
    double norm = 0;
    for (std::size_t s = 0; s < d; ++s) {
      g(s) = uniform(rng);
      norm += g(s) * g(s);
    }
    for (std::size_t s = 0; s < d; ++s) g(s) /= std::sqrt(norm);
    Kokkos::deep_copy(st.gamma[x].data, g);
    st.lambda[x] = Vector("kbuf_tebd::Lambda", 1);
    Kokkos::deep_copy(st.lambda[x], 1.0);
  }
  return st;
}

Tensor to_tensor(const TwoSiteOperator& op, const char* label) {
  Tensor t;
  t.shape = {d, d, d, d};
  t.data = Vector(std::string(label), op.size());
  auto h = Kokkos::create_mirror_view(t.data);
  for (std::size_t i = 0; i < op.size(); ++i) h(i) = op[i];
  Kokkos::deep_copy(t.data, h);
  return t;
}

Tensor two_site_theta(Temporaries& tmp, const State& st, int x, const Faults& faults,
                      bool right_lambda) {
  const int y = 1 - x;
  const exec_space& exec = tmp.execution_space_instance();
  const std::size_t c1 = st.chi(y), c2 = st.chi(x);
  const Vector gx = st.gamma[x].data, gy = st.gamma[y].data;
  const Vector lx = st.lambda[x], ly = st.lambda[y];
  const auto n2 = static_cast<std::int64_t>(c2), n1 = static_cast<std::int64_t>(c1);
  const auto dd = static_cast<std::int64_t>(d);

  kbuf::BufferAllocator<space>* alloc = tmp.allocator();
  const bool fault = faults.alias_theta_factors && alloc != nullptr;
  kbuf::BufferAllocator<space>::Checkpoint before_left;
  if (fault) before_left = alloc->checkpoint();

  // left[a,s,b] = Lambda[y][a] Gamma[x][a,s,b] Lambda[x][b]
  Tensor left;
  left.shape = {c1, d, c2};
  left.data = tmp.allocate<double>(left.shape.size());
  const Vector l = left.data;
  Kokkos::parallel_for(
      "kbuf_tebd::theta_left", policy(exec, 0, static_cast<std::int64_t>(left.size())),
      KOKKOS_LAMBDA(std::int64_t i) { l(i) = ly(i / (dd * n2)) * gx(i) * lx(i % n2); });

  if (fault) alloc->reset(before_left);  // the fault: `left` is released while still needed

  // right[b,t,c] = Gamma[y][b,t,c] Lambda[y][c] (or without Lambda[y])
  Tensor right;
  right.shape = {c2, d, c1};
  right.data = tmp.allocate<double>(right.shape.size());
  const Vector r = right.data;
  if (right_lambda) {
    Kokkos::parallel_for(
        "kbuf_tebd::theta_right", policy(exec, 0, static_cast<std::int64_t>(right.size())),
        KOKKOS_LAMBDA(std::int64_t i) { r(i) = gy(i) * ly(i % n1); });
  } else {
    Kokkos::deep_copy(exec, r, gy);
  }

  // theta[a,s,t,c] = left[a,s,b] right[b,t,c]: one GEMM, (c1 d) x c2 times c2 x (d c1)
  return kbuf_tensor::contract(tmp, "a,s,t,c", left, "a,s,b", right, "b,t,c");
}

UpdateInfo update_bond(Temporaries& tmp, State& st, int x, const Tensor& gate, std::size_t chi_max,
                       double cutoff, const Faults& faults) {
  const int y = 1 - x;
  const exec_space& exec = tmp.execution_space_instance();
  const std::size_t c1 = st.chi(y);
  auto scope = tmp.scope();  // every temporary below is released when the update returns

  const Tensor theta = two_site_theta(tmp, st, x, faults);
  // The gate on the two physical indices: theta is permuted to [s,t,a,c]-order for the GEMM
  // and the product back (both copies temporaries).
  const Tensor gated = kbuf_tensor::contract(tmp, "a,s,t,c", gate, "s,t,u,v", theta, "a,u,v,c");
  // As a matrix: rows (a,s), columns (t,c).
  const SvdResult svd = truncated_svd(tmp, gated.data, c1 * d, d * c1, chi_max, cutoff);
  const std::size_t k = svd.rank;

  // Lambda[y]^-1, once.
  const Vector ly = st.lambda[y];
  const Vector inv = tmp.allocate<double>(c1);
  Kokkos::parallel_for(
      "kbuf_tebd::lambda_inverse", policy(exec, 0, static_cast<std::int64_t>(c1)),
      KOKKOS_LAMBDA(std::int64_t i) { inv(i) = 1.0 / ly(i); });

  // Lambda[x] = S / |S| (the kept values).
  const Vector lam = persistent_vector(st.lambda[x], k, exec);
  const Vector s = svd.s;
  const double norm = svd.kept_norm;
  Kokkos::parallel_for(
      "kbuf_tebd::lambda", policy(exec, 0, static_cast<std::int64_t>(k)),
      KOKKOS_LAMBDA(std::int64_t i) { lam(i) = s(i) / norm; });

  // Gamma[x][a,s,b] = Lambda[y][a]^-1 U[(a,s), b]
  const Tensor gx = persistent_tensor(st.gamma[x], {c1, d, k}, exec);
  const Vector gxd = gx.data, u = svd.u;
  const auto kk = static_cast<std::int64_t>(k), full = static_cast<std::int64_t>(svd.full);
  const auto dd = static_cast<std::int64_t>(d), n1 = static_cast<std::int64_t>(c1);
  Kokkos::parallel_for(
      "kbuf_tebd::gamma_left", policy(exec, 0, static_cast<std::int64_t>(gx.size())),
      KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t row = i / kk, b = i - row * kk;
        gxd(i) = inv(row / dd) * u(row * full + b);
      });

  // Gamma[y][b,t,c] = Vt[b, (t,c)] Lambda[y][c]^-1: Vt's first k rows, in place
  const Tensor gy = persistent_tensor(st.gamma[y], {k, d, c1}, exec);
  const Vector gyd = gy.data, vt = svd.vt;
  Kokkos::parallel_for(
      "kbuf_tebd::gamma_right", policy(exec, 0, static_cast<std::int64_t>(gy.size())),
      KOKKOS_LAMBDA(std::int64_t i) { gyd(i) = vt(i) * inv(i % n1); });
  exec.fence();

  st.lambda[x] = lam;
  st.gamma[x] = gx;
  st.gamma[y] = gy;
  UpdateInfo info;
  info.rank = k;
  info.discarded = svd.discarded;
  info.svd_fallback = svd.used_fallback;
  return info;
}

double bond_energy(Temporaries& tmp, const State& st, int x, const Tensor& h,
                   const Faults& faults) {
  const exec_space& exec = tmp.execution_space_instance();
  auto scope = tmp.scope();
  const Tensor theta = two_site_theta(tmp, st, x, faults);
  const Tensor h_theta = kbuf_tensor::contract(tmp, "a,s,t,c", h, "s,t,u,v", theta, "a,u,v,c");
  return dot(exec, theta.data, h_theta.data) / dot(exec, theta.data, theta.data);
}

double energy_per_site(Temporaries& tmp, const State& st, const Tensor& h, const Faults& faults) {
  return 0.5 * (bond_energy(tmp, st, 0, h, faults) + bond_energy(tmp, st, 1, h, faults));
}

namespace {

// A chi x chi matrix temporary, set to the identity (squares = false) or to diag(lambda^2).
Tensor diagonal(Temporaries& tmp, const Vector& lambda, bool squares) {
  const exec_space& exec = tmp.execution_space_instance();
  const std::size_t n = lambda.extent(0);
  Tensor m;
  m.shape = {n, n};
  m.data = tmp.allocate<double>(n * n);
  const Vector v = m.data;
  const auto nn = static_cast<std::int64_t>(n);
  Kokkos::parallel_for(
      "kbuf_tebd::diagonal", policy(exec, 0, nn * nn), KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t row = i / nn, col = i - row * nn;
        v(i) = row != col ? 0.0 : squares ? lambda(row) * lambda(row) : 1.0;
      });
  return m;
}

double trace(const exec_space& exec, const Tensor& m) {
  const auto n = static_cast<std::int64_t>(m.extent(0));
  const Vector v = m.data;
  double sum = 0;
  Kokkos::parallel_reduce(
      "kbuf_tebd::trace", policy(exec, 0, n),
      KOKKOS_LAMBDA(std::int64_t i, double& acc) { acc += v(i * n + i); }, sum);
  return sum;
}

// x <- y / tr(y); returns |x_new - x_old|_F / |x_new|_F.
double normalise_into(const exec_space& exec, const Tensor& x, const Tensor& y) {
  const double t = trace(exec, y);
  const Vector xv = x.data, yv = y.data;
  double diff = 0, norm = 0;
  Kokkos::parallel_reduce(
      "kbuf_tebd::normalise", policy(exec, 0, static_cast<std::int64_t>(x.size())),
      KOKKOS_LAMBDA(std::int64_t i, double& acc) {
        const double v = yv(i) / t;
        acc += (v - xv(i)) * (v - xv(i));
        xv(i) = v;
      },
      diff);
  norm = dot(exec, xv, xv);
  return std::sqrt(diff / norm);
}

}  // namespace

EnvironmentEnergy bond_energy_environment(Temporaries& tmp, const State& st, int x, const Tensor& h,
                                          double tolerance, std::size_t max_iterations,
                                          const Faults& faults) {
  using kbuf_tensor::contract;
  using kbuf_tensor::contract_into;
  const exec_space& exec = tmp.execution_space_instance();
  const int y = 1 - x;
  auto scope = tmp.scope();
  const Tensor m = two_site_theta(tmp, st, x, faults, /*right_lambda=*/false);
  Tensor l = diagonal(tmp, st.lambda[y], false), r = diagonal(tmp, st.lambda[y], true);
  Tensor next;
  next.shape = l.shape;
  next.data = tmp.allocate<double>(l.size());
  EnvironmentEnergy e;
  bool left_done = false, right_done = false;
  std::size_t it = 0;
  for (; it < max_iterations && !(left_done && right_done); ++it) {
    if (!left_done) {  // l <- sum M^T l M
      auto inner = tmp.scope();
      const Tensor lm = contract(tmp, "a2,s,t,c", l, "a,a2", m, "a,s,t,c");
      contract_into(tmp, next, "c,c2", lm, "a2,s,t,c", m, "a2,s,t,c2");
      left_done = normalise_into(exec, l, next) < tolerance;
    }
    if (!right_done) {  // r <- sum M r M^T
      auto inner = tmp.scope();
      const Tensor mr = contract(tmp, "a,s,t,c2", m, "a,s,t,c", r, "c,c2");
      contract_into(tmp, next, "a,a2", mr, "a,s,t,c2", m, "a2,s,t,c2");
      right_done = normalise_into(exec, r, next) < tolerance;
    }
  }
  e.iterations = it;
  e.converged = left_done && right_done;
  // <h> = sum l[a,a2] (hM)[a,s,t,c] r[c,c2] M[a2,s,t,c2] / the same without h
  const Tensor hm = contract(tmp, "a,s,t,c", h, "s,t,u,v", m, "a,u,v,c");
  const Tensor lm = contract(tmp, "a,s,t,c2", l, "a2,a", m, "a2,s,t,c2");
  const Tensor hmr = contract(tmp, "a,s,t,c2", hm, "a,s,t,c", r, "c,c2");
  const Tensor mr = contract(tmp, "a,s,t,c2", m, "a,s,t,c", r, "c,c2");
  e.energy = dot(exec, lm.data, hmr.data) / dot(exec, lm.data, mr.data);
  return e;
}

EnvironmentEnergy energy_per_site_environment(Temporaries& tmp, const State& st, const Tensor& h,
                                              double tolerance, std::size_t max_iterations,
                                              const Faults& faults) {
  const EnvironmentEnergy a =
      bond_energy_environment(tmp, st, 0, h, tolerance, max_iterations, faults);
  const EnvironmentEnergy b =
      bond_energy_environment(tmp, st, 1, h, tolerance, max_iterations, faults);
  EnvironmentEnergy e;
  e.energy = 0.5 * (a.energy + b.energy);
  e.iterations = std::max(a.iterations, b.iterations);
  e.converged = a.converged && b.converged;
  return e;
}

namespace {

struct HostState {
  Kokkos::View<double*, Kokkos::HostSpace> gamma, lambda_left, lambda_right;
  std::size_t cl, cr;
};

// The largest |G(i, j) - δ_ij| of an n × n matrix G given entry by entry: how far G is from
// the identity.
template <class Entry>
double identity_error(std::size_t n, Entry g) {
  double err = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      err = std::max(err, std::fabs(g(i, j) - (i == j ? 1.0 : 0.0)));
  return err;
}

HostState host_site(const State& st, int x) {
  HostState h;
  h.gamma = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), st.gamma[x].data);
  h.lambda_left = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), st.lambda[1 - x]);
  h.lambda_right = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), st.lambda[x]);
  h.cl = st.gamma[x].extent(0);
  h.cr = st.gamma[x].extent(2);
  return h;
}

}  // namespace

double left_canonical_error(const State& st, int x) {
  const HostState h = host_site(st, x);
  return identity_error(h.cr, [&](std::size_t b, std::size_t b2) {
    double sum = 0;
    for (std::size_t a = 0; a < h.cl; ++a)
      for (std::size_t s = 0; s < d; ++s) {
        const double l = h.lambda_left(a);
        sum += l * l * h.gamma((a * d + s) * h.cr + b) * h.gamma((a * d + s) * h.cr + b2);
      }
    return sum;
  });
}

double right_canonical_error(const State& st, int x) {
  const HostState h = host_site(st, x);
  return identity_error(h.cl, [&](std::size_t a, std::size_t a2) {
    double sum = 0;
    for (std::size_t s = 0; s < d; ++s)
      for (std::size_t b = 0; b < h.cr; ++b) {
        const double l = h.lambda_right(b);
        sum += h.gamma((a * d + s) * h.cr + b) * l * l * h.gamma((a2 * d + s) * h.cr + b);
      }
    return sum;
  });
}

double lambda_norm_error(const State& st, int x) {
  const auto l = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), st.lambda[x]);
  double sum = 0;
  for (std::size_t i = 0; i < l.extent(0); ++i) sum += l(i) * l(i);
  return std::fabs(sum - 1.0);
}

}  // namespace kbuf_tebd
