#ifndef KBUF_IMPL_TEAM_OPS_HPP
#define KBUF_IMPL_TEAM_OPS_HPP

/// @file
/// A team member seen through a type-free handle, so that `kbuf::Workspace::Arena`, one class for
/// every execution space, can still synchronise its team: a barrier, and a value computed once per
/// team and broadcast to its threads. The handle names the member's execution space; each
/// operation calls that space's own member functions (`team_barrier`, `Kokkos::single` with
/// `PerTeam`). On the device pass of nvcc and hipcc only the device member exists. A member of
/// the host's model of a device team (`EmulatedTeamMember`) is seen as a device's. Not part of
/// the API.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <kbuf/impl/device_code.hpp>
#include <kbuf/impl/kokkos_version.hpp>

namespace kbuf {
namespace Impl {

/// The execution spaces whose team members a handle can name (0: no team, one thread).
enum team_kind : int {
  team_none = 0,
  team_serial = 1,
  team_openmp = 2,
  team_threads = 3,
  team_cuda = 4,
  team_hip = 5,
  team_emulated = 6
};

/// The host's model of a GPU's team, for tests: a team member type derived from it runs each of
/// its team's threads *and vector lanes* as a host thread of its own, as a GPU runs them, and is
/// seen by kbuf as a device's member (its vector lanes share a per_thread arena, its team's
/// lanes a per_team arena). The derived type has `league_rank()`, `team_size()` and
/// `team_rank()` as Kokkos' members do. Host code only.
class EmulatedTeamMember {
 public:
  /// The vector lanes of each thread of the team.
  virtual int vector_length() const = 0;
  /// Every lane of the calling thread (`per_thread`), or every lane of the team, arrives, with
  /// its memory written before; if `run` is not null one of them calls `run(ctx, out)` and each
  /// of the others gets that lane's first `bytes` of `out` in its own; then all go on.
  virtual void meet(bool per_thread, void (*run)(void* ctx, void* out), void* ctx, void* out,
                    std::size_t bytes) const = 0;

