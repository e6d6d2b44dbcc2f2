// Compile-only checks of kbuf's types: what a temporary is, for every layout, rank and element
// type, without running anything (meaningful on a GPU build machine with no GPU too).
#include <kbuf/impl/view_traits.hpp>
#include <kbuf/kbuf.hpp>

#include <cstddef>
#include <type_traits>

namespace {

using Host = kbuf::BufferAllocator<Kokkos::HostSpace>;
using Default = kbuf::BufferAllocator<>;

template <class A, class DataType, class Layout, class... Extents>
using allocate_result =
    decltype(std::declval<A&>().template allocate<DataType, Layout>(std::declval<Extents>()...));

// The default allocator lives in the configured backend's memory space.
static_assert(std::is_same<Default::memory_space, kbuf::default_memory_space>::value, "");
static_assert(
    std::is_same<kbuf::default_execution_space, kbuf::default_memory_space::execution_space>::value,
    "");
static_assert(std::is_same<Host::execution_space, Kokkos::HostSpace::execution_space>::value, "");

// A temporary is exactly the allocator's unmanaged view type.
static_assert(
    std::is_same<Host::view<double*>, Kokkos::View<double*, Kokkos::LayoutRight, Kokkos::HostSpace,
                                                   Kokkos::MemoryUnmanaged>>::value,
    "");
static_assert(std::is_same<allocate_result<Host, double**, Kokkos::LayoutRight, int, int>,
                           Host::view<double**>>::value,
              "");
static_assert(std::is_same<allocate_result<Host, float***, Kokkos::LayoutLeft, long, long, long>,
                           Host::view<float***, Kokkos::LayoutLeft>>::value,
              "");
static_assert(std::is_same<allocate_result<Default, Kokkos::complex<double>*, Kokkos::LayoutRight,
                                           std::size_t>,
                           Default::view<Kokkos::complex<double>*>>::value,
              "");
static_assert(std::is_same<allocate_result<Host, double* [3], Kokkos::LayoutRight, int>,
                           Host::view<double* [3]>>::value,
              "");
static_assert(std::is_same<allocate_result<Host, double[2][3], Kokkos::LayoutRight>,
                           Host::view<double[2][3]>>::value,
              "");

// Temporaries are unmanaged: no reference counting, no deallocation.
static_assert(Host::view<double*>::traits::memory_traits::is_unmanaged, "unmanaged");
static_assert(
    std::is_same<Host::view<double**, Kokkos::LayoutLeft>::array_layout, Kokkos::LayoutLeft>::value,
    "");
static_assert(std::is_same<Host::view<double**>::memory_space, Kokkos::HostSpace>::value, "");
static_assert(static_cast<std::size_t>(Host::view<double********>::rank) == 8, "");
static_assert(static_cast<std::size_t>(Host::view<double* [3][4]>::rank_dynamic) == 1, "");

// Not copyable, not movable (like std::pmr resources); scopes move but do not copy.
static_assert(!std::is_copy_constructible<Host>::value, "");
static_assert(!std::is_move_constructible<Host>::value, "");
static_assert(!std::is_copy_assignable<Host>::value, "");
static_assert(!std::is_move_assignable<Host>::value, "");
static_assert(std::is_move_constructible<Host::Scope>::value, "");
static_assert(!std::is_copy_constructible<Host::Scope>::value, "");
static_assert(std::is_nothrow_destructible<Host::Scope>::value, "");
static_assert(std::is_nothrow_destructible<Host>::value, "");
static_assert(std::is_trivially_copyable<Host::Checkpoint>::value, "checkpoints are cheap");

// The documented constants and noexcept guarantees.
static_assert(Host::default_alignment == 64, "");
static_assert(noexcept(std::declval<const Host&>().checkpoint()), "");
static_assert(noexcept(std::declval<const Host&>().capacity()), "");
static_assert(noexcept(std::declval<const Host&>().used()), "");
static_assert(noexcept(std::declval<const Host&>().high_water_mark()), "");
static_assert(noexcept(std::declval<const Host&>().empty()), "");
static_assert(noexcept(std::declval<const Host&>().buffer()), "");
static_assert(noexcept(std::declval<const Host&>().statistics()), "");
static_assert(std::is_same<decltype(std::declval<const Host&>().buffer()),
                           const Kokkos::View<unsigned char*, Kokkos::HostSpace>&>::value,
              "");

// Which View implementation this Kokkos has is read from the View type, not the version: the
// develop tree reports 4.6.99 with the mdspan View, and 5.0 can fall back to the legacy one.
// Kokkos 4.6 and older only have the legacy View; a 4.7+ build names the legacy one by a macro.
constexpr bool mdspan_view = kbuf::Impl::view_is_mdspan_based<Host::view<double***>>::value;
#if KOKKOS_VERSION < 40699 || defined(KOKKOS_ENABLE_IMPL_VIEW_LEGACY)
static_assert(!mdspan_view, "the legacy View must not be taken for the mdspan one");
#endif
// The legacy View keeps extents in 32 bits from three runtime extents on; the mdspan View never.
static_assert(kbuf::Impl::view_extents_are_32bit<Host::view<double***>> == !mdspan_view, "");
static_assert(kbuf::Impl::view_extents_are_32bit<Host::view<int****, Kokkos::LayoutLeft>> ==
                  !mdspan_view,
              "");
static_assert(!kbuf::Impl::view_extents_are_32bit<Host::view<double**>>, "");
static_assert(!kbuf::Impl::view_extents_are_32bit<Host::view<double* [3][4]>>, "");
static_assert(!kbuf::Impl::view_extents_are_32bit<Host::view<double[2][3][4]>>, "");

// Both branches of the trait, on every Kokkos version, with stand-in View types.
struct LegacyLike3 {
  static constexpr unsigned rank_dynamic = 3;
};
struct LegacyLike2 {
  static constexpr unsigned rank_dynamic = 2;
};
template <class Index>
struct MdspanLike {
  struct extents_type {
    using index_type = Index;
  };
  static constexpr unsigned rank_dynamic = 3;
};
static_assert(!kbuf::Impl::view_is_mdspan_based<LegacyLike3>::value, "");
static_assert(kbuf::Impl::view_is_mdspan_based<MdspanLike<std::size_t>>::value, "");
static_assert(kbuf::Impl::view_extents_are_32bit<LegacyLike3>, "");
static_assert(!kbuf::Impl::view_extents_are_32bit<LegacyLike2>, "");
static_assert(!kbuf::Impl::view_extents_are_32bit<MdspanLike<std::size_t>>, "");
static_assert(!kbuf::Impl::view_extents_are_32bit<MdspanLike<long long>>, "");
static_assert(kbuf::Impl::view_extents_are_32bit<MdspanLike<unsigned>>, "");
static_assert(kbuf::Impl::view_extents_are_32bit<MdspanLike<int>>, "");

// Exceptions derive from the standard ones named in the design.
static_assert(std::is_base_of<std::logic_error, kbuf::logic_error>::value, "");
static_assert(std::is_base_of<std::bad_alloc, kbuf::out_of_memory>::value, "");

// The version macro is usable in #if.
#if KBUF_VERSION < 100
#error "KBUF_VERSION must be an integer usable in #if"
#endif

}  // namespace
