// Helpers shared by the kbuf_tensor tests.
#ifndef KBUF_TENSOR_TEST_SUPPORT_HPP
#define KBUF_TENSOR_TEST_SUPPORT_HPP

#include <kbuf_tensor/kbuf_tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kbuf_tensor_test {

using namespace kbuf_tensor;
using space = kbuf_tensor::default_memory_space;
using Alloc = kbuf::BufferAllocator<space>;
using Tmp = Temporaries<space>;

/// "i,j,k" from {"i", "j", "k"}.
inline std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

/// Every ordering of `names`, joined.
inline std::vector<std::string> orderings(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::vector<std::string> out;
  do {
    out.push_back(join(names));
  } while (std::next_permutation(names.begin(), names.end()));
  return out;
}

/// The shape of a tensor whose labels are `labels` (comma-separated), extents from `ext`.
inline Shape shape_of(const std::string& labels, const std::map<std::string, std::size_t>& ext) {
  const Labels l = Labels::parse(labels.c_str(), "shape_of");
  Shape s;
  for (int i = 0; i < l.rank; ++i)
    s.extents[static_cast<std::size_t>(s.rank++)] = ext.at(std::string(l[i]));
  return s;
}

/// A random host tensor with these labels.
template <class T>
HostTensor<T> random_labelled(const std::string& labels,
                              const std::map<std::string, std::size_t>& ext, std::uint64_t seed) {
  return random_host_tensor<T>(shape_of(labels, ext), seed);
}

}  // namespace kbuf_tensor_test

#endif
