// Growth in place on devices, against the strict host model of a driver
// (support/model_driver.hpp): every call runs on the device of the allocator's instance and not
// on the thread's current device, a runtime whose calls are stubs is refused with a reason, a
// device without the capability is refused once, naming the attribute, memory is created
// exportable and RDMA capable where the device says so, and a commit that fails after the
// reservation worked is a failure with the driver's words.
#include <doctest/doctest.h>

#include <kbuf/impl/virtual_memory.hpp>

#include "model_driver.hpp"

#include <cstddef>
#include <string>
#include <thread>

namespace {

using kbuf_test::ModelDriver;
using Range = kbuf::Impl::VirtualRange<Kokkos::HostSpace, kbuf_test::ModelVirtualMemory>;

constexpr std::size_t granule = std::size_t{2} << 20;

/// Every recorded call made with `device` current; the thread's own device unchanged.
void check_all_on(int device) {
  for (const ModelDriver::Call& c : ModelDriver::state().calls) {
    INFO(c.what);
    CHECK(c.current == device);
    if (c.device >= 0) CHECK(c.device == device);
  }
}

/// Reserve, commit one granule and then two more (a second chunk), give that chunk back, release:
/// the range's whole life on `device`.
void life_of_a_range(int device) {
  Range range;
  range.set_device(device);
  REQUIRE(range.unsupported_here().empty());
  std::string error;
  REQUIRE(range.reserve(16 * granule, 256, error));
  REQUIRE(range.grow_to(granule, "model", error));
  REQUIRE(range.grow_to(3 * granule, "model", error));
  CHECK(range.shrink_to(granule, "model") == 2 * granule);  // the second chunk, whole
  range.release("model");
}

}  // namespace

TEST_CASE("every driver call runs on the range's device, not the thread's current one") {
  ModelDriver::reset();
  REQUIRE(ModelDriver::current() == 0);
  life_of_a_range(2);
  check_all_on(2);
  CHECK(ModelDriver::current() == 0);  // the thread's device is its own again
  for (const auto& a : ModelDriver::state().access) CHECK(a.second == 2);
  CHECK(ModelDriver::state().access.size() == 2);
}

TEST_CASE("a range made on another host thread (which starts on device 0) uses its device too") {
  ModelDriver::reset();
  std::thread other([] {
    ModelDriver::current() = 0;  // what a new thread has
    life_of_a_range(1);
  });
  other.join();
  check_all_on(1);
}

TEST_CASE(
    "a runtime whose calls are stubs: a reservation without an address is a failure that "
    "says why") {
  ModelDriver::reset();
  ModelDriver::state().stubs = true;
  Range range;
  range.set_device(0);
  std::string error;
  CHECK_FALSE(range.reserve(16 * granule, 256, error));
  CHECK(error.find("modelMemAddressReserve returned success without an address") !=
        std::string::npos);
  CHECK(range.base() == nullptr);
  CHECK(range.reserved() == 0);
}

TEST_CASE("a runtime without the API is refused before any call") {
  ModelDriver::reset();
  ModelDriver::state().missing = "the model's virtual memory API needs a newer runtime";
  CHECK(Range::unsupported() != nullptr);
  Range range;
  range.set_device(1);
  CHECK(range.unsupported_here() == "the model's virtual memory API needs a newer runtime");
  CHECK(ModelDriver::state().calls.empty());
}

TEST_CASE(
    "a device without the capability is refused, naming the attribute, and where the runtime "
    "has no attribute the calls decide") {
  ModelDriver::reset();
  ModelDriver::state().devices[1].virtual_memory = 0;
  Range on1;
  on1.set_device(1);
  const std::string why = on1.unsupported_here();
  CHECK(why.find("Model device 1 does not support virtual memory management") != std::string::npos);
  CHECK(why.find("MODEL_DEVICE_ATTRIBUTE_VMM") != std::string::npos);
  Range on0;
  on0.set_device(0);
  CHECK(on0.unsupported_here().empty());
  ModelDriver::state().attributes_known = false;
  CHECK(on1.unsupported_here().empty());
}

TEST_CASE("memory is created exportable and RDMA capable where the device says it can be") {
  ModelDriver::reset();
  ModelDriver::state().devices[1].posix_fd = 1;
  ModelDriver::state().devices[1].rdma = 1;
  life_of_a_range(1);
  life_of_a_range(0);
  int on1 = 0, on0 = 0;
  for (const ModelDriver::Call& c : ModelDriver::state().calls) {
    if (c.what != "create") continue;
    if (c.device == 1) {
      ++on1;
      CHECK(c.posix_fd);
      CHECK(c.rdma);
    } else {
      ++on0;
      CHECK_FALSE(c.posix_fd);
      CHECK_FALSE(c.rdma);
    }
  }
  CHECK(on1 == 2);
  CHECK(on0 == 2);
}

TEST_CASE(
    "a commit that fails after the reservation worked says the driver's words and "
    "changes nothing") {
  ModelDriver::reset();
  ModelDriver::state().creates_before_failure = 1;
  Range range;
  range.set_device(0);
  std::string error;
  REQUIRE(range.reserve(16 * granule, 256, error));
  REQUIRE(range.grow_to(granule, "model", error));
  CHECK_FALSE(range.grow_to(2 * granule, "model", error));
  CHECK(error == "modelMemCreate failed: out of memory");
  CHECK(range.committed() == granule);
  range.release("model");
}
