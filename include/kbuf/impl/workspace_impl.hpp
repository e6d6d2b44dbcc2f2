#ifndef KBUF_IMPL_WORKSPACE_IMPL_HPP
#define KBUF_IMPL_WORKSPACE_IMPL_HPP

/// @file
/// The host side of `kbuf::Workspace`: `BufferAllocator::workspace`, which sizes and carves a
/// workspace, and `Workspace::finish`, which reads what the kernels did and learns the next size.
/// Declarations and semantics are in kbuf/buffer_allocator.hpp and kbuf/workspace.hpp, which
/// this file follows. Not part of the API.

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <kbuf/buffer_allocator.hpp>

namespace kbuf {

inline std::ostream& operator<<(std::ostream& os, const WorkspaceReport& r) {
  return os << "takes " << r.takes << ", spills " << r.spills << " (" << r.spill_bytes
            << " bytes), failed " << r.failed_takes << ", fallbacks " << r.fallbacks << " ("
            << r.fallback_bytes << " bytes), peak slot " << r.peak_slot_bytes << " bytes, arenas "
            << r.arenas << ", slots " << r.slots << " x " << r.slot_bytes << " bytes, spill lanes "
            << r.spill_lanes << " x " << r.lane_bytes << " bytes (peak " << r.spill_peak << ", "
            << r.lanes_missed << " missed)" << (r.checked ? ", overruns " : "")
            << (r.checked ? std::to_string(r.overruns) : std::string()) << ", next "
            << r.next_slot_bytes << " per slot + " << r.next_spill_lanes << " x "
            << r.next_lane_bytes << " spill";
}

namespace Impl {

/// Zeroes the header, flags and records (`words` words at `p`) and writes the label into the
/// header, on the allocator's instance.
struct ZeroHeader {
  unsigned long long* p;
  unsigned long long label[wh_label_words];
  KOKKOS_FUNCTION void operator()(const std::size_t i) const {
    const std::size_t l = static_cast<std::size_t>(wh_label);
    p[i] = i >= l && i < l + wh_label_words ? label[i - l] : 0ull;
  }
};

/// `a * b + c`, false on overflow of size_t.
inline bool mul_add(std::size_t a, std::size_t b, std::size_t c, std::size_t* out) noexcept {
  std::size_t ab = 0;
  if (mul_overflow(a, b, &ab)) return false;
  if (ab > static_cast<std::size_t>(-1) - c) return false;
  *out = ab + c;
  return true;
}

/// Whether `ExecPolicy` is a team policy (it has a league and a team size).
template <class ExecPolicy, class = void>
struct has_league : std::false_type {};
template <class ExecPolicy>
struct has_league<ExecPolicy, std::void_t<decltype(std::declval<const ExecPolicy&>().league_size()),
                                          decltype(std::declval<const ExecPolicy&>().team_size())>>
    : std::true_type {};

/// Whether `ExecSpace` runs on a GPU, where a team is a block of team x vector threads and
/// the device keeps a bounded number of blocks resident.
template <class ExecSpace>
inline constexpr bool is_device_space =
#if defined(KOKKOS_ENABLE_CUDA)
    std::is_same<ExecSpace, Kokkos::Cuda>::value ||
#endif
#if defined(KOKKOS_ENABLE_HIP)
    std::is_same<ExecSpace, hip_execution_space>::value ||
#endif
    false;

/// The vector length a team policy asks for (its `impl_vector_length()`); 1 where the policy
/// has none.
template <class Policy, class = void>
struct has_vector_length : std::false_type {};
template <class Policy>
struct has_vector_length<Policy,
                         std::void_t<decltype(std::declval<const Policy&>().impl_vector_length())>>
    : std::true_type {};
template <class Policy>
long long vector_length_of(const Policy& policy) {
  if constexpr (has_vector_length<Policy>::value) {
    return static_cast<long long>(policy.impl_vector_length());
  } else {
    (void)policy;
    return 1;
  }
}

/// Whether a team policy's team size is `Kokkos::AUTO`: a size of 0 or less (resolved only at
/// launch, on a GPU), or one the policy says it chose itself (`impl_auto_team_size()`: the host
/// backends resolve AUTO when the policy is made).
template <class Policy, class = void>
struct has_auto_team_size : std::false_type {};
template <class Policy>
struct has_auto_team_size<
    Policy, std::void_t<decltype(std::declval<const Policy&>().impl_auto_team_size())>>
    : std::true_type {};
template <class Policy>
bool auto_team_size(const Policy& policy) {
  if (policy.team_size() <= 0) return true;
  if constexpr (has_auto_team_size<Policy>::value) {
    return policy.impl_auto_team_size();
  } else {
    return false;
  }
}

/// Blocks the device of `exec` keeps resident at once (multiprocessors x the blocks each can
/// hold, at most its threads over the warp size); 0 on the host, where the concurrency alone
/// bounds the teams in flight.
template <class ExecSpace>
long long resident_teams(const ExecSpace& exec) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    const int device = exec.cuda_device();
    int sms = 0, blocks = 0, threads = 0, warp = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&blocks, cudaDevAttrMaxBlocksPerMultiprocessor, device) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, device) != cudaSuccess || warp <= 0) {
      return 0;
    }
    const long long per_sm = blocks < threads / warp ? blocks : threads / warp;
    return static_cast<long long>(sms) * per_sm;
  }
