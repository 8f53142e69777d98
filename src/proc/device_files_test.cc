#include "proc/device_files.h"

#include <gtest/gtest.h>

namespace gw::proc {
namespace {

TEST(DeviceFilePrefix, DropsTrailingSlashesLikeTheKernelsPaths) {
  EXPECT_EQ(DeviceFilePrefix("/dev"), "/dev/nvidia");
  EXPECT_EQ(DeviceFilePrefix("/dev///"), "/dev/nvidia");
  EXPECT_EQ(DeviceFilePrefix("/"), "/nvidia");
  EXPECT_EQ(DeviceFilePrefix("/tmp/fake", "gpu"), "/tmp/fake/gpu");
}

TEST(GpuDeviceMinor, TheGpuFilesOfTheDefaultDirectory) {
  EXPECT_EQ(GpuDeviceMinor("/dev/nvidia0"), 0u);
  EXPECT_EQ(GpuDeviceMinor("/dev/nvidia3"), 3u);
  EXPECT_EQ(GpuDeviceMinor("/dev/nvidia254"), 254u);
  EXPECT_EQ(GpuDeviceMinor("/dev/nvidia123456"), 123456u);
  EXPECT_EQ(GpuDeviceMinor("/dev/nvidia4294967295"), 4294967295u);
}

TEST(GpuDeviceMinor, ControlUvmCapsAndOddNamesAreNoGpu) {
  for (const char* path :
       {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
        "/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia", "/dev/nvidia3 (deleted)", "/dev/nvidia-3",
        "/dev/nvidia+3", "/dev/nvidia3a", "/dev/nvidia 3", "/dev/nvidia4294967296",
        "/dev/nvidia99999999999999999999", "/dev/dri/card0", "", "nvidia3", "/dev/nvidia3/x"}) {
    EXPECT_EQ(GpuDeviceMinor(path), std::nullopt) << path;
  }
}

TEST(GpuDeviceMinor, HonoursTheDeviceDirectory) {
  EXPECT_EQ(GpuDeviceMinor("/tmp/gw_dev/nvidia2", "/tmp/gw_dev"), 2u);
  EXPECT_EQ(GpuDeviceMinor("/tmp/gw_dev/nvidia2", "/tmp/gw_dev/"), 2u);
  EXPECT_EQ(GpuDeviceMinor("/tmp/gw_dev/nvidiactl", "/tmp/gw_dev"), std::nullopt);
  // Another directory's files are not this one's GPUs, either way round.
  EXPECT_EQ(GpuDeviceMinor("/dev/nvidia2", "/tmp/gw_dev"), std::nullopt);
  EXPECT_EQ(GpuDeviceMinor("/tmp/gw_dev/nvidia2"), std::nullopt);
  EXPECT_EQ(GpuDeviceMinor("/tmp/gw_devx/nvidia2", "/tmp/gw_dev"), std::nullopt);
  EXPECT_EQ(GpuDeviceMinor("/nvidia7", "/"), 7u);
}

}  // namespace
}  // namespace gw::proc
