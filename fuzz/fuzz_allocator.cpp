// libFuzzer target for kbuf::BufferAllocator<Kokkos::HostSpace>.
//
// The input is decoded into a program of allocate (seven element types, one of them aligned
// to 128 bytes and one to 4096; rank 1 to 4 or a static extent; LayoutLeft or LayoutRight;
// signed or unsigned extents including negative and huge ones), checkpoint (into a table of
// eight, stale and foreign ones included), reset(checkpoint), reset(), scope begin/end,
// resize, sizehint and fence calls on two allocators with fuzzed alignments. After every step
// the reference model (tests/support/model.hpp, written from the documented semantics and
// shared with tests/unit/test_model.cpp) checks the allocator:
//  - capacity, used, high-water mark, emptiness, live fallbacks and every statistic agree;
//  - every live temporary is aligned to max(alignment, alignof(T)), lies inside the used part
//    of the buffer or outside it (a fallback), is_live() says so, ASan sees it addressable,
//    and it still holds the byte pattern written when it was handed out (so no two overlap);
//  - every byte of the buffer that no live temporary holds is poisoned for ASan and holds the
//    debug fill byte (the target is built with KBUF_ENABLE_DEBUG=1);
//  - a refused call threw the documented exception (kbuf::logic_error for bad input, stale or
//    foreign checkpoints and resize while not empty; kbuf::out_of_memory when memory cannot be
//    had) and changed nothing observable;
//  - convergence: the program's allocation history replayed on a fresh allocator, reset, and
//    replayed again needs no fallback the second time.
// Memory: ASan is told to refuse single allocations above 64 MiB, so that "cannot be had" is
// exact: requests above that must fail, requests well below it must succeed.

#include <fuzzer/FuzzedDataProvider.h>
#include <sanitizer/asan_interface.h>

#include <kbuf/kbuf.hpp>

#include "model.hpp"           // the reference model, shared with tests/unit/test_model.cpp
#include "test_support.hpp"    // the element types, shared with the tests
#include "typed_allocate.hpp"  // run-time type, layout and rank to one allocate call

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

extern "C" const char* __asan_default_options() {
  return "max_allocation_size_mb=64:allocator_may_return_null=1:detect_leaks=1:"
         "halt_on_error=1:malloc_fill_byte=0:max_free_fill_size=0";
}
extern "C" const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}