#endif
#if defined(KOKKOS_ENABLE_HIP)
  if constexpr (std::is_same<ExecSpace, hip_execution_space>::value) {
    const int device = exec.hip_device();
    int cus = 0, threads = 0, wave = 0;
    if (hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device) != hipSuccess ||
        hipDeviceGetAttribute(&threads, hipDeviceAttributeMaxThreadsPerMultiProcessor, device) !=
            hipSuccess ||
        hipDeviceGetAttribute(&wave, hipDeviceAttributeWarpSize, device) != hipSuccess ||
        wave <= 0) {
      return 0;
    }
    return static_cast<long long>(cus) * (threads / wave);
  }
#endif
  (void)exec;
  return 0;
}

/// The threads a policy can run at once for a per_thread workspace: a range's iterations, an
/// MDRange's points, a team policy's league x team size; 0 when it does not say.
template <class Policy, class = void>
struct has_range : std::false_type {};
template <class Policy>
struct has_range<Policy, std::void_t<decltype(std::declval<const Policy&>().end() -
                                              std::declval<const Policy&>().begin())>>
    : std::true_type {};
template <class Policy, class = void>
struct has_md_range : std::false_type {};
template <class Policy>
struct has_md_range<Policy, std::void_t<decltype(std::declval<const Policy&>().m_upper[0] -
                                                 std::declval<const Policy&>().m_lower[0]),
                                        decltype(Policy::rank)>> : std::true_type {};
template <class Policy>
long long policy_threads(const Policy& policy) {
  constexpr long long most = static_cast<long long>(1) << 62;
  if constexpr (has_league<Policy>::value) {
    const long long team = policy.team_size() > 0 ? policy.team_size() : 0;
    const long long league = static_cast<long long>(policy.league_size());
    if (team == 0) return 0;  // AUTO: not known before the launch
    return league > most / team ? most : league * team;
  } else if constexpr (has_range<Policy>::value) {
    return static_cast<long long>(policy.end() - policy.begin());
  } else if constexpr (has_md_range<Policy>::value) {
    long long n = 1;
    for (int i = 0; i < static_cast<int>(Policy::rank); ++i) {
      const long long e = static_cast<long long>(policy.m_upper[i] - policy.m_lower[i]);
      if (e <= 0) return 0;
      n = n > most / e ? most : n * e;
    }
    return n;
  } else {
    (void)policy;
    return 0;
  }
}

