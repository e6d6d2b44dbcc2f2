// Warm-up comparison: kbuf against a model of TensorOperations.jl's BufferAllocator growth rule,
// on workloads whose temporaries first overflow an empty allocator.
//
// The model (benchmark-only; not part of kbuf) keeps one buffer and an offset. A temporary is
// carved at the aligned offset if it fits, else served by a fallback allocation that does NOT
// advance the offset. The high-water mark is the peak of (carved offset + request): the peak of
// what was carved, plus the one request that overflowed, so the fallbacks live at the same time
// are forgotten. A full reset grows the buffer to that mark. kbuf instead counts every live
// fallback in its mark, so its second round fits entirely.
#ifndef KBUF_BENCH_TENSOROPERATIONS_MODEL_HPP
#define KBUF_BENCH_TENSOROPERATIONS_MODEL_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "policies.hpp"

namespace kbuf_bench {

class TensorOperationsModel {
 public:
  struct Checkpoint {
    std::size_t offset = 0;
    std::size_t nfallbacks = 0;
  };

  void* allocate(std::size_t nbytes, std::size_t alignment) {
    const std::size_t start = align_up(offset_, alignment);  // the base is aligned
    const std::size_t end = start + nbytes;
    if (end > max_offset_) max_offset_ = end;
    if (end > capacity_) {
      fallbacks_.emplace_back(Kokkos::view_alloc(Kokkos::WithoutInitializing, "to-model::fallback"),
                              nbytes);
      ++fallback_count_;
      return fallbacks_.back().data();
    }
    offset_ = end;
    return base_ + start;
  }
  Checkpoint checkpoint() const { return {offset_, fallbacks_.size()}; }
  void reset(const Checkpoint& cp) {
    if (fallbacks_.size() > cp.nfallbacks) fence();
    offset_ = cp.offset;
    fallbacks_.resize(cp.nfallbacks);
  }
  /// Back to empty; grows the buffer to the high-water mark if it exceeds the capacity.
  void reset() {
    reset(Checkpoint{});
    if (max_offset_ > capacity_) {
      fence();
      buffer_ = raw_view();
      capacity_ = kbuf::buffer_size(max_offset_);
      buffer_ = raw_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, "to-model::buffer"),
                         capacity_ + temp_alignment);
      const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(buffer_.data());
      base_ = buffer_.data() + (align_up(a, temp_alignment) - a);
    }
  }
  std::size_t capacity() const { return capacity_; }
  std::size_t fallbacks() const { return fallback_count_; }

 private:
  using raw_view = Kokkos::View<unsigned char*, memory_space>;
  raw_view buffer_;
  unsigned char* base_ = nullptr;
  std::size_t capacity_ = 0, offset_ = 0, max_offset_ = 0, fallback_count_ = 0;
  std::vector<raw_view> fallbacks_;
};

/// A round of a workload: temporaries (bytes, multiples of 8) and nested scopes.
struct Op {
  enum Kind { alloc, push, pop } kind;
  std::size_t bytes;
};
struct Workload {
  std::string name;
  std::vector<Op> ops;
};

inline std::vector<Workload> warmup_workloads() {
  constexpr std::size_t K = 1024;
  auto a = [](std::size_t b) { return Op{Op::alloc, b}; };
  const Op push{Op::push, 0}, pop{Op::pop, 0};
  std::vector<Workload> w;
  {  // the round section's 8 temporaries, in its order
    Workload x{"mixed-round", {}};
    for (std::size_t b : MixedShapes::slot_bytes()) x.ops.push_back(a(b));
    w.push_back(x);
  }
  {
    Workload x{"ascending", {}};
    for (std::size_t b = 1 * K; b <= 128 * K; b *= 2) x.ops.push_back(a(b));
    w.push_back(x);
  }
  {
    Workload x{"descending", {}};
    for (std::size_t b = 128 * K; b >= 1 * K; b /= 2) x.ops.push_back(a(b));
    w.push_back(x);
  }
  {  // pairwise contractions: each step keeps its result and frees its two permuted operands
    Workload x{"contraction-chain", {}};
    const std::size_t steps[4][3] = {{32 * K, 16 * K, 16 * K},
                                     {128 * K, 32 * K, 64 * K},
                                     {64 * K, 128 * K, 64 * K},
                                     {16 * K, 64 * K, 16 * K}};
    for (const auto& s : steps) {
      x.ops.push_back(a(s[0]));
      x.ops.push_back(push);
      x.ops.push_back(a(s[1]));
      x.ops.push_back(a(s[2]));
      x.ops.push_back(pop);
    }
    w.push_back(x);
  }
  {  // many small temporaries, then a few large ones
    Workload x{"small-then-large", {}};
    for (int i = 0; i < 64; ++i) x.ops.push_back(a(512));
    for (int i = 0; i < 4; ++i) x.ops.push_back(a(256 * K));
    w.push_back(x);
  }
  return w;
}

/// Runs one round on kbuf; returns the fallbacks it needed.
inline std::size_t run_workload_kbuf(Allocator& alloc, const Workload& w) {
  const std::size_t before = alloc.statistics().fallbacks;
  std::vector<Allocator::Checkpoint> stack;
  for (const Op& op : w.ops) {
    if (op.kind == Op::alloc) {
      touch(alloc.allocate<double*>(op.bytes / sizeof(double)));
    } else if (op.kind == Op::push) {
      stack.push_back(alloc.checkpoint());
    } else {
      alloc.reset(stack.back());
      stack.pop_back();
    }
  }
  alloc.reset();
  fence();
  return alloc.statistics().fallbacks - before;
}

/// Runs one round on the model; returns the fallbacks it needed.
inline std::size_t run_workload_model(TensorOperationsModel& model, const Workload& w) {
  const std::size_t before = model.fallbacks();
  std::vector<TensorOperationsModel::Checkpoint> stack;
  for (const Op& op : w.ops) {
    if (op.kind == Op::alloc) {
      using V = unmanaged_view<double*, Kokkos::LayoutRight>;
      touch(V(static_cast<double*>(model.allocate(op.bytes, temp_alignment)),
              op.bytes / sizeof(double)));
    } else if (op.kind == Op::push) {
      stack.push_back(model.checkpoint());
    } else {
      model.reset(stack.back());
      stack.pop_back();
    }
  }
  model.reset();
  fence();
  return model.fallbacks() - before;
}

}  // namespace kbuf_bench

#endif  // KBUF_BENCH_TENSOROPERATIONS_MODEL_HPP
