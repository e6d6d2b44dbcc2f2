// Randomised model-based test: thousands of random programs of allocate / checkpoint / reset /
// scope / sizehint / resize calls, each step checked against a simple reference model.
//
// The model knows the documented rules only: where a temporary must land (the next offset whose
// absolute address is aligned), when it falls back, when the buffer regrows and to what size,
// what used() and high_water_mark() are, which checkpoints are still valid (a checkpoint is valid
// while the temporaries that were live when it was taken are still live), and that every refused
// call changes nothing. It checks that live temporaries never overlap, and that replaying a
// program on the warmed-up allocator needs no fallback.
#include <doctest/doctest.h>

#include "model.hpp"
#include "test_support.hpp"
#include "typed_allocate.hpp"

#include <algorithm>
#include <memory>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

using namespace kbuf_test;

namespace {

enum class OpKind {
  allocate,
  bad_allocate,
  checkpoint,
  reset_to,
  reset_all,
  open_scope,
  close_scope,
  sizehint,
  resize,
  foreign_reset
};

struct Op {
  OpKind kind;
  int type = 0;  // element type index
  int rank = 1;  // 1..3
  bool left = false;
  long extents[3] = {1, 1, 1};
  std::size_t value = 0;  // sizehint / resize bytes, checkpoint slot
  bool shrink = false;
};

// A checkpoint or scope of the program: the real one and the model's.
struct ModelCheckpoint {
  Alloc::Checkpoint cp;
  kbuf_model::Checkpoint model;
};

// The element types programs draw (by the index drawn, 0 to 4), as indices of the shared list.
constexpr int model_types[] = {0, 2, 3, 5, 4};  // unsigned char, double, Pod12, Wide, complex
std::size_t type_size(int type) {
  return kbuf_test::element_sizes[model_types[type]];
}
std::size_t type_align(int type) {
  return kbuf_test::element_aligns[model_types[type]];
}

std::pair<std::uintptr_t, std::uintptr_t> run_allocate(Alloc& alloc, const Op& op) {
  return kbuf_test::allocate_typed(
      alloc, model_types[op.type], op.left, op.rank, op.extents, [](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        return std::make_pair(begin_of(v), begin_of(v) + v.size() * sizeof(T));
      });
}

std::vector<Op> make_program(std::mt19937_64& rng, int length, bool replayable) {
  std::uniform_int_distribution<int> pct(0, 99);
  std::vector<Op> program;
  for (int i = 0; i < length; ++i) {
    Op op{OpKind::allocate};
    const int p = pct(rng);
    if (p < 45) {
      op.kind = OpKind::allocate;
      op.type = static_cast<int>(rng() % 5);
      op.rank = 1 + static_cast<int>(rng() % 3);
      op.left = rng() % 2;
      // occasionally large: up to about 1 MiB, beyond every buffer the programs start with
      const long large = op.rank == 1 ? 40000 : op.rank == 2 ? 200 : 40;
      const long scale = pct(rng) < 10 ? large : 12;
      for (long& e : op.extents) e = static_cast<long>(rng() % scale) + (pct(rng) < 5 ? 0 : 1);
    } else if (p < 48) {
      op.kind = OpKind::bad_allocate;
      op.type = static_cast<int>(rng() % 5);
      op.rank = 1 + static_cast<int>(rng() % 3);
      for (long& e : op.extents) e = 1 + static_cast<long>(rng() % 4);
      op.extents[rng() % op.rank] = -1 - static_cast<long>(rng() % 1000);
    } else if (p < 58) {
      op.kind = OpKind::checkpoint;
      op.value = rng() % 8;
    } else if (p < 68) {
      op.kind = OpKind::reset_to;
      op.value = rng() % 8;
    } else if (p < 71) {
      op.kind = OpKind::reset_all;
    } else if (p < 80) {
      op.kind = OpKind::open_scope;
    } else if (p < 89) {
      op.kind = OpKind::close_scope;
    } else if (p < 93) {
      op.kind = OpKind::foreign_reset;
    } else if (p < 97 || replayable) {
      op.kind = OpKind::sizehint;
      op.value = rng() % 20000;
      op.shrink = false;
    } else if (p < 99) {
      op.kind = OpKind::sizehint;
      op.value = rng() % 20000;
      op.shrink = true;
    } else {
      op.kind = OpKind::resize;
      op.value = rng() % 20000;
    }
    program.push_back(op);
  }
  return program;
}

// Runs a program on `alloc` and checks it against the reference model (tests/support/model.hpp)
// at every step.
class Model {
 public:
  Model(Alloc& alloc, Alloc& foreign)
      : alloc_(alloc),
        foreign_(foreign),
        m_(0, alloc.alignment(), alloc.capacity(), alloc.high_water_mark()) {
    m_.stats = alloc.statistics();
    sync_buffer();
  }