/// Whether two instances of an execution space are the same one: `==` where the space has it
/// (Kokkos >= 4.0), else the same stream (CUDA, HIP); a space of Kokkos 3.4 with neither has one
/// instance.
template <class E, class = void>
struct has_equality : std::false_type {};
template <class E>
struct has_equality<E, std::void_t<decltype(std::declval<const E&>() == std::declval<const E&>())>>
    : std::true_type {};
template <class E, class = void>
struct has_cuda_stream : std::false_type {};
template <class E>
struct has_cuda_stream<E, std::void_t<decltype(std::declval<const E&>().cuda_stream())>>
    : std::true_type {};
template <class E, class = void>
struct has_hip_stream : std::false_type {};
template <class E>
struct has_hip_stream<E, std::void_t<decltype(std::declval<const E&>().hip_stream())>>
    : std::true_type {};
template <class E>
bool same_instance(const E& a, const E& b) {
  if constexpr (has_equality<E>::value) {
    return a == b;
  } else if constexpr (has_cuda_stream<E>::value) {
    return a.cuda_stream() == b.cuda_stream();
  } else if constexpr (has_hip_stream<E>::value) {
    return a.hip_stream() == b.hip_stream();
  } else {
    (void)a;
    (void)b;
    return true;
  }
}

/// Whether a workspace's kernels on `ExecSpace` have no heap behind its fallback region: a
/// device's, or a host's under an emulated device's heap limit (`device_emulation()`).
template <class ExecSpace>
bool heapless() {
  return is_device_space<ExecSpace> ||
         device_emulation().heap_limit != static_cast<std::size_t>(-1);
}

/// The concurrency a workspace is sized for: the execution space's, or an emulated device's
/// (`device_emulation()`, tests only).
template <class ExecSpace>
long long concurrency_of(const ExecSpace& space) {
  const long long emulated = device_emulation().concurrency;
  return emulated > 0 ? emulated : static_cast<long long>(space.concurrency());
}
/// The teams a device keeps resident, or an emulated device's.
template <class ExecSpace>
long long resident_teams_of(const ExecSpace& space) {
  const long long emulated = device_emulation().resident_teams;
  return emulated > 0 ? emulated : resident_teams(space);
}

/// What one round's arenas needed, from the histogram of a finished workspace.
inline WorkspaceNeeds needs_from_histogram(const unsigned long long* hist, std::size_t arenas) {
  WorkspaceNeeds needs;
  needs.arenas = arenas;
  for (int b = 0; b < workspace_buckets; ++b) {
    if (hist[2 * b] == 0) continue;
    needs.levels.push_back(NeedLevel{static_cast<std::size_t>(hist[2 * b + 1]),
                                     static_cast<std::size_t>(hist[2 * b])});
  }
  return needs;
}

}  // namespace Impl

template <class MemorySpace>
Impl::WorkspaceRecords& BufferAllocator<MemorySpace>::workspace_records() {
  if (learned_ == nullptr) learned_ = std::make_unique<Impl::WorkspaceRecords>();
  return *learned_;
}

template <class MemorySpace>
template <class ExecPolicy>
Workspace<MemorySpace> BufferAllocator<MemorySpace>::workspace(const ExecPolicy& policy,
                                                               per_team size, std::string label) {
  static_assert(Impl::has_league<ExecPolicy>::value,
                "kbuf::BufferAllocator::workspace(policy, per_team{...}): per_team needs a "
                "Kokkos::TeamPolicy (per_thread serves the other policies)");
  using exec = typename ExecPolicy::execution_space;
  const exec space = policy.space();
  long long vector = Impl::is_device_space<exec> ? Impl::vector_length_of(policy) : 1;
  long long team = static_cast<long long>(policy.team_size());
  if (Impl::auto_team_size(policy)) {
    // Kokkos::AUTO: the threads per team the label's arenas ran with, once they have run (the
    // vector length counted in), else the smallest team.
    const auto found = workspace_records().find(label);
    if (found != workspace_records().end() && found->second.team_threads != 0) {
      team = static_cast<long long>(found->second.team_threads);
      vector = 1;
    }
  }
  const std::size_t slots = Impl::team_slots(Impl::concurrency_of(space), team, vector,
                                             static_cast<long long>(policy.league_size()),
                                             Impl::resident_teams_of(space));
  return make_workspace<exec>("kbuf::BufferAllocator::workspace(policy, per_team)", space, slots,
                              size.bytes, size.spill_bytes, size.fallback_bytes, true,
                              std::move(label));
}