 protected:
  EmulatedTeamMember() = default;
  EmulatedTeamMember(const EmulatedTeamMember&) = default;
  EmulatedTeamMember& operator=(const EmulatedTeamMember&) = default;
  ~EmulatedTeamMember() = default;
};

/// The kind of the team member type `Member`, or -1 for one kbuf does not know.
template <class Member, class = void>
struct team_kind_of : std::integral_constant<int, -1> {};

#define KBUF_IMPL_TEAM_KIND(Space, kind)                                                         \
  template <class Member>                                                                        \
  struct team_kind_of<                                                                           \
      Member, std::enable_if_t<                                                                  \
                  std::is_same<Member, typename Kokkos::TeamPolicy<Space>::member_type>::value>> \
      : std::integral_constant<int, kind> {};

#if defined(KOKKOS_ENABLE_SERIAL)
KBUF_IMPL_TEAM_KIND(Kokkos::Serial, team_serial)
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
KBUF_IMPL_TEAM_KIND(Kokkos::OpenMP, team_openmp)
#endif
#if defined(KOKKOS_ENABLE_THREADS)
KBUF_IMPL_TEAM_KIND(Kokkos::Threads, team_threads)
#endif
#if defined(KOKKOS_ENABLE_CUDA)
KBUF_IMPL_TEAM_KIND(Kokkos::Cuda, team_cuda)
#endif
#if defined(KOKKOS_ENABLE_HIP)
KBUF_IMPL_TEAM_KIND(hip_execution_space, team_hip)
#endif
#undef KBUF_IMPL_TEAM_KIND

template <class Member>
struct team_kind_of<Member, std::enable_if_t<std::is_base_of<EmulatedTeamMember, Member>::value>>
    : std::integral_constant<int, team_emulated> {};

/// A team member: its address, its kind (team_none: one thread, nothing to synchronise),
/// whether its barriers are needed (on a GPU always: a team of one thread still has vector lanes
/// running the same code; on the host when the team has more than one thread, vector lanes
/// being loops of one thread there), and the threads that run the team's code (team size x
/// vector length on a GPU and in the host's model of one, the team size on the host).
/// A per_thread arena's handle names the thread's team member with `per_thread` set: its
/// threads are the thread's vector lanes, which meet through Kokkos' `PerThread` single.
struct TeamHandle {
  const void* member = nullptr;
  int threads = 1;
  unsigned char kind = team_none;  // a team_kind (16 bytes in all, as the arena's other words)
  bool sync = false;
  bool per_thread = false;
};

/// The threads of the calling thread's block (device code; 1 elsewhere), or with `x_only` those
/// along its x extent: the vector lanes of one team thread, as Kokkos' CUDA and HIP team
/// policies lay a team out.
KOKKOS_INLINE_FUNCTION int block_threads(bool x_only = false) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  KBUF_IMPL_IF_ON_DEVICE(
      (return static_cast<int>(x_only ? blockDim.x : blockDim.x * blockDim.y * blockDim.z);))
#endif
  (void)x_only;
  return 1;
}

/// The handle of `team`.
template <class Member>
KOKKOS_INLINE_FUNCTION TeamHandle team_handle(const Member& team) {
  static_assert(team_kind_of<Member>::value >= 0,
                "kbuf::Workspace::arena(team): the team member of a TeamPolicy of Serial, "
                "OpenMP, Threads, CUDA or HIP is needed");
  TeamHandle h{&team, 1, static_cast<unsigned char>(team_kind_of<Member>::value), true};
  if constexpr (team_kind_of<Member>::value == team_emulated) {
    KBUF_IMPL_IF_ON_HOST((h.member = static_cast<const EmulatedTeamMember*>(&team);
                          h.threads = team.team_size() * team.vector_length();))
    return h;
  }
  KBUF_IMPL_IF_ON_DEVICE((h.threads = block_threads();))
  KBUF_IMPL_IF_ON_HOST((h.threads = team.team_size();
                        h.sync = team.team_size() > 1 || team_kind_of<Member>::value == team_cuda ||
                                 team_kind_of<Member>::value == team_hip;))
  return h;
}

/// The handle of the calling thread of `team` with its vector lanes, for a per_thread arena. On
/// a GPU its vector lanes are threads of the device that run the same code, so they share the
/// arena and meet for its collective steps; on the host they are loops of one thread, which is
/// alone with its arena (no team), except in the host's model of a GPU's team.
template <class Member>
KOKKOS_INLINE_FUNCTION TeamHandle thread_handle(const Member& team) {
  TeamHandle h = team_handle(team);
  if constexpr (team_kind_of<Member>::value == team_emulated) {
    KBUF_IMPL_IF_ON_HOST((h.threads = team.vector_length(); h.per_thread = true;))
    return h;
  }
  KBUF_IMPL_IF_ON_DEVICE((h.threads = block_threads(true); h.per_thread = true;))
  KBUF_IMPL_IF_ON_HOST((h = TeamHandle{};))
  return h;
}

/// Calls `f(member)` with the device member `h` names (device code).
template <class F>
KOKKOS_INLINE_FUNCTION void visit_device_member(const TeamHandle& h, F& f) {
#if defined(KOKKOS_ENABLE_CUDA)
  f(*static_cast<const typename Kokkos::TeamPolicy<Kokkos::Cuda>::member_type*>(h.member));
#elif defined(KOKKOS_ENABLE_HIP)
  f(*static_cast<const typename Kokkos::TeamPolicy<hip_execution_space>::member_type*>(h.member));
#else
  (void)h;
  (void)f;
#endif
}

/// Calls `f(member)` with the host member `h` names (host code).
template <class F>
KOKKOS_INLINE_FUNCTION void visit_host_member(const TeamHandle& h, F& f) {
  switch (h.kind) {
#if defined(KOKKOS_ENABLE_SERIAL)
    case team_serial:
      f(*static_cast<const typename Kokkos::TeamPolicy<Kokkos::Serial>::member_type*>(h.member));
      break;
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
    case team_openmp:
      f(*static_cast<const typename Kokkos::TeamPolicy<Kokkos::OpenMP>::member_type*>(h.member));
      break;
#endif
#if defined(KOKKOS_ENABLE_THREADS)
    case team_threads:
      f(*static_cast<const typename Kokkos::TeamPolicy<Kokkos::Threads>::member_type*>(h.member));
      break;
#endif
    default:  // a device member in host code: never reached (no kernel of it runs there)
      (void)f;
      break;
  }
}

/// Calls `f(member)` with the member `h` names, in its own type: in device code the device's
/// member, in host code a host backend's. The branch is chosen as Kokkos chooses it
/// (impl/device_code.hpp), so that every compiler, nvc++ included, takes the device's on a
/// device.
template <class F>
KOKKOS_INLINE_FUNCTION void visit_member(const TeamHandle& h, F& f) {
  KBUF_IMPL_IF_ON_DEVICE((visit_device_member(h, f);))
  KBUF_IMPL_IF_ON_HOST((visit_host_member(h, f);))
}

/// The team's barrier (nothing without a team); for a thread's vector lanes, a fence and
/// Kokkos' value-less `single(PerThread)`, whose documented ordering (a `__syncwarp` on CUDA)
/// all of them reach.
struct BarrierVisitor {
  bool per_thread;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    if (per_thread) {
      Kokkos::memory_fence();
      Kokkos::single(Kokkos::PerThread(team), []() {});
    } else {
      team.team_barrier();
    }
  }
};

