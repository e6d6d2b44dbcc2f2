// Batched weighted least-squares polynomial fits (GMLS-like) in kernels: per entry, P, W^1/2 P,
// the normal matrix and the right-hand sides are built inside the kernel and the fit is solved by
// Kokkos Kernels' batched dense routines, with every array and every work array taken from the
// memory a strategy gives the kernel:
//   per team  (TeamPolicy, one entry per team): TeamVectorQR + TeamVectorApplyQ + TeamVectorTrsv,
//             TeamVectorUTV + TeamVectorSolveUTV, TeamLU + TeamInverseLU (normal equations);
//   per thread (RangePolicy + UniqueToken, Kokkos Kernels 4 only): SerialQR + SerialApplyQ +
//             SerialTrsv, SerialSVD, SerialGesv (normal equations).
// The memory: a kbuf::Workspace arena (takes in frames), level-0/1 team scratch sized for the
// largest entry, or one flat View cut into fixed slots by hand (one per UniqueToken value). The
// last two carve their views with BumpTakes, the offsets a user computes by hand, with frames too.
//
// The peer's overrun. TeamVectorQR (Kokkos Kernels 3.4 to 4.6 at least) and SerialQR (before
// Kokkos Kernels 4.6.00) run their Householder loop over k < m, not k < min(m, n): on a tall
// m x n matrix the steps k = n .. m-1 reflect columns that do not exist. On a column-major A with
// leading dimension m they write A(k..m-1, k) for k = n .. m-1, i.e. into the m x m column-major
// array whose first n columns are A, (m - n)(m - n + 1) / 2 doubles spread over the (m - n) m
// past A's end; and tau(k), i.e. m - n doubles past t's n. (On a row-major A they wrap into
// A's own first column and corrupt the factor.) The job takes A as the first n columns of an
// m x m column-major take and t with m entries (qr_columns, qr_tau), so those writes land in
// memory the entry holds and never reads.

#ifndef KBUF_BATCHED_FITS_HPP
#define KBUF_BATCHED_FITS_HPP

#include <kbuf/kbuf.hpp>
#include <kbuf_batched/problems.hpp>

#include <Kokkos_Core.hpp>

#include <KokkosKernels_config.h>

// SolveUTV's internals use the pivot routines without including them (3.4).
#include <KokkosBatched_ApplyPivot_Internal.hpp>
#include <KokkosBatched_ApplyQ_Decl.hpp>
#include <KokkosBatched_ApplyQ_TeamVector_Impl.hpp>
#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBatched_Gemm_TeamVector_Impl.hpp>
#include <KokkosBatched_InverseLU_Decl.hpp>
#include <KokkosBatched_LU_Decl.hpp>
#include <KokkosBatched_LU_Team_Impl.hpp>
#include <KokkosBatched_QR_Decl.hpp>
#include <KokkosBatched_QR_TeamVector_Impl.hpp>
#include <KokkosBatched_SolveUTV_Decl.hpp>
#include <KokkosBatched_SolveUTV_TeamVector_Impl.hpp>
#include <KokkosBatched_Trsv_Decl.hpp>
#include <KokkosBatched_Trsv_TeamVector_Impl.hpp>
#include <KokkosBatched_UTV_Decl.hpp>
#include <KokkosBatched_UTV_TeamVector_Impl.hpp>

