// libkbuf-advisor.so: the Kokkos Tools entry points (the plain extern "C" kokkosp_* callbacks
// of kokkos-tools), loaded with KOKKOS_TOOLS_LIBS (Kokkos 4.x) or KOKKOS_PROFILE_LIBRARY (3.x).
// At load it reads its settings; at kokkosp_finalize_library it prints its report and writes
// its files. It includes no Kokkos header and calls nothing in Kokkos, so the program's Kokkos
// state, results and exit status never depend on it; a failure of its own is a line on stderr.
#include <kbuf_advisor/advisor.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace {

// The Kokkos Tools interface's types (Kokkos_Profiling_C_Interface.h), laid out as Kokkos
// passes them.
struct SpaceHandle {
  char name[64];
};

// A space's name, terminated even if Kokkos filled all 64 characters.
struct SpaceName {
  char text[sizeof(SpaceHandle::name) + 1];
  explicit SpaceName(const SpaceHandle& h) noexcept {
    std::memcpy(text, h.name, sizeof h.name);
    text[sizeof h.name] = '\0';
  }
};
struct DeviceInfo {
  std::uint32_t deviceID;
};
struct ToolSettings {
  bool requires_global_fencing;
  bool padding[255];
};

std::mutex lifetime;  // serialises init and finalize
// Set at init, kept after finalize (a few aggregates): an event that races finalize on another
// thread finds it finished rather than freed.
std::atomic<kbuf_advisor::Advisor*> advisor{nullptr};
std::vector<std::string>* warnings = nullptr;

// Runs `f` on the advisor unless there is none; a failure inside never reaches the program.
template <class F>
auto with_advisor(F&& f) noexcept -> decltype(f(std::declval<kbuf_advisor::Advisor&>())) {
  try {
    kbuf_advisor::Advisor* a = advisor.load(std::memory_order_acquire);
    if (a != nullptr) return f(*a);
  } catch (...) {
  }
  return decltype(f(std::declval<kbuf_advisor::Advisor&>()))();
}

}  // namespace

#define KBUF_ADVISOR_EXPORT extern "C" __attribute__((visibility("default")))

KBUF_ADVISOR_EXPORT void kokkosp_init_library(const int /*load_sequence*/,
                                              const std::uint64_t /*interface_version*/,
                                              const std::uint32_t /*device_count*/,
                                              DeviceInfo* /*devices*/) {
  try {
    std::lock_guard<std::mutex> lock(lifetime);
    if (advisor.load() != nullptr) return;
    // kbuf's allocators report their temporaries to a loaded tool only when asked (a tool that
    // does not know their records would count them as allocations); the advisor knows them and
    // attributes them to their call sites. Allocators read the switch when they are made, after
    // Kokkos::initialize has loaded this library. A value the user set wins.
    ::setenv("KBUF_TOOLS_REPORT", "1", 0);
    auto* w = new std::vector<std::string>();
    kbuf_advisor::Settings settings = kbuf_advisor::Settings::from_environment(*w);
    for (const std::string& line : *w) std::fprintf(stderr, "kbuf-advisor: %s\n", line.c_str());
    warnings = w;
    advisor.store(new kbuf_advisor::Advisor(std::move(settings)), std::memory_order_release);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbuf-advisor: cannot start (%s); the program runs without it\n",
                 e.what());
  }
}

// The advisor needs no fence around kernels and regions: it counts events and reads the host
// clock. Without this answer Kokkos fences the whole device before and after every kernel and
// region for the tool's sake, which would slow a GPU program down.
KBUF_ADVISOR_EXPORT void kokkosp_request_tool_settings(const std::uint32_t /*num_actions*/,
                                                       ToolSettings* settings) {
  if (settings != nullptr) settings->requires_global_fencing = false;
}

