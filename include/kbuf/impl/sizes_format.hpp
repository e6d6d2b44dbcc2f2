#ifndef KBUF_IMPL_SIZES_FORMAT_HPP
#define KBUF_IMPL_SIZES_FORMAT_HPP

/// @file
/// The sizes file's contents without files and without Kokkos: the table of saved sizes (one
/// entry per kind, memory space and label), its text form (format 1, docs/api.md), a strict
/// parser that refuses anything kbuf did not write whole, and the rules that combine two
/// entries under one label. Not part of the API.

#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <kbuf/impl/workspace_sizing.hpp>

namespace kbuf {
namespace Impl {

/// The format this kbuf writes and reads.
inline constexpr int sizes_format_version = 1;

/// What a parser accepts at most; beyond, the file is not one kbuf wrote.
inline constexpr std::size_t sizes_max_file_bytes = std::size_t{16} << 20;
inline constexpr std::size_t sizes_max_line_bytes = std::size_t{64} << 10;
inline constexpr std::size_t sizes_max_entries = 65536;
inline constexpr std::size_t sizes_max_label_bytes = 4096;
inline constexpr std::size_t sizes_max_levels = 256;
/// The largest number a file may hold (bytes or counts): 2^48, 256 TiB, more than any machine's
/// memory. A larger one is a damaged or hostile file, and sizes computed from numbers up to it
/// cannot overflow.
inline constexpr unsigned long long sizes_max_number = 1ull << 48;

/// The kind of an entry.
enum class SizeKind { allocator, workspace };

/// An entry's key: its kind, the memory space's name (`MemorySpace::name()`), and the label.
using SizeKey = std::tuple<SizeKind, std::string, std::string>;

/// One label's sizes: an allocator's high-water mark (`bytes`), or a workspace's needs.
struct SizeEntry {
  std::size_t bytes = 0;
  WorkspaceNeeds needs;
};

/// Saved sizes, sorted by key.
using SizesTable = std::map<SizeKey, SizeEntry>;

/// The word a kind is written as.
inline const char* kind_word(SizeKind k) noexcept {
  return k == SizeKind::allocator ? "allocator" : "workspace";
}

/// `a + b`, at most `sizes_max_number` (counts summed over many allocators or ranks).
inline std::size_t saturating_add(std::size_t a, std::size_t b) noexcept {
  const std::size_t m = static_cast<std::size_t>(sizes_max_number);
  return a >= m || b >= m - a ? m : a + b;
}

/// The largest need of a workspace's entry (0 for none).
inline std::size_t largest_need(const WorkspaceNeeds& n) noexcept {
  return n.levels.empty() ? 0 : n.levels.back().bytes;
}

/// Joins two levels lists (each increasing in bytes) into one: equal sizes add their arenas.
/// Beyond `sizes_max_levels` levels, the two neighbours closest in size merge into the larger
/// (a need is never recorded smaller than it was), until the list fits.
inline std::vector<NeedLevel> merge_levels(const std::vector<NeedLevel>& a,
                                           const std::vector<NeedLevel>& b) {
  std::vector<NeedLevel> out;
  out.reserve(a.size() + b.size());
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    NeedLevel next;
    if (j == b.size() || (i < a.size() && a[i].bytes < b[j].bytes)) {
      next = a[i++];
    } else if (i == a.size() || b[j].bytes < a[i].bytes) {
      next = b[j++];
    } else {
      next = NeedLevel{a[i].bytes, saturating_add(a[i].arenas, b[j].arenas)};
      ++i;
      ++j;
    }
    out.push_back(next);
  }
  while (out.size() > sizes_max_levels) {
    std::size_t best = 0;  // the pair (best, best + 1) with the smallest ratio of sizes
    long double best_ratio = 0;
    for (std::size_t k = 0; k + 1 < out.size(); ++k) {
      const long double r = static_cast<long double>(out[k + 1].bytes) /
                            static_cast<long double>(out[k].bytes == 0 ? 1 : out[k].bytes);
      if (k == 0 || r < best_ratio) {
        best = k;
        best_ratio = r;
      }
    }
    out[best + 1].arenas = saturating_add(out[best + 1].arenas, out[best].arenas);
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return out;
}

/// Combines what two allocators (or ranks) saved under one key into `into`: an allocator's
/// high-water mark is the larger one; a workspace's needs are the histogram of both rounds'
/// arenas together (its largest need is the larger one). What was measured at a round's own
/// slot size is kept where both rounds had the same slot size; otherwise the sizing goes by the
/// levels alone (the largest need above a slot sizes its lanes, which is never less).
inline void combine_entry(SizeKind kind, SizeEntry& into, const SizeEntry& from) {
  if (kind == SizeKind::allocator) {
    if (from.bytes > into.bytes) into.bytes = from.bytes;
    return;
  }
  WorkspaceNeeds& a = into.needs;
  const WorkspaceNeeds& b = from.needs;
  a.levels = merge_levels(a.levels, b.levels);
  a.arenas = saturating_add(a.arenas, b.arenas);
  if (a.measured_slot == b.measured_slot) {
    a.measured_above = saturating_add(a.measured_above, b.measured_above);
    if (b.measured_lane > a.measured_lane) a.measured_lane = b.measured_lane;
  } else {
    a.measured_slot = a.measured_above = a.measured_lane = 0;
  }
}

/// Adds every entry of `from` to `into`, combining entries under the same key.
inline void combine_tables(SizesTable& into, const SizesTable& from) {
  for (const auto& kv : from) {
    const auto made = into.emplace(kv.first, kv.second);
    if (!made.second) combine_entry(std::get<0>(kv.first), made.first->second, kv.second);
  }
}

/// A label or program name as one word of the file: printable ASCII other than `%` and the
/// space as it is, every other byte as `%XX` (so a file is plain ASCII, one entry a line).
inline std::string escape_word(const std::string& s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c > 0x20 && c < 0x7f && c != '%') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

/// The text of a sizes file holding `table`, written by `program`.
inline std::string format_sizes(const SizesTable& table, const std::string& program) {
  std::string out;
  out += "# kbuf sizes: what labelled allocators and workspaces learned (docs/api.md)\n";
  out += "kbuf-sizes " + std::to_string(sizes_format_version) + "\n";
  out += "program " + (program.empty() ? std::string("-") : escape_word(program)) + "\n";
  for (const auto& kv : table) {
    const SizeKind kind = std::get<0>(kv.first);
    out += kind_word(kind);
    out += ' ' + escape_word(std::get<1>(kv.first)) + ' ' + escape_word(std::get<2>(kv.first));
    if (kind == SizeKind::allocator) {
      out += ' ' + std::to_string(kv.second.bytes);
    } else {
      const WorkspaceNeeds& n = kv.second.needs;
      out += ' ' + std::to_string(n.arenas) + ' ' + std::to_string(n.measured_slot) + ' ' +
             std::to_string(n.measured_above) + ' ' + std::to_string(n.measured_lane);
      for (const NeedLevel& l : n.levels) {
        out += ' ' + std::to_string(l.bytes) + 'x' + std::to_string(l.arenas);
      }
    }
    out += '\n';
  }
  out += "end " + std::to_string(table.size()) + "\n";
  return out;
}

/// Why a text is not a sizes file this kbuf uses.
enum class SizesDefect {
  none,
  malformed,  ///< damaged, truncated, binary or hostile: not what kbuf writes
  format,     ///< another format version
  foreign,    ///< written by another program
  truncated   ///< ends before its end line
};

/// A parse's outcome: the table, or the defect and one line saying what it is.
struct ParsedSizes {
  SizesDefect defect = SizesDefect::none;
  std::string message;  ///< empty when the file is whole
  int version = 0;      ///< the format version it declares (0 before that line)
  std::string program;  ///< the program that wrote it
  SizesTable table;
};

/// Parsing a sizes file's text (Impl::parse_sizes).
class SizesParser {
 public:
  /// `program`: this program's name; a file written by another (both names known) is foreign.
  SizesParser(const std::string& text, const std::string& program) : text_(text), self_(program) {}