// SerialSVD (3.5+) and SerialGesv (3.7+) are not in Debian's Kokkos Kernels 3.4, which has no
// KOKKOSKERNELS_VERSION either: the per-thread solvers are built with Kokkos Kernels 4.
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40000
#define KBUF_BATCHED_THREAD_SOLVERS 1
#include <KokkosBatched_ApplyQ_Serial_Impl.hpp>
#include <KokkosBatched_Gemm_Serial_Impl.hpp>
#include <KokkosBatched_Gesv.hpp>
#include <KokkosBatched_QR_Serial_Impl.hpp>
#include <KokkosBatched_SVD_Decl.hpp>
#include <KokkosBatched_Trsv_Serial_Impl.hpp>
#else
#define KBUF_BATCHED_THREAD_SOLVERS 0
#endif
// SerialQR loops over min(m, n) from Kokkos Kernels 4.6.00 on (its pull request 2342).
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40600
#define KBUF_BATCHED_SERIAL_QR_TALL_FIXED 1
#else
#define KBUF_BATCHED_SERIAL_QR_TALL_FIXED 0
#endif

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kbuf_batched {

/// Whether the per-thread solvers (SerialQR, SerialSVD, SerialGesv) are built.
inline constexpr bool thread_solvers = KBUF_BATCHED_THREAD_SOLVERS != 0;

/// The solvers of each level, in the order of the fits' columns.
inline constexpr int method_count = 3;
inline const char* const team_methods[method_count] = {"TeamVectorQR", "TeamVectorUTV", "TeamLU"};
inline const char* const thread_methods[method_count] = {"SerialQR", "SerialSVD", "SerialGesv"};

/// Columns of the column-major take whose first n columns hold TeamVectorQR's tall m x n A: its
/// steps k = n .. m-1 write A(k..m-1, k) (see the top of this file).
KOKKOS_INLINE_FUNCTION constexpr int qr_columns(int m, int n) {
  return m > n ? m : n;
}
/// Entries of TeamVectorQR's t: it writes tau(k) for k < m.
KOKKOS_INLINE_FUNCTION constexpr int qr_tau(int m, int n) {
  return m > n ? m : n;
}
/// The same for SerialQR, which loops over min(m, n) from Kokkos Kernels 4.6.00 on.
KOKKOS_INLINE_FUNCTION constexpr int serial_qr_columns(int m, int n) {
  return KBUF_BATCHED_SERIAL_QR_TALL_FIXED ? n : qr_columns(m, n);
}
KOKKOS_INLINE_FUNCTION constexpr int serial_qr_tau(int m, int n) {
  return KBUF_BATCHED_SERIAL_QR_TALL_FIXED ? n : qr_tau(m, n);
}

/// The unit every take is rounded up to, in BumpTakes and in the needs below (kbuf's own takes
/// are aligned to the allocator's alignment, 64 bytes at least).
inline constexpr std::size_t take_unit = 64;

KOKKOS_INLINE_FUNCTION constexpr std::size_t round_up(std::size_t bytes) {
  return (bytes + take_unit - 1) / take_unit * take_unit;
}

/// The most one entry of m points and n basis functions holds at once in the team kernel and in
/// the thread kernel, as the kernels take it (rounded as BumpTakes rounds): what the level-0/1
/// scratch and fixed-slot strategies must give the largest entry.
inline std::size_t team_need_bytes(int m, int n) {
  const auto d = [](std::size_t a, std::size_t b = 1) { return round_up(sizeof(double) * a * b); };
  const std::size_t M = static_cast<std::size_t>(m), N = static_cast<std::size_t>(n);
  const std::size_t R = rhs_count;
  const std::size_t common = d(M, N) + d(M) + d(M, R);  // P, sqrt(w), F
  const std::size_t qr = d(M, static_cast<std::size_t>(qr_columns(m, n))) +
                         d(static_cast<std::size_t>(qr_tau(m, n))) + d(N) + d(M, R);
  const std::size_t utv =
      d(M, N) + d(M, N) + d(N, N) + round_up(sizeof(int) * N) + d(3 * M) + d(M, R) + d(N, R);
  const std::size_t lu = d(N, N) + d(N, R) + d(N, R) + std::max(d(M, N) + d(M, R), d(N * N));
  return common + std::max(qr, std::max(utv, lu));
}
inline std::size_t thread_need_bytes(int m, int n) {
  const auto d = [](std::size_t a, std::size_t b = 1) { return round_up(sizeof(double) * a * b); };
  const std::size_t M = static_cast<std::size_t>(m), N = static_cast<std::size_t>(n);
  const std::size_t R = rhs_count;
  const std::size_t common = d(M, N) + d(M) + d(M, R);
  const std::size_t qr = d(M, static_cast<std::size_t>(serial_qr_columns(m, n))) +
                         d(static_cast<std::size_t>(serial_qr_tau(m, n))) + d(N) + d(M, R);
  const std::size_t svd =
      d(M, N) + d(M, M) + d(N) + d(N, N) + d(std::max(M, N)) + d(M, R) + d(N, R);
  const std::size_t gesv =
      d(N, N) + d(N, R) + d(N, R) + std::max(d(M, N) + d(M, R), d(N, N) + d(N, N + 4));
  return common + std::max(qr, std::max(svd, gesv));
}

/// The batch in a memory space: copies of Batch's arrays.
template <class Space>
struct DeviceBatch {
  Kokkos::View<int*, Space> m, n, degree;
  Kokkos::View<std::size_t*, Space> pt_at, c_at;
  Kokkos::View<double*, Space> px, py, f0, f1, cx, cy, h;

  DeviceBatch() = default;
  explicit DeviceBatch(const Batch& b)
      : m(copy(b.m, "m")),
        n(copy(b.n, "n")),
        degree(copy(b.degree, "degree")),
        pt_at(copy(b.pt_at, "pt_at")),
        c_at(copy(b.c_at, "c_at")),
        px(copy(b.px, "px")),
        py(copy(b.py, "py")),
        f0(copy(b.f0, "f0")),
        f1(copy(b.f1, "f1")),
        cx(copy(b.cx, "cx")),
        cy(copy(b.cy, "cy")),
        h(copy(b.h, "h")) {}

 private:
  template <class T>
  static Kokkos::View<T*, Space> copy(const std::vector<T>& v, const char* label) {
    Kokkos::View<T*, Space> d(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing),
                              v.size());
    Kokkos::deep_copy(
        d, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(v.data(), v.size()));
    return d;
  }
};