KBUF_ADVISOR_EXPORT void kokkosp_finalize_library() {
  kbuf_advisor::Advisor* a = nullptr;
  std::vector<std::string>* w = nullptr;
  {
    std::lock_guard<std::mutex> lock(lifetime);
    a = advisor.load();
    w = warnings;
  }
  if (a == nullptr) return;
  try {
    kbuf_advisor::Results r = a->finish();
    if (w != nullptr) r.warnings = *w;
    if (r.settings.report != "off") {
      const std::string text = kbuf_advisor::format_report(r);
      std::FILE* out = r.settings.report == "stdout" ? stdout : stderr;
      std::fputs(text.c_str(), out);
      std::fflush(out);
    }
    if (!r.settings.output.empty()) {
      const std::string error = kbuf_advisor::write_outputs(r, r.settings.output);
      if (error.empty()) {
        if (r.settings.report != "off") {
          std::fprintf(stderr,
                       "kbuf-advisor: wrote kbuf-advisor.json, kbuf-advisor.svg and "
                       "kbuf-advisor.trace.json in %s\n",
                       r.settings.output.c_str());
        }
      } else {
        std::fprintf(stderr,
                     "kbuf-advisor: KBUF_ADVISOR_OUTPUT: %s; no files written (the report above "
                     "is all there is)\n",
                     error.c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbuf-advisor: could not finish its report: %s\n", e.what());
  }
}

KBUF_ADVISOR_EXPORT void kokkosp_allocate_data(const SpaceHandle space, const char* label,
                                               const void* const ptr, const std::uint64_t size) {
  with_advisor(
      [&](kbuf_advisor::Advisor& a) { a.allocate(SpaceName(space).text, label, ptr, size); });
}

KBUF_ADVISOR_EXPORT void kokkosp_deallocate_data(const SpaceHandle space, const char* label,
                                                 const void* const ptr, const std::uint64_t size) {
  with_advisor(
      [&](kbuf_advisor::Advisor& a) { a.deallocate(SpaceName(space).text, label, ptr, size); });
}

#define KBUF_ADVISOR_KERNEL(kind)                                                       \
  KBUF_ADVISOR_EXPORT void kokkosp_begin_##kind(const char* name, const std::uint32_t,  \
                                                std::uint64_t* id) {                    \
    *id = with_advisor([&](kbuf_advisor::Advisor& a) { return a.begin_kernel(name); }); \
  }                                                                                     \
  KBUF_ADVISOR_EXPORT void kokkosp_end_##kind(const std::uint64_t id) {                 \
    with_advisor([&](kbuf_advisor::Advisor& a) { a.end_kernel(id); });                  \
  }
KBUF_ADVISOR_KERNEL(parallel_for)
KBUF_ADVISOR_KERNEL(parallel_reduce)
KBUF_ADVISOR_KERNEL(parallel_scan)
#undef KBUF_ADVISOR_KERNEL

KBUF_ADVISOR_EXPORT void kokkosp_push_profile_region(const char* name) {
  with_advisor([&](kbuf_advisor::Advisor& a) { a.push_region(name); });
}

KBUF_ADVISOR_EXPORT void kokkosp_pop_profile_region() {
  with_advisor([&](kbuf_advisor::Advisor& a) { a.pop_region(); });
}

KBUF_ADVISOR_EXPORT void kokkosp_begin_fence(const char* name, const std::uint32_t,
                                             std::uint64_t* id) {
  *id = with_advisor([&](kbuf_advisor::Advisor& a) { return a.begin_fence(name); });
}

KBUF_ADVISOR_EXPORT void kokkosp_end_fence(const std::uint64_t id) {
  with_advisor([&](kbuf_advisor::Advisor& a) { a.end_fence(id); });
}

KBUF_ADVISOR_EXPORT void kokkosp_begin_deep_copy(SpaceHandle dst_space, const char* dst_label,
                                                 const void*, SpaceHandle src_space,
                                                 const char* src_label, const void*,
                                                 std::uint64_t size) {
  with_advisor([&](kbuf_advisor::Advisor& a) {
    a.begin_deep_copy(SpaceName(dst_space).text, dst_label, SpaceName(src_space).text, src_label,
                      size);
  });
}

KBUF_ADVISOR_EXPORT void kokkosp_end_deep_copy() {
  with_advisor([&](kbuf_advisor::Advisor& a) { a.end_deep_copy(); });
}
