#ifndef KBUF_IMPL_MACROS_HPP
#define KBUF_IMPL_MACROS_HPP

/// @file
/// Compiler hints for kbuf's hot and cold paths (GCC, Clang, and the host compilers of nvcc and
/// hipcc; other compilers get plain code). Not part of the API.

#if defined(__GNUC__) || defined(__clang__)
/// Forces inlining of the allocator's hot path.
#define KBUF_IMPL_ALWAYS_INLINE __attribute__((always_inline)) inline
/// Keeps a function out of line and out of the hot code: error paths, regrowth, fallbacks.
#define KBUF_IMPL_COLD __attribute__((noinline, cold))
/// Tells the compiler that `x` is almost always false.
#define KBUF_IMPL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#elif defined(_MSC_VER)
#define KBUF_IMPL_ALWAYS_INLINE __forceinline
#define KBUF_IMPL_COLD
#define KBUF_IMPL_UNLIKELY(x) (x)
#else
#define KBUF_IMPL_ALWAYS_INLINE inline
#define KBUF_IMPL_COLD
#define KBUF_IMPL_UNLIKELY(x) (x)
#endif

/// Gives a function default visibility, so that its static and thread-local state is one per
/// process: every shared object that compiles kbuf's headers, also one built with
/// -fvisibility=hidden (and -fvisibility-inlines-hidden), binds to the same definition. Only
/// the few functions that hold process-wide state carry it (kbuf/impl/process_registry.hpp).
#if defined(__GNUC__) || defined(__clang__)
#define KBUF_IMPL_EXPORT __attribute__((visibility("default")))
#else
#define KBUF_IMPL_EXPORT
#endif

#endif  // KBUF_IMPL_MACROS_HPP