namespace {

using Alloc = kbuf::BufferAllocator<Kokkos::HostSpace>;
using u64 = std::uint64_t;

constexpr std::size_t kSizeMax = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kAllocLimit = std::size_t{64} << 20;  // max_allocation_size_mb above
constexpr std::size_t kSlack = std::size_t{1} << 16;        // Kokkos' header and rounding
constexpr std::size_t kConvergenceLimit = std::size_t{16} << 20;
constexpr int kMaxOps = 160;
constexpr int kSlots = 8;

static_assert(KBUF_ENABLE_DEBUG == 1, "the fuzzer checks the debug fill: build it with debug on");
static_assert(kbuf::asan_poisoning_enabled, "the fuzzer checks poisoning: build it with ASan");

[[noreturn]] void die(const char* file, int line, const std::string& message) {
  std::fprintf(stderr, "\nkbuf-fuzz: CHECK FAILED at %s:%d: %s\n", file, line, message.c_str());
  std::fflush(stderr);
  std::abort();
}

#define FCHECK(cond, ...)                                                                 \
  do {                                                                                    \
    if (!(cond)) die(__FILE__, __LINE__, kbuf::Impl::concat(#cond, " -- ", __VA_ARGS__)); \
  } while (false)

// ---- Element types (shared with the tests) ---------------------------------------------
using kbuf_test::Page;   // aligned to 4096
using kbuf_test::Pod12;  // 12 bytes, aligned to 4
using kbuf_test::Wide;   // aligned to 128
constexpr int kTypes = kbuf_test::element_type_count;

std::uint8_t pattern(std::uint32_t seed, std::size_t i) {
  return static_cast<std::uint8_t>((seed * 2654435761u + static_cast<std::uint32_t>(i) * 40503u) >>
                                   13);
}

// Bytes of a temporary that carry its pattern: all of a small one, both ends of a big one.
constexpr std::size_t kPatternEnds = 4096;
template <class F>
void for_pattern_bytes(std::size_t nbytes, F f) {
  if (nbytes <= 2 * kPatternEnds) {
    for (std::size_t i = 0; i < nbytes; ++i) f(i);
  } else {
    for (std::size_t i = 0; i < kPatternEnds; ++i) f(i);
    for (std::size_t i = nbytes - kPatternEnds; i < nbytes; ++i) f(i);
  }
}

// Reads memory without ASan's check (poisoned bytes of the live buffer).
__attribute__((no_sanitize_address, noinline)) std::uint8_t peek(const unsigned char* p) {
  return *static_cast<const volatile unsigned char*>(p);
}

// ---- The model -------------------------------------------------------------------------------
using Temp = kbuf_model::Temporary;
using ModelCheckpoint = kbuf_model::Checkpoint;

struct Observed {
  std::size_t capacity, used, hwm, alignment, live_fallbacks;
  bool empty;
  kbuf::Statistics s;
};

Observed observe(const Alloc& a) {
  return {a.capacity(),       a.used(),  a.high_water_mark(), a.alignment(),
          a.live_fallbacks(), a.empty(), a.statistics()};
}

// Everything but the fence counter: a failed regrowth has fenced before it found no memory.
std::string differences(const Observed& x, const Observed& y) {
  std::string d;
  const auto cmp = [&d](const char* name, std::size_t a, std::size_t b) {
    if (a != b) d += kbuf::Impl::concat(name, " ", a, " -> ", b, "; ");
  };
  cmp("capacity", x.capacity, y.capacity);
  cmp("used", x.used, y.used);
  cmp("high_water_mark", x.hwm, y.hwm);
  cmp("alignment", x.alignment, y.alignment);
  cmp("live_fallbacks", x.live_fallbacks, y.live_fallbacks);
  cmp("empty", x.empty, y.empty);
  cmp("temporaries", x.s.temporaries, y.s.temporaries);
  cmp("fallbacks", x.s.fallbacks, y.s.fallbacks);
  cmp("fallback_bytes", x.s.fallback_bytes, y.s.fallback_bytes);
  cmp("regrows", x.s.regrows, y.s.regrows);
  cmp("regrows_under_live", x.s.regrows_under_live, y.s.regrows_under_live);
  cmp("empty temporaries", x.s.empty, y.s.empty);
  cmp("resets", x.s.resets, y.s.resets);
  cmp("peak_used", x.s.peak_used, y.s.peak_used);
  cmp("peak_live", x.s.peak_live, y.s.peak_live);
  return d;
}

// The model of one allocator, and the allocator it models.
class Model : public kbuf_model::Allocator {
 public:
  Model(int id, Alloc& alloc, std::size_t alignment, std::size_t capacity)
      : kbuf_model::Allocator(id, alignment, capacity), alloc(alloc) {}

  Alloc& alloc;

  Observed expected() const {
    return Observed{capacity, used, hwm, alignment, nfallbacks, live.empty(), stats};
  }
};

// ---- Requests ----------------------------------------------------------------------------------
struct Request {
  int type = 0;
  int rank = 1;  // 1..4; 5: `T*[3]` (one runtime extent, one static extent of 3)
  bool left = false;
  bool unsigned_extent = false;  // rank 1 only: a std::size_t extent
  std::int64_t ext[4] = {0, 0, 0, 0};
  u64 uext = 0;
};

struct Got {
  int error = 0;  // 0 none, 1 kbuf::logic_error, 2 kbuf::out_of_memory, 3 anything else
  std::string what;
  unsigned char* data = nullptr;
  std::size_t span_bytes = 0;
  bool shape_ok = true;
  std::string shape;
};

template <class V>
void record(Got& g, const V& v, const u64* want, int nwant) {
  g.data = reinterpret_cast<unsigned char*>(v.data());
  g.span_bytes = v.span() * sizeof(typename V::value_type);
  const int rank = static_cast<int>(V::rank);
  if (rank != nwant) {
    g.shape_ok = false;
    g.shape = kbuf::Impl::concat("rank ", rank, " != ", nwant);
    return;
  }
  for (int i = 0; i < rank; ++i) {
    if (static_cast<u64>(v.extent(i)) != want[i]) {
      g.shape_ok = false;
      g.shape = kbuf::Impl::concat("extent(", i, ") = ", v.extent(i), " != ", want[i]);
    }
  }
  if (g.span_bytes != 0 && rank >= 2) {
    const bool left = std::is_same<typename V::array_layout, Kokkos::LayoutLeft>::value;
    const std::size_t unit = left ? v.stride(0) : v.stride(rank - 1);
    if (unit != 1) {
      g.shape_ok = false;
      g.shape = "unit stride in the wrong dimension";
    }
  }
}

Got allocate_typed(Alloc& alloc, const Request& r) {
  Got g;
  try {
    const auto u = [&r](int i) { return static_cast<u64>(r.ext[i]); };
    if (r.rank == 1 && r.unsigned_extent) {
      // The one unsigned extent: a std::size_t, not a long, reaches allocate.
      const std::size_t e = static_cast<std::size_t>(r.uext);
      const u64 want[] = {r.uext};
      kbuf_test::allocate_typed(alloc, r.type, r.left, 1, &e,
                                [&](const auto& v) { record(g, v, want, 1); });
    } else {
      kbuf_test::allocate_typed(alloc, r.type, r.left, r.rank, r.ext, [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        constexpr int rank = static_cast<int>(V::rank);
        constexpr int dynamic = static_cast<int>(V::rank_dynamic);
        u64 want[rank];
        for (int i = 0; i < rank; ++i) want[i] = i < dynamic ? u(i) : 3;  // T*[3]: extent 3
        record(g, v, want, rank);
      });
    }
  } catch (const kbuf::logic_error& e) {
    g.error = 1;
    g.what = e.what();
  } catch (const kbuf::out_of_memory& e) {
    g.error = 2;
    g.what = e.what();
  } catch (const std::exception& e) {
    g.error = 3;
    g.what = e.what();
  } catch (...) {
    g.error = 3;
    g.what = "unknown exception";
  }
  return g;
}

std::size_t type_size(int type) {
  return kbuf_test::element_sizes[type];
}
std::size_t type_align(int type) {
  return kbuf_test::element_aligns[type];
}

// The model's verdict on a request's byte count: 0 ok (bytes set), 1 bad input (logic_error).
int request_bytes(const Request& r, std::size_t* bytes) {
  if (r.rank == 1 && r.unsigned_extent) {
    return kbuf_model::byte_count(type_size(r.type), r.uext, bytes) ? 0 : 1;
  }
  const int n = r.rank == 5 ? 1 : r.rank;  // rank 5: `T*[3]`, one runtime extent
  const std::size_t entry_bytes = type_size(r.type) * (r.rank == 5 ? 3 : 1);
  return kbuf_model::byte_count(entry_bytes, r.ext, n, bytes) ? 0 : 1;
}

// ---- Operations ----------------------------------------------------------------------------
enum class Kind : std::uint8_t {
  allocate,
  checkpoint,
  reset_to,
  reset_all,
  scope_begin,
  scope_end,
  resize,
  sizehint,
  fence,
};

struct Op {
  Kind kind = Kind::fence;
  int target = 0;  // allocator 0 (A) or 1 (F)
  Request req;
  int slot = 0;
  std::size_t n = 0;
  bool shrink = false;
};

std::int64_t decode_extent(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 9)) {
    case 0:
    case 1:
    case 2:
    case 3:
      return in.ConsumeIntegralInRange<std::int64_t>(0, 16);
    case 4:
      return in.ConsumeIntegralInRange<std::int64_t>(0, 300);
    case 5:
      return in.ConsumeIntegralInRange<std::int64_t>(0, 5000);
    case 6:
      return in.ConsumeIntegralInRange<std::int64_t>(std::numeric_limits<std::int64_t>::min(), -1);
    case 7:
      return in.ConsumeIntegralInRange<std::int64_t>(std::int64_t{1} << 20,
                                                     std::numeric_limits<std::int64_t>::max());
    case 8:
      return in.ConsumeIntegralInRange<std::int64_t>(0, 1);
    default:
      return in.ConsumeIntegral<std::int64_t>();
  }
}

std::size_t decode_size(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 6)) {
    case 0:
      return 0;
    case 1:
    case 2:
      return in.ConsumeIntegralInRange<std::size_t>(0, 1 << 16);
    case 3:
      return in.ConsumeIntegralInRange<std::size_t>(0, std::size_t{8} << 20);
    case 4:
      return in.ConsumeIntegralInRange<std::size_t>(kAllocLimit, std::size_t{1} << 50);
    case 5:
      return kSizeMax - in.ConsumeIntegralInRange<std::size_t>(0, 1 << 14);
    default:
      return in.ConsumeIntegral<std::size_t>();
  }
}