/// Takes from a kbuf::Workspace arena, in the interface the kernels use (BumpTakes has it too).
template <class Space>
struct ArenaTakes {
  using arena_type = typename kbuf::Workspace<Space>::Arena;
  arena_type& arena;
  template <class DataType, class... Extents>
  KOKKOS_INLINE_FUNCTION auto take(Extents... extents) const {
    return arena.template take<DataType, Kokkos::LayoutLeft>(extents...);
  }
  KOKKOS_INLINE_FUNCTION auto frame() const { return arena.frame(); }
  KOKKOS_INLINE_FUNCTION bool ok() const { return arena.ok(); }
};

/// Takes carved by hand from a block of `capacity` bytes (level-0/1 scratch, a fixed slot): the
/// offsets a user computes, rounded to take_unit, with frames that restore the offset. Every
/// thread of a team holds its own copy and makes the same takes.
template <class ViewSpace>
struct BumpTakes {
  unsigned char* base;
  std::size_t capacity;
  std::size_t top = 0;
  bool good = true;

  KOKKOS_INLINE_FUNCTION BumpTakes(void* memory, std::size_t bytes)
      : base(static_cast<unsigned char*>(memory)), capacity(memory != nullptr ? bytes : 0) {}

  template <class DataType, class... Extents>
  KOKKOS_INLINE_FUNCTION
      Kokkos::View<DataType, Kokkos::LayoutLeft, ViewSpace, Kokkos::MemoryUnmanaged>
      take(Extents... extents) {
    using V = Kokkos::View<DataType, Kokkos::LayoutLeft, ViewSpace, Kokkos::MemoryUnmanaged>;
    using T = typename V::value_type;
    std::size_t bytes = sizeof(T);
    ((bytes *= static_cast<std::size_t>(extents)), ...);
    bytes = round_up(bytes);
    if (!good || top + bytes > capacity) {
      good = false;
      return V();
    }
    T* p = reinterpret_cast<T*>(base + top);
    top += bytes;
    return V(p, extents...);
  }

  class Frame {
   public:
    KOKKOS_INLINE_FUNCTION explicit Frame(BumpTakes* b) : b_(b), saved_(b->top) {}
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;
    KOKKOS_INLINE_FUNCTION ~Frame() { b_->top = saved_; }

   private:
    BumpTakes* b_;
    std::size_t saved_;
  };
  KOKKOS_INLINE_FUNCTION Frame frame() { return Frame(this); }
  KOKKOS_INLINE_FUNCTION bool ok() const { return good; }
};

/// The fits of a batch: rhs_count * sum of n values per method (column), stored as Reference::x.
template <class Space>
using FitsView = Kokkos::View<double**, Kokkos::LayoutLeft, Space>;

