// A consumer of kbuf: built by CMake against the installed package (find_package(kbuf)) and as a
// subproject (add_subdirectory), with the same target name kbuf::kbuf.
#include <kbuf/kbuf.hpp>

#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  int failures = 0;
  {
    kbuf::BufferAllocator<> alloc(1 << 16);
    for (int round = 0; round < 2; ++round) {
      auto scope = alloc.scope();
      auto a = alloc.allocate<double**>(16, 16);
      auto b = alloc.allocate<float*, Kokkos::LayoutLeft>(100);
      Kokkos::deep_copy(a, 1.0);
      Kokkos::deep_copy(b, 2.0f);
      auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
      if (ha(15, 15) != 1.0) ++failures;
      if (reinterpret_cast<std::uintptr_t>(a.data()) % alloc.alignment() != 0) ++failures;
    }
    if (!alloc.empty() || alloc.statistics().temporaries != 4) ++failures;
    std::printf("kbuf %d (backend %s): %d temporaries, capacity %zu, %s\n", KBUF_VERSION,
                KBUF_BACKEND_NAME, static_cast<int>(alloc.statistics().temporaries),
                alloc.capacity(), failures == 0 ? "ok" : "FAILED");
  }
  return failures == 0 ? 0 : 1;
}