Op decode_op(FuzzedDataProvider& in) {
  Op op;
  const int k = in.ConsumeIntegralInRange<int>(0, 19);
  op.target = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? 1 : 0;
  if (k < 8) {
    op.kind = Kind::allocate;
    Request& r = op.req;
    r.type = in.ConsumeIntegralInRange<int>(0, kTypes - 1);
    r.rank = in.ConsumeIntegralInRange<int>(1, 5);
    r.left = in.ConsumeBool();
    r.unsigned_extent = r.rank == 1 && in.ConsumeIntegralInRange<int>(0, 3) == 0;
    if (r.unsigned_extent) {
      r.uext =
          in.ConsumeBool() ? in.ConsumeIntegralInRange<u64>(0, 4096) : in.ConsumeIntegral<u64>();
    }
    const int n = r.rank == 5 ? 1 : r.rank;
    for (int i = 0; i < n; ++i) r.ext[i] = decode_extent(in);
  } else if (k < 10) {
    op.kind = Kind::checkpoint;
    op.slot = in.ConsumeIntegralInRange<int>(0, kSlots - 1);
  } else if (k < 12) {
    op.kind = Kind::reset_to;
    op.slot = in.ConsumeIntegralInRange<int>(0, kSlots - 1);
  } else if (k < 13) {
    op.kind = Kind::reset_all;
  } else if (k < 15) {
    op.kind = Kind::scope_begin;
  } else if (k < 17) {
    op.kind = Kind::scope_end;
  } else if (k < 18) {
    op.kind = Kind::resize;
    op.n = decode_size(in);
  } else if (k < 19) {
    op.kind = Kind::sizehint;
    op.n = decode_size(in);
    op.shrink = in.ConsumeBool();
  } else {
    op.kind = Kind::fence;
  }
  return op;
}

