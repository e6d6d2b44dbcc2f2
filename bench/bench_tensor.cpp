// End to end: the tensor-network workload (kbuf_tensor: the two-site environment network of
// kbuf-demo, six pairwise permute + GEMM contractions and seven temporaries per network) timed
// per network contraction with kbuf temporaries and with fresh managed Views, interleaved.
#include "bench_common.hpp"

#include <cstdio>

#if defined(KBUF_BENCH_HAVE_TENSOR)
#include <kbuf_tensor/kbuf_tensor.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "policies.hpp"
#endif

namespace kbuf_bench {

#if defined(KBUF_BENCH_HAVE_TENSOR)

namespace {

using T = double;
using space = kbuf::default_memory_space;

/// One strategy's state for one bond dimension: its temporaries provider and last result.
struct TensorRunner {
  std::unique_ptr<Allocator> alloc;  // kbuf only
  std::unique_ptr<kbuf_tensor::Temporaries<space>> tmp;
  T energy = 0;
};

}  // namespace

void section_tensor(Context& c) {
  const std::size_t phys = 2;
  std::printf(
      "\n== tensor: kbuf_tensor's two-site environment network (HRAA then E; 6 pairwise "
      "permute+GEMM contractions,\n   7 temporaries), double, d = %zu: time per network "
      "contraction ==\n",
      phys);
  std::printf("  %-5s %12s %12s %12s %9s %9s %12s %10s %4s\n", "D", "kbuf us", "noinit us",
              "init us", "noinit/kb", "init/kb", "saved/temp", "capacity", "fb");
  // Samples of one network at large D last milliseconds: timing.max_seconds bounds them.
  TimingOptions timing = c.opt.timing;
  timing.warmup_rounds = 2;
  for (std::size_t bond = 4; bond <= c.opt.tensor_max_d; bond *= 2) {
    const auto host = kbuf_tensor::random_host_network<T>(bond, phys, 7);
    const auto net = kbuf_tensor::to_device<T, space>(host);
    const auto plan = kbuf_tensor::plan_network<T>(bond, phys);
    const auto hraa = kbuf_tensor::make_hraa(net);

    TensorRunner kb, noinit, init;
    kb.alloc = std::make_unique<Allocator>();
    kb.tmp = std::make_unique<kbuf_tensor::Temporaries<space>>(*kb.alloc);
    noinit.tmp = std::make_unique<kbuf_tensor::Temporaries<space>>(
        kbuf_tensor::TemporaryPolicy::fresh_views);
    init.tmp = std::make_unique<kbuf_tensor::Temporaries<space>>(
        kbuf_tensor::TemporaryPolicy::fresh_views_initialized);

    kb.energy = kbuf_tensor::contract_network(*kb.tmp, plan, net, hraa);  // first round
    const std::size_t first_fallbacks = kb.alloc->statistics().fallbacks;

    std::vector<Contender> st;
    for (auto* r : {&kb, &noinit, &init}) {
      const char* name = r == &kb ? "kbuf" : r == &noinit ? "fresh-noinit" : "fresh-init";
      Contender s;
      s.name = name;
      s.temps_per_round = 1;  // figures are per network contraction
      s.run = [r, &plan, &net, &hraa](std::size_t k) {
        for (std::size_t i = 0; i < k; ++i) {
          r->energy = kbuf_tensor::contract_network(*r->tmp, plan, net, hraa);
          escape(&r->energy);
        }
      };
      st.push_back(std::move(s));
    }
    measure_interleaved(st, timing);
    const std::size_t late = kb.alloc->statistics().fallbacks - first_fallbacks;
    c.late_fallbacks += late;

    const Summary sk = summarize(st[0].ns_per_temp), sn = summarize(st[1].ns_per_temp),
                  si = summarize(st[2].ns_per_temp);
    const double temps = 7.0;
    std::printf("  %-5zu %12.2f %12.2f %12.2f %9.3f %9.3f %10.0f ns %10zu %4zu\n", bond,
                sk.median * 1e-3, sn.median * 1e-3, si.median * 1e-3, sn.median / sk.median,
                si.median / sk.median, (sn.median - sk.median) / temps, kb.alloc->capacity(), late);
    const double scale = std::abs(kb.energy) > 0 ? std::abs(kb.energy) : 1.0;
    if (std::abs(kb.energy - noinit.energy) > 1e-10 * scale ||
        std::abs(kb.energy - init.energy) > 1e-10 * scale) {
      std::printf("  WARNING: the strategies disagree at D = %zu: %.17g %.17g %.17g\n", bond,
                  kb.energy, noinit.energy, init.energy);
    }
    for (const auto& s : st) {
      const Summary m = summarize(s.ns_per_temp);
      c.csv.row("tensor", "network-d2-double", static_cast<double>(bond), s.name, m,
                m.median / sk.median, s.name == "kbuf" ? static_cast<long long>(late) : -1,
                s.name == "kbuf" ? static_cast<long long>(kb.alloc->capacity()) : -1);
    }
    c.csv.flush();
    std::fflush(stdout);
  }
  std::printf(
      "  (ns figures in the CSV are per network contraction; saved/temp = (noinit - "
      "kbuf) / 7 temporaries)\n");
}

#else

void section_tensor(Context&) {
  std::printf(
      "\n== tensor: skipped (this build has no kbuf_tensor: configure with "
      "KBUF_ENABLE_KERNELS=ON) ==\n");
}

#endif

}  // namespace kbuf_bench
