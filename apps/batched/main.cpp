// kbuf-batched-fits: batched weighted least-squares polynomial fits (GMLS-like) solved by Kokkos
// Kernels' batched dense routines inside kernels, every array and work array from a kbuf
// workspace, beside level-0/1 scratch and fixed slots sized for the largest entry; each fit is
// checked against LAPACK's dgels and the exact coefficients of a polynomial.
#include <kbuf/impl/kokkos_version.hpp>
#include <kbuf_batched/fits.hpp>
#include <kbuf_batched/problems.hpp>
#include <kbuf_batched/strategies.hpp>
#include <kbuf_cli/cli.hpp>

#include <KokkosKernels_config.h>
#if !defined(KOKKOSKERNELS_VERSION) && defined(__has_include)
#if __has_include(<Trilinos_version.h>)
#include <Trilinos_version.h>
#endif
#endif

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace {

using kbuf_batched::StrategyResult;
using kbuf_cli::bad_option;
using kbuf_cli::exit_bad_option;
using kbuf_cli::exit_ok;
using kbuf_cli::exit_wrong_result;
using space = kbuf::default_memory_space;

struct Options {
  kbuf_batched::BatchOptions batch;
  kbuf_batched::RunOptions run;
  bool team = true;
  bool thread = true;
  bool help = false;
};

void usage(std::FILE* out) {
  std::fprintf(
      out,
      "Usage: kbuf-batched-fits [--entries N] [--rare-every K] [--rare-m M] [--repeat R]\n"
      "                         [--seed S] [--level team|thread|all] [--solvers LIST]\n"
      "                         [--kokkos-... options]\n"
      "Batched weighted least-squares polynomial fits (GMLS-like): per entry a neighbourhood\n"
      "of 8 to 64 points in 2-D (and one rare neighbourhood of M points in K entries), a basis\n"
      "of the polynomials of degree 1, 2 or 3 (3, 6 or 10), two right-hand sides (a polynomial\n"
      "of the basis's degree and a smooth function). P, W^1/2 P, the normal matrix and the\n"
      "right-hand sides are built inside the kernel and solved by Kokkos Kernels' batched\n"
      "routines, every array and work array taken in frames from the strategy's memory:\n"
      "  per team:   TeamVectorQR + TeamVectorApplyQ + TeamVectorTrsv, TeamVectorUTV +\n"
      "              TeamVectorSolveUTV, TeamLU + TeamInverseLU (normal equations)\n"
      "  per thread: SerialQR + SerialApplyQ + SerialTrsv, SerialSVD, SerialGesv (normal\n"
      "              equations); Kokkos Kernels 4 only\n"
      "Strategies: kbuf workspace (learns its sizes from a guess of 0 bytes; rounds: runs until\n"
      "one completes), level-0/1 team scratch and fixed slots (one flat View, offsets by hand),\n"
      "both sized for the largest entry. Prints the time per batch (median of R runs), the\n"
      "bytes each holds, the rounds, entries not fitted, and the largest relative errors\n"
      "against LAPACK's dgels on W^1/2 P and against the polynomial's coefficients.\n"
      "\n"
      "Options:\n"
      "  --entries N     entries in the batch (1 to 1000000, default 4000)\n"
      "  --rare-every K  one rare large neighbourhood in K entries on average (0: none;\n"
      "                  default 500)\n"
      "  --rare-m M      points of a rare neighbourhood (20 to 1024, default 512)\n"
      "  --repeat R      timed runs of each strategy (1 to 1000, default 5)\n"
      "  --seed S        the batch's random seed (default 2026)\n"
      "  --level L       team, thread or all (default all)\n"
      "  --solvers LIST  which solvers run, a list of qr (TeamVectorQR, SerialQR), rank\n"
      "                  (TeamVectorUTV, SerialSVD) and normal (TeamLU, SerialGesv), or none\n"
      "                  (the arrays are built and nothing solved); default qr,rank,normal\n"
      "  --help          this text\n"
      "Exit status:\n"
      "  0  every strategy fitted every entry within %.0e of LAPACK and of the polynomial,\n"
      "     and each workspace completed a run within %d rounds\n"
      "  1  a wrong result (or a batch whose conditioning does not justify the tolerance)\n"
      "  2  a bad option\n"
      "  3  out of memory\n"
      "  4  any other error\n"
      "Environment:\n"
      "  KBUF_SIZES=FILE  the workspaces and their allocators start from the sizes an earlier\n"
      "                  run saved in FILE (first rounds complete, no fallback, no regrowth),\n"
      "                  and what this run learns is saved there at the end\n",
      kbuf_batched::tolerance, kbuf_batched::RunOptions{}.max_rounds);
}

int parse_count(const std::string& option, const std::string& text, int low, int high) {
  if (text == "0" && low == 0) return 0;
  const std::size_t v = kbuf_cli::parse_positive(option, text, static_cast<std::size_t>(high));
  if (static_cast<long long>(v) < low) {
    bad_option(option + ": '" + text + "' must be between " + std::to_string(low) + " and " +
               std::to_string(high));
  }
  return static_cast<int>(v);
}

Options parse(const kbuf_cli::Arguments& args) {
  Options o;
  o.help = args.help();
  if (o.help) return o;
  args.each([&](const std::string& arg, const auto& next) {
    if (arg == "--entries") {
      o.batch.entries = parse_count("--entries", next(), 1, 1000000);
    } else if (arg == "--rare-every") {
      o.batch.rare_every = parse_count("--rare-every", next(), 0, 1000000);
    } else if (arg == "--rare-m") {
      o.batch.rare_m = parse_count("--rare-m", next(), 20, 1024);
    } else if (arg == "--repeat") {
      o.run.repeat = parse_count("--repeat", next(), 1, 1000);
    } else if (arg == "--seed") {
      o.batch.seed = static_cast<unsigned>(parse_count("--seed", next(), 0, 2147483647));
    } else if (arg == "--solvers") {
      o.run.methods = 0;
      const std::string list = next();
      if (list != "none") {
        for (const std::string& item : kbuf_cli::split_list("--solvers", list)) {
          o.run.methods |=
              1u << kbuf_cli::parse_choice("--solvers", item, {"qr", "rank", "normal"});
        }
      }
    } else if (arg == "--level") {
      const std::size_t i = kbuf_cli::parse_choice("--level", next(), {"team", "thread", "all"});
      o.team = i != 1;
      o.thread = i != 0;
    } else {
      kbuf_cli::Arguments::unknown(arg);
    }
  });
  return o;
}

std::string kernels_version() {
#if defined(KOKKOSKERNELS_VERSION)
  return kbuf::Impl::kokkos_version_string(KOKKOSKERNELS_VERSION);
#elif defined(TRILINOS_VERSION_STRING)
  return std::string("of Trilinos ") + TRILINOS_VERSION_STRING;
#else
  return "(version unknown)";
#endif
}

// One table of strategies; true when all of them are right.
// `learning` gains the kbuf workspaces' fallbacks while learning and their allocators'
// fallbacks and regrowths.
bool print_table(const char* title, const char* const* methods, unsigned run,
                 const std::vector<StrategyResult>& rows, const kbuf_batched::Batch& b,
                 const kbuf_batched::Reference& ref, std::size_t learning[2]) {
  std::printf("%s: %s, %s, %s\n", title, methods[0], methods[1], methods[2]);
  const StrategyResult* slots = nullptr;
  for (const StrategyResult& r : rows) {
    if (r.name == "fixed slots" && r.ran) slots = &r;
  }
  std::printf("  %-16s %10s %7s %12s %7s %6s %6s %10s %10s  %s\n", "strategy", "ms/batch", "/slots",
              "bytes held", "/slots", "rounds", "failed", "vs LAPACK", "vs exact", "notes");
  bool good = true;
  for (const StrategyResult& r : rows) {
    const double bytes_ratio = slots ? double(r.bytes) / double(slots->bytes) : 0.0;
    if (!r.ran) {
      std::printf("  %-16s %10s %7s %12zu %7.3f %6s %6s %10s %10s  %s\n", r.name.c_str(), "-", "-",
                  r.bytes, bytes_ratio, "-", "-", "-", "-", r.note.c_str());
      continue;
    }
    learning[0] += r.fallbacks + r.allocator_fallbacks;
    learning[1] += r.allocator_regrows;
    kbuf_batched::Errors worst;
    std::string per_method;
    for (int k = 0; k < kbuf_batched::method_count; ++k) {
      if (((run >> k) & 1u) == 0) continue;
      const kbuf_batched::Errors e = kbuf_batched::errors(b, ref, r.x[k]);
      kbuf_batched::keep_worst(worst.vs_lapack, e.vs_lapack);
      kbuf_batched::keep_worst(worst.vs_exact, e.vs_exact);
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s %.1e/%.1e", per_method.empty() ? "" : ", ", methods[k],
                    e.vs_lapack, e.vs_exact);
      per_method += buf;
    }
    const bool right = r.failed == 0 && worst.within(kbuf_batched::tolerance) &&
                       r.rounds <= kbuf_batched::RunOptions{}.max_rounds &&
                       r.note.find("no complete run") == std::string::npos;
    good = good && right;
    const double t = r.median_seconds();
    char lapack[16] = "-", exact[16] = "-";  // no solver ran: nothing to compare
    if (!per_method.empty()) {
      std::snprintf(lapack, sizeof lapack, "%.2e", worst.vs_lapack);
      std::snprintf(exact, sizeof exact, "%.2e", worst.vs_exact);
    }
    std::printf("  %-16s %10.3f %7.3f %12zu %7.3f %6d %6d %10s %10s  %s%s\n", r.name.c_str(),
                t * 1e3, slots ? t / slots->median_seconds() : 0.0, r.bytes, bytes_ratio, r.rounds,
                r.failed, lapack, exact, r.note.c_str(),
                r.fallbacks
                    ? (", " + std::to_string(r.fallbacks) + " fallbacks while learning").c_str()
                    : "");
    if (!per_method.empty()) {
      std::printf("  %-16s errors per solver (vs LAPACK/vs exact): %s\n", "", per_method.c_str());
    }
  }
  return good;
}