// ---- Tracing (KBUF_FUZZ_VERBOSE=1 prints every operation) -----------------------------------
bool verbose() {
  static const bool on = std::getenv("KBUF_FUZZ_VERBOSE") != nullptr;
  return on;
}

void print(const Op& op) {
  static const char* const kinds[] = {"allocate",  "checkpoint",  "reset_to",
                                      "reset_all", "scope_begin", "scope_end",
                                      "resize",    "sizehint",    "fence"};
  std::fprintf(stderr, "op %s on %c", kinds[static_cast<int>(op.kind)], op.target == 0 ? 'A' : 'F');
  if (op.kind == Kind::allocate) {
    const Request& r = op.req;
    std::fprintf(stderr, " type %d rank %d %s", r.type, r.rank, r.left ? "left" : "right");
    if (r.unsigned_extent) {
      std::fprintf(stderr, " (%llu)", static_cast<unsigned long long>(r.uext));
    } else {
      for (int i = 0; i < (r.rank == 5 ? 1 : r.rank); ++i) {
        std::fprintf(stderr, " %lld", static_cast<long long>(r.ext[i]));
      }
    }
  } else if (op.kind == Kind::checkpoint || op.kind == Kind::reset_to) {
    std::fprintf(stderr, " slot %d", op.slot);
  } else if (op.kind == Kind::resize || op.kind == Kind::sizehint) {
    std::fprintf(stderr, " %zu%s", op.n, op.shrink ? " shrink" : "");
  }
  std::fprintf(stderr, "\n");
}

// ---- The executor ----------------------------------------------------------------------------
struct Slot {
  Alloc::Checkpoint real;
  ModelCheckpoint model;
};

struct OpenScope {
  int target;
  std::unique_ptr<Alloc::Scope> scope;
  ModelCheckpoint model;
};

