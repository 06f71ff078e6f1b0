// NVLink interpretation on recorded NVML records (tests/fixtures/topology/nvml-*.txt), the record
// text format, and query_nvlinks on a machine without NVML (no error, a note).
#include "parallel/topology/nvlink.h"

#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "tests/test_util.h"

namespace tt::topology {
namespace {

struct Recorded {
  std::vector<std::string> gpus;
  std::vector<NvLinkRecord> records;
};

Recorded load(const std::string& name) {
  const std::string path = test::source_dir() + "/tests/fixtures/topology/" + name;
  Recorded r;
  parse_nvlink_records(test::read_file(path), path, &r.gpus, &r.records);
  return r;
}

std::map<std::pair<int, int>, double> by_pair(const std::vector<Link>& links) {
  std::map<std::pair<int, int>, double> m;
  for (const Link& l : links) {
    EXPECT_EQ(l.kind(), LINK_NVLINK);
    EXPECT_LT(l.gpu_a(), l.gpu_b());
    EXPECT_FALSE(l.measured());
    EXPECT_FALSE(l.p2p_verified());
    m[{l.gpu_a(), l.gpu_b()}] = l.bandwidth_gbps();
  }
  return m;
}

TEST(NvLink, HgxH100AllPairsThroughNvSwitch) {
  const Recorded r = load("nvml-hgx-h100.txt");
  ASSERT_EQ(r.gpus.size(), 8u);
  EXPECT_EQ(r.records.size(), 8u * 18u);
  const std::vector<Link> links = interpret_nvlinks(r.gpus, r.records, nvlink_gbps_per_link(90), 3);
  ASSERT_EQ(links.size(), 28u);
  for (const Link& l : links) {
    EXPECT_DOUBLE_EQ(l.bandwidth_gbps(), 450);  // 18 links x 25 GB/s: DESIGN.md's 900 GB/s bidirectional
    EXPECT_EQ(l.node_a(), 3);
    EXPECT_EQ(l.node_b(), 3);
  }
}

TEST(NvLink, DgxA100WithOneLinkDown) {
  const Recorded r = load("nvml-dgx-a100-degraded.txt");
  const auto m = by_pair(interpret_nvlinks(r.gpus, r.records, nvlink_gbps_per_link(80), 0));
  ASSERT_EQ(m.size(), 28u);
  EXPECT_DOUBLE_EQ(m.at({0, 1}), 300);  // 12 x 25: DESIGN.md's 600 GB/s bidirectional
  EXPECT_DOUBLE_EQ(m.at({2, 3}), 275);  // GPU 3 has 11 active links
  EXPECT_DOUBLE_EQ(m.at({3, 7}), 275);
  EXPECT_DOUBLE_EQ(m.at({6, 7}), 300);
}

TEST(NvLink, Rtx3090BridgesConnectOnlyTheirPairs) {
  const Recorded r = load("nvml-3090-bridges.txt");
  const auto m = by_pair(interpret_nvlinks(r.gpus, r.records, nvlink_gbps_per_link(86), 0));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_DOUBLE_EQ(m.at({0, 1}), 4 * 14.0625);
  EXPECT_DOUBLE_EQ(m.at({2, 3}), 4 * 14.0625);
}

TEST(NvLink, Rtx4090HasNone) {
  const Recorded r = load("nvml-8x4090.txt");
  EXPECT_EQ(r.gpus.size(), 8u);
  EXPECT_TRUE(r.records.empty());
  EXPECT_TRUE(interpret_nvlinks(r.gpus, r.records, 25, 0).empty());
}

TEST(NvLink, OneSidedAndDuplicateRecordsDoNotCount) {
  const std::vector<std::string> gpus = {"0000:01:00.0", "0000:02:00.0"};
  // GPU 0 says link 0 goes to GPU 1, GPU 1 reports that link inactive: not usable.
  std::vector<NvLinkRecord> recs = {{0, 0, "0000:02:00.0", true}, {1, 0, "", false}};
  EXPECT_TRUE(interpret_nvlinks(gpus, recs, 25, 0).empty());
  // Both ends active, GPU 0's record listed twice: one link.
  recs = {{0, 0, "0000:02:00.0", true}, {0, 0, "0000:02:00.0", true}, {1, 0, "0000:01:00.0", true}};
  const auto links = interpret_nvlinks(gpus, recs, 25, 0);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_DOUBLE_EQ(links[0].bandwidth_gbps(), 25);
  // Out-of-range GPU indices are ignored.
  recs.push_back({7, 0, "0000:01:00.0", true});
  EXPECT_EQ(interpret_nvlinks(gpus, recs, 25, 0).size(), 1u);
}

TEST(NvLink, RecordTextRoundTrip) {
  const Recorded r = load("nvml-dgx-a100-degraded.txt");
  std::vector<std::string> gpus;
  std::vector<NvLinkRecord> recs;
  parse_nvlink_records(format_nvlink_records(r.gpus, r.records), "round trip", &gpus, &recs);
  EXPECT_EQ(gpus, r.gpus);
  ASSERT_EQ(recs.size(), r.records.size());
  for (size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].gpu, r.records[i].gpu);
    EXPECT_EQ(recs[i].link, r.records[i].link);
    EXPECT_EQ(recs[i].remote_bus_id, r.records[i].remote_bus_id);
    EXPECT_EQ(recs[i].active, r.records[i].active);
  }
}

TEST(NvLink, MalformedRecordsNameTheLine) {
  std::vector<std::string> gpus;
  std::vector<NvLinkRecord> recs;
  for (const char* text : {"gpu 0 0000:01:00.0\nnvlink 0 0 0000:02:00.0 up\n", "gpu 1 0000:01:00.0\n",
                           "gpu 0 nonsense\n", "gpu 0 0000:01:00.0\nnvlink 3 0 - inactive\n", "switch 0\n",
                           "gpu 0 0000:01:00.0\nnvlink 0 0 - inactive extra\n"}) {
    SCOPED_TRACE(text);
    try {
      parse_nvlink_records(text, "fixture.txt", &gpus, &recs);
      FAIL() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kData);
      EXPECT_EQ(e.where(), "fixture.txt");
      EXPECT_NE(std::string(e.what()).find("line "), std::string::npos);
    }
  }
}

TEST(NvLink, QueryWithoutNvmlIsANoteNotAnError) {
  // On this CPU-only machine libnvidia-ml.so.1 is normally absent; where a driver exists, an unknown
  // bus id must still not throw.
  const NvLinkQuery q = query_nvlinks({"0000:ff:1f.7"});
  if (!q.available) EXPECT_NE(q.note.find("NVML"), std::string::npos);
  EXPECT_TRUE(q.records.empty());
}

}  // namespace
}  // namespace tt::topology
