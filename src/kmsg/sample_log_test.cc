// The real capture: an H100 (Dell XE9680) dmesg -T excerpt with Xid 119 GSP
// RPC timeouts, read from ../shared/research/samples/ (never copied into this
// repository); skipped when that directory is absent.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "kmsg/escalation.h"
#include "kmsg/kmsg_test_util.h"
#include "kmsg/sources.h"
#include "kmsg/xid_catalog.h"
#include "test_paths.h"

namespace gw::kmsg {
namespace {

const std::string kSample =
    gw::test::SourceDir() +
    "/../shared/research/samples/kernel-log_xid119-gsp-timeout_H100_dmesg.log";

class KmsgSampleLog : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st {};
    if (stat(kSample.c_str(), &st) != 0) {
      GTEST_SKIP() << "real sample not found (" << kSample
                   << "); it lives in the shared research checkout, not in this repository";
    }
    ReadOptions o;
    o.kernel_log_file = kSample;
    auto r = ReadKernelEvents(o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    result_ = std::move(*r);
  }
  ReadResult result_;
};

TEST_F(KmsgSampleLog, Xid119Events) {
  const auto xids = testing::OfKind(result_.events, "xid");
  ASSERT_EQ(xids.size(), 5u);
  const struct {
    int64_t time_ms;
    long pid;
    const char* name;
    const char* function;
  } want[] = {
      {1740327858000, 2024380, "nvidia-smi", "Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4)."},
      {1740327864000, 2024380, "nvidia-smi", "Expected function 10 (FREE) (0xa55a0210 0x0)."},
      {1740327870000, 2024380, "nvidia-smi", "Expected function 10 (FREE) (0xa55a0090 0x0)."},
      {1740328032000, 1263500, "cache_mgr_main",
       "Expected function 76 (GSP_RM_CONTROL) (0x20801813 0x4c)."},
      {1740328213000, 1240590, "gpud", "Expected function 76 (GSP_RM_CONTROL) (0x20803032 0x58c)."},
  };
  for (size_t i = 0; i < xids.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(xids[i].xid, 119u);
    EXPECT_EQ(xids[i].pci_bus_id, "00000000:9B:00.0");
    EXPECT_EQ(xids[i].pid, want[i].pid);
    EXPECT_EQ(xids[i].process_name, want[i].name);
    EXPECT_EQ(xids[i].time_unix_ms, want[i].time_ms);  // dmesg -T, read as UTC here.
    EXPECT_EQ(xids[i].detail,
              std::string("Timeout after 6s of waiting for RPC response from GPU4 GSP! ") +
                  want[i].function);
    EXPECT_EQ(xids[i].source, kSample);
    EXPECT_FALSE(xids[i].gpu_instance);
  }
}

TEST_F(KmsgSampleLog, GspAndIdentityEvents) {
  const auto& ev = result_.events;
  // gpu_uuid, board_serial, xid, gsp_rpc_timeout, xid, xid, rate limit, xid, xid.
  ASSERT_EQ(ev.size(), 9u);
  EXPECT_EQ(ev[0].kind, "gpu_uuid");
  EXPECT_EQ(ev[0].detail, "GPU-509665ad-b600-ac93-3616-d754b23d636d");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:9B:00.0");
  EXPECT_EQ(ev[1].kind, "board_serial");
  EXPECT_EQ(ev[1].detail, "1650124014249");
  EXPECT_EQ(ev[1].pci_bus_id, "00000000:9B:00.0");
  EXPECT_EQ(ev[3].kind, "gsp_rpc_timeout");
  EXPECT_EQ(ev[3].pci_bus_id, "00000000:9B:00.0");
  EXPECT_EQ(ev[3].detail,
            "GPU4 GSP RPC buffer contains function 103 (GSP_RM_ALLOC) and data 0x0000000000002081 "
            "0x0000000000000004.");
  EXPECT_EQ(ev[6].kind, "gsp_rpc_rate_limited");
  EXPECT_EQ(ev[6].pci_bus_id, "00000000:9B:00.0");
  for (const auto& e : ev) EXPECT_EQ(e.boot_id, ev[0].boot_id);  // One boot.
  ASSERT_EQ(result_.used.size(), 1u);
  EXPECT_EQ(result_.used[0], kSample);
}

TEST_F(KmsgSampleLog, CatalogSaysResetNotHardware) {
  const auto xids = testing::OfKind(result_.events, "xid");
  ASSERT_FALSE(xids.empty());
  const XidAssessment a = AssessXid(xids[0]);
  EXPECT_EQ(a.info.mnemonic, "GSP_RPC_TIMEOUT");
  EXPECT_EQ(a.info.action, XidAction::kResetGpu);
  EXPECT_FALSE(a.info.hardware_fault);
  // One boot: no escalation to hardware inspection.
  EXPECT_TRUE(Escalate(result_.events).empty());
}

}  // namespace
}  // namespace gw::kmsg
