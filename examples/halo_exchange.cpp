// A halo exchange with kbuf temporaries: explicit diffusion on an NX x NY grid, split by columns
// over the ranks of MPI_COMM_WORLD. Every step packs each rank's two boundary columns into kbuf
// temporaries, posts MPI_Irecv/MPI_Isend through a kbuf::mpi::RequestGuard, waits, unpacks the
// neighbours' columns into the ghost columns and releases the temporaries; then updates the
// grid. The same run is repeated with fresh managed Views as the exchange buffers, and rank 0
// runs the whole grid alone (MPI_COMM_SELF): all three results must agree bit for bit. Prints
// the time per step of both exchanges and kbuf's statistics reduced over the ranks; after the
// first step no rank may need a fallback.
//
//   mpirun -np R kbuf-halo-exchange [--nx N] [--ny N] [--steps N]
//
// Exit status: 0 right, 1 a result differs or a fallback after the first step, 2 bad option.
#include <kbuf/kbuf.hpp>
#include <kbuf/mpi.hpp>

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultHostExecutionSpace;
using Space = Kokkos::HostSpace;
using Alloc = kbuf::BufferAllocator<Space>;
using Grid = Kokkos::View<double**, Kokkos::LayoutRight, Space>;  // (row, column)

constexpr double diffusion = 0.2;  // explicit step: stable below 0.25

// The part of the grid one rank owns: all ny rows of columns [first, first + columns), with a
// ghost column on each side (zero at the grid's outer boundary, the neighbour's column inside).
struct Block {
  MPI_Comm comm;
  int left = MPI_PROC_NULL;
  int right = MPI_PROC_NULL;
  int nx = 0;
  int ny = 0;
  int first = 0;
  int columns = 0;
  Grid u, next;  // ny x (columns + 2)

  Block(MPI_Comm c, int nx_, int ny_) : comm(c), nx(nx_), ny(ny_) {
    int rank = 0;
    int size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    first = static_cast<int>(static_cast<long>(nx) * rank / size);
    columns = static_cast<int>(static_cast<long>(nx) * (rank + 1) / size) - first;
    if (rank > 0) left = rank - 1;
    if (rank + 1 < size) right = rank + 1;
    u = Grid("u", ny, columns + 2);
    next = Grid("next", ny, columns + 2);
    initial(u, first, nx, ny);
  }

  // A smooth bump plus a pattern that depends on the global column, so a misplaced column or a
  // stale halo changes the result. A static member, not the constructor: nvcc allows no
  // KOKKOS_LAMBDA in a function whose address cannot be taken.
  static void initial(const Grid& v, int first_column, int grid_nx, int grid_ny) {
    Kokkos::parallel_for(
        "halo::init", Kokkos::RangePolicy<Exec>(0, grid_ny), KOKKOS_LAMBDA(const int i) {
          for (int j = 1; j <= v.extent_int(1) - 2; ++j) {
            const int gj = first_column + j - 1;
            const double x = (gj + 0.5) / grid_nx - 0.5;
            const double y = (i + 0.5) / grid_ny - 0.5;
            v(i, j) = 1.0 / (1.0 + 40.0 * (x * x + y * y)) + 1e-3 * ((gj * 7 + i * 3) % 11);
          }
        });
  }

  // One explicit step on the interior; rows outside the grid count as zero.
  void update() {
    const auto a = u;
    const auto b = next;
    const int n = ny;
    Kokkos::parallel_for(
        "halo::update", Kokkos::RangePolicy<Exec>(0, ny), KOKKOS_LAMBDA(const int i) {
          for (int j = 1; j <= a.extent_int(1) - 2; ++j) {
            const double up = i > 0 ? a(i - 1, j) : 0.0;
            const double down = i + 1 < n ? a(i + 1, j) : 0.0;
            b(i, j) = a(i, j) + diffusion * (up + down + a(i, j - 1) + a(i, j + 1) - 4.0 * a(i, j));
          }
        });
    Kokkos::fence();
    std::swap(u, next);
  }
};

template <class Buffer>
void pack(const Grid& u, int column, const Buffer& face) {
  Kokkos::parallel_for(
      "halo::pack", Kokkos::RangePolicy<Exec>(0, u.extent_int(0)),
      KOKKOS_LAMBDA(const int i) { face(i) = u(i, column); });
}

template <class Buffer>
void unpack(const Buffer& face, const Grid& u, int column) {
  Kokkos::parallel_for(
      "halo::unpack", Kokkos::RangePolicy<Exec>(0, u.extent_int(0)),
      KOKKOS_LAMBDA(const int i) { u(i, column) = face(i); });
}

constexpr int to_left = 1;   // tag of a column sent to the left neighbour
constexpr int to_right = 2;  // tag of a column sent to the right neighbour

