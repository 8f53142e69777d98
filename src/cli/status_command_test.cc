#include "cli/status_command.h"

#include <gtest/gtest.h>

#include "cli/exit_codes.h"

namespace gw::cli {
namespace {

ProbeError NvmlError(std::string code) {
  return ProbeError{"nvml", std::move(code), "message", std::nullopt, std::nullopt};
}

TEST(StatusExitCode, HealthySnapshotIsOk) {
  Snapshot s;
  s.gpus.resize(2);
  EXPECT_EQ(StatusExitCode(s), kExitOk);
}

TEST(StatusExitCode, NoGpusAndAnNvmlErrorMeansNvmlUnavailable) {
  Snapshot s;
  s.errors.push_back(NvmlError("driver_not_loaded"));
  EXPECT_EQ(StatusExitCode(s), kExitNvmlUnavailable);
}

TEST(StatusExitCode, NoGpusWithoutErrorsIsOk) {
  // A server with no GPUs is a fact, not a failure.
  Snapshot s;
  EXPECT_EQ(StatusExitCode(s), kExitOk);
}

TEST(StatusExitCode, TimeoutWinsOverEverythingElse) {
  Snapshot s;
  s.gpus.resize(1);
  s.gpus[0].unreachable = NvmlError("timeout");
  s.timed_out = true;
  EXPECT_EQ(StatusExitCode(s), kExitDriverTimeout);
}

TEST(StatusExitCode, OneLostGpuIsReportedAsUnreachable) {
  Snapshot s;
  s.gpus.resize(3);
  s.gpus[1].unreachable = NvmlError("gpu_lost");
  EXPECT_EQ(StatusExitCode(s), kExitGpuUnreachable);
}

TEST(StatusExitCode, ProcErrorsAloneDoNotFailTheCommand) {
  Snapshot s;
  s.gpus.resize(1);
  s.errors.push_back(ProbeError{"proc", "permission", "m", std::nullopt, std::nullopt});
  EXPECT_EQ(StatusExitCode(s), kExitOk);
}

}  // namespace
}  // namespace gw::cli
