// A small neighbour-query library shaped like ArborX's queries, for the tests of kbuf in code it
// does not own: every call runs on the execution space instance its caller gives, its sites are
// typed by View types, a buffer is sized by an upper bound and cut to a scan's count, and a call
// makes a nested call of its own owner. Its header says nothing of kbuf; it takes kbuf through
// its copy of kbuf_optional.hpp, so it builds with kbuf and without it.
#ifndef KBUF_TEST_QUERY_HPP
#define KBUF_TEST_QUERY_HPP

#include <Kokkos_Core.hpp>

namespace qlib {

using memory_space = Kokkos::HostSpace;
using execution_space = Kokkos::DefaultHostExecutionSpace;
using points_type = Kokkos::View<const double* [2], memory_space>;
using offsets_type = Kokkos::View<int*, memory_space>;

/// For each point, the indices of the points within `radius` of it (itself included), in
/// increasing order, as compressed rows: `offsets` (n + 1) and `indices`, both made here.
void neighbors(const execution_space& space, const points_type& points, double radius,
               offsets_type& offsets, offsets_type& indices);

}  // namespace qlib

#endif  // KBUF_TEST_QUERY_HPP
