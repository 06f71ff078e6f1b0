// Fuzz target: topology files (parallel/topology/topology_io.h load_topology: protobuf text format,
// or JSON when the first non-blank character is '{'), validated; a topology that loads is described
// (describe_topology indexes GPUs and nodes by the links' endpoints).
#include <string>

#include "parallel/topology/topology_io.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      tt::fuzz::write_scratch_file("topology.txt", std::string_view(reinterpret_cast<const char*>(data), size));
  tt::fuzz::expect_only_tt_errors([&] {
    const tt::topology::Topology t = tt::topology::load_topology(path);
    (void)tt::topology::describe_topology(t);
    (void)tt::topology::topology_to_json(t);
    tt::topology::topology_from_text(tt::topology::topology_to_text(t), "printed");
  });
  return 0;
}