class World {
 public:
  World(Model& a, Model& f) : models_{&a, &f} {}

  // Runs one operation and checks the allocators against the model; returns an outcome code
  // (0 done, 1 logic_error, 2 out_of_memory) so that replays can be compared.
  int step(const Op& op) {
    Model& m = *models_[op.target];
    if (verbose()) print(op);
    int outcome = 0;
    switch (op.kind) {
      case Kind::allocate:
        outcome = do_allocate(m, op.req);
        break;
      case Kind::checkpoint: {
        Slot& s = slots_[op.slot];
        s.real = m.alloc.checkpoint();
        s.model = m.checkpoint();
        FCHECK(s.real.used() == m.used && s.real.depth() == m.depth(), "checkpoint() observers");
        break;
      }
      case Kind::reset_to:
        outcome = do_reset(m, slots_[op.slot]);
        break;
      case Kind::reset_all:
        m.alloc.reset();
        m.reset();
        break;
      case Kind::scope_begin:
        scopes_.push_back(
            OpenScope{op.target, std::make_unique<Alloc::Scope>(m.alloc.scope()), m.checkpoint()});
        FCHECK(scopes_.back().scope->checkpoint().used() == m.used, "scope checkpoint");
        break;
      case Kind::scope_end:
        end_scope();
        break;
      case Kind::resize:
        outcome = do_resize(m, op.n);
        break;
      case Kind::sizehint:
        m.alloc.sizehint(op.n, op.shrink);
        m.sizehint(op.n, op.shrink);
        break;
      case Kind::fence:
        m.alloc.fence();
        m.fenced();
        break;
    }
    verify_all();
    return outcome;
  }

  void end_scope() {
    if (scopes_.empty()) return;
    OpenScope s = std::move(scopes_.back());
    scopes_.pop_back();
    Model& m = *models_[s.target];
    const bool valid = m.valid(s.model);
    s.scope.reset();
    if (valid) m.release_to(s.model);
  }

  void end_all_scopes() {
    while (!scopes_.empty()) end_scope();
    verify_all();
  }

