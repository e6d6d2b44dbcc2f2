// kbuf-bench-growth: a first run's cost of growing, three ways side by side in one run.
//   regrowth:    today's default: a temporary that does not fit is a fallback allocation, and
//                the buffer is replaced at the high-water mark once the allocator is empty;
//   in place:    growth in place (KBUF_GROW_IN_PLACE=1): memory committed at the buffer's end;
//   sizes file:  the buffer taken at the size an earlier run learned (what KBUF_SIZES does).
// Workloads: a halo exchange of growing buffers (six faces sent and received per step, the
// faces wider every step, each step in its own scope, filled by a kernel), run in this process
// with a fresh allocator per run; and, with --tebd, kbuf-tebd's main job run three times as
// processes (KBUF_GROW_IN_PLACE=0, =1, and KBUF_SIZES from a run before). Per way: the memory
// allocations Kokkos Tools sees in the memory space during the first run, the bytes the
// allocator holds at its end, and the time (the median of the runs).
// Then what growth in place would cost as a default, regrowth and in place side by side: the
// same halo steps run twice under a caller's temporary held at the bottom for the whole run (a
// regrowth waits for an empty allocator, so every step beyond the buffer is a fallback: the
// second pass is the steady state), and many small allocators (made, one 1 KiB temporary
// written, destroyed; and 64 of them alive at once: the resident memory they add).
#include <Kokkos_Core.hpp>

#include <kbuf/kbuf.hpp>
#include <kbuf_timing/allocations.hpp>
#include <kbuf_timing/harness.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using space = kbuf::default_memory_space;
using Alloc = kbuf::BufferAllocator<space>;

struct Figures {
  std::size_t allocations = 0, allocated_bytes = 0, held = 0, fallbacks = 0, regrows = 0, grown = 0;
  double seconds = 0;
};

// One first run of the halo pattern on `alloc`: `steps` steps, face n x n x width doubles with n
// growing by `growth` each step.
void halo_run(Alloc& alloc, int steps, int n0, int growth, int width) {
  using exec = Alloc::execution_space;
  for (int s = 0; s < steps; ++s) {
    auto scope = alloc.scope();
    const int n = n0 + growth * s;
    for (int face = 0; face < 6; ++face) {
      auto send = alloc.allocate<double***>(n, n, width);
      auto recv = alloc.allocate<double***>(n, n, width);
      Kokkos::parallel_for(
          "kbuf-bench-growth: pack",
          Kokkos::RangePolicy<exec>(alloc.execution_space_instance(), 0, n * n * width),
          KOKKOS_LAMBDA(const int i) {
            send.data()[i] = face + 1e-3 * i;
            recv.data()[i] = send.data()[i];
          });
    }
    alloc.execution_space_instance().fence();
  }
}

enum class Way { regrowth, in_place, sizes };
const char* name_of(Way w) {
  return w == Way::regrowth ? "regrowth" : (w == Way::in_place ? "in place" : "sizes file");
}

// The halo steps on `alloc`, timed: the allocations Kokkos Tools sees in the memory space, and
// the allocator's counters since the call began.
Figures measured_run(Alloc& alloc, int steps, int n0, int growth, int width) {
  const kbuf::Statistics first = alloc.statistics();
  const kbuf_timing::AllocationCounter counter(space::name());
  const kbuf_timing::AllocationCount before = kbuf_timing::AllocationCounter::now();
  const auto t0 = std::chrono::steady_clock::now();
  halo_run(alloc, steps, n0, growth, width);
  const auto t1 = std::chrono::steady_clock::now();
  const kbuf_timing::AllocationCount c = kbuf_timing::AllocationCounter::now() - before;
  const kbuf::Statistics s = alloc.statistics();
  Figures f;
  f.allocations = c.allocations;
  f.allocated_bytes = c.bytes;
  f.held = alloc.held();
  f.fallbacks = s.fallbacks - first.fallbacks;
  f.regrows = s.regrows - first.regrows;
  f.grown = s.grown_in_place - first.grown_in_place;
  f.seconds = std::chrono::duration<double>(t1 - t0).count();
  return f;
}

Figures halo(Way way, std::size_t learned, int steps, int n0, int growth, int width) {
  ::setenv("KBUF_GROW_IN_PLACE", way == Way::in_place ? "1" : "0", 1);
  Alloc alloc(way == Way::sizes ? learned : 0);
  Figures f = measured_run(alloc, steps, n0, growth, width);
  if (way == Way::sizes) {  // its buffer, taken before
    f.allocations += 1;
    f.allocated_bytes += alloc.capacity();
  }
  return f;
}

