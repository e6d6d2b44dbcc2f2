// Heap allocations counted by the replacement global operator new in counting_new.cpp.
#ifndef KBUF_TEST_COUNTING_NEW_HPP
#define KBUF_TEST_COUNTING_NEW_HPP

#include <atomic>

namespace kbuf_test {
/// Calls of the global operator new since the program started.
extern std::atomic<long> heap_allocations;
}  // namespace kbuf_test

#endif  // KBUF_TEST_COUNTING_NEW_HPP
