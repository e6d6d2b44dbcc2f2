// kbuf-advisor's outputs: the terminal report, kbuf-advisor.json (nlohmann-json),
// kbuf-advisor.svg and kbuf-advisor.trace.json (Chrome's trace-event format).
#include <kbuf_advisor/advisor.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <sys/types.h>

namespace kbuf_advisor {

namespace {

std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? printf_string("%.0f B", b) : printf_string("%.1f %s", b, units[u]);
}

std::string human_micros(double us) {
  if (us < 1000) return printf_string("%.0f us", us);
  if (us < 1e6) return printf_string("%.1f ms", us / 1e3);
  return printf_string("%.2f s", us / 1e6);
}

std::string percent(double part, double whole) {
  return whole > 0 ? printf_string("%.1f%%", 100.0 * part / whole) : std::string("-");
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
    }
  }
  return out;
}

// Labels come from the program: bytes that are not UTF-8 are replaced so the JSON stays valid.
std::string clean(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n != 0 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string format_report(const Results& r) {
  std::ostringstream o;
  const std::size_t top = r.settings.top;
  o << "\n== kbuf-advisor: " << r.allocations << " allocations (" << human_bytes(r.bytes) << "), "
    << r.deallocations << " deallocations, " << r.kernels << " kernels, " << r.fences << " fences, "
    << r.deep_copies << " deep copies (" << human_bytes(r.deep_copy_bytes) << "), " << r.pushes
    << " regions, " << r.threads << " host thread" << (r.threads == 1 ? "" : "s")
    << (r.thread_slots < r.threads
            ? " (" + std::to_string(r.thread_slots) + " at once: exited threads' slots reused)"
            : std::string())
    << ", " << printf_string("%.2f s", r.seconds) << "\n";
  for (const std::string& w : r.warnings) o << "   note: " << w << "\n";
  o << printf_string("  %-22s %12s %13s %12s %12s\n", "memory space", "allocations",
                     "deallocations", "bytes", "peak held");
  for (const SpaceTotals& s : r.spaces) {
    o << printf_string("  %-22s %12llu %13llu %12s %12s\n", clean(s.name).c_str(),
                       static_cast<unsigned long long>(s.allocations),
                       static_cast<unsigned long long>(s.deallocations),
                       human_bytes(static_cast<double>(s.bytes)).c_str(),
                       human_bytes(static_cast<double>(s.peak_held)).c_str());
  }
  if (!r.kbuf_spaces.empty()) {
    o << "  kbuf's own temporaries (Kokkos Tools records in kbuf:* spaces, inside kbuf's "
         "buffers: not counted above)\n";
    for (const KbufSpace& k : r.kbuf_spaces) {
      o << printf_string("  %-22s %12llu temporaries, %s, peak held %s\n", clean(k.name).c_str(),
                         static_cast<unsigned long long>(k.temporaries),
                         human_bytes(static_cast<double>(k.bytes)).c_str(),
                         human_bytes(static_cast<double>(k.peak_held)).c_str());
    }
  }

  const auto table = [&](const char* title, const std::vector<Named>& rows, bool regions) {
    o << "\n== " << title << " (" << std::min(rows.size(), top) << " of " << rows.size() << ")\n";
    o << printf_string("  %9s %10s %8s %8s %9s %7s %9s %9s  %s\n", "count", "bytes", "kern p50",
                       "kern p90", "time p50", "LIFO", "kbuf", regions ? "peak" : "buffer",
                       regions ? "region (instances)" : "label [space]");
    for (std::size_t i = 0; i < rows.size() && i < top; ++i) {
      const Named& n = rows[i];
      const Aggregate& a = n.a;
      const std::string name = regions ? clean(n.name) + " (" + std::to_string(n.instances) + ")"
                                       : "'" + clean(n.name) + "' [" + clean(n.space) + "]";
      o << printf_string(
          "  %9llu %10s %8s %8s %9s %7s %9llu %9s  %s\n", static_cast<unsigned long long>(a.count),
          human_bytes(static_cast<double>(a.bytes)).c_str(),
          a.frees ? printf_string("%.0f", a.kernels.quantile(0.5)).c_str() : "-",
          a.frees ? printf_string("%.0f", a.kernels.quantile(0.9)).c_str() : "-",
          a.frees ? human_micros(a.micros.quantile(0.5)).c_str() : "-",
          percent(static_cast<double>(a.lifo_frees), static_cast<double>(a.frees)).c_str(),
          static_cast<unsigned long long>(a.served),
          regions ? human_bytes(static_cast<double>(n.peak_held)).c_str()
                  : std::to_string(a.from_buffer).c_str(),
          name.c_str());
    }
  };
  table("Labels, most allocations first", r.labels, false);
  table("Profiling regions, most allocations first", r.regions, true);
  o << "  (kern p50/p90: lifetime in kernels of the allocating thread; LIFO: freed while the "
       "newest live allocation of its thread and space;\n   kbuf: served by the replay below; "
       "buffer: of those, carved from its buffer)\n";

  o << "\n== What kbuf would do: one kbuf::BufferAllocator per host thread and memory space, "
       "the program's temporaries\n   (freed within "
    << r.settings.max_kernels << " kernels of their thread"
    << (r.settings.regions ? ", or before the profiling region they were allocated in ended" : "")
    << "; one freed before newer ones is held until they are, as a kbuf scope does) replayed "
       "under kbuf's own rules\n";
  std::uint64_t not_served = 0;
  for (std::uint64_t v : r.not_served) not_served += v;
  o << "  temporaries served   " << r.served() << " of " << r.allocations << " allocations ("
    << percent(static_cast<double>(r.served()), static_cast<double>(r.allocations)) << "), "
    << r.fallbacks() << " by fallbacks (" << r.first_round_fallbacks() << " in the first round)\n";
  o << "  not served           " << not_served;
  const char* sep = ": ";
  for (std::size_t i = 0; i < r.not_served.size(); ++i) {
    if (r.not_served[i] == 0) continue;
    o << sep << to_string(static_cast<Reason>(i)) << " " << r.not_served[i];
    sep = ", ";
  }
  o << "\n";
  o << "  buffer capacity      " << r.capacity() << " bytes (" << human_bytes(r.capacity())
    << ")\n";
  o << "  allocations avoided  " << r.allocations_avoided() << " ("
    << percent(static_cast<double>(r.allocations_avoided()), static_cast<double>(r.allocations))
    << " of the program's allocations)\n";
  if (r.replays.size() > 1 || !r.replays.empty()) {
    for (const ReplayResult& x : r.replays) {
      o << printf_string(
          "    thread %u, %s (alignment %zu): %llu temporaries, %llu from the buffer, %llu "
          "fallbacks (%llu in the first round), %llu regrowths, capacity %zu, high-water mark "
          "%zu; %llu freed out of LIFO order, held until the newer ones were freed\n",
          x.thread, clean(x.space).c_str(), x.alignment,
          static_cast<unsigned long long>(x.temporaries),
          static_cast<unsigned long long>(x.from_buffer),
          static_cast<unsigned long long>(x.fallbacks),
          static_cast<unsigned long long>(x.first_round_fallbacks),
          static_cast<unsigned long long>(x.regrows), x.capacity, x.high_water_mark,
          static_cast<unsigned long long>(x.released_late));
    }
  }
  const auto site_table = [&](bool kokkos) {
    std::size_t shown = 0, count = 0;
    for (const Site& x : r.sites) {
      if (x.inside_kokkos != kokkos) continue;
      if (++count > top) continue;
      const std::string fallbacks = std::to_string(x.cumulative_fallbacks) + " (" +
                                    std::to_string(x.first_round_fallbacks) + ")";
      o << printf_string("  %2zu. %11llu %9lld %10s  %10s %13s %9llu %9lld  '%s' [%s]\n", ++shown,
                         static_cast<unsigned long long>(x.count),
                         static_cast<long long>(x.allocations_avoided),
                         human_bytes(static_cast<double>(x.capacity)).c_str(),
                         human_bytes(static_cast<double>(x.cumulative_capacity)).c_str(),
                         fallbacks.c_str(), static_cast<unsigned long long>(x.cumulative_regrows),
                         static_cast<long long>(x.cumulative_allocations_avoided),
                         clean(x.label).c_str(), clean(x.space).c_str());
    }
    return count - shown;  // not shown
  };
  const auto site_header = [&] {
    o << printf_string("  %3s %11s %9s %10s  %10s %13s %9s %9s  %s\n", "", "allocations", "avoided",
                       "buffer", "together:", "fallbacks", "", "avoided", "site [space]");
    o << printf_string("  %3s %11s %9s %10s  %10s %13s %9s %9s\n", "", "", "alone", "alone",
                       "buffer", "(first round)", "regrowths", "");
  };
  const bool any_kokkos =
      std::any_of(r.sites.begin(), r.sites.end(), [](const Site& x) { return x.inside_kokkos; });
  if (!r.sites.empty()) {
    std::size_t more = 0;
    if (!std::all_of(r.sites.begin(), r.sites.end(),
                     [](const Site& x) { return x.inside_kokkos; })) {
      o << "\n== Call sites to change first (take these with kbuf::temporary in a kbuf::scope), "
           "most allocations avoided first:\n   what a buffer for the site alone would do, and "
           "one for it and every site above it together\n";
      site_header();
      more += site_table(false);
    }
    if (any_kokkos) {
      o << "\n== Call sites inside Kokkos (its algorithms' and containers' own allocations: an "
           "adopter cannot change these),\n   after every site above; \"together\" adds them to "
           "all the sites listed before\n";
      site_header();
      more += site_table(true);
    }
    if (more + r.sites_left_out != 0) {
      o << "  (" << more + r.sites_left_out << " more sites";
      if (r.sites_left_out != 0) {
        o << "; " << r.sites_left_out << " of them past KBUF_ADVISOR_SITES=" << r.settings.sites
          << ", without replays of their own";
      }
      o << ")\n";
    }
    if (r.site_stream_temporaries < r.served()) {
      o << "  the replays of sites together cover the first " << r.site_stream_temporaries << " of "
        << r.served() << " temporaries (KBUF_ADVISOR_SITE_EVENTS=" << r.settings.site_events
        << ")\n";
    }
  }
  if (!r.settings.pick.empty()) {
    const Picked& p = r.picked;
    o << "\n== Picked sites (KBUF_ADVISOR_PICK), one buffer for them together:";
    for (std::size_t i = 0; i < p.labels.size(); ++i) {
      o << (i == 0 ? " '" : ", '") << clean(p.labels[i]) << "'";
    }
    o << "\n";
    o << "  temporaries          " << p.temporaries << "\n";
    o << "  buffer capacity      " << p.capacity << " bytes (" << human_bytes(p.capacity) << ")\n";
    o << "  fallbacks            " << p.fallbacks << " (" << p.first_round_fallbacks
      << " in the first round), " << p.regrows << " regrowths\n";
    o << "  allocations avoided  " << p.allocations_avoided << "\n";
    if (!p.not_seen.empty()) {
      o << "   note: never allocated, left out:";
      for (std::size_t i = 0; i < p.not_seen.size(); ++i) {
        o << (i == 0 ? " '" : ", '") << clean(p.not_seen[i]) << "'";
      }
      o << "\n";
    }
    if (r.site_stream_temporaries < r.served()) {
      o << "   note: the replay covers the first " << r.site_stream_temporaries << " of "
        << r.served() << " temporaries (KBUF_ADVISOR_SITE_EVENTS=" << r.settings.site_events
        << ")\n";
    }
  }
  if (!r.adopted.empty()) {
    o << "\n== Adopted: the temporaries the program's kbuf allocators served, by label (their "
         "Kokkos Tools records),\n   beside the allocations the program still makes under that "
         "label (left) and what a buffer for them would avoid\n";
    o << printf_string("  %11s %10s %10s %9s %9s  %s\n", "temporaries", "bytes", "peak held",
                       "left", "avoidable", "site [space] (allocator)");
    for (std::size_t i = 0; i < r.adopted.size() && i < top; ++i) {
      const Adopted& x = r.adopted[i];
      o << printf_string("  %11llu %10s %10s %9llu %9lld  '%s' [%s] (%s)\n",
                         static_cast<unsigned long long>(x.temporaries),
                         human_bytes(static_cast<double>(x.bytes)).c_str(),
                         human_bytes(static_cast<double>(x.peak_held)).c_str(),
                         static_cast<unsigned long long>(x.left),
                         static_cast<long long>(x.left_avoidable), clean(x.label).c_str(),
                         clean(x.space).c_str(), clean(x.allocator).c_str());
    }
  }
  if (r.trace_dropped != 0 || r.names_dropped != 0) {
    o << "\n  kept bounded: ";
    if (r.trace_dropped != 0) {
      o << r.trace_dropped
        << " trace events left out (KBUF_ADVISOR_TRACE_EVENTS=" << r.settings.trace_events << ")";
    }
    if (r.names_dropped != 0) {
      o << (r.trace_dropped != 0 ? "; " : "") << r.names_dropped
        << " allocations under '(other)' past " << r.settings.max_names
        << " names (KBUF_ADVISOR_NAMES)";
    }
    o << "\n";
  }
  return o.str();
}

std::string format_json(const Results& r) {
  // Keys in the order they are set: DESIGN.md fixes the order of a site's.
  using json = nlohmann::ordered_json;
  json j;
  j["allocations"] = r.allocations;
  j["deallocations"] = r.deallocations;
  j["bytes"] = r.bytes;
  j["unmatched_deallocations"] = r.unmatched_frees;
  j["kernels"] = r.kernels;
  j["fences"] = r.fences;
  j["deep_copies"] = r.deep_copies;
  j["deep_copy_bytes"] = r.deep_copy_bytes;
  j["regions"] = r.pushes;
  j["threads"] = r.threads;
  j["thread_slots"] = r.thread_slots;
  j["seconds"] = r.seconds;
  j["settings"] = {{"max_lifetime_kernels", r.settings.max_kernels},
                   {"window", r.settings.window},
                   {"trace_events", r.settings.trace_events},
                   {"names", r.settings.max_names},
                   {"sites", r.settings.sites},
                   {"site_events", r.settings.site_events},
                   {"regions", r.settings.regions},
                   {"pick", r.settings.pick}};
  j["spaces"] = json::array();
  for (const SpaceTotals& s : r.spaces) {
    j["spaces"].push_back({{"space", clean(s.name)},
                           {"allocations", s.allocations},
                           {"deallocations", s.deallocations},
                           {"bytes", s.bytes},
                           {"peak_held_bytes", s.peak_held}});
  }
  j["kbuf_records"] = json::array();
  for (const KbufSpace& k : r.kbuf_spaces) {
    j["kbuf_records"].push_back({{"space", clean(k.name)},
                                 {"temporaries", k.temporaries},
                                 {"releases", k.releases},
                                 {"bytes", k.bytes},
                                 {"peak_held_bytes", k.peak_held}});
  }
  const auto aggregate = [](json& e, const Aggregate& a) {
    e["count"] = a.count;
    e["bytes"] = a.bytes;
    e["frees"] = a.frees;
    e["lifo_frees"] = a.lifo_frees;
    e["median_lifetime_kernels"] = a.kernels.quantile(0.5);
    e["p90_lifetime_kernels"] = a.kernels.quantile(0.9);
    e["median_lifetime_us"] = a.micros.quantile(0.5);
    e["served"] = a.served;
    e["served_bytes"] = a.served_bytes;
    e["from_buffer"] = a.from_buffer;
    json reasons = json::object();
    for (std::size_t i = 0; i < a.not_served.size(); ++i) {
      reasons[to_string(static_cast<Reason>(i))] = a.not_served[i];
    }
    e["not_served"] = reasons;
  };
  j["labels"] = json::array();
  for (const Named& n : r.labels) {
    json e{{"space", clean(n.space)}, {"label", clean(n.name)}};
    aggregate(e, n.a);
    j["labels"].push_back(e);
  }
  j["regions_detail"] = json::array();
  for (const Named& n : r.regions) {
    json e{{"region", clean(n.name)}, {"instances", n.instances}, {"peak_held_bytes", n.peak_held}};
    aggregate(e, n.a);
    j["regions_detail"].push_back(e);
  }
  json k;
  k["capacity_bytes"] = r.capacity();
  k["allocations_avoided"] = r.allocations_avoided();
  k["first_round_fallbacks"] = r.first_round_fallbacks();
  k["fallbacks"] = r.fallbacks();
  k["temporaries"] = r.served();
  json reasons = json::object();
  for (std::size_t i = 0; i < r.not_served.size(); ++i) {
    reasons[to_string(static_cast<Reason>(i))] = r.not_served[i];
  }
  k["not_served"] = reasons;
  k["allocators"] = json::array();
  for (const ReplayResult& x : r.replays) {
    k["allocators"].push_back({{"thread", x.thread},
                               {"space", clean(x.space)},
                               {"alignment", x.alignment},
                               {"temporaries", x.temporaries},
                               {"from_buffer", x.from_buffer},
                               {"fallbacks", x.fallbacks},
                               {"first_round_fallbacks", x.first_round_fallbacks},
                               {"regrows", x.regrows},
                               {"released_late", x.released_late},
                               {"capacity_bytes", x.capacity},
                               {"capacity_at_end_bytes", x.capacity_at_end},
                               {"high_water_mark_bytes", x.high_water_mark},
                               {"allocations_avoided", x.allocations_avoided()}});
  }
  j["kbuf"] = k;
  j["sites"] = json::array();
  for (const Site& x : r.sites) {
    j["sites"].push_back({{"space", clean(x.space)},
                          {"label", clean(x.label)},
                          {"count", x.count},
                          {"bytes", x.bytes},
                          {"allocations_avoided", x.allocations_avoided},
                          {"capacity_bytes", x.capacity},
                          {"cumulative_capacity_bytes", x.cumulative_capacity},
                          {"first_round_fallbacks", x.first_round_fallbacks},
                          {"inside_kokkos", x.inside_kokkos}});
  }
  // More of each site, in the same order, and what the list covers.
  json more = json::array();
  for (const Site& x : r.sites) {
    more.push_back({{"space", clean(x.space)},
                    {"label", clean(x.label)},
                    {"temporaries", x.temporaries},
                    {"alone_first_round_fallbacks", x.fallbacks},
                    {"cumulative_allocations_avoided", x.cumulative_allocations_avoided},
                    {"cumulative_fallbacks", x.cumulative_fallbacks},
                    {"cumulative_regrows", x.cumulative_regrows}});
  }
  j["sites_detail"] = {{"sites", more},
                       {"sites_left_out", r.sites_left_out},
                       {"temporaries_covered", r.site_stream_temporaries}};
  j["adopted"] = json::array();
  for (const Adopted& x : r.adopted) {
    j["adopted"].push_back({{"space", clean(x.space)},
                            {"label", clean(x.label)},
                            {"allocator", clean(x.allocator)},
                            {"temporaries", x.temporaries},
                            {"bytes", x.bytes},
                            {"peak_held_bytes", x.peak_held},
                            {"allocations_left", x.left},
                            {"allocations_left_avoidable", x.left_avoidable}});
  }
  j["bounded"] = {{"trace_events_dropped", r.trace_dropped},
                  {"allocations_under_other_name", r.names_dropped},
                  {"series_columns", r.series.size()},
                  {"seconds_per_series_column", r.series_width},
                  {"peak_events_awaiting_verdict", r.peak_pending}};
  if (!r.settings.pick.empty()) {
    std::vector<std::string> labels, not_seen;
    for (const std::string& l : r.picked.labels) labels.push_back(clean(l));
    for (const std::string& l : r.picked.not_seen) not_seen.push_back(clean(l));
    j["picked"] = {{"labels", labels},
                   {"not_seen", not_seen},
                   {"temporaries", r.picked.temporaries},
                   {"capacity_bytes", r.picked.capacity},
                   {"first_round_fallbacks", r.picked.first_round_fallbacks},
                   {"fallbacks", r.picked.fallbacks},
                   {"regrows", r.picked.regrows},
                   {"allocations_avoided", r.picked.allocations_avoided}};
  }
  return j.dump(1) + "\n";
}

namespace {

// Appends a number for SVG and JSON text: at most `decimals` decimals (0 to 6), no trailing
// zeros, "0" for a value that is not finite or too large to draw. Written by hand: printf
// follows the program's locale (a decimal comma), and std::to_chars for double needs GCC 11.
void append_num(std::string& out, double v, int decimals = 1) {
  long long scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  if (!std::isfinite(v) || std::fabs(v) * static_cast<double>(scale) >= 9e18) {
    out += '0';
    return;
  }
  long long q = std::llround(v * static_cast<double>(scale));
  if (q < 0) {
    out += '-';
    q = -q;
  }
  out += std::to_string(q / scale);
  std::string fraction = std::to_string(q % scale);
  if (fraction == "0") return;
  fraction.insert(0, static_cast<std::size_t>(decimals) - fraction.size(), '0');
  while (fraction.back() == '0') fraction.pop_back();
  out += '.';
  out += fraction;
}

std::string num(double v, int decimals = 1) {
  std::string t;
  append_num(t, v, decimals);
  return t;
}

// A tick label for bytes: whole units where the tick is (1.5 MiB, 256 KiB, 0 B).
std::string tick_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return num(b, 2) + " " + units[u];
}

// A round step for about `n` ticks over [0, span]: 1, 2 or 5 times a power of ten.
double nice_step(double span, int n) {
  const double raw = span / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0}) {
    if (f * p >= raw) return f * p;
  }
  return 10 * p;
}

