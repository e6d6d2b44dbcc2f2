// The query library (query.hpp); the lines marked "kbuf:" are its adoption.
#include "query.hpp"

#include <algorithm>
#include <string>

#include "kbuf_optional.hpp"

namespace qlib {
namespace {

// kbuf: the library's owner.
struct query_owner {
  static constexpr const char* name = "qlib";
};
using buffers = kbuf_optional_v1::library<query_owner>;

/// Sorts each row of `indices` (rows by `offsets`), through a scratch buffer of the row length:
/// a nested call of the library's own owner, on the caller's instance.
void sort_rows(const execution_space& space, const offsets_type& offsets,
               const offsets_type& indices) {
  auto scope = buffers::scope<memory_space>();  // kbuf: nested inside neighbors' scope
  const int n = static_cast<int>(offsets.extent(0)) - 1;
  int longest = 0;
  for (int i = 0; i < n; ++i) longest = std::max(longest, offsets(i + 1) - offsets(i));
  // kbuf: was offsets_type scratch("qlib::scratch", longest)
  auto scratch = buffers::temporary_like<offsets_type>(space, "qlib::scratch", longest);
  for (int i = 0; i < n; ++i) {
    const int b = offsets(i), e = offsets(i + 1);
    for (int k = b; k < e; ++k) scratch(k - b) = indices(k);
    std::sort(scratch.data(), scratch.data() + (e - b));
    for (int k = b; k < e; ++k) indices(k) = scratch(k - b);
  }
}

}  // namespace

void neighbors(const execution_space& space, const points_type& points, double radius,
               offsets_type& offsets, offsets_type& indices) {
  auto scope = buffers::scope<memory_space>();  // kbuf: this call's buffers end at '}'
  const int n = static_cast<int>(points.extent(0));
  const double r2 = radius * radius;
  // kbuf: was offsets_type counts("qlib::counts", n + 1)
  auto counts = buffers::temporary_like<offsets_type>(space, "qlib::counts", n + 1);
  Kokkos::parallel_for(
      "qlib::count", Kokkos::RangePolicy<execution_space>(space, 0, n + 1), [=](int i) {
        int c = 0;
        if (i < n) {
          for (int j = 0; j < n; ++j) {
            const double dx = points(i, 0) - points(j, 0), dy = points(i, 1) - points(j, 1);
            c += dx * dx + dy * dy <= r2 ? 1 : 0;
          }
        }
        counts(i) = c;
      });
  int total = 0;
  Kokkos::parallel_scan(
      "qlib::offsets", Kokkos::RangePolicy<execution_space>(space, 0, n + 1),
      [=](int i, int& sum, bool final) {
        const int c = counts(i);
        if (final) counts(i) = sum;
        sum += c;
      },
      total);
  // kbuf: an upper bound, cut to the count below (was a View of n * n, then Kokkos::resize)
  auto found = buffers::temporary_like<offsets_type>(space, "qlib::found", n * n);
  Kokkos::parallel_for("qlib::fill", Kokkos::RangePolicy<execution_space>(space, 0, n), [=](int i) {
    int k = counts(i);
    for (int j = 0; j < n; ++j) {
      const double dx = points(i, 0) - points(j, 0), dy = points(i, 1) - points(j, 1);
      if (dx * dx + dy * dy <= r2) found(k++) = j;
    }
  });
  space.fence();
  buffers::shrink(found, static_cast<std::size_t>(total));  // kbuf: was Kokkos::resize
  sort_rows(space, counts, found);
  // What the caller keeps: plain Views, made outside any temporary.
  offsets =
      offsets_type(Kokkos::view_alloc(std::string("qlib::offsets"), Kokkos::WithoutInitializing),
                   static_cast<std::size_t>(n + 1));
  indices =
      offsets_type(Kokkos::view_alloc(std::string("qlib::indices"), Kokkos::WithoutInitializing),
                   static_cast<std::size_t>(total));
  Kokkos::deep_copy(space, offsets, counts);
  Kokkos::deep_copy(space, indices, found);
  space.fence();
}

}  // namespace qlib