  void run(const std::vector<Op>& program) {
    for (const Op& op : program) {
      step(op);
      check_invariants();
    }
    while (!scopes_.empty()) scopes_.pop_back();  // innermost first
    scope_models_.clear();
    alloc_.reset();
    m_.reset();
  }

  std::size_t fallbacks_seen = 0;

 private:
  struct Snapshot {
    std::size_t capacity, used, hwm, depth, fallbacks, live_fallbacks;
    bool empty;
    bool operator==(const Snapshot& o) const {
      return capacity == o.capacity && used == o.used && hwm == o.hwm && depth == o.depth &&
             fallbacks == o.fallbacks && live_fallbacks == o.live_fallbacks && empty == o.empty;
    }
  };
  Snapshot snapshot() const {
    return {alloc_.capacity(),
            alloc_.used(),
            alloc_.high_water_mark(),
            alloc_.checkpoint().depth(),
            alloc_.statistics().fallbacks,
            alloc_.live_fallbacks(),
            alloc_.empty()};
  }

  void sync_buffer() { base_ = address(alloc_.buffer().data()); }

  void step(const Op& op) {
    const std::size_t A = alloc_.alignment();
    switch (op.kind) {
      case OpKind::allocate: {
        std::size_t bytes = 0;
        const std::int64_t extents[3] = {op.extents[0], op.extents[1], op.extents[2]};
        REQUIRE(kbuf_model::byte_count(type_size(op.type), extents, op.rank, &bytes));
        const std::size_t fallbacks_before = alloc_.statistics().fallbacks;
        const auto [b, e] = run_allocate(alloc_, op);
        if (bytes == 0) {
          m_.allocated_empty();
          REQUIRE(alloc_.used() == m_.used);
          return;
        }
        const kbuf_model::Plan plan = m_.plan(bytes, type_align(op.type));
        REQUIRE(!plan.cannot_be_had());
        if (plan.regrow) {
          sync_buffer();
          REQUIRE(alloc_.capacity() == kbuf::buffer_size(m_.hwm));
          REQUIRE(base_ % A == 0);
        } else if (plan.may_grow_under_live && alloc_.capacity() != m_.capacity) {
          sync_buffer();  // grown under the live temporaries: the model says whether it must
          REQUIRE(alloc_.capacity() == plan.under_live_capacity);
          REQUIRE(base_ % A == 0);
        } else {
          REQUIRE(alloc_.capacity() == m_.capacity);
        }
        const std::size_t a = std::max(A, type_align(op.type));
        REQUIRE(plan.a == a);
        REQUIRE(e - b == bytes);
        REQUIRE(b % a == 0);
        const kbuf_model::Placement where =
            m_.allocated(plan, base_, reinterpret_cast<unsigned char*>(b));
        REQUIRE(alloc_.capacity() == m_.capacity);
        if (where.fits) {
          REQUIRE(b == base_ + where.start);  // exactly the next aligned offset
          REQUIRE(alloc_.statistics().fallbacks == fallbacks_before);
        } else {
          REQUIRE((e <= base_ || b >= base_ + m_.capacity));  // outside the buffer
          REQUIRE(alloc_.statistics().fallbacks == fallbacks_before + 1);
          ++fallbacks_seen;
        }
        for (std::size_t i = 0; i + 1 < m_.live.size(); ++i) {  // no overlap with the others
          const std::uintptr_t rb = address(m_.live[i].data);
          REQUIRE((e <= rb || b >= rb + m_.live[i].nbytes));
        }
        REQUIRE(alloc_.used() == m_.used);
        REQUIRE(alloc_.high_water_mark() == m_.hwm);
        return;
      }
      case OpKind::bad_allocate: {
        std::size_t bytes = 0;
        const std::int64_t extents[3] = {op.extents[0], op.extents[1], op.extents[2]};
        REQUIRE(!kbuf_model::byte_count(type_size(op.type), extents, op.rank, &bytes));
        const Snapshot before = snapshot();
        REQUIRE_THROWS_AS(run_allocate(alloc_, op), kbuf::logic_error);
        REQUIRE(snapshot() == before);
        return;
      }
      case OpKind::checkpoint: {
        ModelCheckpoint m{alloc_.checkpoint(), m_.checkpoint()};
        if (checkpoints_.size() <= op.value) checkpoints_.resize(op.value + 1);
        checkpoints_[op.value] = std::make_unique<ModelCheckpoint>(std::move(m));
        return;
      }
      case OpKind::reset_to: {
        if (op.value >= checkpoints_.size() || !checkpoints_[op.value]) return;
        const ModelCheckpoint& m = *checkpoints_[op.value];
        if (releases_open_scope(m.model.depth)) return;
        if (m_.valid(m.model)) {
          alloc_.reset(m.cp);
          m_.release_to(m.model);
        } else {
          const Snapshot before = snapshot();
          REQUIRE_THROWS_AS(alloc_.reset(m.cp), kbuf::logic_error);
          REQUIRE(snapshot() == before);
        }
        return;
      }
      case OpKind::reset_all: {
        if (releases_open_scope(0)) return;
        alloc_.reset();
        m_.reset();
        return;
      }
      case OpKind::open_scope: {
        ModelCheckpoint m{alloc_.checkpoint(), m_.checkpoint()};
        scopes_.push_back(std::make_unique<Alloc::Scope>(alloc_.scope()));
        scope_models_.push_back(std::move(m));
        return;
      }
      case OpKind::close_scope: {
        if (scopes_.empty()) return;
        const ModelCheckpoint m = scope_models_.back();
        scope_models_.pop_back();
        if (m_.valid(m.model)) {
          scopes_.pop_back();
          m_.release_to(m.model);
        } else {
          const Snapshot before = snapshot();
          scopes_.pop_back();  // released by an explicit reset already: does nothing
          REQUIRE(snapshot() == before);
        }
        return;
      }
      case OpKind::sizehint: {
        alloc_.sizehint(op.value, op.shrink);
        m_.sizehint(op.value, op.shrink);
        REQUIRE(alloc_.high_water_mark() == m_.hwm);
        return;
      }
      case OpKind::resize: {
        std::size_t target = 0;
        if (m_.resize_refused(op.value, &target)) {
          const Snapshot before = snapshot();
          REQUIRE_THROWS_AS(alloc_.resize(op.value), kbuf::logic_error);
          REQUIRE(snapshot() == before);
          return;
        }
        alloc_.resize(op.value);
        REQUIRE(alloc_.capacity() == kbuf::buffer_size(op.value));
        m_.resized(target);
        sync_buffer();
        REQUIRE(alloc_.high_water_mark() == m_.hwm);
        return;
      }
      case OpKind::foreign_reset: {
        auto x = foreign_.allocate<double*>(1);
        (void)x;
        const Snapshot before = snapshot();
        REQUIRE_THROWS_AS(alloc_.reset(foreign_.checkpoint()), kbuf::logic_error);
        REQUIRE(snapshot() == before);
        foreign_.reset();
        return;
      }
    }
  }

