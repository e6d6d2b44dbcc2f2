#ifndef KBUF_TENSOR_KBUF_TENSOR_HPP
#define KBUF_TENSOR_KBUF_TENSOR_HPP

/// @file
/// kbuf_tensor: the tensor-network workload of kbuf's demo, tests and benchmarks. Dense
/// row-major tensors in Kokkos Views, pairwise contraction by permute + KokkosBlas::gemm with
/// every intermediate from a `Temporaries` provider (a kbuf::BufferAllocator or fresh Views),
/// the two-site environment network, and naive host references.

#include <kbuf_tensor/contract.hpp>
#include <kbuf_tensor/instances.hpp>
#include <kbuf_tensor/memory_space.hpp>
#include <kbuf_tensor/network.hpp>
#include <kbuf_tensor/reference.hpp>
#include <kbuf_tensor/temporaries.hpp>
#include <kbuf_tensor/tensor.hpp>

#endif  // KBUF_TENSOR_KBUF_TENSOR_HPP
