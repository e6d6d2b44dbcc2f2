#ifndef KBUF_IMPL_ASAN_HPP
#define KBUF_IMPL_ASAN_HPP

// KBUF_IMPL_ASAN: 1 when the program is compiled with AddressSanitizer (then its interface is
// included), else 0.

#if defined(__SANITIZE_ADDRESS__)
#define KBUF_IMPL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KBUF_IMPL_ASAN 1
#endif
#endif
#ifndef KBUF_IMPL_ASAN
#define KBUF_IMPL_ASAN 0
#endif

#if KBUF_IMPL_ASAN
#include <sanitizer/asan_interface.h>
#endif

#endif  // KBUF_IMPL_ASAN_HPP