  // Debug builds abort when a scope ends after an explicit reset released its checkpoint; there
  // the programs never reset past an open scope.
  bool releases_open_scope(std::size_t depth) const {
#if KBUF_ENABLE_DEBUG
    for (const ModelCheckpoint& m : scope_models_) {
      if (m.model.depth > depth) return true;
    }
#endif
    (void)depth;
    return false;
  }

  void check_invariants() {
    REQUIRE(alloc_.used() == m_.used);
    REQUIRE(alloc_.high_water_mark() == m_.hwm);
    REQUIRE(alloc_.empty() == m_.empty());
    REQUIRE(alloc_.checkpoint().depth() == m_.depth());
    REQUIRE(alloc_.capacity() == m_.capacity);
    REQUIRE(address(alloc_.buffer().data()) == base_);
    REQUIRE(alloc_.live_fallbacks() == m_.nfallbacks);
    REQUIRE(m_.used <= m_.capacity);
    const kbuf::Statistics s = alloc_.statistics();
    REQUIRE(s.temporaries == m_.stats.temporaries);
    REQUIRE(s.fallbacks == m_.stats.fallbacks);
    REQUIRE(s.fallback_bytes == m_.stats.fallback_bytes);
    REQUIRE(s.regrows == m_.stats.regrows);
    REQUIRE(s.regrows_under_live == m_.stats.regrows_under_live);
    REQUIRE(s.empty == m_.stats.empty);
    REQUIRE(s.resets == m_.stats.resets);
    REQUIRE(s.fences == m_.stats.fences);
  }