// A tick label for seconds, in the unit the step reads best in.
std::string tick_seconds(double t, double step) {
  if (step >= 1) return num(t, 0) + " s";
  if (step >= 1e-3) return num(t * 1e3, step >= 0.01 ? 0 : 1) + " ms";
  return num(t * 1e6, step >= 1e-5 ? 0 : 1) + " us";
}

}  // namespace

namespace {

// What was held over one pixel column of the picture (or any stretch of time): the least and
// the most of the temporaries and of everything.
struct Band {
  std::uint64_t tmin = ~std::uint64_t{0}, tmax = 0, hmin = ~std::uint64_t{0}, hmax = 0;
  void add(std::uint64_t t_lo, std::uint64_t t_hi, std::uint64_t h_lo, std::uint64_t h_hi) {
    tmin = std::min(tmin, t_lo);
    tmax = std::max(tmax, t_hi);
    hmin = std::min(hmin, h_lo);
    hmax = std::max(hmax, h_hi);
  }
};

// The series in `bins` columns of equal time over [0, tmax]: each column's least and most, from
// the series' columns and the constant stretches between them (nothing held before the first).
std::vector<Band> bands(const Results& r, double tmax, std::size_t bins) {
  std::vector<Band> out(bins);
  const double w = tmax / static_cast<double>(bins);
  const auto cover = [&](double a, double e, std::uint64_t t_lo, std::uint64_t t_hi,
                         std::uint64_t h_lo, std::uint64_t h_hi) {
    if (e < a) e = a;
    auto first = static_cast<std::size_t>(std::max(0.0, std::floor(a / w)));
    auto last = static_cast<std::size_t>(std::max(0.0, std::ceil(e / w)));
    first = std::min(first, bins - 1);
    last = std::max(first + 1, std::min(last, bins));
    for (std::size_t b = first; b < last; ++b) out[b].add(t_lo, t_hi, h_lo, h_hi);
  };
  double at = 0;
  std::uint64_t t = 0, h = 0;  // held since `at`
  for (const SeriesColumn& c : r.series) {
    if (c.begin > at) cover(at, c.begin, t, t, h, h);
    cover(c.begin, c.end, c.temporaries_min, c.temporaries_max, c.held_min, c.held_max);
    at = c.end;
    t = c.temporaries_last;
    h = c.held_last;
  }
  if (tmax > at) cover(at, tmax, t, t, h, h);
  for (Band& b : out) {  // a column nothing covered (none, unless rounding): what came before
    if (b.hmin == ~std::uint64_t{0}) b = Band{0, 0, 0, 0};
  }
  return out;
}

// The subtitle's second line: the first sites, each with the allocations it avoids alone and
// the buffer it and those above it need, as many as the line has room for.
std::string sites_line(const Results& r, std::size_t room) {
  std::string line = "Call sites: avoided alone, buffer with those above:";
  std::size_t shown = 0;
  for (const Site& x : r.sites) {
    if (x.inside_kokkos) break;  // they come last: no adopter can change them
    std::string label = clean(x.label);
    if (label.size() > 28) label = label.substr(0, 25) + "...";
    const std::string part = " " + std::to_string(shown + 1) + ". '" + label + "' " +
                             std::to_string(x.allocations_avoided) + ", " +
                             human_bytes(static_cast<double>(x.cumulative_capacity)) + ";";
    if (line.size() + part.size() + 10 > room) break;
    line += part;
    ++shown;
  }
  if (shown == 0) return std::string();
  line.pop_back();
  const std::size_t rest = r.sites.size() - shown + r.sites_left_out;
  if (rest != 0) line += " (" + std::to_string(rest) + " more)";
  return line;
}

}  // namespace

