#ifndef KBUF_IMPL_WORKSPACE_SIZING_HPP
#define KBUF_IMPL_WORKSPACE_SIZING_HPP

/// @file
/// How a workspace is sized from what its kernels needed: the slot count for a policy (teams or
/// threads in flight), and the slot size, number of spill lanes and lane size that hold the
/// fewest bytes for those slots. Host-only and free of Kokkos, so that a test can check the
/// figures of a machine it does not run on (an H200's slots, its two thousand teams in flight).
/// Not part of the API.

#include <cmath>
#include <cstddef>
#include <vector>

namespace kbuf {
namespace Impl {

/// Teams of a `TeamPolicy` that can be in flight at once, hence the slots of a per_team
/// workspace: the threads the execution space runs at once (`concurrency`) over the threads of
/// one team, at most the teams the device keeps resident (`resident_limit`, 0 for no such
/// limit) and at most the league.
/// - `team_size` <= 0 is `Kokkos::AUTO`, which Kokkos resolves only at launch, for the functor
///   launched: counted as the smallest team (one thread), so that the slots are never fewer
///   than the teams in flight; on a GPU `resident_limit` then bounds them. (Once a label's
///   arenas have run, its workspaces pass the team size they saw instead.)
/// - `vector_length` counts on a GPU (a team is team_size x vector_length threads of a block);
///   the host backends run vector lanes as loops of one thread: pass 1 there.
inline std::size_t team_slots(long long concurrency, long long team_size, long long vector_length,
                              long long league, long long resident_limit) noexcept {
  if (league <= 0) return 0;
  const long long team = team_size > 0 ? team_size : 1;
  const long long vector = vector_length > 0 ? vector_length : 1;
  const long long threads = team * vector;
  long long slots = concurrency > 0 ? (concurrency + threads - 1) / threads : 1;
  if (resident_limit > 0 && slots > resident_limit) slots = resident_limit;
  if (slots > league) slots = league;
  if (slots < 1) slots = 1;
  return static_cast<std::size_t>(slots);
}

/// Threads that can hold a per_thread arena at once, hence the slots of a per_thread
/// workspace: the `UniqueToken` size of the execution space (`token_size`, its concurrency), at
/// most the threads the policy can use (`policy_threads`, its iterations; 0 when unknown).
inline std::size_t thread_slots(long long token_size, long long policy_threads) noexcept {
  long long slots = token_size > 0 ? token_size : 1;
  if (policy_threads > 0 && slots > policy_threads) slots = policy_threads;
  return static_cast<std::size_t>(slots);
}

/// A level of need: `arenas` arenas each needed at most `bytes` (the largest of a histogram
/// bucket).
struct NeedLevel {
  std::size_t bytes = 0;
  std::size_t arenas = 0;
};

/// What one round's arenas needed: the levels in increasing order of bytes, and what was
/// measured at the round's own slot size (what the arenas that outgrew it asked of a lane).
struct WorkspaceNeeds {
  std::vector<NeedLevel> levels;
  std::size_t arenas = 0;          ///< all of them
  std::size_t measured_slot = 0;   ///< the round's slot size
  std::size_t measured_above = 0;  ///< arenas whose need did not fit it
  std::size_t measured_lane = 0;   ///< the most one of them asked of its lane at once
};

/// Slot and spill sizes for a number of slots, and what they hold.
struct WorkspaceSizes {
  std::size_t slot_bytes = 0;
  std::size_t lanes = 0;
  std::size_t lane_bytes = 0;
  std::size_t spilling = 0;     ///< arenas of the round whose need does not fit that slot
  double miss_probability = 0;  ///< that a spilling arena finds every lane taken
  double expected_misses = 0;   ///< arenas per round that find every lane taken (they fall back)
  long double bytes = 0;        ///< slots x slot_bytes + lanes x lane_bytes
};

/// The most often a spilling arena may find every lane taken: it is then served by the fallback
/// region, whose runs cost several times a lane's take and which, on a GPU, has nothing behind
/// it.
inline constexpr double lane_miss_target = 0.01;

/// P(X >= k) for X ~ Binomial(n, p), summed in log space so that no term underflows for the
/// slot counts of a GPU (thousands) and frequent needs.
inline double binomial_tail(std::size_t n, double p, std::size_t k) noexcept {
  if (k == 0) return 1.0;
  if (k > n || p <= 0.0) return 0.0;
  if (p >= 1.0) return 1.0;
  // log P(X = j) by the recurrence P(j+1) = P(j) (n - j) / (j + 1) p / (1 - p); the CDF below k
  // accumulated as log-sum-exp.
  const double lq = std::log1p(-p);
  const double lratio = std::log(p) - lq;
  double lpmf = static_cast<double>(n) * lq;  // P(X = 0)
  double lcdf = lpmf;
  for (std::size_t j = 0; j + 1 < k; ++j) {
    lpmf += std::log(static_cast<double>(n - j) / static_cast<double>(j + 1)) + lratio;
    const double hi = lcdf > lpmf ? lcdf : lpmf;
    const double lo = lcdf > lpmf ? lpmf : lcdf;
    lcdf = hi + std::log1p(std::exp(lo - hi));
  }
  const double cdf = std::exp(lcdf);
  return cdf >= 1.0 ? 0.0 : 1.0 - cdf;
}

/// The lanes for `above` spilling arenas out of `arenas`, with `slots` arenas in flight at once:
/// the fewest for which a spilling arena finds every lane taken (the other slots' arenas
/// spilling at once, each with the frequency seen) at most `lane_miss_target` of the time;
/// never more than the spilling arenas or the slots. `miss` receives that probability. The
/// tail is `binomial_tail(slots - 1, p, lanes)`, its CDF extended by one term per lane tried,
/// so the search costs one step per lane. With `most` lanes tried and none enough, it returns
/// `most + 1` (a caller that cannot use more lanes stops there).
inline std::size_t spill_lanes(std::size_t above, std::size_t arenas, std::size_t slots,
                               double* miss, std::size_t most = ~std::size_t(0)) noexcept {
  *miss = 0;
  if (above == 0 || slots == 0) return 0;
  const std::size_t cap = above < slots ? above : slots;
  const double p = static_cast<double>(above) / static_cast<double>(arenas);
  const std::size_t n = slots - 1;
  const double lq = std::log1p(-p);
  const double lratio = std::log(p) - lq;
  double lpmf = static_cast<double>(n) * lq;  // log P(X = 0), X ~ Binomial(n, p)
  double lcdf = lpmf;                         // log P(X <= lanes - 1)
  for (std::size_t lanes = 1; lanes <= cap; ++lanes) {
    if (lanes > most) return lanes;
    // With as many lanes as spilling arenas exist (or slots), none can find them all taken.
    double m = 0.0;
    if (lanes != cap && lanes <= n && p > 0.0) {
      if (p >= 1.0) {
        m = 1.0;
      } else {
        const double cdf = std::exp(lcdf);
        m = cdf >= 1.0 ? 0.0 : 1.0 - cdf;
      }
    }
    if (m <= lane_miss_target) {
      *miss = m;
      return lanes;
    }
    // The CDF one term further: P(X <= lanes), as binomial_tail sums it.
    const std::size_t j = lanes - 1;
    lpmf += std::log(static_cast<double>(n - j) / static_cast<double>(j + 1)) + lratio;
    const double hi = lcdf > lpmf ? lcdf : lpmf;
    const double lo = lcdf > lpmf ? lpmf : lcdf;
    lcdf = hi + std::log1p(std::exp(lo - hi));
  }
  return cap;
}

/// The sizes that hold the fewest bytes for `slots` slots, given what one round needed: for each
/// candidate slot size (a level of need: every need up to it fits), the arenas above it spill,
/// into lanes as many as `spill_lanes` says, each as large as the most one of them can spill —
/// the largest need above the candidate, or, at the round's own slot size, what was measured.
/// The candidate of the largest need (no lanes) is fixed slots, so the choice never holds more
/// than those. Ties go to the larger slot (fewer spills). `unit` rounds every size.
inline WorkspaceSizes workspace_sizes(const WorkspaceNeeds& needs, std::size_t slots,
                                      std::size_t unit) {
  WorkspaceSizes best;
  if (needs.arenas == 0 || needs.levels.empty()) return best;
  const auto round = [unit](std::size_t b) { return (b + unit - 1) / unit * unit; };
  const std::size_t nlevels = needs.levels.size();
  // Arenas above each level, and the largest need above it.
  std::vector<std::size_t> above(nlevels, 0), largest(nlevels, 0);
  for (std::size_t i = nlevels - 1; i-- > 0;) {
    above[i] = above[i + 1] + needs.levels[i + 1].arenas;
    const std::size_t next = needs.levels[i + 1].bytes;
    largest[i] = largest[i + 1] > next ? largest[i + 1] : next;
  }
  bool chosen = false;
  const auto consider = [&](std::size_t slot, std::size_t n_above, std::size_t lane) {
    WorkspaceSizes s;
    s.slot_bytes = round(slot);
    const long double base = static_cast<long double>(slots) * s.slot_bytes;
    // A candidate that holds more than the best so far, with the lanes tried, cannot win.
    if (chosen && base > best.bytes) return;
    std::size_t most = ~std::size_t(0);
    if (chosen && n_above != 0 && lane != 0) {
      const long double room = (best.bytes - base) / round(lane);
      if (room < static_cast<long double>(most)) most = static_cast<std::size_t>(room);
    }
    double miss = 0;
    s.lanes = spill_lanes(n_above, needs.arenas, slots, &miss, most);
    if (s.lanes > most) return;
    s.lane_bytes = s.lanes != 0 ? round(lane) : 0;
    s.spilling = n_above;
    s.miss_probability = miss;
    s.expected_misses = miss * static_cast<double>(n_above);
    s.bytes = static_cast<long double>(slots) * s.slot_bytes +
              static_cast<long double>(s.lanes) * s.lane_bytes;
    if (!chosen || s.bytes < best.bytes ||
        (s.bytes == best.bytes && s.slot_bytes > best.slot_bytes)) {
      best = s;
      chosen = true;
    }
  };
  for (std::size_t i = 0; i < nlevels; ++i) {
    if (needs.measured_slot != 0 && round(needs.levels[i].bytes) == round(needs.measured_slot)) {
      continue;  // measured: considered below
    }
    consider(needs.levels[i].bytes, above[i], largest[i]);
  }
  if (needs.measured_slot != 0) {
    consider(needs.measured_slot, needs.measured_above,
             needs.measured_above != 0 ? needs.measured_lane : 0);
  }
  return best;
}

/// The fallback region of a first round (nothing learned yet), when none is asked for: for each
/// slot, `first_round_fallback_per_slot` bytes or the slot's guess if larger, at most
/// `first_round_fallback_most` in all. A first round from a guess far too small has most of
/// its need served there (a GPU runs thousands of arenas at once: an H200's 4,224 teams of one
/// thread that each need 16 KiB more than their slot hold 69 MB of it at once).
inline constexpr std::size_t first_round_fallback_per_slot = std::size_t(64) << 10;
inline constexpr std::size_t first_round_fallback_most = std::size_t(256) << 20;
inline std::size_t first_round_fallback(std::size_t slots, std::size_t slot_guess) noexcept {
  const std::size_t each =
      slot_guess > first_round_fallback_per_slot ? slot_guess : first_round_fallback_per_slot;
  if (slots != 0 && each > first_round_fallback_most / slots) return first_round_fallback_most;
  return slots * each;
}

/// How often a spilling arena of a rerun may find every lane taken and no room in the region
/// for it either (its take then fails, on a device, which has no heap behind the region).
inline constexpr double region_miss_target = 1e-4;

/// The rerun's fallback region: `blocks` blocks of `block_bytes` (a lane's spill and a unit of
/// words in front of it).
struct RerunFallback {
  std::size_t blocks = 0;
  std::size_t block_bytes = 0;
};

/// The rerun's fallback region for the sizes `s` chosen for `slots` slots from `needs`: room for
/// the spills of `blocks` arenas, the fewest for which a spilling arena finds every lane taken
/// and the region full (the other slots' arenas spilling at once, as for the lanes) at most
/// `region_miss_target` of the time. None where no arena spills, or where the lanes are as many
/// as the arenas that spill or the other slots.
inline RerunFallback rerun_fallback(const WorkspaceNeeds& needs, const WorkspaceSizes& s,
                                    std::size_t slots, std::size_t unit) noexcept {
  RerunFallback r;
  if (s.lanes == 0 || s.spilling == 0 || slots < 2 || needs.arenas == 0) return r;
  const std::size_t most = s.spilling < slots ? s.spilling : slots;
  const double p = static_cast<double>(s.spilling) / static_cast<double>(needs.arenas);
  std::size_t k = 0;
  while (s.lanes + k < most && binomial_tail(slots - 1, p, s.lanes + k) > region_miss_target) {
    ++k;
  }
  r.blocks = k;
  r.block_bytes = k != 0 ? (s.lane_bytes + unit + unit - 1) / unit * unit : 0;
  return r;
}

/// The chunk of a fallback region of `bytes` shared by `pieces` (its slots' homes, or the
/// blocks it is sized for): a power of two, at least `unit`, and large enough that the region
/// has at most `region_chunks_most` chunks (a claim scans their flags) and at most
/// `region_chunks_per_piece` per piece (a fallback claims a flag per chunk it spans: a few
/// chunks for a take of the size the region is cut for).
inline constexpr std::size_t region_chunks_most = 65536;
inline constexpr std::size_t region_chunks_per_piece = 64;
inline unsigned region_chunk_shift(std::size_t bytes, std::size_t unit,
                                   std::size_t pieces) noexcept {
  std::size_t most = region_chunks_most;
  if (pieces != 0 && pieces < most / region_chunks_per_piece) {
    most = pieces * region_chunks_per_piece;
  }
  unsigned shift = 0;
  while ((std::size_t(1) << shift) < unit) ++shift;
  while (shift < 62 && bytes / (std::size_t(1) << shift) > most) ++shift;
  return shift;
}

/// The chunks of a fallback region of `blocks` blocks of `block` bytes each (a first round's:
/// one block, the region's bytes, rounded down to chunks, shared by `pieces` slots), at most
/// 2^60 bytes; `shift` receives the chunk's (`region_chunk_shift`).
inline std::size_t region_chunks(std::size_t blocks, std::size_t block, std::size_t pieces,
                                 std::size_t unit, unsigned* shift) noexcept {
  const std::size_t most = static_cast<std::size_t>(1) << 60;
  *shift = region_chunk_shift(0, unit, 1);
  if (blocks == 0 || block == 0) return 0;
  const std::size_t want = block > most / blocks ? most : blocks * block;
  *shift = region_chunk_shift(want, unit, blocks == 1 ? pieces : blocks);
  if (blocks == 1) return want >> *shift;
  const std::size_t each = (block + (static_cast<std::size_t>(1) << *shift) - 1) >> *shift;
  return each > (most >> *shift) / blocks ? most >> *shift : blocks * each;
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_WORKSPACE_SIZING_HPP