int run(const Options& o) {
  const kbuf_batched::Batch b = kbuf_batched::make_batch(o.batch);
  const kbuf_batched::Reference ref = kbuf_batched::lapack_reference(b);
  using exec = space::execution_space;
  const exec instance;
  kbuf_batched::Runner<space> runner(b, instance);
  std::printf(
      "kbuf-batched-fits: %d entries (8..64 points, degree 1..3; %d rare of %d points), "
      "backend %s, concurrency %d, Kokkos %s, Kokkos Kernels %s, median of %d interleaved runs\n",
      b.count, b.rare, o.batch.rare_m, exec::name(), instance.concurrency(),
      kbuf::Impl::kokkos_version_string(KOKKOS_VERSION).c_str(), kernels_version().c_str(),
      o.run.repeat);
  double worst_bound = 0;
  for (int e = 0; e < b.count; ++e) {
    const double bound = kbuf_batched::error_bound(ref.kappa[e], b.m[e], b.n[e]);
    kbuf_batched::keep_worst(worst_bound, bound);
  }
  std::printf(
      "conditioning: largest kappa(W^1/2 P) %.1f; the tolerance %.0e bounds 10 sqrt(m n) eps "
      "kappa^2 <= "
      "%.1e\n",
      ref.max_kappa, kbuf_batched::tolerance, worst_bound);
  bool good = true;
  std::size_t learning[2] = {0, 0};  // kbuf's fallbacks and regrowths
  if (!(worst_bound <= kbuf_batched::tolerance)) {
    std::printf("the batch's conditioning does not justify the tolerance %.0e\n",
                kbuf_batched::tolerance);
    good = false;
  }
  if (o.team) {
    good = print_table("per team (TeamPolicy, an entry per team)", kbuf_batched::team_methods,
                       o.run.methods, runner.team(o.run), b, ref, learning) &&
           good;
  }
  if (o.thread) {
#if KBUF_BATCHED_THREAD_SOLVERS
    good = print_table("per thread (RangePolicy + UniqueToken, an entry per thread)",
                       kbuf_batched::thread_methods, o.run.methods, runner.thread(o.run), b, ref,
                       learning) &&
           good;
#else
    std::printf(
        "per thread: not built (SerialSVD and SerialGesv need Kokkos Kernels 4; this is %s)\n",
        kernels_version().c_str());
#endif
  }
  std::fputs(kbuf_cli::sizes_line(kbuf::loaded_sizes(), "the kbuf workspaces and their allocators",
                                  learning[0], learning[1])
                 .c_str(),
             stdout);
  std::printf("%s: every fit %s LAPACK's dgels and the polynomial within %.0e\n",
              good ? "ok" : "FAILED", good ? "agrees with" : "does not agree with",
              kbuf_batched::tolerance);
  return good ? exit_ok : exit_wrong_result;
}

}  // namespace

int main(int argc, char** argv) {
  kbuf_cli::Arguments args(argc, argv);
  Options options;
  try {
    options = parse(args);
  } catch (const kbuf_cli::BadOption& e) {
    kbuf_cli::report_bad_option("kbuf-batched-fits", e.what());
    return exit_bad_option;
  }
  if (options.help) {
    usage(stdout);
    return exit_ok;
  }
  return kbuf_cli::run_under_kokkos("kbuf-batched-fits", args, [&] { return run(options); });
}
