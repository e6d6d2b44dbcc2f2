// A Kokkos Tools library that does nothing: the same callbacks kbuf-advisor exports (and the same
// answer to Kokkos' question about global fences), with empty bodies. kbuf-bench-advisor loads
// it to tell what Kokkos' tool dispatch costs from what the advisor's work costs.
#include <cstdint>

namespace {
struct SpaceHandle {
  char name[64];
};
struct ToolSettings {
  bool requires_global_fencing;
  bool padding[255];
};
}  // namespace

#define KBUF_NOOP_EXPORT extern "C" __attribute__((visibility("default")))

KBUF_NOOP_EXPORT void kokkosp_init_library(const int, const std::uint64_t, const std::uint32_t,
                                           void*) {}
KBUF_NOOP_EXPORT void kokkosp_finalize_library() {}
KBUF_NOOP_EXPORT void kokkosp_request_tool_settings(const std::uint32_t, ToolSettings* settings) {
  if (settings != nullptr) settings->requires_global_fencing = false;
}
KBUF_NOOP_EXPORT void kokkosp_allocate_data(const SpaceHandle, const char*, const void* const,
                                            const std::uint64_t) {}
KBUF_NOOP_EXPORT void kokkosp_deallocate_data(const SpaceHandle, const char*, const void* const,
                                              const std::uint64_t) {}
KBUF_NOOP_EXPORT void kokkosp_begin_parallel_for(const char*, const std::uint32_t,
                                                 std::uint64_t* id) {
  *id = 0;
}
KBUF_NOOP_EXPORT void kokkosp_end_parallel_for(const std::uint64_t) {}
KBUF_NOOP_EXPORT void kokkosp_begin_parallel_reduce(const char*, const std::uint32_t,
                                                    std::uint64_t* id) {
  *id = 0;
}
KBUF_NOOP_EXPORT void kokkosp_end_parallel_reduce(const std::uint64_t) {}
KBUF_NOOP_EXPORT void kokkosp_begin_parallel_scan(const char*, const std::uint32_t,
                                                  std::uint64_t* id) {
  *id = 0;
}
KBUF_NOOP_EXPORT void kokkosp_end_parallel_scan(const std::uint64_t) {}
KBUF_NOOP_EXPORT void kokkosp_push_profile_region(const char*) {}
KBUF_NOOP_EXPORT void kokkosp_pop_profile_region() {}
KBUF_NOOP_EXPORT void kokkosp_begin_fence(const char*, const std::uint32_t, std::uint64_t* id) {
  *id = 0;
}
KBUF_NOOP_EXPORT void kokkosp_end_fence(const std::uint64_t) {}
KBUF_NOOP_EXPORT void kokkosp_begin_deep_copy(SpaceHandle, const char*, const void*, SpaceHandle,
                                              const char*, const void*, std::uint64_t) {}
KBUF_NOOP_EXPORT void kokkosp_end_deep_copy() {}
