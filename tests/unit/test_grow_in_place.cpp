// Growth in place (KBUF_GROW_IN_PLACE=1): the buffer is one reservation of addresses in which
// memory is committed at its end as temporaries need it. Live temporaries keep their addresses,
// a first run needs no fallback and no regrowth, limits still refuse, trim gives memory back (the
// resident set measured), and where the reservation cannot be made or the space has no virtual
// memory API the allocator grows by regrowth, saying so.
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <unistd.h>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <kbuf/kbuf.hpp>

#include "reliability_support.hpp"
#include "test_support.hpp"

namespace {

using host_alloc = kbuf::BufferAllocator<Kokkos::HostSpace>;

// Bytes of the process resident in memory now (/proc/self/statm).
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// Writes every byte of a temporary (its pages become resident).
void touch(const host_alloc::view<char*>& v) {
  std::memset(v.data(), 1, v.extent(0));
}

// A growing workload: temporaries of 1 KiB, 2 KiB, ... 16 MiB live at once, each written; their
// addresses in `at`.
void grow_through(host_alloc& alloc, std::vector<const void*>& at) {
  for (std::size_t n = 1024; n <= (std::size_t{16} << 20); n *= 2) {
    auto v = alloc.allocate<char*>(n);
    touch(v);
    at.push_back(v.data());
  }
}

}  // namespace

TEST_CASE("grow in place: live temporaries keep their addresses, no fallback, no regrowth") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  host_alloc alloc;  // no buffer at first: a first run
  REQUIRE(alloc.grows_in_place());
  CHECK(alloc.growth().rfind("in place (", 0) == 0);
  const unsigned char* base = alloc.buffer().data();
  std::vector<const void*> at;
  {
    auto scope = alloc.scope();
    auto first = alloc.allocate<double*>(8);
    for (int i = 0; i < 8; ++i) first(i) = 0.5 * i;
    grow_through(alloc, at);
    // The first temporary is where it was and holds what was written.
    for (int i = 0; i < 8; ++i) CHECK(first(i) == 0.5 * i);
    CHECK(alloc.is_live(first));
    // Every temporary inside the buffer, one after the other: nothing moved.
    for (std::size_t i = 1; i < at.size(); ++i) CHECK(at[i] > at[i - 1]);
    CHECK(static_cast<const void*>(alloc.buffer().data()) == static_cast<const void*>(base));
  }
  const kbuf::Statistics s = alloc.statistics();
  CHECK(s.fallbacks == 0);
  CHECK(s.regrows == 0);
  CHECK(s.grown_in_place > 0);
  CHECK(s.reserved_bytes >= s.committed_bytes);
  CHECK(s.committed_bytes == alloc.capacity());
  CHECK(alloc.capacity() >= alloc.high_water_mark());
  // The second round: the same addresses, nothing more committed.
  std::vector<const void*> again;
  {
    auto scope = alloc.scope();
    (void)alloc.allocate<double*>(8);
    grow_through(alloc, again);
  }
  CHECK(again == at);
  CHECK(alloc.statistics().grown_in_place == s.grown_in_place);
  std::ostringstream text;
  text << alloc.statistics();
  CHECK(text.str().find(", grown in place ") != std::string::npos);
}

TEST_CASE("grow in place: the same first run by regrowth serves fallbacks and regrows once") {
  const kbuf_test::ScopedEnv off("KBUF_GROW_IN_PLACE", "0");
  host_alloc alloc;
  CHECK_FALSE(alloc.grows_in_place());
  CHECK(alloc.growth() == "by regrowth (growth in place is off: KBUF_GROW_IN_PLACE)");
  std::vector<const void*> at;
  {
    auto scope = alloc.scope();
    grow_through(alloc, at);
  }
  CHECK(alloc.statistics().fallbacks > 0);
  CHECK(alloc.statistics().reserved_bytes == 0);
  {
    auto scope = alloc.scope();
    (void)alloc.allocate<char*>(16);
  }
  CHECK(alloc.statistics().regrows == 1);
}