// The halo steps twice under a 64-byte temporary held throughout: the second pass's fallbacks,
// time and the bytes held.
Figures held_bottom(Way way, int steps, int n0, int growth, int width) {
  ::setenv("KBUF_GROW_IN_PLACE", way == Way::in_place ? "1" : "0", 1);
  Alloc alloc;
  auto held = alloc.allocate<double*>(8);
  halo_run(alloc, steps, n0, growth, width);  // the first pass: both ways learn
  const Figures f = measured_run(alloc, steps, n0, growth, width);
  (void)held;
  return f;
}

// Resident memory of this process, in bytes (/proc/self/statm), or 0 where it cannot be read.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * 4096;
}

struct Small {
  double cycle_us = 0;       // make an allocator, write one 1 KiB temporary, destroy it
  std::size_t resident = 0;  // what 64 such allocators alive at once add
};

Small small_allocators(Way way, int cycles) {
  ::setenv("KBUF_GROW_IN_PLACE", way == Way::in_place ? "1" : "0", 1);
  using exec = Alloc::execution_space;
  const auto touch = [](Alloc& a) {
    auto t = a.allocate<double*>(128);
    Kokkos::parallel_for(
        "kbuf-bench-growth: touch", Kokkos::RangePolicy<exec>(a.execution_space_instance(), 0, 128),
        KOKKOS_LAMBDA(const int i) { t(i) = i; });
    a.execution_space_instance().fence();
  };
  Small r;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < cycles; ++i) {
    Alloc a;
    touch(a);
  }
  const auto t1 = std::chrono::steady_clock::now();
  r.cycle_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / cycles;
  const std::size_t before = resident_bytes();
  std::vector<std::unique_ptr<Alloc>> many;
  for (int i = 0; i < 64; ++i) {
    many.push_back(std::make_unique<Alloc>());
    touch(*many.back());
  }
  const std::size_t after = resident_bytes();
  r.resident = after > before ? after - before : 0;
  return r;
}

void print_row(const char* workload, const char* way, const Figures& f, const Figures& base) {
  std::printf("%-22s %-11s %11zu %14zu %14zu %9zu %8zu %8zu %10.4f %7.2f\n", workload, way,
              f.allocations, f.allocated_bytes, f.held, f.fallbacks, f.regrows, f.grown, f.seconds,
              base.seconds > 0 ? f.seconds / base.seconds : 0.0);
}

void print_head() {
  std::printf("%-22s %-11s %11s %14s %14s %9s %8s %8s %10s %7s\n", "workload", "growth",
              "allocations", "bytes_alloc", "held_at_end", "fallbacks", "regrows", "in_place",
              "seconds", "ratio");
}