/// What both levels share: the batch, where the fits go, which solvers run, the failure count.
template <class Space>
struct FitCommon {
  DeviceBatch<Space> b;
  FitsView<Space> x;
  Kokkos::View<int*, Space> failed;  // [0]: entries whose arrays could not all be taken
  unsigned methods = 7;              // bit i: solver i runs

  KOKKOS_INLINE_FUNCTION bool runs(int method) const { return (methods >> method) & 1u; }
};

// ---- Per team --------------------------------------------------------------------------------

/// One entry per team: the team builds P, the square roots of the weights and the data, then
/// fits by each solver in a frame of its own.
template <class Space>
struct TeamFit : FitCommon<Space> {
  using FitCommon<Space>::b;
  using FitCommon<Space>::x;

  template <class Member>
  KOKKOS_INLINE_FUNCTION void fail(const Member& team) const {
    Kokkos::single(Kokkos::PerTeam(team),
                   [&]() { Kokkos::atomic_add(&this->failed.data()[0], 1); });
  }

  /// False when a take could not be served (the entry is not fitted).
  template <class Member, class Takes>
  KOKKOS_INLINE_FUNCTION bool fit(const Member& team, Takes& mem, int e) const {
    const int m = b.m(e), n = b.n(e), degree = b.degree(e);
    const std::size_t pt = b.pt_at(e);
    const double cx = b.cx(e), cy = b.cy(e), h = b.h(e);
    auto P = mem.template take<double**>(m, n);
    auto sw = mem.template take<double*>(m);
    auto F = mem.template take<double**>(m, rhs_count);
    if (!mem.ok()) return false;
    const DeviceBatch<Space>& bb = b;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const int j) {
      const double u = (bb.px(pt + j) - cx) / h, v = (bb.py(pt + j) - cy) / h;
      double phi[basis_size(3)];
      basis(degree, u, v, phi);
      sw(j) = std::sqrt(weight(std::sqrt(u * u + v * v)));
      for (int k = 0; k < n; ++k) P(j, k) = phi[k];
      F(j, 0) = bb.f0(pt + j);
      F(j, 1) = bb.f1(pt + j);
    });
    team.team_barrier();
    const std::size_t at = rhs_count * b.c_at(e);
    if (this->runs(0) && !qr(team, mem, P, sw, F, at)) return false;
    if (this->runs(1) && !utv(team, mem, P, sw, F, at)) return false;
    if (this->runs(2) && !lu(team, mem, P, sw, F, at)) return false;
    return true;
  }

  // A = W^1/2 P, B = W^1/2 F.
  template <class Member, class PV, class SV, class FV, class AV, class BV>
  KOKKOS_INLINE_FUNCTION static void weigh(const Member& team, const PV& P, const SV& sw,
                                           const FV& F, const AV& A, const BV& B) {
    const int m = static_cast<int>(P.extent(0)), n = static_cast<int>(P.extent(1));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const int j) {
      for (int k = 0; k < n; ++k) A(j, k) = sw(j) * P(j, k);
      for (int c = 0; c < rhs_count; ++c) B(j, c) = sw(j) * F(j, c);
    });
    team.team_barrier();
  }

  // The first n rows of X (n x rhs_count) into the fits of method `method`.
  template <class Member, class XV>
  KOKKOS_INLINE_FUNCTION void store(const Member& team, const XV& X, int n, std::size_t at,
                                    int method) const {
    const FitsView<Space>& out = x;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * rhs_count), [&](const int i) {
      const int c = i / n, k = i % n;
      out(at + static_cast<std::size_t>(i), method) = X(k, c);
    });
    // X is read to the end before the caller's frame gives its memory to the next solver (a
    // kbuf frame's end is a barrier too; the bump takes' is not).
    team.team_barrier();
  }

  // Householder QR of W^1/2 P, Q^T W^1/2 F, R x = (Q^T W^1/2 F)(0:n).
  template <class Member, class Takes, class PV, class SV, class FV>
  KOKKOS_INLINE_FUNCTION bool qr(const Member& team, Takes& mem, const PV& P, const SV& sw,
                                 const FV& F, std::size_t at) const {
    namespace KB = KokkosBatched;
    const int m = static_cast<int>(P.extent(0)), n = static_cast<int>(P.extent(1));
    auto frame = mem.frame();
    auto A_all = mem.template take<double**>(m, qr_columns(m, n));  // the rest: QR's overrun
    auto t = mem.template take<double*>(qr_tau(m, n));              // tau(n..m-1): likewise
    auto w = mem.template take<double*>(n);  // QR: n - 1; ApplyQ: rhs_count <= n
    auto B = mem.template take<double**>(m, rhs_count);
    if (!mem.ok()) return false;
    const auto A = Kokkos::subview(A_all, Kokkos::ALL, Kokkos::make_pair(0, n));
    weigh(team, P, sw, F, A, B);
    KB::TeamVectorQR<Member, KB::Algo::QR::Unblocked>::invoke(team, A, t, w);
    team.team_barrier();
    KB::TeamVectorApplyQ<Member, KB::Side::Left, KB::Trans::Transpose,
                         KB::Algo::ApplyQ::Unblocked>::invoke(team, A, t, B, w);
    team.team_barrier();
    const auto R = Kokkos::subview(A, Kokkos::make_pair(0, n), Kokkos::make_pair(0, n));
    for (int c = 0; c < rhs_count; ++c) {
      KB::TeamVectorTrsv<Member, KB::Uplo::Upper, KB::Trans::NoTranspose, KB::Diag::NonUnit,
                         KB::Algo::Trsv::Unblocked>::invoke(team, 1.0, R,
                                                            Kokkos::subview(
                                                                B, Kokkos::make_pair(0, n), c));
      team.team_barrier();
    }
    store(team, B, n, at, 0);
    return true;
  }

  // UTV (QR with column pivoting) of W^1/2 P and its solve, both right-hand sides at once.
  template <class Member, class Takes, class PV, class SV, class FV>
  KOKKOS_INLINE_FUNCTION bool utv(const Member& team, Takes& mem, const PV& P, const SV& sw,
                                  const FV& F, std::size_t at) const {
    namespace KB = KokkosBatched;
    const int m = static_cast<int>(P.extent(0)), n = static_cast<int>(P.extent(1));
    auto frame = mem.frame();
    auto A = mem.template take<double**>(m, n);
    auto U = mem.template take<double**>(m, n);  // m x rank is what UTV forms
    auto V = mem.template take<double**>(n, n);  // touched only for a rank below n
    auto p = mem.template take<int*>(n);
    auto w = mem.template take<double*>(3 * m);  // UTV: 3 m; SolveUTV: B.span() = 2 m
    auto B = mem.template take<double**>(m, rhs_count);
    auto X = mem.template take<double**>(n, rhs_count);
    if (!mem.ok()) return false;
    weigh(team, P, sw, F, A, B);
    int rank = 0;
    KB::TeamVectorUTV<Member, KB::Algo::UTV::Unblocked>::invoke(team, A, p, U, V, w, rank);
    team.team_barrier();
    // The rank-2 form for B and X: the rank-1 form takes A's row count for both of U's
    // dimensions (it is written for square A).
    KB::TeamVectorSolveUTV<Member, KB::Algo::UTV::Unblocked>::invoke(team, rank, U, A, V, p, X, B,
                                                                     w);
    team.team_barrier();
    store(team, X, n, at, 1);
    return true;
  }

  // The normal equations (W^1/2 P)^T (W^1/2 P) x = (W^1/2 P)^T W^1/2 F by LU (no pivoting: the
  // matrix is symmetric positive definite) and the inverse.
  template <class Member, class Takes, class PV, class SV, class FV>
  KOKKOS_INLINE_FUNCTION bool lu(const Member& team, Takes& mem, const PV& P, const SV& sw,
                                 const FV& F, std::size_t at) const {
    namespace KB = KokkosBatched;
    const int m = static_cast<int>(P.extent(0)), n = static_cast<int>(P.extent(1));
    auto frame = mem.frame();
    auto G = mem.template take<double**>(n, n);
    auto R = mem.template take<double**>(n, rhs_count);
    auto X = mem.template take<double**>(n, rhs_count);
    if (!mem.ok()) return false;
    {
      auto inner = mem.frame();  // W^1/2 P and W^1/2 F, given back once G and R are built
      auto A = mem.template take<double**>(m, n);
      auto B = mem.template take<double**>(m, rhs_count);
      if (!mem.ok()) return false;
      weigh(team, P, sw, F, A, B);
      KB::TeamVectorGemm<Member, KB::Trans::Transpose, KB::Trans::NoTranspose,
                         KB::Algo::Gemm::Unblocked>::invoke(team, 1.0, A, A, 0.0, G);
      KB::TeamVectorGemm<Member, KB::Trans::Transpose, KB::Trans::NoTranspose,
                         KB::Algo::Gemm::Unblocked>::invoke(team, 1.0, A, B, 0.0, R);
      team.team_barrier();
    }
    KB::TeamLU<Member, KB::Algo::LU::Unblocked>::invoke(team, G);
    team.team_barrier();
    auto w = mem.template take<double*>(n * n);  // contiguous n x n: InverseLU's copy of G
    if (!mem.ok()) return false;
    KB::TeamInverseLU<Member, KB::Algo::InverseLU::Unblocked>::invoke(team, G, w);
    team.team_barrier();
    KB::TeamVectorGemm<Member, KB::Trans::NoTranspose, KB::Trans::NoTranspose,
                       KB::Algo::Gemm::Unblocked>::invoke(team, 1.0, G, R, 0.0, X);
    team.team_barrier();
    store(team, X, n, at, 2);
    return true;
  }
};