TEST_CASE("grow in place: a limit still refuses, naming it, and changes nothing it holds") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  host_alloc alloc;
  REQUIRE(alloc.grows_in_place());
  alloc.limit(std::size_t{8} << 20);
  auto scope = alloc.scope();
  auto a = alloc.allocate<char*>(std::size_t{3} << 20);
  const std::size_t capacity = alloc.capacity(), used = alloc.used();
  CHECK(capacity <= (std::size_t{8} << 20));
  try {
    (void)alloc.allocate<char*>(std::size_t{6} << 20);
    FAIL("no out_of_memory");
  } catch (const kbuf::out_of_memory& e) {
    CHECK(std::string(e.what()).find("would pass the allocator's limit of 8388608 bytes") !=
          std::string::npos);
  }
  CHECK(alloc.capacity() == capacity);
  CHECK(alloc.used() == used);
  CHECK(alloc.live_fallbacks() == 0);
  CHECK(alloc.statistics().limit_refusals == 1);
  CHECK(alloc.held() <= alloc.limit());
  CHECK(alloc.is_live(a));
}

TEST_CASE("grow in place: trim gives committed memory back, the resident set shows it") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  host_alloc alloc;
  REQUIRE(alloc.grows_in_place());
  constexpr std::size_t big = std::size_t{64} << 20;
  auto outer = alloc.scope();
  auto small = alloc.allocate<char*>(4096);
  touch(small);
  std::size_t before = 0, touched = 0;
  {
    auto scope = alloc.scope();
    before = resident_bytes();
    touch(alloc.allocate<char*>(big));
    touched = resident_bytes();
  }
  CHECK(touched - before >= big - (std::size_t{4} << 20));
  // Released, the memory is still committed and resident: a reset keeps it for the next use.
  CHECK(alloc.capacity() >= big);
  const std::size_t given = alloc.trim();  // with `small` live: only what lies above it
  const std::size_t after = resident_bytes();
  CHECK(given >= big - (std::size_t{2} << 20));
  CHECK(touched - after >= big - (std::size_t{4} << 20));
  CHECK(alloc.capacity() < (std::size_t{4} << 20));
  CHECK(alloc.statistics().committed_bytes == alloc.capacity());
  CHECK(alloc.is_live(small));
  CHECK(small(4095) == 1);   // still there, unmoved
  CHECK(alloc.trim() == 0);  // nothing more above it
  CHECK(alloc.high_water_mark() <= alloc.capacity());
}

TEST_CASE("grow in place: without it, trim gives the buffer back once the allocator is empty") {
  const kbuf_test::ScopedEnv off("KBUF_GROW_IN_PLACE", "0");
  host_alloc alloc(std::size_t{1} << 20);
  {
    auto scope = alloc.scope();
    (void)alloc.allocate<char*>(100);
    CHECK(alloc.trim() == 0);  // a temporary is live: the buffer cannot move
  }
  const std::size_t capacity = alloc.capacity();
  CHECK(alloc.trim() == capacity);
  CHECK(alloc.capacity() == 0);
  CHECK(alloc.held() == 0);
}

TEST_CASE("grow in place: checkpoints, scopes, sizehint and resize work on the reservation") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  host_alloc alloc(std::size_t{1} << 20);
  REQUIRE(alloc.grows_in_place());
  const std::size_t granule_capacity = alloc.capacity();
  CHECK(granule_capacity >= (std::size_t{1} << 20));
  const auto cp = alloc.checkpoint();
  auto a = alloc.allocate<int*>(1000);
  const auto mid = alloc.checkpoint();
  (void)alloc.allocate<char*>(std::size_t{5} << 20);  // grows in place
  alloc.reset(mid);
  CHECK(alloc.is_live(a));
  auto b = alloc.allocate<int*>(10);
  CHECK(static_cast<void*>(b.data()) > static_cast<void*>(a.data()));
  alloc.reset(cp);
  CHECK(alloc.empty());
  alloc.resize(std::size_t{32} << 20);
  CHECK(alloc.capacity() >= (std::size_t{32} << 20));
  CHECK(alloc.statistics().regrows == 0);
  alloc.resize(0);
  CHECK(alloc.capacity() == 0);
  alloc.sizehint(std::size_t{3} << 20);
  (void)alloc.allocate<char*>(10);  // the growth to the hint, in place
  CHECK(alloc.capacity() >= (std::size_t{3} << 20));
  CHECK(alloc.statistics().regrows == 0);
  alloc.reset();
}