// [halo]
// The exchange with kbuf: four temporaries per step, released when `halo` ends, after the wait.
void exchange(Block& b, Alloc& alloc) {
  kbuf::mpi::RequestGuard<Space> halo(alloc, 4);
  auto send_left = halo.allocate<double*>(b.ny);
  auto send_right = halo.allocate<double*>(b.ny);
  auto recv_left = halo.allocate<double*>(b.ny);
  auto recv_right = halo.allocate<double*>(b.ny);
  pack(b.u, 1, send_left);
  pack(b.u, b.columns, send_right);
  Kokkos::fence();  // the packed columns are complete before MPI reads them
  halo.irecv(recv_left, b.left, to_right, b.comm);
  halo.irecv(recv_right, b.right, to_left, b.comm);
  halo.isend(send_left, b.left, to_left, b.comm);
  halo.isend(send_right, b.right, to_right, b.comm);
  halo.wait();
  if (b.left != MPI_PROC_NULL) unpack(recv_left, b.u, 0);
  if (b.right != MPI_PROC_NULL) unpack(recv_right, b.u, b.columns + 1);
  Kokkos::fence();
}
// [halo]

// The same exchange with fresh managed Views (allocated without initialisation) every step.
void exchange_fresh(Block& b) {
  const auto noinit = [](const char* label) {
    return Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing);
  };
  Kokkos::View<double*, Space> send_left(noinit("send_left"), b.ny);
  Kokkos::View<double*, Space> send_right(noinit("send_right"), b.ny);
  Kokkos::View<double*, Space> recv_left(noinit("recv_left"), b.ny);
  Kokkos::View<double*, Space> recv_right(noinit("recv_right"), b.ny);
  pack(b.u, 1, send_left);
  pack(b.u, b.columns, send_right);
  Kokkos::fence();
  MPI_Request r[4];
  MPI_Irecv(recv_left.data(), b.ny, MPI_DOUBLE, b.left, to_right, b.comm, &r[0]);
  MPI_Irecv(recv_right.data(), b.ny, MPI_DOUBLE, b.right, to_left, b.comm, &r[1]);
  MPI_Isend(send_left.data(), b.ny, MPI_DOUBLE, b.left, to_left, b.comm, &r[2]);
  MPI_Isend(send_right.data(), b.ny, MPI_DOUBLE, b.right, to_right, b.comm, &r[3]);
  MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
  if (b.left != MPI_PROC_NULL) unpack(recv_left, b.u, 0);
  if (b.right != MPI_PROC_NULL) unpack(recv_right, b.u, b.columns + 1);
  Kokkos::fence();
}

// Rank 0 of b.comm gets the whole grid (ny x nx, row-major), the other ranks an empty vector.
std::vector<double> gather(const Block& b) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(b.comm, &rank);
  MPI_Comm_size(b.comm, &size);
  std::vector<double> mine(static_cast<std::size_t>(b.ny) * b.columns);
  for (int j = 0; j < b.columns; ++j) {  // column-major: one column after another
    for (int i = 0; i < b.ny; ++i) mine[static_cast<std::size_t>(j) * b.ny + i] = b.u(i, j + 1);
  }
  std::vector<int> counts(size), displs(size);
  for (int r = 0; r < size; ++r) {
    const int f = static_cast<int>(static_cast<long>(b.nx) * r / size);
    const int l = static_cast<int>(static_cast<long>(b.nx) * (r + 1) / size);
    counts[r] = (l - f) * b.ny;
    displs[r] = f * b.ny;
  }
  std::vector<double> columns(rank == 0 ? static_cast<std::size_t>(b.nx) * b.ny : 0);
  MPI_Gatherv(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, columns.data(), counts.data(),
              displs.data(), MPI_DOUBLE, 0, b.comm);
  if (rank != 0) return {};
  std::vector<double> grid(columns.size());
  for (int j = 0; j < b.nx; ++j) {
    for (int i = 0; i < b.ny; ++i) {
      grid[static_cast<std::size_t>(i) * b.nx + j] =
          columns[static_cast<std::size_t>(j) * b.ny + i];
    }
  }
  return grid;
}

// FNV-1a over the bytes: one number to compare runs by eye.
unsigned long long fingerprint(const std::vector<double>& v) {
  unsigned long long h = 1469598103934665603ull;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(double); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

struct Options {
  int nx = 512;
  int ny = 512;
  int steps = 200;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    int* target = a == "--nx" ? &o.nx : a == "--ny" ? &o.ny : a == "--steps" ? &o.steps : nullptr;
    if (target == nullptr || i + 1 >= argc) return false;
    char* end = nullptr;
    const long v = std::strtol(argv[++i], &end, 10);
    if (*end != '\0' || v < 1 || v > (1 << 20)) return false;
    *target = static_cast<int>(v);
  }
  return o.steps >= 2;
}

