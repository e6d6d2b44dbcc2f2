// Saved sizes (kbuf/sizes_file.hpp): the process's table and the functions of the API, once, in
// libkbuf. The allocators' hooks (Impl::SizesHooks) are compiled with the allocator.
#include <mutex>
#include <string>
#include <vector>

#include <kbuf/impl/sizes_file_impl.hpp>
#include <kbuf/sizes_file.hpp>

namespace kbuf {
namespace Impl {

SizesState& sizes_state() {
  static SizesState* state = new SizesState;
  return *state;
}

}  // namespace Impl

SizesFileReport load_sizes(const std::string& path) {
  Impl::expect_sizes_path("kbuf::load_sizes", path);
  Impl::SizesState& st = Impl::sizes_state();
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    Impl::read_environment_locked(st);
  }
  const Impl::FileText file = Impl::read_sizes_text(path);  // outside the lock: file I/O
  std::lock_guard<std::mutex> lock(st.mutex);
  return Impl::install_loaded(st, path, file, false);
}

SizesFileReport save_sizes(const std::string& path) {
  Impl::expect_sizes_path("kbuf::save_sizes", path);
  Impl::SizesState& st = Impl::sizes_state();
  std::unique_lock<std::mutex> lock(st.mutex);
  const Impl::SizesTable table = Impl::to_save_locked(st);
  lock.unlock();
  return Impl::write_sizes_table(path, table, false);
}

SizesFileReport loaded_sizes() {
  Impl::SizesState& st = Impl::sizes_state();
  std::lock_guard<std::mutex> lock(st.mutex);
  Impl::read_environment_locked(st);
  return st.last_load;
}

std::vector<SavedSize> learned_sizes() {
  Impl::SizesState& st = Impl::sizes_state();
  std::lock_guard<std::mutex> lock(st.mutex);
  return Impl::saved_sizes_of(Impl::learned_locked(st));
}

}  // namespace kbuf