/// kbuf: the team's arena of a per_team workspace.
template <class Space>
struct TeamWithWorkspace {
  TeamFit<Space> f;
  kbuf::Workspace<Space> ws;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    auto arena = ws.arena(team);
    ArenaTakes<Space> mem{arena};
    if (!f.fit(team, mem, team.league_rank())) f.fail(team);
  }
};

/// Level-0 or level-1 team scratch of `bytes` (the largest entry's need) per team.
template <class Space>
struct TeamWithScratch {
  TeamFit<Space> f;
  int level;
  std::size_t bytes;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    using scratch_space = typename Space::execution_space::scratch_memory_space;
    BumpTakes<scratch_space> mem(team.team_scratch(level).get_shmem(bytes), bytes);
    if (!f.fit(team, mem, team.league_rank())) f.fail(team);
  }
};

/// One flat View of token.size() slots of `slot_bytes` (the largest entry's need), the team's
/// slot its UniqueToken value.
template <class Space>
struct TeamWithSlots {
  using exec = typename Space::execution_space;
  TeamFit<Space> f;
  Kokkos::View<unsigned char*, Space> slots;
  std::size_t slot_bytes;
  Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global> token;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    int t = 0;
    Kokkos::single(
        Kokkos::PerTeam(team), [&](int& v) { v = token.acquire(); }, t);
    {
      BumpTakes<Space> mem(slots.data() + static_cast<std::size_t>(t) * slot_bytes, slot_bytes);
      if (!f.fit(team, mem, team.league_rank())) f.fail(team);
    }
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() { token.release(t); });
  }
};

