// kbuf-advisor per call site: the buffer each site needs alone and together with every site
// above it, checked against real kbuf::BufferAllocators that serve those sites only, as a
// program that adopted them would; kbuf's own records attributed to their sites; the memory
// series and the picture drawn from what was held.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>
#include <kbuf_advisor/advisor.hpp>

#include "advisor_test_support.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace kbuf_advisor_test;  // Advisor, Results, Settings, address() ...
using Alloc = kbuf::BufferAllocator<Kokkos::HostSpace>;

// One event of a program: a temporary of `site` taken (`bytes`) or the newest one freed, or a
// kernel.
struct Op {
  enum Kind { take, free, kernel } kind;
  int site = 0;
  std::size_t bytes = 0;
};
const char* const site_names[] = {"halo::send", "halo::recv", "neighbor::list"};

// Rounds of nested temporaries of three sites (each round one scope's worth: everything taken is
// freed by its end, newest first), a kernel after each take or free. Blocks of ten identical
// rounds, as time steps repeat themselves; the sizes grow after the first half, so the buffers
// grow in the middle of a run.
std::vector<Op> program(unsigned seed, int blocks) {
  std::vector<Op> ops;
  for (int block = 0; block < blocks; ++block) {
    std::mt19937 rng(seed * 1000 + static_cast<unsigned>(block));
    std::uniform_int_distribution<int> coin(0, 9), site(0, 2);
    std::uniform_int_distribution<std::size_t> small(1, 3000);
    const std::size_t grow = block >= blocks / 2 ? 3 : 1;
    std::vector<Op> round;
    int depth = 0;
    for (int step = 0; step < 6; ++step) {
      if (depth != 0 && coin(rng) < 4) {
        round.push_back(Op{Op::free});
        --depth;
      } else {
        const int s = site(rng);
        const std::size_t n = (s == 2 ? 8 * small(rng) : small(rng)) * grow;
        round.push_back(Op{Op::take, s, n});
        ++depth;
      }
      round.push_back(Op{Op::kernel});
    }
    for (; depth != 0; --depth) round.push_back(Op{Op::free});
    for (int r = 0; r < 10; ++r) ops.insert(ops.end(), round.begin(), round.end());
  }
  return ops;
}

Results advise(const std::vector<Op>& ops, Settings settings = Settings{}) {
  Advisor a(settings);
  std::vector<std::pair<int, std::uintptr_t>> live;  // site, address
  std::uintptr_t next = 1;
  for (const Op& op : ops) {
    if (op.kind == Op::kernel) {
      a.end_kernel(a.begin_kernel("k"));
    } else if (op.kind == Op::take) {
      a.allocate("Host", site_names[op.site], address(next), op.bytes);
      live.emplace_back(op.site, next++);
    } else {
      a.deallocate("Host", site_names[live.back().first], address(live.back().second), 0);
      live.pop_back();
    }
  }
  return a.finish();
}

// What a real allocator serving the sites in `adopted` (the others plain allocations) did.
struct Real {
  std::size_t capacity = 0;  // the capacity it starts the next round with
  std::int64_t avoided = 0;
  std::uint64_t first_round_fallbacks = 0;
};

Real adopt(const std::vector<Op>& ops, const std::set<std::string>& adopted) {
  Alloc alloc(0, Alloc::default_alignment);
  std::vector<std::pair<bool, Alloc::Checkpoint>> live;
  Real real;
  for (const Op& op : ops) {
    if (op.kind == Op::take) {
      const bool mine = adopted.count(site_names[op.site]) != 0;
      live.emplace_back(mine, alloc.checkpoint());
      if (mine) {
        const std::size_t before = alloc.statistics().fallbacks;
        (void)alloc.allocate<unsigned char*>(op.bytes);
        if (alloc.statistics().regrows == 0) {
          real.first_round_fallbacks += alloc.statistics().fallbacks - before;
        }
      }
    } else if (op.kind == Op::free) {
      if (live.back().first) alloc.reset(live.back().second);
      live.pop_back();
    }
  }
  const kbuf::Statistics s = alloc.statistics();
  real.avoided = static_cast<std::int64_t>(s.temporaries) - static_cast<std::int64_t>(s.regrows);
  real.capacity = alloc.high_water_mark() > alloc.capacity()
                      ? kbuf::buffer_size(alloc.high_water_mark())
                      : alloc.capacity();
  return real;
}