/// The meeting of the lanes of a model of a GPU's team that `h` names (host code).
inline void emulated_meet(const TeamHandle& h, void (*run)(void*, void*), void* ctx, void* out,
                          std::size_t bytes) {
  static_cast<const EmulatedTeamMember*>(h.member)->meet(h.per_thread, run, ctx, out, bytes);
}

KOKKOS_INLINE_FUNCTION void team_barrier(const TeamHandle& h) {
  if (!h.sync) return;
  if (h.kind == team_emulated) {
    KBUF_IMPL_IF_ON_HOST((emulated_meet(h, nullptr, nullptr, nullptr, 0);))
    return;
  }
  const BarrierVisitor v{h.per_thread};
  visit_member(h, v);
}

/// `value = f()` computed by one thread of the team and seen by all (Kokkos::single with
/// PerTeam, which waits for it); for a thread's vector lanes, by one lane of them and seen by
/// all (PerThread).
template <class T, class F>
struct SingleVisitor {
  F& f;
  T& value;
  bool per_thread;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    F& fn = f;
    if (per_thread) {
      Kokkos::single(
          Kokkos::PerThread(team), [&](T& v) { v = fn(); }, value);
    } else {
      Kokkos::single(
          Kokkos::PerTeam(team), [&](T& v) { v = fn(); }, value);
    }
  }
};

/// `*out = (*f)()`, for a model's meeting (host code).
template <class T, class F>
void emulated_run(void* f, void* out) {
  *static_cast<T*>(out) = (*static_cast<F*>(f))();
}

template <class T, class F>
KOKKOS_INLINE_FUNCTION T team_single(const TeamHandle& h, F& f) {
  T value{};
  if (h.kind == team_none) {
    value = f();
    return value;
  }
  if (h.kind == team_emulated) {
    KBUF_IMPL_IF_ON_HOST((emulated_meet(h, &emulated_run<T, F>, &f, &value, sizeof(T));))
    return value;
  }
  const SingleVisitor<T, F> v{f, value, h.per_thread};
  visit_member(h, v);
  return value;
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_TEAM_OPS_HPP