// ---- Per thread (Kokkos Kernels 4) -----------------------------------------------------------

#if KBUF_BATCHED_THREAD_SOLVERS
/// One entry per thread of a RangePolicy, each solver in a frame of its own.
template <class Space>
struct ThreadFit : FitCommon<Space> {
  using FitCommon<Space>::b;
  using FitCommon<Space>::x;

  KOKKOS_INLINE_FUNCTION void fail() const { Kokkos::atomic_add(&this->failed.data()[0], 1); }

  template <class Takes>
  KOKKOS_INLINE_FUNCTION bool fit(Takes& mem, int e) const {
    const int m = b.m(e), n = b.n(e), degree = b.degree(e);
    const std::size_t pt = b.pt_at(e);
    const double cx = b.cx(e), cy = b.cy(e), h = b.h(e);
    auto P = mem.template take<double**>(m, n);
    auto sw = mem.template take<double*>(m);
    auto F = mem.template take<double**>(m, rhs_count);
    if (!mem.ok()) return false;
    for (int j = 0; j < m; ++j) {
      const double u = (b.px(pt + j) - cx) / h, v = (b.py(pt + j) - cy) / h;
      double phi[basis_size(3)];
      basis(degree, u, v, phi);
      sw(j) = std::sqrt(weight(std::sqrt(u * u + v * v)));
      for (int k = 0; k < n; ++k) P(j, k) = phi[k];
      F(j, 0) = b.f0(pt + j);
      F(j, 1) = b.f1(pt + j);
    }
    const std::size_t at = rhs_count * b.c_at(e);
    if (this->runs(0) && !qr(mem, P, sw, F, at)) return false;
    if (this->runs(1) && !svd(mem, P, sw, F, at)) return false;
    if (this->runs(2) && !gesv(mem, P, sw, F, at)) return false;
    return true;
  }