int run(const Options& o) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (o.nx < size) {
    if (rank == 0) std::fprintf(stderr, "kbuf-halo-exchange: --nx %d < %d ranks\n", o.nx, size);
    return 2;
  }
  int failures = 0;

  // kbuf: one allocator per rank, empty at first (the first step's temporaries are fallbacks;
  // the buffer then grows to the high-water mark and no later step needs one).
  Block kb(MPI_COMM_WORLD, o.nx, o.ny);
  Alloc alloc(Exec(), 0, Alloc::default_alignment, "halo");
  exchange(kb, alloc);
  kb.update();
  const kbuf::mpi::ReducedStatistics first = kbuf::mpi::reduce_statistics(alloc, MPI_COMM_WORLD);
  alloc.reset_peaks();  // a new measurement region: the remaining steps
  MPI_Barrier(MPI_COMM_WORLD);
  double halo_kbuf = 0;
  double t0 = MPI_Wtime();
  for (int s = 1; s < o.steps; ++s) {
    const double h = MPI_Wtime();
    exchange(kb, alloc);
    halo_kbuf += MPI_Wtime() - h;
    kb.update();
  }
  double step_kbuf = MPI_Wtime() - t0;
  const kbuf::mpi::ReducedStatistics rest = kbuf::mpi::reduce_statistics(alloc, MPI_COMM_WORLD);

  // Fresh managed Views.
  Block fb(MPI_COMM_WORLD, o.nx, o.ny);
  exchange_fresh(fb);
  fb.update();
  MPI_Barrier(MPI_COMM_WORLD);
  double halo_fresh = 0;
  t0 = MPI_Wtime();
  for (int s = 1; s < o.steps; ++s) {
    const double h = MPI_Wtime();
    exchange_fresh(fb);
    halo_fresh += MPI_Wtime() - h;
    fb.update();
  }
  double step_fresh = MPI_Wtime() - t0;

  // The slowest rank's times: the step takes as long as it.
  double times[4] = {halo_kbuf, step_kbuf, halo_fresh, step_fresh};
  MPI_Allreduce(MPI_IN_PLACE, times, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const std::vector<double> kbuf_grid = gather(kb);
  const std::vector<double> fresh_grid = gather(fb);

  if (rank == 0) {
    // The one-rank run: the same code on MPI_COMM_SELF, the whole grid and no neighbours.
    Block whole(MPI_COMM_SELF, o.nx, o.ny);
    Alloc self_alloc(Exec(), 0, Alloc::default_alignment, "halo-one-rank");
    for (int s = 0; s < o.steps; ++s) {
      exchange(whole, self_alloc);
      whole.update();
    }
    const std::vector<double> reference = gather(whole);
    const auto same = [&](const std::vector<double>& g) {
      return g.size() == reference.size() &&
             std::memcmp(g.data(), reference.data(), g.size() * sizeof(double)) == 0;
    };
    const int steps_timed = o.steps - 1;
    std::printf("halo exchange: %d x %d grid, %d ranks, %d steps (%d timed)\n", o.nx, o.ny, size,
                o.steps, steps_timed);
    std::printf("  %-22s %14s %14s  %s\n", "exchange buffers", "halo us/step", "step us/step",
                "result vs one rank");
    std::printf("  %-22s %14.2f %14.2f  %s (%016llx)\n", "kbuf temporaries",
                1e6 * times[0] / steps_timed, 1e6 * times[1] / steps_timed,
                same(kbuf_grid) ? "identical" : "DIFFERS", fingerprint(kbuf_grid));
    std::printf("  %-22s %14.2f %14.2f  %s (%016llx)\n", "fresh managed Views",
                1e6 * times[2] / steps_timed, 1e6 * times[3] / steps_timed,
                same(fresh_grid) ? "identical" : "DIFFERS", fingerprint(fresh_grid));
    std::printf("  one-rank reference                                        (%016llx)\n",
                fingerprint(reference));
    if (!same(kbuf_grid) || !same(fresh_grid)) {
      std::printf("FAILED: a result differs from the one-rank run\n");
      ++failures;
    }
    std::printf("first step: fallbacks min %zu max %zu (the buffer grows after it)\n",
                first.min.fallbacks, first.max.fallbacks);
    std::printf("steps 2..%d, ", o.steps);
    std::fflush(stdout);
  }
  if (rank == 0) {
    std::string table;
    {
      std::ostringstream os;
      os << rest;
      table = os.str();
    }
    std::fputs(table.c_str(), stdout);
    if (rest.max.fallbacks != 0 && !alloc.passthrough()) {
      std::printf("FAILED: %zu fallbacks after the first step (rank %d among them)\n",
                  rest.sum.fallbacks, rest.peak_rank);
      ++failures;
    }
  }
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    Options o;
    if (!parse(argc, argv, o)) {
      std::fprintf(stderr, "usage: kbuf-halo-exchange [--nx N] [--ny N] [--steps N >= 2]\n");
      status = 2;
    } else {
      status = run(o);
    }
  }
  MPI_Finalize();
  return status;
}