template <class MemorySpace>
template <class ExecPolicy>
Workspace<MemorySpace> BufferAllocator<MemorySpace>::workspace(const ExecPolicy& policy,
                                                               per_thread size, std::string label) {
  using exec = typename ExecPolicy::execution_space;
  const exec space = policy.space();
  // The threads in flight: the concurrency (the global UniqueToken's size), at most the
  // policy's; arenas claim their slots, whatever token values they pass.
  const std::size_t slots =
      Impl::thread_slots(Impl::concurrency_of(space), Impl::policy_threads(policy));
  return make_workspace<exec>("kbuf::BufferAllocator::workspace(policy, per_thread)", space, slots,
                              size.bytes, size.spill_bytes, size.fallback_bytes, false,
                              std::move(label));
}

template <class MemorySpace>
template <class ExecSpace>
Workspace<MemorySpace> BufferAllocator<MemorySpace>::make_workspace(
    const char* call, const ExecSpace& instance, std::size_t slots, std::size_t bytes,
    std::size_t spill_guess, std::size_t fallback_guess, bool team, std::string label, bool saved) {
  static_assert(Kokkos::is_execution_space<ExecSpace>::value,
                "kbuf::BufferAllocator::workspace: the policy's execution_space must be a Kokkos "
                "execution space");
  // The memory space's own execution space is the one whose kernels use its memory (a foreign
  // space may tell Kokkos otherwise, so that the host does not touch it).
  constexpr bool own = std::is_same<ExecSpace, execution_space>::value;
  constexpr bool accessible = Kokkos::SpaceAccessibility<ExecSpace, MemorySpace>::accessible;
  KBUF_EXPECTS(own, call, " with ", bytes, " bytes, label '", label, "', on allocator '", label_,
               "': the policy runs on ", ExecSpace::name(), ", which ",
               accessible ? "is not the allocator's execution space (" : "cannot access ",
               accessible ? std::string(execution_space::name()) + "; finish() fences that one only"
                          : Impl::space_name<MemorySpace>(),
               accessible ? ")" : "", "; make the policy on alloc.execution_space_instance()");
  if constexpr (own) {
    // The header is zeroed on the allocator's instance: a kernel on another one could start
    // before that, or have it zeroed under it.
    KBUF_EXPECTS(Impl::same_instance(instance, exec_), call, " with ", bytes, " bytes, label '",
                 label, "', on allocator '", label_, "': the policy runs on another instance of ",
                 ExecSpace::name(),
                 " than the allocator's (another stream or partition); the workspace is made and "
                 "finished on the allocator's instance: make the policy on "
                 "alloc.execution_space_instance(), or use an allocator bound to the policy's "
                 "instance");
  }
  const auto found = workspace_records().find(label);
  const bool learned = found != workspace_records().end() && found->second.learned;
  const std::size_t unit = alignment_ > 64 ? alignment_ : 64;
  // KBUF_SIZES: a label this allocator has not learned starts from the needs an earlier run
  // saved, if any, as if it had learned them.
  Impl::WorkspaceNeeds saved_needs;
  const bool from_saved =
      !learned && saved && saved_workspace_needs(label, slots, unit, saved_needs);
  const Impl::WorkspaceNeeds* needs = learned      ? &found->second.needs
                                      : from_saved ? &saved_needs
                                                   : nullptr;
  std::size_t slot_bytes = bytes;
  std::size_t lane = spill_guess;
  std::size_t lanes = spill_guess != 0 ? 1 : 0;
  // The fallback region: a first round's from the guess; a rerun's for the arenas that may find
  // every lane taken, where no heap backs the region (a device, or a host run emulating one).
  std::size_t region_blocks = 0;
  std::size_t region_block = 0;
  if (needs != nullptr) {
    const Impl::WorkspaceSizes sizes = Impl::workspace_sizes(*needs, slots, unit);
    slot_bytes = sizes.slot_bytes;
    lanes = sizes.lanes;
    lane = sizes.lane_bytes;
    if (Impl::heapless<ExecSpace>()) {
      const Impl::RerunFallback r = Impl::rerun_fallback(*needs, sizes, slots, unit);
      region_blocks = r.blocks;
      region_block = r.block_bytes;
    }
  } else {
    region_blocks = 1;
    region_block = fallback_guess != 0 ? fallback_guess : Impl::first_round_fallback(slots, bytes);
  }
  KBUF_EXPECTS(slot_bytes <= static_cast<std::size_t>(-1) - (unit - 1), call, " with ", bytes,
               " bytes, label '", label, "', on allocator '", label_, "': ", bytes,
               " bytes per slot overflows size_t when aligned to ", unit);
  slot_bytes = (slot_bytes + unit - 1) / unit * unit;
  KBUF_EXPECTS(lane <= static_cast<std::size_t>(-1) - (unit - 1), call, " with ", bytes,
               " bytes, label '", label, "', on allocator '", label_, "': a spill area of ", lane,
               " bytes overflows size_t when aligned to ", unit);
  lane = (lane + unit - 1) / unit * unit;
  // Check mode: a guard zone after every take (and a unit of meta before it).
  const bool checked = passthrough_ || debug_checks_enabled;
  const std::size_t guard = checked ? (unit > 256 ? unit : 256) : 0;
  // [header words | flags, a cache line each | the region's flags | per-slot records], each part
  // on a cache line; then the slots, the lanes and the fallback region, each on a unit.
  const std::size_t flags_at = (Impl::wh_words * sizeof(unsigned long long) + 63) / 64 * 64;
  std::size_t flags_bytes = 0;
  std::size_t records_bytes = 0;
  const std::size_t small = static_cast<std::size_t>(1) << 56;  // what no slot count reaches
  KBUF_EXPECTS(
      Impl::mul_add(slots + lanes, Impl::flag_stride * sizeof(unsigned int), 0, &flags_bytes) &&
          Impl::mul_add(slots, Impl::wr_stride * sizeof(unsigned long long), 0, &records_bytes) &&
          flags_bytes <= small && records_bytes <= small,
      call, " with ", bytes, " bytes, label '", label, "', on allocator '", label_,
      "': the records of ", slots, " slots overflow size_t");
  std::size_t slots_bytes = 0;
  std::size_t spill = 0;
  std::size_t rest = 0;
  // The header below 2^58 bytes, the region below 2^60 (next): the rest below SIZE_MAX - 2^61.
  const std::size_t most = static_cast<std::size_t>(-1) - (static_cast<std::size_t>(1) << 61);
  KBUF_EXPECTS(Impl::mul_add(slots, slot_bytes, 0, &slots_bytes) &&
                   Impl::mul_add(lanes, lane, slots_bytes, &rest) && rest <= most - unit,
               call, " with ", bytes, " bytes, label '", label, "', on allocator '", label_,
               "': ", slots, " slots of ", slot_bytes, " bytes and ", lanes, " spill lanes of ",
               lane, " bytes overflow size_t");
  spill = rest - slots_bytes;
  struct Layout {
    std::size_t region_flags_at, records_at, header_raw, header, spill_at, region_at, total;
  };
  const auto layout = [&](std::size_t chunks, unsigned shift) {
    Layout l;
    l.region_flags_at = flags_at + flags_bytes;
    l.records_at = l.region_flags_at + (chunks * sizeof(unsigned int) + 63) / 64 * 64;
    l.header_raw = l.records_at + records_bytes;
    l.header = (l.header_raw + unit - 1) / unit * unit;
    l.spill_at = l.header + slots_bytes;
    l.region_at = l.spill_at + spill;
    l.total = l.region_at + (chunks << shift);
    return l;
  };
  // The fallback region in chunks, and as much of it as the allocator's limit (and its pool's)
  // leaves room for beside the rest of the workspace.
  unsigned shift = 0;
  std::size_t chunks = Impl::region_chunks(region_blocks, region_block, slots, unit, &shift);
  std::size_t room = limit_ == static_cast<std::size_t>(-1) ? limit_ : limit_ - held();
  if (budget_ != nullptr) {
    const std::size_t pool_limit = budget_->limit();
    const std::size_t pool_held = budget_->held();
    const std::size_t pool_room = pool_limit > pool_held ? pool_limit - pool_held : 0;
    if (pool_room < room) room = pool_room;
  }
  const std::size_t padding = unit > alignment_ ? unit - alignment_ : 0;
  if (chunks != 0 && room != static_cast<std::size_t>(-1)) {
    const std::size_t base_total = layout(0, shift).total + padding;
    if (base_total >= room) {
      chunks = 0;
    } else {
      const std::size_t fit =
          (room - base_total) / ((static_cast<std::size_t>(1) << shift) + sizeof(unsigned int));
      if (fit < chunks) chunks = fit;
      while (chunks != 0 && layout(chunks, shift).total + padding > room) --chunks;
    }
  }
  const Layout at = layout(chunks, shift);
  const std::size_t header_raw = at.header_raw;
  const std::size_t total = at.total;
  // Saved needs are taken only where the workspace they size fits the buffer, now or once an
  // empty allocator's buffer is grown within its limits: else the sizes asked, as without them.
  if (from_saved && !room_for_saved(total + padding)) {
    return make_workspace<ExecSpace>(call, instance, slots, bytes, spill_guess, fallback_guess,
                                     team, std::move(label), false);
  }
  // The label's record first (with room to list this workspace), so that nothing can fail once
  // the memory is taken; a record made here is dropped again if the memory cannot be had.
  const auto made = workspace_records().try_emplace(std::move(label));
  Impl::WorkspaceLearning* record = &made.first->second;
  const char* key = made.first->first.c_str();
  view<unsigned char*> memory;
  try {
    record->unfinished.reserve(record->unfinished.size() + 1);
    memory = allocate<unsigned char*>(total + padding);
  } catch (const out_of_memory& e) {
    const std::string name = key;
    if (made.second) workspace_records().erase(made.first);
    Impl::throw_out_of_memory(call, " with ", bytes, " bytes, label '", name, "', on allocator '",
                              label_, "': a workspace of ", total, " bytes (", slots, " slots of ",
                              slot_bytes, " bytes, ", lanes, " spill lanes of ", lane,
                              " bytes, a fallback region of ", chunks << shift,
                              " bytes) could not be had: ", e.what());
  } catch (...) {
    if (made.second) workspace_records().erase(made.first);
    throw;
  }
  const std::uintptr_t raw = reinterpret_cast<std::uintptr_t>(memory.data());
  unsigned char* base = reinterpret_cast<unsigned char*>((raw + unit - 1) / unit * unit);
  Workspace<MemorySpace> ws;
  ws.base_ = base;
  ws.header_ = reinterpret_cast<unsigned long long*>(base);
  ws.flags_ = reinterpret_cast<unsigned int*>(base + flags_at);
  ws.lane_flags_ = ws.flags_ + slots * Impl::flag_stride;
  ws.records_ = reinterpret_cast<unsigned long long*>(base + at.records_at);
  ws.slots_mem_ = base + at.header;
  ws.spill_ = base + at.spill_at;
  ws.region_.flags = reinterpret_cast<unsigned int*>(base + at.region_flags_at);
  ws.region_.base = base + at.region_at;
  ws.region_.chunks = chunks;
  ws.region_.home = slots != 0 ? chunks / slots : 0;
  ws.region_.shift = shift;
  ws.slots_ = slots;
  ws.slot_bytes_ = slot_bytes;
  ws.lanes_ = lanes;
  ws.lane_bytes_ = lane;
  ws.unit_ = unit;
  ws.guard_ = guard;
  ws.total_ = total;
  ws.per_team_ = team;
  ws.label_ = key;
  ws.learning_ = record;
  ws.owner_ = this;
  Impl::ZeroHeader zero{ws.header_, {}};
  {
    char* text = reinterpret_cast<char*>(zero.label);
    const std::size_t room = sizeof(zero.label) - 1;
    const std::size_t n = made.first->first.size() < room ? made.first->first.size() : room;
    for (std::size_t i = 0; i < n; ++i) text[i] = key[i];
  }
  const std::size_t words = header_raw / sizeof(unsigned long long);
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible &&
                Kokkos::SpaceAccessibility<execution_space, Kokkos::HostSpace>::accessible) {
    // Host memory and a host backend: written here, after the instance's earlier work (a
    // kernel would cost a parallel region, and on an oversubscribed host a scheduler's quantum).
    exec_.fence();
    for (std::size_t i = 0; i < words; ++i) zero(i);
  } else {
    Kokkos::parallel_for(
        "kbuf::BufferAllocator::workspace: zero the counters [" + label_ + "]",
        Kokkos::RangePolicy<execution_space, Kokkos::IndexType<std::size_t>>(exec_, 0, words),
        zero);
  }
  record->unfinished.push_back(base);  // room reserved above: cannot throw
  return ws;
}