  template <class PV, class SV, class FV, class AV, class BV>
  KOKKOS_INLINE_FUNCTION static void weigh(const PV& P, const SV& sw, const FV& F, const AV& A,
                                           const BV& B) {
    const int m = static_cast<int>(P.extent(0)), n = static_cast<int>(P.extent(1));
    for (int j = 0; j < m; ++j) {
      for (int k = 0; k < n; ++k) A(j, k) = sw(j) * P(j, k);
      for (int c = 0; c < rhs_count; ++c) B(j, c) = sw(j) * F(j, c);
    }
  }

  template <class XV>
  KOKKOS_INLINE_FUNCTION void store(const XV& X, int n, std::size_t at, int method) const {
    for (int c = 0; c < rhs_count; ++c) {
      for (int k = 0; k < n; ++k) x(at + static_cast<std::size_t>(c * n + k), method) = X(k, c);
    }
  }

  template <class Takes, class PV, class SV, class FV>
  KOKKOS_INLINE_FUNCTION bool qr(Takes& mem, const PV& P, const SV& sw, const FV& F,
                                 std::size_t at) const {
    namespace KB = KokkosBatched;
    const int m = static_cast<int>(P.extent(0)), n = static_cast<int>(P.extent(1));
    auto frame = mem.frame();
    auto A_all = mem.template take<double**>(m, serial_qr_columns(m, n));
    auto t_all = mem.template take<double*>(serial_qr_tau(m, n));
    auto w = mem.template take<double*>(n);
    auto B = mem.template take<double**>(m, rhs_count);
    if (!mem.ok()) return false;
    const auto A = Kokkos::subview(A_all, Kokkos::ALL, Kokkos::make_pair(0, n));
    const auto t = Kokkos::subview(t_all, Kokkos::make_pair(0, n));  // 4.6 checks t's extent
    weigh(P, sw, F, A, B);
    KB::SerialQR<KB::Algo::QR::Unblocked>::invoke(A, t, w);
    KB::SerialApplyQ<KB::Side::Left, KB::Trans::Transpose, KB::Algo::ApplyQ::Unblocked>::invoke(
        A, t, B, w);
    const auto R = Kokkos::subview(A, Kokkos::make_pair(0, n), Kokkos::make_pair(0, n));
    for (int c = 0; c < rhs_count; ++c) {
      KB::SerialTrsv<KB::Uplo::Upper, KB::Trans::NoTranspose, KB::Diag::NonUnit,
                     KB::Algo::Trsv::Unblocked>::invoke(1.0, R,
                                                        Kokkos::subview(B, Kokkos::make_pair(0, n),
                                                                        c));
    }
    store(B, n, at, 0);
    return true;
  }

  // SVD of W^1/2 P = U S V^T; x = V S^-1 U(:, 0:n)^T W^1/2 F.
  template <class Takes, class PV, class SV, class FV>
  KOKKOS_INLINE_FUNCTION bool svd(Takes& mem, const PV& P, const SV& sw, const FV& F,
                                  std::size_t at) const {
    namespace KB = KokkosBatched;
    const int m = static_cast<int>(P.extent(0)), n = static_cast<int>(P.extent(1));
    auto frame = mem.frame();
    auto A = mem.template take<double**>(m, n);
    auto U = mem.template take<double**>(m, m);  // SerialSVD forms all m left vectors
    auto s = mem.template take<double*>(n);
    auto Vt = mem.template take<double**>(n, n);
    auto W = mem.template take<double*>(m > n ? m : n);  // contiguous, max(m, n)
    auto B = mem.template take<double**>(m, rhs_count);
    auto X = mem.template take<double**>(n, rhs_count);
    if (!mem.ok()) return false;
    weigh(P, sw, F, A, B);
    KB::SerialSVD::invoke(KB::SVD_USV_Tag(), A, U, s, Vt, W);
    for (int c = 0; c < rhs_count; ++c) {
      for (int k = 0; k < n; ++k) {
        double y = 0;
        for (int j = 0; j < m; ++j) y += U(j, k) * B(j, c);
        W(k) = y / s(k);
      }
      for (int i = 0; i < n; ++i) {
        double v = 0;
        for (int k = 0; k < n; ++k) v += Vt(k, i) * W(k);
        X(i, c) = v;
      }
    }
    store(X, n, at, 1);
    return true;
  }