// kbuf-tebd's CSV row for kbuf: its allocations, high-water mark and seconds.
bool tebd_run(const std::string& command, Figures& f, std::string& error) {
  const std::string csv = "kbuf-bench-growth-tebd.csv";
  std::remove(csv.c_str());
  const std::string full = command + " --csv " + csv + " > kbuf-bench-growth-tebd.log 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(full.c_str());
  const auto t1 = std::chrono::steady_clock::now();
  if (rc != 0) {
    error = "'" + full + "' exited with " + std::to_string(rc);
    return false;
  }
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  f = Figures{};
  while (std::getline(in, line)) {
    std::vector<std::string> col;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) col.push_back(x);
    if (col.size() < 14 || col[3] != "kbuf") continue;
    f.fallbacks += std::stoul(col[10]);
    f.regrows += std::stoul(col[11]);
    f.held += std::stoul(col[12]);  // high-water mark: what each run's allocator grew to
    f.allocations += std::stoul(col[13]);
  }
  std::ifstream log("kbuf-bench-growth-tebd.log");
  std::string all((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  const std::size_t at = all.find("grown in place ");
  if (at != std::string::npos) f.grown = std::stoul(all.substr(at + 15));
  f.seconds = std::chrono::duration<double>(t1 - t0).count();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  bool quick = false;
  std::string tebd;
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
      runs = 1;
    } else if (a == "--tebd" && i + 1 < argc) {
      tebd = argv[++i];
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--help") {
      std::printf(
          "Usage: kbuf-bench-growth [--quick] [--runs N] [--tebd PATH-TO-kbuf-tebd]\n"
          "A first run's allocations, bytes held and time: growth by regrowth, in place, and\n"
          "from a sizes file, side by side (the median time of N runs, default 5).\n");
      return 0;
    } else {
      std::fprintf(stderr, "kbuf-bench-growth: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  const int steps = quick ? 6 : 24, n0 = 16, growth = quick ? 4 : 8, width = 4;
  std::printf("kbuf-bench-growth: memory space %s, %d runs each\n", space::name(), runs);
  std::printf(
      "halo: %d steps, 6 faces sent and received, n x n x %d doubles, n = %d + %d per "
      "step\n\n",
      steps, width, n0, growth);
  // What a first run learns, for the sizes file's start.
  std::size_t learned = 0;
  {
    ::setenv("KBUF_GROW_IN_PLACE", "0", 1);
    Alloc probe;
    halo_run(probe, steps, n0, growth, width);
    learned = probe.high_water_mark();
  }
  {
    ::setenv("KBUF_GROW_IN_PLACE", "1", 1);
    Alloc probe;
    std::printf("growth in place here: %s\n\n", probe.growth().c_str());
  }
  print_head();
  Figures base;
  bool missed = false;
  for (const Way w : {Way::regrowth, Way::in_place, Way::sizes}) {
    std::vector<double> seconds;
    Figures f;
    for (int r = 0; r < runs; ++r) {
      f = halo(w, learned, steps, n0, growth, width);
      seconds.push_back(f.seconds);
    }
    f.seconds = kbuf_timing::summarize(seconds).median;
    if (w == Way::regrowth) base = f;
    print_row("halo", name_of(w), f, base);
    if (w != Way::regrowth && f.fallbacks != 0) missed = true;
  }
  if (!tebd.empty()) {
    const std::string job = tebd + " --model ising --field 0.5,1,1.5 --chi " +
                            (quick ? std::string("8 --schedule quick") : std::string("32"));
    const std::string sizes = "kbuf-bench-growth-tebd.sizes";
    std::remove(sizes.c_str());
    Figures f, seed;
    std::string error;
    if (!tebd_run("KBUF_GROW_IN_PLACE=0 KBUF_SIZES=" + sizes + " " + job, seed, error)) {
      std::fprintf(stderr, "kbuf-bench-growth: %s\n", error.c_str());
      return 1;
    }
    const char* env[] = {"KBUF_GROW_IN_PLACE=0 ", "KBUF_GROW_IN_PLACE=1 ",
                         "KBUF_GROW_IN_PLACE=0 KBUF_SIZES=kbuf-bench-growth-tebd.sizes "};
    for (const Way w : {Way::regrowth, Way::in_place, Way::sizes}) {
      std::vector<double> seconds;
      for (int r = 0; r < runs; ++r) {
        if (!tebd_run(env[static_cast<int>(w)] + job, f, error)) {
          std::fprintf(stderr, "kbuf-bench-growth: %s\n", error.c_str());
          return 1;
        }
        seconds.push_back(f.seconds);
      }
      f.seconds = kbuf_timing::summarize(seconds).median;
      if (w == Way::regrowth) base = f;
      print_row("tebd (process)", name_of(w), f, base);
      if (w != Way::regrowth && f.fallbacks != 0) missed = true;
    }
    std::printf(
        "\n(tebd: allocations in %s in the first run of each field, summed; held: the "
        "allocators' high-water marks; seconds: the whole process)\n",
        space::name());
  }
  std::printf("\nratio: seconds against regrowth's in the same workload\n");

  // Growth in place as a default: a caller's temporary held at the bottom, and small allocators.
  std::printf(
      "\nheld bottom: a 64-byte temporary held across two passes of the halo steps; the second "
      "pass\n");
  print_head();
  Figures held_base;
  for (const Way w : {Way::regrowth, Way::in_place}) {
    std::vector<double> seconds;
    Figures f;
    for (int r = 0; r < runs; ++r) {
      f = held_bottom(w, steps, n0, growth, width);
      seconds.push_back(f.seconds);
    }
    f.seconds = kbuf_timing::summarize(seconds).median;
    if (w == Way::regrowth) held_base = f;
    print_row("held bottom, 2nd pass", name_of(w), f, held_base);
  }
  const int cycles = quick ? 200 : 2000;
  std::printf(
      "\nsmall allocators: made, one 1 KiB temporary written, destroyed (%d times); 64 alive at "
      "once\n%-11s %14s %7s %22s\n",
      cycles, "growth", "us_per_cycle", "ratio", "resident_of_64_bytes");
  Small small_base;
  for (const Way w : {Way::regrowth, Way::in_place}) {
    std::vector<double> us;
    Small m;
    for (int r = 0; r < runs; ++r) {
      m = small_allocators(w, cycles);
      us.push_back(m.cycle_us);
    }
    m.cycle_us = kbuf_timing::summarize(us).median;
    if (w == Way::regrowth) small_base = m;
    std::printf("%-11s %14.2f %7.2f %22zu\n", name_of(w), m.cycle_us,
                small_base.cycle_us > 0 ? m.cycle_us / small_base.cycle_us : 0.0, m.resident);
  }
  if (missed) {
    std::fprintf(stderr,
                 "kbuf-bench-growth: a first run in place or from a sizes file served "
                 "fallbacks\n");
    return 1;
  }
  return 0;
}