// The "x,y" pairs of an SVG path's d attribute: each run of digits and dots followed by a comma
// and a second such run.
std::vector<std::pair<double, double>> points_of(const std::string& d) {
  const auto number_char = [](char c) { return (c >= '0' && c <= '9') || c == '.'; };
  std::vector<std::pair<double, double>> points;
  std::size_t i = 0;
  while (i < d.size()) {
    if (!number_char(d[i])) {
      ++i;
      continue;
    }
    std::size_t x_end = i;
    while (x_end < d.size() && number_char(d[x_end])) ++x_end;
    std::size_t y_end = x_end + 1;
    while (y_end < d.size() && number_char(d[y_end])) ++y_end;
    if (x_end < d.size() && d[x_end] == ',' && y_end > x_end + 1) {
      points.emplace_back(std::stod(d.substr(i, x_end - i)),
                          std::stod(d.substr(x_end + 1, y_end - x_end - 1)));
      i = y_end;
    } else {
      i = x_end;
    }
  }
  return points;
}

// The number in attribute `name` of an SVG element's opening tag.
double attribute_of(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const std::size_t at = tag.find(key);
  REQUIRE(at != std::string::npos);
  return std::stod(tag.substr(at + key.size()));
}

}  // namespace

TEST_CASE("per call site: alone and with the sites above it, as real allocators serving them do") {
  for (unsigned seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    const std::vector<Op> ops = program(seed, 8);
    const Results r = advise(ops);
    REQUIRE(!r.sites.empty());
    CHECK(r.site_stream_temporaries == r.served());
    std::set<std::string> above;
    for (std::size_t i = 0; i < r.sites.size(); ++i) {
      const kbuf_advisor::Site& site = r.sites[i];
      CAPTURE(site.label);
      if (i != 0) CHECK(site.allocations_avoided <= r.sites[i - 1].allocations_avoided);
      const Real alone = adopt(ops, {site.label});
      CHECK(site.capacity == alone.capacity);
      CHECK(site.allocations_avoided == alone.avoided);
      CHECK(site.fallbacks == alone.first_round_fallbacks);
      above.insert(site.label);
      const Real together = adopt(ops, above);
      CHECK(site.cumulative_capacity == together.capacity);
      CHECK(site.cumulative_allocations_avoided == together.avoided);
      CHECK(site.first_round_fallbacks == together.first_round_fallbacks);
    }
    // Every site together is the whole replay.
    CHECK(r.sites.back().cumulative_capacity == r.capacity());
    CHECK(r.sites.back().cumulative_allocations_avoided == r.allocations_avoided());
  }
}

TEST_CASE("a site's temporary freed under another site's is released at its own free alone") {
  Advisor a(Settings{});
  for (int round = 0; round < 3; ++round) {
    // "big" outlives the first "small" (held until it goes in the whole replay), so the second
    // "small" lands above both there; alone, it reuses the first one's room.
    a.allocate("Host", "small", address(1), 4000);
    a.allocate("Host", "big", address(2), 100000);
    a.deallocate("Host", "small", address(1), 4000);
    allocate_and_free(a, "Host", "small", 3, 4000);
    a.deallocate("Host", "big", address(2), 100000);
  }
  const Results r = a.finish();
  REQUIRE(r.sites.size() == 2);
  const auto small = std::find_if(r.sites.begin(), r.sites.end(),
                                  [](const kbuf_advisor::Site& s) { return s.label == "small"; });
  REQUIRE(small != r.sites.end());
  CHECK(small->capacity == kbuf::buffer_size(4000));
  // Whole: 4000 and 100000 bytes each padded to 64, then 4000.
  CHECK(r.capacity() == kbuf::buffer_size(4032 + 100032 + 4000));
}

