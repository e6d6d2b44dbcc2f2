// The translation unit that carries the test executables' precompiled Kokkos_Core.hpp
// (kbuf_test_pch in CMakeLists.txt); it has no code of its own.