std::string format_svg(const Results& r) {
  const double width = 960, height = 480, left = 90, right = 40, top = 110, bottom = 60;
  const double pw = width - left - right, ph = height - top - bottom;
  double tmax = r.seconds;
  std::uint64_t ymax_raw = 1;
  for (const SeriesColumn& c : r.series) {
    tmax = std::max(tmax, c.end);
    ymax_raw = std::max<std::uint64_t>(ymax_raw, c.held_max);
  }
  ymax_raw = std::max<std::uint64_t>(ymax_raw, r.capacity());
  if (tmax <= 0) tmax = 1e-6;
  // A round top for the y axis: 1, 2, 2.5, 4, 5, 8 or 10 times a power of 1024 bytes, so the
  // five ticks read as whole KiB or MiB.
  const double raw = static_cast<double>(ymax_raw) * 1.05;
  double unit = 1;
  while (unit * 1024 <= raw) unit *= 1024;
  double ymax = unit;
  for (double f : {1.0,  2.0,  2.5,   4.0,   5.0,   8.0,   10.0,  20.0,  25.0,   40.0,
                   50.0, 80.0, 100.0, 200.0, 250.0, 400.0, 500.0, 800.0, 1000.0, 1024.0}) {
    if (f * unit >= raw) {
      ymax = f * unit;
      break;
    }
  }
  const auto X = [&](double t) { return left + pw * t / tmax; };
  const auto Y = [&](double b) { return top + ph * (1.0 - b / ymax); };
  std::string o;
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" +
       num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += "<text x=\"" + num(left) +
       "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">Memory held over time "
       "(kbuf-advisor)</text>\n";
  o += "<text x=\"" + num(left) + "\" y=\"44\" fill=\"#444\">" + std::to_string(r.allocations) +
       " allocations, " + xml_escape(human_bytes(static_cast<double>(r.bytes))) +
       "; kbuf would serve " + std::to_string(r.served()) + " temporaries from a buffer of " +
       xml_escape(human_bytes(static_cast<double>(r.capacity()))) + " and avoid " +
       std::to_string(r.allocations_avoided()) + " allocations</text>\n";
  // About 6.2 px per character of 11-px text.
  const std::string sites = sites_line(r, static_cast<std::size_t>((width - left - 10) / 6.2));
  if (!sites.empty()) {
    o += "<text x=\"" + num(left) + "\" y=\"62\" fill=\"#444\" font-size=\"11\">" +
         xml_escape(sites) + "</text>\n";
  }
  // Grid and axes: five byte ticks, round time ticks.
  for (int i = 0; i <= 5; ++i) {
    const double b = ymax * i / 5, y = Y(b);
    o += "<line x1=\"" + num(left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left + pw) +
         "\" y2=\"" + num(y) + "\" stroke=\"#ddd\"/>\n";
    o += "<text x=\"" + num(left - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" +
         xml_escape(tick_bytes(b)) + "</text>\n";
  }
  const double step = nice_step(tmax, 6);
  for (int i = 0; i * step <= tmax * (1 + 1e-9); ++i) {
    const double t = i * step, x = X(t);
    o += "<line x1=\"" + num(x) + "\" y1=\"" + num(top + ph) + "\" x2=\"" + num(x) + "\" y2=\"" +
         num(top + ph + 5) + "\" stroke=\"#888\"/>\n";
    o += "<text x=\"" + num(x) + "\" y=\"" + num(top + ph + 18) + "\" text-anchor=\"middle\">" +
         tick_seconds(t, step) + "</text>\n";
  }
  o += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(height - 14) +
       "\" text-anchor=\"middle\">time since Kokkos::initialize</text>\n";
  o += "<text transform=\"translate(16," + num(top + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">bytes held</text>\n";
  // What was held, per pixel column: everything (blue) with the temporaries (orange) at the
  // bottom, so that they read against the buffer's line. Solid up to the least held in the
  // column, light from there to the most: a column in which nothing changed is one value, and
  // no peak is drawn where it was not held.
  const auto bins = static_cast<std::size_t>(pw);
  const std::vector<Band> band = bands(r, tmax, bins);
  const auto area = [&](std::uint64_t Band::*value, const char* fill) {
    std::string d = "M" + num(left) + "," + num(Y(0));
    double last_y = Y(0);
    for (std::size_t b = 0; b < bins; ++b) {
      const double y = Y(static_cast<double>(band[b].*value));
      if (b != 0 && y == last_y) continue;
      const double x = left + pw * static_cast<double>(b) / static_cast<double>(bins);
      for (const double yy : {last_y, y}) {
        d += " L";
        append_num(d, x);
        d += ',';
        append_num(d, yy);
      }
      last_y = y;
    }
    d += " L" + num(left + pw) + "," + num(last_y) + " L" + num(left + pw) + "," + num(Y(0)) + " Z";
    o += "<path d=\"" + d + "\" fill=\"" + fill + "\" stroke=\"none\"/>\n";
  };
  area(&Band::hmax, "#b3cbe3");
  area(&Band::hmin, "#4e79a7");
  area(&Band::tmax, "#f8c99e");
  area(&Band::tmin, "#f28e2b");
  // The replay's buffer.
  if (r.capacity() != 0) {
    const double y = Y(static_cast<double>(r.capacity()));
    o += "<line x1=\"" + num(left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left + pw) +
         "\" y2=\"" + num(y) + "\" stroke=\"#c00000\" stroke-width=\"1.5\" " +
         "stroke-dasharray=\"6,4\"/>\n";
  }
  // Region boundaries: starts of the outermost regions of the first thread, each a dotted line.
  // Labels go in three rows at the top of the plot, each where its row has room (a run of one
  // region's starts is labelled once), so that none overprints another.
  const bool dense = r.markers.size() > 24;
  const double char_width = 5.6, row_height = 11;  // 9-px text
  double row_end[3] = {-1e9, -1e9, -1e9};
  std::string last_label;
  for (const Marker& m : r.markers) {
    const double x = X(m.seconds);
    o += "<line x1=\"" + num(x) + "\" y1=\"" + num(top) + "\" x2=\"" + num(x) + "\" y2=\"" +
         num(top + ph) + "\" stroke=\"#59a14f\" stroke-width=\"1\" stroke-dasharray=\"2,3\"" +
         (dense ? " stroke-opacity=\"0.5\"" : "") + "/>\n";
    std::string name = clean(m.name);
    if (name == last_label) continue;
    if (name.size() > 24) name = name.substr(0, 21) + "...";
    const double room = left + pw - 2 - (x + 2);
    const double text_width = char_width * static_cast<double>(name.size());
    if (text_width > room) continue;
    for (int row = 0; row < 3; ++row) {
      if (x + 2 < row_end[row] + 4) continue;
      const double y = top + 10 + row_height * row;
      o += "<text class=\"region\" x=\"" + num(x + 2) + "\" y=\"" + num(y) + "\" data-width=\"" +
           num(text_width) +
           "\" font-size=\"9\" fill=\"#2f6f2a\" stroke=\"white\" stroke-width=\"3\" "
           "paint-order=\"stroke\">" +
           xml_escape(name) + "</text>\n";
      row_end[row] = x + 2 + text_width;
      last_label = clean(m.name);
      break;
    }
  }
  o += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(pw) + "\" height=\"" +
       num(ph) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  // Legend.
  const double lx = left, ly = 86;
  o += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 9) +
       "\" width=\"10\" height=\"10\" fill=\"#f28e2b\"/><text x=\"" + num(lx + 14) + "\" y=\"" +
       num(ly) + "\">temporaries</text>\n";
  o += "<rect x=\"" + num(lx + 100) + "\" y=\"" + num(ly - 9) +
       "\" width=\"10\" height=\"10\" fill=\"#4e79a7\"/><text x=\"" + num(lx + 114) + "\" y=\"" +
       num(ly) + "\">other allocations</text>\n";
  o += "<rect x=\"" + num(lx + 236) + "\" y=\"" + num(ly - 9) +
       "\" width=\"5\" height=\"10\" fill=\"#f8c99e\"/><rect x=\"" + num(lx + 241) + "\" y=\"" +
       num(ly - 9) + "\" width=\"5\" height=\"10\" fill=\"#b3cbe3\"/><text x=\"" + num(lx + 250) +
       "\" y=\"" + num(ly) + "\">lighter: held for part of a pixel's time</text>\n";
  o += "<line x1=\"" + num(lx + 490) + "\" y1=\"" + num(ly - 4) + "\" x2=\"" + num(lx + 512) +
       "\" y2=\"" + num(ly - 4) +
       "\" stroke=\"#c00000\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/><text x=\"" +
       num(lx + 518) + "\" y=\"" + num(ly) + "\">kbuf buffer (the replay's)</text>\n";
  if (!r.markers.empty()) {
    std::string note = "region starts";
    if (r.outer_regions > r.markers.size()) {
      note +=
          " (" + std::to_string(r.markers.size()) + " of " + std::to_string(r.outer_regions) + ")";
    }
    o += "<line x1=\"" + num(lx + 690) + "\" y1=\"" + num(ly - 9) + "\" x2=\"" + num(lx + 690) +
         "\" y2=\"" + num(ly + 1) +
         "\" stroke=\"#59a14f\" stroke-width=\"1.5\" stroke-dasharray=\"2,3\"/><text x=\"" +
         num(lx + 696) + "\" y=\"" + num(ly) + "\" fill=\"#2f6f2a\">" + xml_escape(note) +
         "</text>\n";
  }
  o += "</svg>\n";
  return o;
}

namespace {

// A JSON string literal of `s` (already UTF-8: clean()).
void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += printf_string("\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

std::string format_trace(const Results& r) {
  // Written directly (a trace holds up to KBUF_ADVISOR_TRACE_EVENTS events): Chrome's
  // trace-event format, JSON object form. Times in microseconds since Kokkos::initialize.
  std::string o;
  o.reserve(128 * (r.trace.size() + r.series.size()) + 1024);
  o += "{\"traceEvents\":[\n";
  o += R"({"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"kbuf-advisor"}})";
  std::uint32_t threads = 0;
  for (const TraceEvent& e : r.trace) threads = std::max(threads, e.thread + 1);
  for (std::uint32_t t = 0; t < threads; ++t) {
    o += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(t) +
         ",\"args\":{\"name\":\"host thread " + std::to_string(t) + "\"}}";
    o += ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(t) +
         ",\"args\":{\"sort_index\":" + std::to_string(t) + "}}";
  }
  static const char* const categories[] = {"kernel", "region", "deep_copy", "fence"};
  std::vector<std::string> names;  // each cleaned once
  names.reserve(r.names.size());
  for (const std::string& n : r.names) names.push_back(clean(n));
  for (const TraceEvent& e : r.trace) {
    o += ",\n{\"name\":";
    json_string(o, names.at(e.name));
    o += ",\"cat\":\"";
    o += categories[e.kind];
    o += "\",\"ph\":\"X\",\"ts\":";
    append_num(o, e.begin_us, 3);
    o += ",\"dur\":";
    append_num(o, std::max(0.0, e.duration_us), 3);
    o += ",\"pid\":1,\"tid\":";
    o += std::to_string(e.thread);
    if (e.kind == TraceEvent::deep_copy) {
      o += ",\"args\":{\"bytes\":" + std::to_string(e.bytes) + ",\"to\":";
      json_string(o, names.at(e.to));
      o += ",\"from\":";
      json_string(o, names.at(e.from));
      o += "}";
    }
    o += "}";
  }
  // Per column of the series, the most held in it from its start and the last value from its
  // end: between columns, what was held.
  const auto counter = [&](double seconds, std::uint64_t temporaries, std::uint64_t held) {
    o += ",\n{\"name\":\"bytes held\",\"cat\":\"memory\",\"ph\":\"C\",\"ts\":";
    append_num(o, seconds * 1e6, 3);
    o += ",\"pid\":1,\"args\":{\"temporaries\":";
    o += std::to_string(temporaries);
    o += ",\"other allocations\":";
    o += std::to_string(held - std::min(held, temporaries));
    o += "}}";
  };
  for (const SeriesColumn& c : r.series) {
    counter(c.begin, c.temporaries_max, c.held_max);
    counter(c.end, c.temporaries_last, c.held_last);
  }
  o += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"tool\":\"kbuf-advisor\",";
  o += "\"events_left_out\":" + std::to_string(r.trace_dropped) + ",\"note\":";
  json_string(o, r.trace_dropped == 0
                     ? std::string("every kernel, region, fence and deep copy")
                     : "the first " + std::to_string(r.trace.size()) +
                           " kernels, regions, fences and deep copies; " +
                           std::to_string(r.trace_dropped) +
                           " later ones left out (KBUF_ADVISOR_TRACE_EVENTS); the bytes held "
                           "cover the whole run");
  o += "}}\n";
  return o;
}

std::string write_outputs(const Results& r, const std::string& dir) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return "cannot make the output folder '" + dir + "': " + std::strerror(errno);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return "the output path '" + dir + "' is not a folder";
  }
  const std::pair<const char*, std::string> files[] = {
      {"kbuf-advisor.json", format_json(r)},
      {"kbuf-advisor.svg", format_svg(r)},
      {"kbuf-advisor.trace.json", format_trace(r)}};
  for (const auto& [name, text] : files) {
    const std::string path = dir + "/" + name;
    errno = 0;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) return "cannot write '" + path + "': " + std::strerror(errno != 0 ? errno : EACCES);
    f << text;
    f.close();
    if (!f) return "cannot write '" + path + "': " + std::strerror(errno != 0 ? errno : EIO);
  }
  return std::string();
}

}  // namespace kbuf_advisor