  void verify_all() {
    for (Model* m : models_) verify(*m);
    // No two live temporaries, of either allocator, overlap.
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
    for (Model* m : models_) {
      for (const Temp& t : m->live) {
        const auto b = reinterpret_cast<std::uintptr_t>(t.data);
        ranges.emplace_back(b, b + t.nbytes);
      }
    }
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i) {
      FCHECK(ranges[i - 1].second <= ranges[i].first, "live temporaries overlap");
    }
  }

 private:
  Model* models_[2];
  Slot slots_[kSlots];
  std::vector<OpenScope> scopes_;
  std::uint32_t next_seed_ = 1;

  int do_allocate(Model& m, const Request& r) {
    const Observed before = observe(m.alloc);
    const Got g = allocate_typed(m.alloc, r);
    FCHECK(g.error != 3, "allocate threw an undocumented exception: ", g.what);

    std::size_t nbytes = 0;
    if (request_bytes(r, &nbytes) != 0) {
      FCHECK(g.error == 1, "bad extents must throw kbuf::logic_error; got ", g.error, " ", g.what);
      FCHECK(g.what.find("kbuf::BufferAllocator::allocate") != std::string::npos,
             "the message names the call: ", g.what);
      FCHECK(differences(before, observe(m.alloc)).empty(), "a refused allocate changed ",
             differences(before, observe(m.alloc)));
      return 1;
    }
    if (nbytes == 0) {
      FCHECK(g.error == 0, "a zero-sized temporary is valid; got ", g.what);
      FCHECK(g.shape_ok, g.shape);
      FCHECK(g.span_bytes == 0, "zero-sized span");
      m.allocated_empty();
      return 0;
    }
    const kbuf_model::Plan plan = m.plan(nbytes, type_align(r.type));
    const std::size_t a = plan.a;
    bool may_fail = plan.cannot_be_had();
    bool must_fail = may_fail;
    const bool regrow = plan.regrow;
    const std::size_t new_capacity = plan.new_capacity;
    // A pending regrowth happens first; within the memory limit or not.
    if (regrow) {
      if (new_capacity > kAllocLimit - kSlack) may_fail = true;
      if (new_capacity > kAllocLimit) must_fail = true;
    }
    // Will it fall back? Only known once the buffer's address is (it is aligned to alignment()
    // only). Worst case for the prediction of failure:
    const bool fallback_may_fail = nbytes > kAllocLimit - kSlack - a;
    const bool fallback_must_fail = nbytes > kAllocLimit - (a - 1);

    if (g.error != 0) {
      FCHECK(g.error == 2, "a satisfiable-looking request threw logic_error: ", g.what);
      FCHECK(may_fail || fallback_may_fail, "out_of_memory for a request that must succeed (",
             nbytes, " bytes, regrowth to ", new_capacity, "): ", g.what);
      const std::string diff = differences(before, observe(m.alloc));
      FCHECK(diff.empty(), "a refused allocate (out_of_memory: ", g.what, ") changed ", diff);
      // A failed regrowth has fenced before it found no memory; a request's fallback that
      // fails first leaves the regrowth (and its fence) for later.
      const std::size_t fenced = m.alloc.statistics().fences - before.s.fences;
      FCHECK(fenced == 0 || (fenced == 1 && regrow && m.capacity != 0), "fences: ", fenced);
      m.stats.fences += fenced;
      return 2;
    }
    FCHECK(!must_fail, "a request that cannot be had succeeded: ", nbytes, " bytes");
    FCHECK(g.shape_ok, g.shape);
    FCHECK(g.span_bytes == nbytes, "span ", g.span_bytes, " != ", nbytes);
    const unsigned char* base = m.alloc.buffer().data();
    const std::uintptr_t ubase = reinterpret_cast<std::uintptr_t>(base);
    const std::size_t used_before = m.used;
    // A growth under live temporaries whose buffer could not be had near the limit leaves the
    // temporary a fallback, as without it.
    const bool grow_refused = plan.may_grow_under_live &&
                              plan.under_live_capacity > kAllocLimit - kSlack &&
                              m.alloc.capacity() == m.capacity;
    const kbuf_model::Placement where =
        m.allocated(plan, ubase, g.data, next_seed_++, grow_refused);
    const Temp& t = m.live.back();
    FCHECK(reinterpret_cast<std::uintptr_t>(g.data) % a == 0,
           "misaligned temporary: ", static_cast<const void*>(g.data), " for alignment ", a);
    if (where.fits) {
      FCHECK(g.data == base + where.start, "carved at ", static_cast<const void*>(g.data),
             ", expected offset ", where.start, " (used was ", used_before, ")");
    } else {
      FCHECK(!fallback_must_fail, "a fallback that cannot be had succeeded");
    }
    for_pattern_bytes(nbytes, [&](std::size_t i) { t.data[i] = pattern(t.seed, i); });
    (void)may_fail;
    return 0;
  }

  int do_reset(Model& m, const Slot& s) {
    const Observed before = observe(m.alloc);
    int error = 0;
    std::string what;
    try {
      m.alloc.reset(s.real);
    } catch (const kbuf::logic_error& e) {
      error = 1;
      what = e.what();
    } catch (const std::exception& e) {
      error = 3;
      what = e.what();
    }
    if (m.valid(s.model)) {
      FCHECK(error == 0, "reset to a valid checkpoint threw: ", what);
      m.release_to(s.model);
      return 0;
    }
    FCHECK(error == 1, "reset to a stale, foreign or default checkpoint must throw logic_error");
    FCHECK(what.find("kbuf::BufferAllocator::reset") != std::string::npos, "message: ", what);
    const std::string diff = differences(before, observe(m.alloc));
    FCHECK(diff.empty(), "a refused reset changed ", diff);
    FCHECK(before.s.fences == m.alloc.statistics().fences, "a refused reset fenced");
    return 1;
  }

  int do_resize(Model& m, std::size_t n) {
    const Observed before = observe(m.alloc);
    int error = 0;
    std::string what;
    try {
      m.alloc.resize(n);
    } catch (const kbuf::logic_error& e) {
      error = 1;
      what = e.what();
    } catch (const kbuf::out_of_memory& e) {
      error = 2;
      what = e.what();
    } catch (const std::exception& e) {
      error = 3;
      what = e.what();
    }
    std::size_t target = 0;
    if (m.resize_refused(n, &target)) {
      FCHECK(error == 1, "resize(", n, ") must throw logic_error (depth ", m.depth(), ")");
      FCHECK(differences(before, observe(m.alloc)).empty(), "a refused resize changed ",
             differences(before, observe(m.alloc)));
      return 1;
    }
    const bool replace = target != m.capacity;
    if (error != 0) {
      FCHECK(error == 2 && replace && target > kAllocLimit - kSlack, "resize(", n,
             ") failed unexpectedly: ", what);
      FCHECK(differences(before, observe(m.alloc)).empty(), "a refused resize changed ",
             differences(before, observe(m.alloc)));
      if (m.capacity != 0) m.fenced();
      return 2;
    }
    FCHECK(target <= kAllocLimit, "resize to ", target, " bytes cannot have succeeded");
    m.resized(target);
    return 0;
  }

  void verify(Model& m) {
    const Observed o = observe(m.alloc);
    const Observed e = m.expected();
    const std::string diff = differences(e, o);
    FCHECK(diff.empty(), "allocator ", m.id, " differs from the model (model -> real): ", diff);
    FCHECK(o.s.fences == e.s.fences, "fences: model ", e.s.fences, ", real ", o.s.fences);
    FCHECK(m.alloc.buffer().extent(0) == m.capacity, "buffer() extent");
    const unsigned char* base = m.alloc.buffer().data();
    FCHECK(m.capacity == 0 || reinterpret_cast<std::uintptr_t>(base) % m.alignment == 0,
           "buffer base misaligned");
    const std::uintptr_t ubase = reinterpret_cast<std::uintptr_t>(base);

    for (const Temp& t : m.live) {
      const std::uintptr_t b = reinterpret_cast<std::uintptr_t>(t.data);
      FCHECK(b % t.align == 0, "live temporary misaligned");
      const bool in_buffer = m.capacity != 0 && b >= ubase && b + t.nbytes <= ubase + m.used;
      const bool touches_buffer = m.capacity != 0 && b < ubase + m.capacity && b + t.nbytes > ubase;
      // A temporary carved from a buffer replaced under it stays there, outside this one.
      FCHECK(t.fallback || t.in_replaced ? !touches_buffer : in_buffer,
             "temporary outside its memory");
      FCHECK(m.alloc.is_live(Alloc::view<unsigned char*>(t.data, t.nbytes)),
             "is_live is false for a live temporary");
      FCHECK(
          __asan_region_is_poisoned(t.data, t.nbytes) == nullptr,
          "a live temporary is poisoned at offset ",
          static_cast<const unsigned char*>(__asan_region_is_poisoned(t.data, t.nbytes)) - t.data);
      for_pattern_bytes(t.nbytes, [&](std::size_t i) {
        FCHECK(t.data[i] == pattern(t.seed, i), "a live temporary was overwritten at byte ", i,
               " of ", t.nbytes);
      });
    }

    // The rest of the buffer (the gaps between carved temporaries and the tail) holds the
    // debug fill and is poisoned. Checked at both ends of every gap.
    if (m.capacity == 0) return;
    std::vector<std::pair<std::size_t, std::size_t>> held;  // offsets of carved temporaries
    for (const Temp& t : m.live) {
      if (!t.fallback && !t.in_replaced) {
        const auto off = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(t.data) - ubase);
        held.emplace_back(off, off + t.nbytes);
      }
    }
    std::sort(held.begin(), held.end());
    const auto check_free = [&](std::size_t from,
                                std::size_t to) {  // [from, to) holds no temporary
      for (std::size_t i = from; i < to; ++i) {
        FCHECK(peek(base + i) == kbuf::debug_fill_byte, "free buffer byte ", i, " of ", m.capacity,
               " is not the debug fill (", int(peek(base + i)), ")");
        if ((ubase + i) % 8 == 0 && i + 8 <= to) {  // a whole ASan granule without live bytes
          FCHECK(__asan_address_is_poisoned(base + i), "free buffer granule at ", i, " of ",
                 m.capacity, " is not poisoned");
        }
      }
    };
    const auto check_gap = [&](std::size_t from, std::size_t to) {
      if (to - from <= 8192) {
        check_free(from, to);
      } else {
        check_free(from, from + 4096);
        check_free(to - 4096, to);
      }
    };
    std::size_t at = 0;
    for (const auto& h : held) {
      FCHECK(h.first >= at, "carved temporaries overlap");
      check_gap(at, h.first);
      at = h.second;
    }
    check_gap(at, m.capacity);
  }
};