template <class MemorySpace>
WorkspaceReport Workspace<MemorySpace>::finish() {
  KBUF_EXPECTS(owner_ != nullptr,
               "kbuf::Workspace::finish: the workspace was default-constructed, not made by "
               "BufferAllocator::workspace");
  auto& unfinished = learning_->unfinished;
  const auto mine = std::find(unfinished.begin(), unfinished.end(), base_);
  KBUF_EXPECTS(mine != unfinished.end(), "kbuf::Workspace::finish on workspace '", label_,
               "' of allocator '", owner_->label(),
               "': it was finished already (finish each workspace once)");
  const typename BufferAllocator<MemorySpace>::template view<unsigned char*> memory(base_, total_);
  if (!owner_->is_live(memory)) {
    unfinished.erase(mine);
    Impl::throw_logic_error("kbuf::Workspace::finish on workspace '", label_, "' of allocator '",
                            owner_->label(),
                            "': its memory was released (the scope it was made in ended); "
                            "finish a workspace before its scope ends");
  }
  // The header, and every slot's record: what the arenas counted, copied on the allocator's
  // instance after its kernels, then that instance fenced (and no other: a deep_copy without
  // an instance fences the whole device).
  const std::size_t head_words = Impl::wh_words;
  const std::size_t record_words = slots_ * Impl::wr_stride;
  std::vector<unsigned long long> h(head_words);
  std::vector<unsigned long long> rec(record_words);
  using host_words = Kokkos::View<unsigned long long*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  using words = Kokkos::View<const unsigned long long*, MemorySpace, Kokkos::MemoryUnmanaged>;
  const auto& exec = owner_->execution_space_instance();
  Kokkos::deep_copy(exec, host_words(h.data(), head_words), words(header_, head_words));
  if (record_words != 0) {
    Kokkos::deep_copy(exec, host_words(rec.data(), record_words), words(records_, record_words));
  }
  owner_->fence();
  unfinished.erase(mine);
  std::vector<unsigned long long> sum(h.begin() + Impl::wh_shared,
                                      h.begin() + Impl::wh_shared + Impl::wr_words);
  std::vector<unsigned long long> hist(h.begin() + Impl::wh_hist,
                                       h.begin() + Impl::wh_hist + 2 * Impl::workspace_buckets);
  const auto fold = [&](const unsigned long long* r) {
    for (int i = 0; i < Impl::wr_words; ++i) {
      if (i < Impl::wr_peak_need) {
        sum[i] += r[i];
      } else if (i < Impl::wr_pending_bucket) {  // the peaks
        if (r[i] > sum[i]) sum[i] = r[i];
      }
    }
    if (r[Impl::wr_pending_bucket] != 0) {  // an entry its slot had not added yet
      const std::size_t b = static_cast<std::size_t>(r[Impl::wr_pending_bucket] - 1);
      hist[2 * b] += r[Impl::wr_pending_count];
      if (r[Impl::wr_pending_max] > hist[2 * b + 1]) hist[2 * b + 1] = r[Impl::wr_pending_max];
    }
  };
  for (std::size_t s = 0; s < slots_; ++s) fold(rec.data() + s * Impl::wr_stride);

  WorkspaceReport r;
  r.takes = sum[Impl::wr_takes];
  r.spills = sum[Impl::wr_spills];
  r.spill_bytes = sum[Impl::wr_spill_bytes];
  r.failed_takes = sum[Impl::wr_failed];
  r.peak_slot_bytes = sum[Impl::wr_peak_need];
  r.fallbacks = sum[Impl::wr_fallbacks];
  r.fallback_bytes = sum[Impl::wr_fallback_bytes];
  r.overruns = sum[Impl::wr_overruns];
  r.checked = guard_ != 0;
  if (h[Impl::wh_first] != 0) {
    r.first_overrun_take = h[Impl::wh_first_index];
    r.first_overrun_bytes = h[Impl::wh_first_past];
  }
  r.arenas = sum[Impl::wr_arenas];
  r.slots = slots_;
  r.slot_bytes = slot_bytes_;
  r.spill_lanes = lanes_;
  r.lane_bytes = lane_bytes();
  r.spill_peak = sum[Impl::wr_spill_peak];
  r.spilling_arenas = sum[Impl::wr_spilling];
  r.lanes_missed = sum[Impl::wr_missed];
  r.unslotted_arenas = sum[Impl::wr_unslotted];
  r.fallback_region_bytes = fallback_region_bytes();
  r.team_threads = sum[Impl::wr_team_threads];

  Impl::WorkspaceLearning& learning = *learning_;
  if (r.team_threads != 0) learning.team_threads = r.team_threads;
  if (r.arenas != 0) {
    // What the arenas needed, and, at this round's slot size, what those that outgrew it asked
    // of a lane (measured, failed and fallback takes included).
    Impl::WorkspaceNeeds needs = Impl::needs_from_histogram(hist.data(), r.arenas);
    needs.measured_slot = slot_bytes_;
    for (const Impl::NeedLevel& level : needs.levels) {
      if (level.bytes > slot_bytes_) needs.measured_above += level.arenas;
    }
    needs.measured_lane = r.spill_peak;
    learning.needs = std::move(needs);
    learning.learned = true;
  }
  if (learning.learned) {
    const Impl::WorkspaceSizes next =
        Impl::workspace_sizes(learning.needs, slots_, static_cast<std::size_t>(unit_));
    r.next_slot_bytes = next.slot_bytes;
    r.next_spill_lanes = next.lanes;
    r.next_lane_bytes = next.lane_bytes;
    r.next_miss_probability = next.miss_probability;
    if (Impl::heapless<typename MemorySpace::execution_space>()) {
      const Impl::RerunFallback f =
          Impl::rerun_fallback(learning.needs, next, slots_, static_cast<std::size_t>(unit_));
      unsigned shift = 0;
      const std::size_t chunks = Impl::region_chunks(f.blocks, f.block_bytes, slots_,
                                                     static_cast<std::size_t>(unit_), &shift);
      r.next_fallback_region_bytes = chunks << shift;
    }
  } else {
    r.next_slot_bytes = slot_bytes_;
    r.next_spill_lanes = lanes_;
    r.next_lane_bytes = lane_bytes();
    r.next_fallback_region_bytes = fallback_region_bytes();
  }
  return r;
}

}  // namespace kbuf

#endif  // KBUF_IMPL_WORKSPACE_IMPL_HPP