  ParsedSizes run() {
    if (text_.size() > sizes_max_file_bytes) {
      return fail(SizesDefect::malformed, "it holds more than " +
                                              std::to_string(sizes_max_file_bytes) +
                                              " bytes, more than any sizes file kbuf writes");
    }
    for (std::size_t i = 0; i < text_.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(text_[i]);
      if (!(c == '\n' || c == '\r' || c == '\t' || (c >= 0x20 && c < 0x7f))) {
        return fail(SizesDefect::malformed, "byte " + std::to_string(i) + " is binary (" +
                                                std::to_string(static_cast<unsigned>(c)) +
                                                "); a sizes file is plain text");
      }
    }
    enum class Expect { header, program, entry, done } expect = Expect::header;
    std::size_t declared = 0;
    std::size_t pos = 0;
    while (pos < text_.size()) {
      ++line_;
      const std::size_t nl = text_.find('\n', pos);
      const std::size_t end = nl == std::string::npos ? text_.size() : nl;
      if (end - pos > sizes_max_line_bytes) {
        return fail(SizesDefect::malformed, "it is longer than " +
                                                std::to_string(sizes_max_line_bytes) +
                                                " bytes, more than any line kbuf writes");
      }
      if (nl == std::string::npos) {
        return fail(SizesDefect::truncated,
                    "it ends in the middle of this line (the file was cut short)");
      }
      std::string line = text_.substr(pos, end - pos);
      pos = end + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      words_ = split(line);
      if (words_.empty() || words_[0][0] == '#') continue;
      if (expect == Expect::done) {
        return fail(SizesDefect::malformed, "text after the end line: '" + excerpt(line) + "'");
      }
      if (expect == Expect::header) {
        if (words_[0] != "kbuf-sizes" || words_.size() != 2) {
          return fail(SizesDefect::malformed, "not a kbuf sizes file: it begins with '" +
                                                  excerpt(line) + "', not 'kbuf-sizes " +
                                                  std::to_string(sizes_format_version) + "'");
        }
        unsigned long long v = 0;
        if (!number(words_[1], v)) return bad_number(words_[1], "the format version");
        out_.version = static_cast<int>(v);
        if (v != static_cast<unsigned long long>(sizes_format_version)) {
          return fail(SizesDefect::format,
                      std::string("sizes file format ") + words_[1] + ", written by " +
                          (v < static_cast<unsigned long long>(sizes_format_version) ? "an older"
                                                                                     : "a newer") +
                          " kbuf; this one reads format " + std::to_string(sizes_format_version));
        }
        expect = Expect::program;
      } else if (expect == Expect::program) {
        if (words_[0] != "program" || words_.size() != 2) {
          return fail(SizesDefect::malformed,
                      "'program <name>' expected after the header, not '" + excerpt(line) + "'");
        }
        if (words_[1] == "-") {
          out_.program.clear();  // written by a program that did not know its name
        } else if (!unescape(words_[1], out_.program)) {
          return bad_word(words_[1]);
        }
        if (!self_.empty() && !out_.program.empty() && out_.program != self_) {
          return fail(SizesDefect::foreign, "written by '" + out_.program +
                                                "', not by this program ('" + self_ +
                                                "'): its labels are another program's");
        }
        expect = Expect::entry;
      } else if (words_[0] == "end") {
        unsigned long long n = 0;
        if (words_.size() != 2 || !number(words_[1], n)) {
          return fail(SizesDefect::malformed,
                      "'end <entries>' expected, not '" + excerpt(line) + "'");
        }
        declared = static_cast<std::size_t>(n);
        if (declared != out_.table.size()) {
          return fail(SizesDefect::truncated, "the end line counts " + words_[1] +
                                                  " entries, the file holds " +
                                                  std::to_string(out_.table.size()));
        }
        expect = Expect::done;
      } else if (!entry()) {
        return out_;
      }
    }
    if (expect != Expect::done) {
      line_ = 0;
      return fail(expect == Expect::header ? SizesDefect::malformed : SizesDefect::truncated,
                  expect == Expect::header ? "empty: no 'kbuf-sizes' line"
                                           : "no end line: the file was cut short");
    }
    return out_;
  }

