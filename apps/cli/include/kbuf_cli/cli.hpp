// The command-line front of kbuf's applications (kbuf-demo, kbuf-tebd): what their main()s share,
// so that each main.cpp holds what is particular to its application.
#ifndef KBUF_CLI_CLI_HPP
#define KBUF_CLI_CLI_HPP

#include <Kokkos_Core.hpp>

#include <kbuf/sizes_file.hpp>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace kbuf_cli {

/// The exit statuses of every application (each one's --help lists them).
constexpr int exit_ok = 0;
constexpr int exit_wrong_result = 1;
constexpr int exit_bad_option = 2;
constexpr int exit_out_of_memory = 3;
constexpr int exit_other_error = 4;

/// A bad option: the message names the option and the value. main prints it with
/// report_bad_option and exits with exit_bad_option.
class BadOption : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void bad_option(const std::string& message) {
  throw BadOption(message);
}

/// "<program>: <message>" and where to look, on stderr.
inline void report_bad_option(const char* program, const std::string& message) {
  std::fprintf(stderr, "%s: %s\nRun '%s --help' for the options.\n", program, message.c_str(),
               program);
}

/// A whole number from 1 to max, else a BadOption naming `option` and `text`.
inline std::size_t parse_positive(const std::string& option, const std::string& text,
                                  std::size_t max) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    bad_option(option + ": '" + text + "' is not a positive integer");
  }
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno != 0 || v == 0 || v > max) {
    bad_option(option + ": '" + text + "' must be between 1 and " + std::to_string(max));
  }
  return static_cast<std::size_t>(v);
}

/// A finite number (no NaN, no infinity, nothing after it), else a BadOption.
inline double parse_number(const std::string& option, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) {
    bad_option(option + ": '" + text + "' is not a number");
  }
  return v;
}

/// The index of `text` among `choices`, else a BadOption: "--type: 'float' is not 'double' or
/// 'complex'".
inline std::size_t parse_choice(const std::string& option, const std::string& text,
                                const std::vector<std::string>& choices) {
  std::string listed;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (text == choices[i]) return i;
    listed += (i == 0 ? "'" : (i + 1 == choices.size() ? " or '" : ", '")) + choices[i] + "'";
  }
  bad_option(option + ": '" + text + "' is not " + listed);
}

/// A file name: not empty, else a BadOption ("--csv needs a file name").
inline std::string parse_file_name(const std::string& option, const std::string& text) {
  if (text.empty()) bad_option(option + " needs a file name");
  return text;
}

/// The items of a comma-separated list; an empty list or item is a BadOption.
inline std::vector<std::string> split_list(const std::string& option, const std::string& list) {
  std::vector<std::string> items;
  std::size_t pos = 0;
  while (true) {
    const auto comma = list.find(',', pos);
    items.push_back(list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (items.back().empty()) {
      bad_option(option + ": '" + list + "' has an empty item (a list is 'a,b,...')");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return items;
}

/// The command line, split: Kokkos' options (--kokkos-*, kept for Kokkos::initialize, argv[0]
/// first) and the application's, walked by each().
class Arguments {
 public:
  Arguments(int argc, char** argv) : argc_(argc), argv_(argv) {
    kokkos_.push_back(argv[0]);
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg.rfind("--kokkos-", 0) == 0) kokkos_.push_back(argv[i]);
      if (arg == "--help" || arg == "-h") help_ = true;
    }
  }

  /// --help or -h anywhere.
  bool help() const { return help_; }

  /// Calls handle(name, value) for each of the application's options in order, where value()
  /// returns its value ("--name=value" or the next argument; a BadOption when there is none).
  /// Arguments that are not options are passed with their text as the name.
  template <class Handle>
  void each(Handle&& handle) const {
    for (int i = 1; i < argc_; ++i) {
      std::string arg = argv_[i];
      if (arg.rfind("--kokkos-", 0) == 0 || arg == "--help" || arg == "-h") continue;
      std::string value;
      bool has_value = false;
      const auto eq = arg.find('=');
      if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_value = true;
      }
      const auto next = [&]() -> std::string {
        if (has_value) return value;
        if (i + 1 >= argc_) bad_option(arg + " needs a value");
        return argv_[++i];
      };
      handle(arg, next);
    }
  }

  /// A BadOption for an option no application knows (from inside each()'s handler).
  [[noreturn]] static void unknown(const std::string& name) {
    bad_option("unknown option '" + name + "'");
  }

  /// Kokkos' options, for Kokkos::initialize (argc, then argv ending in a null pointer).
  int kokkos_argc() const { return static_cast<int>(kokkos_.size()); }
  char** kokkos_argv() {
    if (kokkos_.empty() || kokkos_.back() != nullptr) kokkos_.push_back(nullptr);
    return kokkos_.data();
  }

 private:
  int argc_;
  char** argv_;
  std::vector<char*> kokkos_;
  bool help_ = false;
};

/// Runs body() (returning an exit status) under Kokkos::ScopeGuard with Kokkos' options. Out of
/// memory (std::bad_alloc, kbuf::out_of_memory among them) prints "<program>: out of memory: ..."
/// and gives exit_out_of_memory; any other exception "<program>: ..." and exit_other_error;
/// `on_failure(status)` is called then (e.g. to stop the other MPI ranks).
template <class Body, class OnFailure>
int run_under_kokkos(const char* program, Arguments& args, Body&& body, OnFailure&& on_failure) {
  int kargc = args.kokkos_argc();
  char** kargv = args.kokkos_argv();
  Kokkos::ScopeGuard guard(kargc, kargv);
  int status = exit_ok;
  try {
    return body();
  } catch (const std::bad_alloc& e) {
    std::fprintf(stderr, "%s: out of memory: %s\n", program, e.what());
    status = exit_out_of_memory;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    status = exit_other_error;
  }
  on_failure(status);
  return status;
}

template <class Body>
int run_under_kokkos(const char* program, Arguments& args, Body&& body) {
  return run_under_kokkos(program, args, body, [](int) {});
}

/// The line that says what `KBUF_SIZES` (the report `loaded`) did for a run whose kbuf
/// allocators (`who`) made `fallbacks` fallbacks and `regrows` regrowths, with a newline; empty
/// when no sizes file was named.
inline std::string sizes_line(const kbuf::SizesFileReport& loaded, const char* who,
                              std::size_t fallbacks, std::size_t regrows) {
  if (loaded.status == kbuf::SizesFileStatus::none) return {};
  const auto count = [](std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + (n == 1 ? one : many);
  };
  const std::string made = std::string(who) + " made " +
                           count(fallbacks, " fallback", " fallbacks") + " and " +
                           count(regrows, " regrowth", " regrowths");
  if (loaded.ok()) {
    const std::size_t n = loaded.sizes.size();
    return "kbuf sizes: started from the " + std::to_string(n) + (n == 1 ? " size" : " sizes") +
           " saved in " + loaded.path + "; " + made + " from their first step\n";
  }
  return "kbuf sizes: nothing saved in " + loaded.path + " to start from; " + made +
         " while learning, saved there at the end\n";
}

}  // namespace kbuf_cli

#endif  // KBUF_CLI_CLI_HPP
