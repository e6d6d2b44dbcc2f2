// A malloc to preload (LD_PRELOAD) under the test suite, so that no verdict depends on where the
// heap happens to put things: every block is moved by a random multiple of 16 bytes (of its
// alignment, for aligned requests) from where glibc would have put it. A test that passes in
// one build and fails in another build or environment (a packager's, a distribution's) because
// an address came out aligned by luck fails here too. scripts/check-heap.sh runs the suite with
// it.
//
// Layout of a block: [slack | size | raw] p, where raw is what glibc returned and p what the
// caller gets; free, realloc and malloc_usable_size read the two words before p. Every entry
// point of glibc's malloc family that a program or libstdc++ may call is replaced (glibc's
// "Replacing malloc" rules); the real allocator is reached through its __libc_* names.
//
// KBUF_HEAP_SEED (an integer) picks the sequence of shifts; without it, the process id does.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

extern "C" {
void* __libc_malloc(std::size_t);
void __libc_free(void*);
void* __libc_memalign(std::size_t, std::size_t);
}

namespace {

constexpr std::size_t header = 2 * sizeof(void*);  // size and raw pointer, 16 bytes

std::uint64_t seed_value() {
  // getenv before main is safe: the environment is set up before any constructor runs.
  const char* s = std::getenv("KBUF_HEAP_SEED");
  if (s != nullptr && *s != '\0') return std::strtoull(s, nullptr, 10);
  return static_cast<std::uint64_t>(::getpid());
}

std::uint64_t counter = 0;  // advanced atomically
std::uint64_t seed = 0;
bool seeded = false;

// splitmix64 of seed + n: a different shift for every block, from any thread.
unsigned shift_units(unsigned range) {
  if (!__atomic_load_n(&seeded, __ATOMIC_ACQUIRE)) {
    __atomic_store_n(&seed, seed_value(), __ATOMIC_RELAXED);
    __atomic_store_n(&seeded, true, __ATOMIC_RELEASE);
  }
  std::uint64_t z = __atomic_load_n(&seed, __ATOMIC_RELAXED) +
                    0x9e3779b97f4a7c15ull * (__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<unsigned>(z % range);
}

void* place(unsigned char* raw, std::size_t offset, std::size_t n) {
  unsigned char* p = raw + offset;
  std::size_t* words = reinterpret_cast<std::size_t*>(p) - 2;
  words[0] = n;
  words[1] = reinterpret_cast<std::size_t>(raw);
  return p;
}

std::size_t size_of(void* p) {
  return (reinterpret_cast<std::size_t*>(p) - 2)[0];
}

void* raw_of(void* p) {
  return reinterpret_cast<void*>((reinterpret_cast<std::size_t*>(p) - 2)[1]);
}

// n bytes aligned to a (a power of two, at least 16), shifted by a random multiple of a.
void* shifted(std::size_t a, std::size_t n) {
  const unsigned range = a <= 256 ? 16 : (a <= 4096 ? 4 : 2);
  const std::size_t shift = a * shift_units(range);
  const std::size_t front = (header + a - 1) / a * a + shift;
  if (n > SIZE_MAX - front) return nullptr;
  void* raw = a == 16 ? __libc_malloc(front + n) : __libc_memalign(a, front + n);
  if (raw == nullptr) return nullptr;
  return place(static_cast<unsigned char*>(raw), front, n);
}

bool valid_alignment(std::size_t a) {
  return a != 0 && (a & (a - 1)) == 0;
}

}  // namespace

extern "C" {

void* malloc(std::size_t n) {
  void* p = shifted(16, n);
  if (p == nullptr) errno = ENOMEM;
  return p;
}

void free(void* p) {
  if (p != nullptr) __libc_free(raw_of(p));
}

void* calloc(std::size_t count, std::size_t size) {
  if (size != 0 && count > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  void* p = malloc(count * size);
  if (p != nullptr) std::memset(p, 0, count * size);
  return p;
}

void* realloc(void* p, std::size_t n) {
  if (p == nullptr) return malloc(n);
  if (n == 0) {
    free(p);
    return nullptr;
  }
  void* q = malloc(n);
  if (q == nullptr) return nullptr;
  const std::size_t old = size_of(p);
  std::memcpy(q, p, old < n ? old : n);
  free(p);
  return q;
}

void* reallocarray(void* p, std::size_t count, std::size_t size) {
  if (size != 0 && count > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, count * size);
}

int posix_memalign(void** out, std::size_t a, std::size_t n) {
  if (!valid_alignment(a) || a % sizeof(void*) != 0) return EINVAL;
  void* p = shifted(a < 16 ? 16 : a, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

void* aligned_alloc(std::size_t a, std::size_t n) {
  if (!valid_alignment(a)) {
    errno = EINVAL;
    return nullptr;
  }
  void* p = shifted(a < 16 ? 16 : a, n);
  if (p == nullptr) errno = ENOMEM;
  return p;
}

void* memalign(std::size_t a, std::size_t n) {
  return aligned_alloc(a, n);
}

void* valloc(std::size_t n) {
  return aligned_alloc(4096, n);
}

void* pvalloc(std::size_t n) {
  return aligned_alloc(4096, (n + 4095) / 4096 * 4096);
}

std::size_t malloc_usable_size(void* p) {
  return p == nullptr ? 0 : size_of(p);
}

}  // extern "C"