// ---- One input -------------------------------------------------------------------------------
std::size_t decode_alignment(FuzzedDataProvider& in) {
  return std::size_t{1} << in.ConsumeIntegralInRange<int>(0, 13);
}

void run_program(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);

  // Construction: alignment and sizehint, and the refusals of a bad alignment and of a buffer
  // that cannot be had.
  std::size_t alignment = decode_alignment(in);
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) {
    const std::size_t bad = alignment * 3 + (alignment == 1 ? 2 : 0);
    bool threw = false;
    try {
      Alloc bad_alloc(0, bad);
    } catch (const kbuf::logic_error& e) {
      threw = std::string(e.what()).find(std::to_string(bad)) != std::string::npos;
    }
    FCHECK(threw, "alignment ", bad, " must be refused with a message naming it");
  }
  std::size_t sizehint = in.ConsumeBool() ? 0 : decode_size(in);
  std::size_t capacity = 0;
  if (!kbuf_model::buffer_size(sizehint, &capacity) || capacity > kAllocLimit - kSlack) {
    bool threw = false;
    try {
      Alloc doomed(sizehint, alignment);
      threw = doomed.capacity() <= kAllocLimit;  // may succeed only near the limit
    } catch (const kbuf::logic_error&) {
      threw = !kbuf_model::buffer_size(sizehint, &capacity);
    } catch (const kbuf::out_of_memory&) {
      threw = true;
    }
    FCHECK(threw, "a buffer of ", sizehint, " bytes cannot be had");
    sizehint = 0;
    capacity = 0;
  }
  const std::size_t foreign_alignment = decode_alignment(in);

  std::vector<Op> ops;
  while (in.remaining_bytes() > 0 && static_cast<int>(ops.size()) < kMaxOps) {
    ops.push_back(decode_op(in));
  }

  {
    Alloc a(sizehint, alignment);
    Alloc f(0, foreign_alignment);
    Model ma(0, a, alignment, capacity);
    Model mf(1, f, foreign_alignment, 0);
    World world(ma, mf);
    world.verify_all();
    for (const Op& op : ops) world.step(op);
    world.end_all_scopes();
  }

  // Convergence: the history of allocator A without resize/sizehint, replayed on a fresh
  // allocator, then replayed again after a reset, needs no fallback the second time.
  std::vector<Op> history;
  for (const Op& op : ops) {
    if (op.target == 0 && op.kind != Kind::resize && op.kind != Kind::sizehint) {
      history.push_back(op);
    }
  }
  Alloc b(0, alignment);
  Alloc g(0, foreign_alignment);
  Model mb(0, b, alignment, 0);
  Model mg(1, g, foreign_alignment, 0);
  std::vector<int> first, second;
  {
    World world(mb, mg);
    for (const Op& op : history) first.push_back(world.step(op));
    world.end_all_scopes();
  }
  b.reset();
  mb.reset();
  const kbuf::Statistics warm = b.statistics();
  if (b.high_water_mark() > kConvergenceLimit) return;  // a second round might not fit in memory
  for (const int outcome : first) {
    if (outcome == 2) return;  // a refusal for want of memory: nothing to converge to
  }
  {
    World world(mb, mg);
    for (const Op& op : history) second.push_back(world.step(op));
    world.end_all_scopes();
  }
  FCHECK(first == second, "the replay of a program behaved differently the second time");
  FCHECK(b.statistics().fallbacks == warm.fallbacks, "the second run needed ",
         b.statistics().fallbacks - warm.fallbacks, " fallbacks (high-water mark ",
         b.high_water_mark(), ", capacity ", b.capacity(), ")");
  FCHECK(b.statistics().regrows <= warm.regrows + 1, "the second run regrew more than once");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Kokkos::initialize();
  std::atexit([] { Kokkos::finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  run_program(data, size);
  return 0;
}