TEST_CASE("repeated rounds replayed at once give the numbers of replaying them one by one") {
  // The first site's replay with the sites above it (none) comes from the kept stream, repeats
  // replayed at once; its replay alone went one temporary at a time as they came.
  const std::vector<Op> ops = program(7, 12);
  const Results r = advise(ops);
  REQUIRE(!r.sites.empty());
  const kbuf_advisor::Site& first = r.sites.front();
  CHECK(first.cumulative_capacity == first.capacity);
  CHECK(first.cumulative_allocations_avoided == first.allocations_avoided);
  CHECK(first.first_round_fallbacks == first.fallbacks);
  // A stream cut short says so, and covers the start of the run.
  Settings s;
  s.site_events = 40;
  const Results cut = advise(ops, s);
  CHECK(cut.site_stream_temporaries < cut.served());
  CHECK(cut.site_stream_temporaries > 0);
  CHECK(kbuf_advisor::format_report(cut).find("KBUF_ADVISOR_SITE_EVENTS=40") != std::string::npos);
  // And past KBUF_ADVISOR_SITES, the rest are counted, not listed.
  s = Settings{};
  s.sites = 1;
  const Results one = advise(ops, s);
  CHECK(one.sites.size() == 1);
  CHECK(one.sites_left_out == r.sites.size() - 1);
}

TEST_CASE("the sites in kbuf-advisor.json: the fixed keys in their order, most avoidable first") {
  const Results r = advise(program(3, 4));
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(kbuf_advisor::format_json(r));
  const std::vector<std::string> keys = {"space",
                                         "label",
                                         "count",
                                         "bytes",
                                         "allocations_avoided",
                                         "capacity_bytes",
                                         "cumulative_capacity_bytes",
                                         "first_round_fallbacks",
                                         "inside_kokkos"};
  REQUIRE(j.at("sites").size() == r.sites.size());
  for (std::size_t i = 0; i < r.sites.size(); ++i) {
    const auto& e = j.at("sites")[i];
    std::vector<std::string> seen;
    for (const auto& item : e.items()) seen.push_back(item.key());
    CHECK(seen == keys);
    CHECK(e.at("label") == r.sites[i].label);
    CHECK(e.at("cumulative_capacity_bytes") == r.sites[i].cumulative_capacity);
  }
  // The 0.5 fields stay.
  for (const char* k : {"allocations", "deallocations", "bytes", "labels", "kbuf"}) {
    CHECK(j.contains(k));
  }
}

