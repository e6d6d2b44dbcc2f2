# Included from tests/compile/CMakeLists.txt: the allocator in every memory space of the
# backends the found Kokkos enables, compiled but never run (meaningful on a GPU build machine
# without a GPU), and readable errors for an execution space or Device given as MemorySpace.
add_library(kbuf_compile_device_spaces OBJECT device_spaces.cpp)
target_link_libraries(kbuf_compile_device_spaces PRIVATE kbuf::kbuf kbuf_warnings)
set_target_properties(kbuf_compile_device_spaces PROPERTIES KBUF_WARNINGS_AS_ERRORS ON)

foreach(_case EXECUTION_SPACE DEVICE)
  kbuf_add_compile_fail(${_case} device_spaces_fail.cpp "MemorySpace must be a Kokkos memory space")
endforeach()
# The control: the same file with no case defined compiles.
add_executable(kbuf-compile-device-spaces-control device_spaces_fail.cpp)
target_link_libraries(kbuf-compile-device-spaces-control PRIVATE kbuf::kbuf)