  Alloc& alloc_;
  Alloc& foreign_;
  kbuf_model::Allocator m_;
  std::uintptr_t base_ = 0;
  std::vector<std::unique_ptr<ModelCheckpoint>> checkpoints_;
  std::vector<std::unique_ptr<Alloc::Scope>> scopes_;
  std::vector<ModelCheckpoint> scope_models_;
};

}  // namespace

TEST_CASE("random programs agree with the reference model at every step") {
  std::mt19937_64 rng(20261202);
  std::size_t fallbacks = 0, under_live = 0;
  const std::size_t sizes[] = {0, 64, 1000, 4096, 50000};
  const std::size_t alignments[] = {1, 8, 64, 256, 4096};
  for (int program_index = 0; program_index < 3000; ++program_index) {
    CAPTURE(program_index);
    const std::size_t size = sizes[rng() % 5];
    const std::size_t alignment =
        program_index % 2 == 0 ? Alloc::default_alignment : alignments[rng() % 5];
    Alloc alloc(size, alignment);
    Alloc foreign(256);
    Model model(alloc, foreign);
    model.run(make_program(rng, 60, false));
    fallbacks += model.fallbacks_seen;
    under_live += alloc.statistics().regrows_under_live;
  }
  CHECK(fallbacks > 100);  // the programs did exercise the fallback path
  MESSAGE("growths under live temporaries in the programs: ", under_live);
  CHECK(under_live > 100);  // and the growth under live temporaries
}

TEST_CASE("replaying a random program on the warmed-up allocator needs no fallback") {
  std::mt19937_64 rng(7);
  std::size_t first_round_fallbacks = 0;
  for (int program_index = 0; program_index < 2000; ++program_index) {
    CAPTURE(program_index);
    const std::size_t alignment = std::size_t{1} << (rng() % 13);
    Alloc alloc(rng() % 3000, alignment);
    Alloc foreign(256);
    const std::vector<Op> program = make_program(rng, 50, true);
    Model first(alloc, foreign);
    first.run(program);
    first_round_fallbacks += first.fallbacks_seen;
    const std::size_t hwm = alloc.high_water_mark();
    Model second(alloc, foreign);
    second.run(program);
    CHECK(second.fallbacks_seen == 0);
    CHECK(alloc.high_water_mark() == hwm);
  }
  CHECK(first_round_fallbacks > 100);
}