  // The normal equations by Gesv (static pivoting, LU): its tmp must be of G's View type.
  template <class Takes, class PV, class SV, class FV>
  KOKKOS_INLINE_FUNCTION bool gesv(Takes& mem, const PV& P, const SV& sw, const FV& F,
                                   std::size_t at) const {
    namespace KB = KokkosBatched;
    const int m = static_cast<int>(P.extent(0)), n = static_cast<int>(P.extent(1));
    auto frame = mem.frame();
    auto G = mem.template take<double**>(n, n);
    auto Y = mem.template take<double**>(n, rhs_count);
    auto X = mem.template take<double**>(n, rhs_count);
    if (!mem.ok()) return false;
    {
      auto inner = mem.frame();
      auto A = mem.template take<double**>(m, n);
      auto B = mem.template take<double**>(m, rhs_count);
      if (!mem.ok()) return false;
      weigh(P, sw, F, A, B);
      KB::SerialGemm<KB::Trans::Transpose, KB::Trans::NoTranspose,
                     KB::Algo::Gemm::Unblocked>::invoke(1.0, A, A, 0.0, G);
      KB::SerialGemm<KB::Trans::Transpose, KB::Trans::NoTranspose,
                     KB::Algo::Gemm::Unblocked>::invoke(1.0, A, B, 0.0, Y);
    }
    for (int c = 0; c < rhs_count; ++c) {
      // Gesv scales its A and Y in place (its static pivoting), though it calls them inputs: a
      // second right-hand side needs a fresh copy of G.
      auto each = mem.frame();
      auto Gc = mem.template take<double**>(n, n);
      auto tmp = mem.template take<double**>(n, n + 4);  // of A's type, n x (n + 4)
      if (!mem.ok()) return false;
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < n; ++i) Gc(i, j) = G(i, j);
      }
      KB::SerialGesv<KB::Gesv::StaticPivoting>::invoke(Gc, Kokkos::subview(X, Kokkos::ALL, c),
                                                       Kokkos::subview(Y, Kokkos::ALL, c), tmp);
    }
    store(X, n, at, 2);
    return true;
  }
};

/// kbuf: the arena of a per_thread workspace for the thread's UniqueToken value.
template <class Space>
struct ThreadWithWorkspace {
  using exec = typename Space::execution_space;
  ThreadFit<Space> f;
  kbuf::Workspace<Space> ws;
  Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global> token;
  KOKKOS_INLINE_FUNCTION void operator()(const int e) const {
    const int t = token.acquire();
    bool good = false;
    {
      auto arena = ws.arena(t);
      ArenaTakes<Space> mem{arena};
      good = f.fit(mem, e);
    }
    token.release(t);
    if (!good) f.fail();
  }
};

/// One flat View of token.size() fixed slots, one per UniqueToken value.
template <class Space>
struct ThreadWithSlots {
  using exec = typename Space::execution_space;
  ThreadFit<Space> f;
  Kokkos::View<unsigned char*, Space> slots;
  std::size_t slot_bytes;
  Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global> token;
  KOKKOS_INLINE_FUNCTION void operator()(const int e) const {
    const int t = token.acquire();
    BumpTakes<Space> mem(slots.data() + static_cast<std::size_t>(t) * slot_bytes, slot_bytes);
    const bool good = f.fit(mem, e);
    token.release(t);
    if (!good) f.fail();
  }
};
#endif

}  // namespace kbuf_batched

#endif  // KBUF_BATCHED_FITS_HPP