 private:
  static std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> w;
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      const std::size_t b = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
      if (i > b) w.push_back(line.substr(b, i - b));
    }
    return w;
  }

  // The start of a line, for a message (printable already: binary was refused first).
  static std::string excerpt(const std::string& s) {
    return s.size() <= 40 ? s : s.substr(0, 40) + "...";
  }

  // Decimal digits only, at most sizes_max_number.
  static bool number(const std::string& w, unsigned long long& v) {
    if (w.empty() || w.size() > 20) return false;
    v = 0;
    for (const char c : w) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<unsigned long long>(c - '0');
      if (v > sizes_max_number) return false;
    }
    return true;
  }

  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }

  static bool unescape(const std::string& w, std::string& out) {
    out.clear();
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (w[i] != '%') {
        out.push_back(w[i]);
        continue;
      }
      if (i + 2 >= w.size()) return false;
      const int hi = hex_digit(w[i + 1]);
      const int lo = hex_digit(w[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    }
    return out.size() <= sizes_max_label_bytes;
  }

  ParsedSizes fail(SizesDefect d, const std::string& why) {
    ParsedSizes p;
    p.defect = d;
    p.version = out_.version;
    p.program = out_.program;
    p.message = line_ != 0 ? "line " + std::to_string(line_) + ": " + why : why;
    out_ = p;
    return p;
  }

  ParsedSizes bad_number(const std::string& w, const char* what) {
    return fail(SizesDefect::malformed, std::string(what) + " '" + excerpt(w) +
                                            "' is not a number from 0 to 2^48 (" +
                                            std::to_string(sizes_max_number) + ")");
  }

  ParsedSizes bad_word(const std::string& w) {
    return fail(SizesDefect::malformed, "'" + excerpt(w) + "' is not an escaped name of at most " +
                                            std::to_string(sizes_max_label_bytes) + " bytes");
  }

  // One entry line (words_); false once the parse failed (out_ holds why).
  bool entry() {
    SizeKind kind;
    std::size_t least_words;
    if (words_[0] == "allocator") {
      kind = SizeKind::allocator;
      least_words = 4;
    } else if (words_[0] == "workspace") {
      kind = SizeKind::workspace;
      least_words = 8;
    } else {
      fail(SizesDefect::malformed,
           "'" + excerpt(words_[0]) + "' is not an entry ('allocator', 'workspace' or 'end')");
      return false;
    }
    if (words_.size() < least_words || (kind == SizeKind::allocator && words_.size() != 4) ||
        (kind == SizeKind::workspace && words_.size() - 7 > sizes_max_levels)) {
      fail(SizesDefect::malformed, std::string("a '") + words_[0] + "' entry with " +
                                       std::to_string(words_.size() - 1) +
                                       " fields; docs/api.md gives its fields");
      return false;
    }
    if (out_.table.size() == sizes_max_entries) {
      fail(SizesDefect::malformed,
           "more than " + std::to_string(sizes_max_entries) + " entries, more than kbuf writes");
      return false;
    }
    std::string space, label;
    if (!unescape(words_[1], space)) return (bad_word(words_[1]), false);
    if (!unescape(words_[2], label)) return (bad_word(words_[2]), false);
    SizeEntry e;
    unsigned long long v = 0;
    if (kind == SizeKind::allocator) {
      if (!number(words_[3], v)) return (bad_number(words_[3], "the size"), false);
      e.bytes = static_cast<std::size_t>(v);
    } else {
      std::size_t* fields[4] = {&e.needs.arenas, &e.needs.measured_slot, &e.needs.measured_above,
                                &e.needs.measured_lane};
      for (int i = 0; i < 4; ++i) {
        if (!number(words_[3 + i], v)) return (bad_number(words_[3 + i], "a count"), false);
        *fields[i] = static_cast<std::size_t>(v);
      }
      std::size_t sum = 0;
      for (std::size_t i = 7; i < words_.size(); ++i) {
        const std::string& w = words_[i];
        const std::size_t x = w.find('x');
        unsigned long long bytes = 0, arenas = 0;
        if (x == std::string::npos || !number(w.substr(0, x), bytes) ||
            !number(w.substr(x + 1), arenas) || arenas == 0) {
          fail(SizesDefect::malformed, "'" + excerpt(w) +
                                           "' is not a level '<bytes>x<arenas>' (numbers from 0 "
                                           "to 2^48, at least one arena)");
          return false;
        }
        if (!e.needs.levels.empty() && bytes <= e.needs.levels.back().bytes) {
          fail(SizesDefect::malformed, "the levels are not in increasing order of bytes");
          return false;
        }
        e.needs.levels.push_back(
            NeedLevel{static_cast<std::size_t>(bytes), static_cast<std::size_t>(arenas)});
        sum = saturating_add(sum, static_cast<std::size_t>(arenas));
      }
      // A round's arenas are at least those its levels count, and those above its slot at most
      // all of them: the sizing divides by them.
      if (e.needs.arenas < sum) e.needs.arenas = sum;
      if (e.needs.measured_above > e.needs.arenas) e.needs.measured_above = e.needs.arenas;
      if (e.needs.measured_slot == 0) e.needs.measured_above = e.needs.measured_lane = 0;
    }
    if (!out_.table.emplace(SizeKey{kind, space, label}, e).second) {
      fail(SizesDefect::malformed, std::string("a second '") + words_[0] + "' entry for '" +
                                       excerpt(label) + "' in " + excerpt(space));
      return false;
    }
    return true;
  }

  const std::string& text_;
  std::string self_;
  std::vector<std::string> words_;
  std::size_t line_ = 0;
  ParsedSizes out_;
};

/// Parses the text of a sizes file written, if `program` is not empty, by `program`.
inline ParsedSizes parse_sizes(const std::string& text, const std::string& program) {
  return SizesParser(text, program).run();
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_SIZES_FORMAT_HPP