TEST_CASE("grow in place: a workspace's arenas and the pool's allocators work on it") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  using exec = Kokkos::DefaultHostExecutionSpace;
  host_alloc alloc;
  REQUIRE(alloc.grows_in_place());
  {
    auto scope = alloc.scope();
    const Kokkos::TeamPolicy<exec> policy(64, 1);
    auto ws = alloc.workspace(policy, kbuf::per_team{256}, "grow in place workspace");
    Kokkos::View<long*, Kokkos::HostSpace> wrong("wrong", 1);
    Kokkos::parallel_for(
        "grow in place workspace", policy,
        KOKKOS_LAMBDA(const Kokkos::TeamPolicy<exec>::member_type& team) {
          auto arena = ws.arena(team);
          auto v = arena.take<int*>(team.league_rank() % 5 == 0 ? 2000 : 20);
          for (std::size_t i = 0; i < v.extent(0); ++i) v(i) = team.league_rank();
          for (std::size_t i = 0; i < v.extent(0); ++i) {
            if (v(i) != team.league_rank()) Kokkos::atomic_add(&wrong(0), 1l);
          }
        });
    const kbuf::WorkspaceReport r = ws.finish();
    CHECK(r.complete());
    CHECK(wrong(0) == 0);
  }
  kbuf::AllocatorPool<Kokkos::HostSpace> pool;
  auto& local = pool.local();
  CHECK(local.grows_in_place());
  {
    auto scope = local.scope();
    (void)local.allocate<char*>(std::size_t{3} << 20);
  }
  CHECK(local.statistics().fallbacks == 0);
}

TEST_CASE("grow in place: a reservation that cannot be made grows by regrowth, with a message") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  const kbuf_rel::ChildResult r = kbuf_rel::run_in_child([&]() {
    // Addresses for what the process has mapped and 256 MiB more: no room for the host's
    // reservation (its memory, here tens of GiB).
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0;
    statm >> pages;
    const rlim_t limit =
        static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (256 << 20);
    const struct rlimit rl { limit, limit };
    if (::setrlimit(RLIMIT_AS, &rl) != 0) std::_Exit(3);
    host_alloc alloc;
    if (alloc.grows_in_place()) std::_Exit(4);
    std::printf("growth: %s\n", alloc.growth().c_str());
    {
      auto scope = alloc.scope();
      auto a = alloc.allocate<char*>(1000);
      // No buffer yet: both are fallbacks, as in a first run without growth in place.
      auto b = alloc.allocate<char*>(std::size_t{1} << 20);
      std::memset(b.data(), 2, b.extent(0));
      (void)a;
    }
    std::printf("fallbacks %zu\n", alloc.statistics().fallbacks);
    std::fflush(stdout);
    std::_Exit(0);
  });
  INFO(r.output);
  CHECK(r.exited);
  CHECK(r.exit_code == 0);
  CHECK(r.says("grows by regrowth, not in place: the reservation of "));
  CHECK(r.says("growth: by regrowth (the reservation of "));
  CHECK(r.says("fallbacks 2"));
}

#if KBUF_TEST_HAVE_FOREIGN_SPACE
TEST_CASE("grow in place: a space without a virtual memory API grows by regrowth, saying why") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  kbuf::BufferAllocator<kbuf_test::foreign_space> alloc(4096);
  CHECK_FALSE(alloc.grows_in_place());
  CHECK(alloc.growth().find("has no virtual memory API kbuf knows") != std::string::npos);
  CHECK(alloc.statistics().reserved_bytes == 0);
}
#endif

TEST_CASE("grow in place: trim gives a pool's combined limit back exactly what it gave up") {
  for (const char* in_place : {"0", "1"}) {
    CAPTURE(in_place);
    const kbuf_test::ScopedEnv env("KBUF_GROW_IN_PLACE", in_place);
    kbuf::AllocatorPool<Kokkos::HostSpace> pool;
    pool.limit(std::size_t{64} << 20);
    auto& local = pool.local();
    {
      auto scope = local.scope();
      (void)local.allocate<char*>(std::size_t{3} << 20);
    }
    (void)local.allocate<char*>(16);  // a regrowth (or nothing, in place) on the empty allocator
    local.reset();
    CHECK(pool.held() == local.held());
    CHECK(local.trim() > 0);
    CHECK(local.held() == 0);
    CHECK(pool.held() == 0);  // not wrapped below zero by a second give-back
  }
}

