// The text of kbuf's error messages about extents, once, in libkbuf: a translation unit that
// takes temporaries lists the extents it was given and calls these (kbuf/impl/extents.hpp).
#include <cstddef>
#include <cstdint>
#include <string>

#include <kbuf/current.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/extents.hpp>

namespace kbuf {
namespace Impl {

namespace {
std::string extent_text(const ExtentValue& e) {
  return e.negative ? "-" + std::to_string(e.magnitude) : std::to_string(e.magnitude);
}
}  // namespace

std::string joined_extents(const char* separator, const ExtentValue* extents, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    if (i != 0) s += separator;
    s += extent_text(extents[i]);
  }
  return s;
}

std::string bad_extents_text(const ExtentValue* extents, std::size_t n, bool held_in_32_bits,
                             std::size_t bytes_per_entry) {
  for (std::size_t i = 0; i < n; ++i) {
    if (extents[i].negative) {
      return concat("extent ", i, " is ", extent_text(extents[i]),
                    "; extents must not be negative");
    }
  }
  if (held_in_32_bits) {
    for (std::size_t i = 0; i < n; ++i) {
      if (extents[i].magnitude > max_32_bit_extent) {
        return concat("extent ", i, " is ", extent_text(extents[i]), ", but a View with ", n,
                      " runtime extents holds each below 2^32 (Kokkos stores them in 32 bits)");
      }
    }
  }
  const std::string sizes = joined_extents(" x ", extents, n);
  return concat("the size, ", bytes_per_entry, n != 0 ? " x " : "", sizes,
                " bytes, overflows size_t");
}

void throw_bad_extents_text(const char* call, const std::string& label, const ExtentValue* extents,
                            std::size_t n, bool held_in_32_bits, std::size_t bytes_per_entry) {
  throw_logic_error(call, "(", joined_extents(", ", extents, n), ") on allocator '", label,
                    "': ", bad_extents_text(extents, n, held_in_32_bits, bytes_per_entry));
}

void throw_scope_unnamed_owner(const char* space_name) {
  throw_logic_error("kbuf::scope<Kokkos::", space_name, "Space",
                    ">(owner): the owner's name is null; name the owner (kbuf::owner{\"mylib\"})");
}

void throw_temporary_null_label() {
  throw_logic_error("kbuf::temporary(nullptr, ...): the label is null");
}

void throw_temporary_unnamed_owner(const char* label) {
  throw_logic_error("kbuf::temporary(owner, \"", label,
                    "\", ...): the owner's name is null; name the owner (kbuf::owner{\"mylib\"})");
}

void throw_temporary_bad_extents_text(const char* label, const ExtentValue* extents, std::size_t n,
                                      bool held_in_32_bits, std::size_t bytes_per_entry) {
  throw_logic_error("kbuf::temporary(\"", label, "\", ", joined_extents(", ", extents, n),
                    "): ", bad_extents_text(extents, n, held_in_32_bits, bytes_per_entry));
}

}  // namespace Impl
}  // namespace kbuf