TEST_CASE("kbuf's records by label: what was adopted, and what the program still allocates") {
  Advisor a(Settings{});
  // The allocator "halo" serves "send_buffer" (its buffer, a fallback, then its records); the
  // program still allocates "send_buffer" outside the scopes and "recv_buffer" itself.
  kbuf_fallback_temporary(a, "halo", "send_buffer", 1, 800);
  a.allocate("Host", "halo::buffer", address(2), 4096);
  for (int step = 0; step < 5; ++step) {
    a.allocate("kbuf:halo", "send_buffer", address(2), 800);
    allocate_and_free(a, "Host", "recv_buffer", 3, 500);
    a.deallocate("kbuf:halo", "send_buffer", address(2), 800);
  }
  allocate_and_free(a, "Host", "send_buffer", 4, 800);
  allocate_and_free(a, "kbuf:other", "temporary", 5, 16);  // no buffer seen: its own space
  a.deallocate("Host", "halo::buffer", address(2), 4096);
  const Results r = a.finish();
  REQUIRE(r.adopted.size() == 2);
  const kbuf_advisor::Adopted& send = r.adopted[0];
  CHECK(send.label == "send_buffer");
  CHECK(send.space == "Host");
  CHECK(send.allocator == "kbuf:halo");
  CHECK(send.temporaries == 6);
  CHECK(send.bytes == 4800);
  CHECK(send.peak_held == 800);
  CHECK(send.held == 0);
  CHECK(send.left == 1);
  CHECK(r.adopted[1].space == "kbuf:other");
  CHECK(r.adopted[1].label == "temporary");
  // Never allocations, never sites; the allocator's own buffers are no sites either.
  CHECK(r.allocations == 8);
  for (const kbuf_advisor::Site& s : r.sites) {
    CHECK(s.label != "halo::buffer");
    CHECK(s.label != "halo::fallback");
  }
  const std::string report = kbuf_advisor::format_report(r);
  CHECK(report.find("== Adopted") != std::string::npos);
  CHECK(report.find("'send_buffer' [Host] (kbuf:halo)") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(kbuf_advisor::format_json(r));
  CHECK(j.at("adopted")[0].at("temporaries") == 6);
  CHECK(j.at("adopted")[0].at("allocations_left") == 1);
}

TEST_CASE("the memory series: a peak is drawn only where it was held") {
  // Many short events first (a series thins out as it fills), then four peaks of 1 MiB held
  // for an instant, each followed by 10 ms with nothing held.
  Advisor a(Settings{});
  for (std::uintptr_t i = 0; i < 2500; ++i) {
    allocate_and_free(a, "Host", "tiny", 1, 64);
  }
  for (int peak = 0; peak < 4; ++peak) {
    a.allocate("Host", "peak", address(2), 1 << 20);
    a.deallocate("Host", "peak", address(2), 1 << 20);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  allocate_and_free(a, "Host", "end", 3, 64);
  const Results r = a.finish();
  REQUIRE(!r.series.empty());
  double peak_time = 0;
  for (const kbuf_advisor::SeriesColumn& c : r.series) {
    CHECK(c.held_min <= c.held_last);
    CHECK(c.held_last <= c.held_max);
    CHECK(c.temporaries_min <= c.temporaries_max);
    if (c.held_max >= (1u << 20)) peak_time += c.end - c.begin;
  }
  // Each peak in one column, or two where its allocation and its free fall in neighbours.
  CHECK(peak_time <= 8 * r.series_width * (1 + 1e-9));
  CHECK(r.series.back().held_last == 0);
  // The picture: the top (1 MiB) is drawn over at most a few pixels of its 830 per peak.
  const std::string svg = kbuf_advisor::format_svg(r);
  std::vector<std::vector<std::pair<double, double>>> paths;
  double top = 1e9;
  const std::string open = "<path d=\"";
  for (std::size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at)) {
    at += open.size();
    const std::size_t end = svg.find('"', at);
    REQUIRE(end != std::string::npos);
    paths.push_back(points_of(svg.substr(at, end - at)));
    for (const auto& p : paths.back()) top = std::min(top, p.second);
    at = end;
  }
  double at_top = 0;  // the widest a path is drawn at the top
  for (const auto& pts : paths) {
    double width = 0;
    for (std::size_t i = 1; i < pts.size(); ++i) {
      if (pts[i - 1].second <= top + 1 && pts[i].second <= top + 1) {
        width += pts[i].first - pts[i - 1].first;
      }
    }
    at_top = std::max(at_top, width);
  }
  CHECK(at_top > 0);
  CHECK(at_top <= 4 * 3);
}

TEST_CASE("region labels in the picture never overprint one another") {
  Advisor a(Settings{});
  const char* names[] = {"Cabana::Gather", "Cabana::Scatter", "neighbor list rebuild",
                         "force",          "integrate",       "output"};
  for (int i = 0; i < 40; ++i) {
    a.push_region(names[i % 6]);
    allocate_and_free(a, "Host", "tmp", 1, 64);
    a.pop_region();
    if (i % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const Results r = a.finish();
  const std::string svg = kbuf_advisor::format_svg(r);
  struct Box {
    double x0, x1, y;
  };
  std::vector<Box> boxes;
  const std::string open = "<text class=\"region\" ";
  for (std::size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const std::string tag = svg.substr(at, svg.find('>', at) - at);
    const double x = attribute_of(tag, "x");
    boxes.push_back(Box{x, x + attribute_of(tag, "data-width"), attribute_of(tag, "y")});
  }
  CHECK(boxes.size() >= 3);
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    CHECK(boxes[i].x1 <= 960 - 40);  // inside the plot
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      const bool apart =
          boxes[i].y != boxes[j].y || boxes[i].x1 <= boxes[j].x0 || boxes[j].x1 <= boxes[i].x0;
      CHECK(apart);
    }
  }
}

TEST_CASE("a site Kokkos itself allocates is marked inside Kokkos and listed after the others") {
  Advisor a(Settings{});
  // BinSort's temporaries avoid the most allocations, the program's own site fewer.
  for (std::uintptr_t step = 0; step < 10; ++step) {
    a.allocate("Host", "Kokkos::SortImpl::BinSortFunctor::sorted_values", address(1), 4000);
    a.allocate("Host", "Kokkos::SortImpl::BinSortFunctor::bin_count", address(2), 400);
    a.deallocate("Host", "Kokkos::SortImpl::BinSortFunctor::bin_count", address(2), 400);
    a.deallocate("Host", "Kokkos::SortImpl::BinSortFunctor::sorted_values", address(1), 4000);
    if (step % 2 == 0) allocate_and_free(a, "Host", "ArborX::permute", 3, 800);
  }
  const Results r = a.finish();
  REQUIRE(r.sites.size() == 3);
  CHECK(r.sites[0].label == "ArborX::permute");
  CHECK_FALSE(r.sites[0].inside_kokkos);
  CHECK(r.sites[0].allocations_avoided < r.sites[1].allocations_avoided);
  for (std::size_t i = 1; i < 3; ++i) {
    CAPTURE(r.sites[i].label);
    CHECK(r.sites[i].label.rfind("Kokkos::SortImpl::", 0) == 0);
    CHECK(r.sites[i].inside_kokkos);
  }
  const std::string report = kbuf_advisor::format_report(r);
  const std::size_t change = report.find("== Call sites to change first");
  const std::size_t kokkos = report.find("== Call sites inside Kokkos");
  REQUIRE(change != std::string::npos);
  REQUIRE(kokkos != std::string::npos);
  CHECK(change < kokkos);
  CHECK(report.find("'ArborX::permute'", change) < kokkos);
  CHECK(report.find("'Kokkos::SortImpl::BinSortFunctor::sorted_values'", change) > kokkos);
  const nlohmann::json j = nlohmann::json::parse(kbuf_advisor::format_json(r));
  CHECK(j.at("sites")[0].at("inside_kokkos") == false);
  CHECK(j.at("sites")[1].at("inside_kokkos") == true);
  // Labels of Kokkos' algorithms and containers without the prefix.
  for (const char* label : {"duplicated_forces", "view_dc", "std_unique_tmp_view",
                            "UnorderedMap keys", "Kokkos::sort_by_key_via_sort::permute"}) {
    CAPTURE(label);
    CHECK(kbuf_advisor::inside_kokkos(label));
  }
  for (const char* label : {"Kokkos", "permute", "my::Kokkos::tmp", "view_dc2"}) {
    CAPTURE(label);
    CHECK_FALSE(kbuf_advisor::inside_kokkos(label));
  }
}

TEST_CASE("picked sites replayed together need the buffer real allocators serving them need") {
  for (unsigned seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    const std::vector<Op> ops = program(seed, 8);
    for (const std::set<std::string>& pick : {std::set<std::string>{"halo::send", "neighbor::list"},
                                              std::set<std::string>{"halo::recv", "neighbor::list"},
                                              std::set<std::string>{"halo::send", "halo::recv"}}) {
      Settings s;
      s.pick.assign(pick.begin(), pick.end());
      s.pick.push_back("never::seen");
      const Results r = advise(ops, s);
      const Real real = adopt(ops, pick);
      CHECK(r.picked.labels == std::vector<std::string>(pick.begin(), pick.end()));
      CHECK(r.picked.not_seen == std::vector<std::string>{"never::seen"});
      CHECK(r.picked.capacity == real.capacity);
      CHECK(r.picked.allocations_avoided == real.avoided);
      CHECK(r.picked.first_round_fallbacks == real.first_round_fallbacks);
      const std::string report = kbuf_advisor::format_report(r);
      CHECK(report.find("== Picked sites (KBUF_ADVISOR_PICK)") != std::string::npos);
      CHECK(report.find("never allocated, left out: 'never::seen'") != std::string::npos);
      const nlohmann::json j = nlohmann::json::parse(kbuf_advisor::format_json(r));
      CHECK(j.at("picked").at("capacity_bytes") == real.capacity);
      CHECK(j.at("picked").at("not_seen") == nlohmann::json::array({"never::seen"}));
    }
  }
  // Every site picked is the whole replay.
  Settings s;
  s.pick.assign(std::begin(site_names), std::end(site_names));
  const Results r = advise(program(1, 8), s);
  CHECK(r.picked.capacity == r.capacity());
  CHECK(r.picked.allocations_avoided == r.allocations_avoided());
  CHECK(r.picked.temporaries == r.served());
}