TEST_CASE(
    "grow in place in kbuf::default_memory_space (a GPU's memory in a CUDA or HIP build): what "
    "a kernel wrote survives growth, addresses stay, trim gives back") {
  using alloc_type = kbuf::BufferAllocator<kbuf::default_memory_space>;
  using exec = alloc_type::execution_space;
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  alloc_type alloc;
  MESSAGE((std::string(kbuf::default_memory_space::name()) + ": " + alloc.growth()));
  REQUIRE(alloc.grows_in_place());
  const exec instance = alloc.execution_space_instance();
  const void* base = alloc.buffer().data();
  std::size_t committed = 0;
  {
    auto scope = alloc.scope();
    auto first = alloc.allocate<long*>(1000);
    Kokkos::parallel_for(
        "kbuf test: grow in place, fill", Kokkos::RangePolicy<exec>(instance, 0, 1000),
        KOKKOS_LAMBDA(const int i) { first(i) = 3 * i + 1; });
    std::vector<const void*> at{first.data()};
    for (std::size_t n = 1024; n <= (std::size_t{64} << 20); n *= 4) {
      auto v = alloc.allocate<char*>(n);
      Kokkos::deep_copy(instance, v, char{1});  // its memory written on the device
      at.push_back(v.data());
    }
    long wrong = -1;
    Kokkos::parallel_reduce(
        "kbuf test: grow in place, read back", Kokkos::RangePolicy<exec>(instance, 0, 1000),
        KOKKOS_LAMBDA(const int i, long& w) { w += first(i) != 3 * i + 1 ? 1 : 0; }, wrong);
    CHECK(wrong == 0);
    for (std::size_t i = 1; i < at.size(); ++i) CHECK(at[i] > at[i - 1]);
    CHECK(static_cast<const void*>(alloc.buffer().data()) == base);
    committed = alloc.statistics().committed_bytes;
  }
  const kbuf::Statistics s = alloc.statistics();
  CHECK(s.fallbacks == 0);
  CHECK(s.regrows == 0);
  CHECK(s.grown_in_place > 0);
  CHECK(committed >= (std::size_t{64} << 20));
  CHECK(s.committed_bytes == alloc.capacity());
  // Empty now: trim gives back everything committed.
  CHECK(alloc.trim() == committed);
  CHECK(alloc.statistics().committed_bytes == 0);
}

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda.h>

TEST_CASE(
    "grow in place on CUDA: a grown temporary's memory is exportable and GPUDirect RDMA "
    "capable where the device says it can be") {
  const kbuf_test::ScopedEnv on("KBUF_GROW_IN_PLACE", "1");
  kbuf::BufferAllocator<Kokkos::CudaSpace> alloc;
  REQUIRE(alloc.grows_in_place());
  const int device = alloc.execution_space_instance().cuda_device();
  CUdevice dev = 0;
  REQUIRE(cuDeviceGet(&dev, device) == CUDA_SUCCESS);
  int posix_fd = 0, rdma = 0;
  (void)cuDeviceGetAttribute(&posix_fd,
                             CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev);
  (void)cuDeviceGetAttribute(&rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
                             dev);
  MESSAGE("device " << device << ": POSIX fd handles " << posix_fd << ", RDMA with VMM " << rdma);
  auto scope = alloc.scope();
  auto t = alloc.allocate<char*>(std::size_t{8} << 20);  // committed in place
  const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(t.data());
  CUmemGenericAllocationHandle h = 0;
  REQUIRE(cuMemRetainAllocationHandle(&h, reinterpret_cast<void*>(p)) == CUDA_SUCCESS);
  if (posix_fd != 0) {
    int fd = -1;
    CHECK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) ==
          CUDA_SUCCESS);
    CHECK(fd >= 0);
    if (fd >= 0) ::close(fd);
  }
  CUmemAllocationProp prop{};
  REQUIRE(cuMemGetAllocationPropertiesFromHandle(&prop, h) == CUDA_SUCCESS);
  CHECK(prop.location.id == device);
  CHECK(static_cast<int>(prop.allocFlags.gpuDirectRDMACapable) == (rdma != 0 ? 1 : 0));
  (void)cuMemRelease(h);
}
#endif
