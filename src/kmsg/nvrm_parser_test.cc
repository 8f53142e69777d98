// Tests of the NVRM parser over every kernel-log form the driver has printed.
// The quoted log lines are real captures (nvml-xid-facts.md part C.4) typed in
// as data; a few are built from the driver's format strings (part C.1).
#include "kmsg/nvrm_parser.h"

#include <gtest/gtest.h>

#include <string>

#include "kmsg/kmsg_test_util.h"

namespace gw::kmsg {
namespace {

using testing::OfKind;
using testing::Parse;

// --- Current Xid lines (R515+) -------------------------------------------

TEST(NvrmXid, PidAndName) {
  // C.4 #9 (515.65.01), without prefix.
  auto ev = Parse(
      "NVRM: Xid (PCI:0000:08:00): 31, pid=169800, name=chrome, Ch 00000023, intr 00000000. MMU "
      "Fault: ENGINE CE0 HUBCLIENT_HSCE0 faulted @ 0x0_0abe0000. Fault is of type FAULT_PTE "
      "ACCESS_TYPE_VIRT_READ\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, "xid");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:08:00.0");
  EXPECT_EQ(ev[0].xid, 31u);
  EXPECT_EQ(ev[0].pid, 169800);
  EXPECT_EQ(ev[0].process_name, "chrome");
  EXPECT_EQ(ev[0].detail,
            "Ch 00000023, intr 00000000. MMU Fault: ENGINE CE0 HUBCLIENT_HSCE0 faulted @ "
            "0x0_0abe0000. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ");
  EXPECT_FALSE(ev[0].time_unix_ms);
  EXPECT_FALSE(ev[0].monotonic_s);
  EXPECT_FALSE(ev[0].gpu_instance);
  EXPECT_EQ(ev[0].source, "file");
  EXPECT_EQ(ev[0].boot_id, "file#0");
}

TEST(NvrmXid, UnknownPidAndNameWithDmesgT) {
  // C.4 #5-#8 (gpud PR #46): dmesg -T prefixes, pid='<unknown>' / name=<unknown>.
  auto ev = Parse(
      "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
      "name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction "
      "Parameter\n"
      "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
      "name=<unknown>, Graphics SM Global Exception on (GPC 7, TPC 7, SM 0): Multiple Warp "
      "Errors\n"
      "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
      "name=<unknown>, Graphics Exception: ESR 0x57c730=0xc04000b 0x57c734=0x24 "
      "0x57c728=0x1f81fb60 0x57c72c=0x1174\n"
      "[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, "
      "name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005\n");
  ASSERT_EQ(ev.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ev[i].xid, 13u);
    EXPECT_EQ(ev[i].pci_bus_id, "00000000:CB:00.0");
    EXPECT_FALSE(ev[i].pid) << i;
    EXPECT_FALSE(ev[i].process_name) << i;
    EXPECT_EQ(ev[i].time_unix_ms, 1725018189000) << i;
  }
  EXPECT_EQ(ev[0].detail,
            "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter");
  EXPECT_EQ(ev[1].detail,
            "Graphics SM Global Exception on (GPC 7, TPC 7, SM 0): Multiple Warp Errors");
  EXPECT_EQ(ev[2].detail,
            "Graphics Exception: ESR 0x57c730=0xc04000b 0x57c734=0x24 0x57c728=0x1f81fb60 "
            "0x57c72c=0x1174");
  EXPECT_EQ(ev[3].xid, 109u);
  EXPECT_EQ(ev[3].pid, 1797828);
  EXPECT_EQ(ev[3].process_name, "pt_main_thread");
  EXPECT_EQ(ev[3].detail, "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005");
  EXPECT_EQ(ev[3].time_unix_ms, 1725018194000);
}

TEST(NvrmXid, MigGpuInstance) {
  // C.4 #19: the driver source's own examples.
  auto ev = Parse(
      "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: "
      "No, D-RST: No\n"
      "NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: "
      "No\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].xid, 94u);
  EXPECT_EQ(ev[0].gpu_instance, 5u);
  EXPECT_FALSE(ev[0].compute_instance);
  EXPECT_EQ(ev[0].pid, 7194);
  EXPECT_FALSE(ev[0].process_name);
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:01:00.0");
  EXPECT_EQ(ev[0].detail, "Contained: CE User Channel (0x9). RST: No, D-RST: No");
  EXPECT_EQ(ev[1].xid, 95u);
  EXPECT_FALSE(ev[1].gpu_instance);
  EXPECT_EQ(ev[1].detail, "Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: No");
}

TEST(NvrmXid, MigGpuAndComputeInstance) {
  // Built from the C.1 format string `Xid (PCI:%04x:%02x:%02x GPU-I:%02u GPU-CI:%02u)`.
  auto ev = Parse(
      "NVRM: Xid (PCI:0000:3b:00 GPU-I:02 GPU-CI:01): 13, pid=4242, name=python3, Graphics "
      "Exception: ESR 0x1\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:3B:00.0");
  EXPECT_EQ(ev[0].gpu_instance, 2u);
  EXPECT_EQ(ev[0].compute_instance, 1u);
  EXPECT_EQ(ev[0].pid, 4242);
  EXPECT_EQ(ev[0].process_name, "python3");
  EXPECT_EQ(ev[0].detail, "Graphics Exception: ESR 0x1");
}

TEST(NvrmXid, CausedByPreviousXidWithKernelPrefix) {
  // C.4 #11 (590.48.01).
  auto ev = Parse(
      "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by "
      "previous Xid 149\n"
      "kernel: NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c caused by "
      "previous Xid 145\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:DC:00.0");
  EXPECT_EQ(ev[0].xid, 45u);
  EXPECT_EQ(ev[0].pid, 1818990);
  EXPECT_EQ(ev[0].detail, "Ch 00000001 caused by previous Xid 149");
  EXPECT_EQ(ev[1].pci_bus_id, "00000000:ED:00.0");
  EXPECT_EQ(ev[1].detail, "Ch 0000000c caused by previous Xid 145");
}

TEST(NvrmXid, NvLink5WithoutPidAndGb200Domains) {
  // C.4 #12-#14.
  auto ev = Parse(
      "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 "
      "0x00000000 0x00000000 0x00000000 0x00000000)\n"
      "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 "
      "0x00000001 0x00000000 0x00100000 0x00000004)\n"
      "NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 "
      "0x00000000 0x00000000 0x00000000 0x00000000)\n");
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].pci_bus_id, "00000019:01:00.0");
  EXPECT_EQ(ev[0].xid, 149u);
  EXPECT_FALSE(ev[0].pid);
  EXPECT_EQ(ev[0].detail,
            "NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 "
            "0x00000000)");
  EXPECT_EQ(ev[1].pci_bus_id, "00000018:01:00.0");
  EXPECT_EQ(ev[1].xid, 145u);
  EXPECT_EQ(ev[2].xid, 144u);
}

TEST(NvrmXid, RecoveryActionChanged) {
  // C.4 #16.
  auto ev = Parse(
      "NVRM: Xid (PCI:0018:01:00): 154, GPU recovery action changed from 0x4 (Drain and Reset) to "
      "0x1 (GPU Reset Required)\n"
      "NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain "
      "and Reset)\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].xid, 154u);
  EXPECT_EQ(ev[0].detail,
            "GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)");
  EXPECT_EQ(ev[1].pci_bus_id, "00000009:01:00.0");
}

TEST(NvrmXid, EccBurstWithDmesgMonotonic) {
  // C.4 #17 (550.90.07).
  auto ev = Parse(
      "[430954.509105] NVRM: Xid (PCI:0000:52:00): 48, pid='<unknown>', name=<unknown>, An "
      "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
      "physAddr 0x18f31d80 partition 16, subpartition 3.\n"
      "[430954.532443] NVRM: Xid (PCI:0000:52:00): 63, pid='<unknown>', name=<unknown>, Row "
      "Remapper: New row (0x0000000018f31d80) marked for remapping, reset gpu to activate.\n"
      "[430954.533994] NVRM: Xid (PCI:0000:52:00): 94, pid='<unknown>', name=<unknown>, "
      "Contained: SM (0x1). RST: No, D-RST: No\n");
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].xid, 48u);
  EXPECT_DOUBLE_EQ(*ev[0].monotonic_s, 430954.509105);
  EXPECT_FALSE(ev[0].time_unix_ms);  // No boot time: a dmesg stamp is not a wall time.
  EXPECT_EQ(ev[1].xid, 63u);
  EXPECT_EQ(ev[1].detail,
            "Row Remapper: New row (0x0000000018f31d80) marked for remapping, reset gpu to "
            "activate.");
  EXPECT_EQ(ev[2].xid, 94u);
}

TEST(NvrmXid, MonotonicBecomesWallTimeWithBootTime) {
  ParseOptions o;
  o.boot_time_unix_ms = 1'700'000'000'000;
  auto ev = Parse(
      "[  100.250000] NVRM: Xid (PCI:0000:52:00): 48, pid='<unknown>', name=<unknown>, x\n", o);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].time_unix_ms, 1'700'000'100'250);
}

// --- Older eras (C.2) ------------------------------------------------------

TEST(NvrmXid, R4xxPidWithoutName) {
  // C.4 #18 (510.73.08): device 0x1c.
  auto ev = Parse(
      "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, "
      "reset gpu to activate.\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:10:1C.0");
  EXPECT_EQ(ev[0].pid, 1896);
  EXPECT_FALSE(ev[0].process_name);
  EXPECT_EQ(ev[0].detail, "Row Remapper: New row marked for remapping, reset gpu to activate.");
}

TEST(NvrmXid, OlderFormsWithoutPid) {
  // C.4 #10 (PCI: with Ch/engmask), #20 and #21 (no "PCI:"), and the very old
  // bus:device form of C.2.
  auto ev = Parse(
      "[24128.828315] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000000 intr 00004000\n"
      "[24128.834365] NVRM: Xid (PCI:0000:01:00): 31, Ch 00000003, engmask 00000101, intr "
      "10000000\n"
      "[  280.246315] NVRM: Xid (0000:01:00): 13, 0004 00000000 00009097 00002480 00001030 "
      "00000000\n"
      "[  280.260177] NVRM: Xid (0000:01:00): 31, Ch 00000004, engmask 00000101, intr 10000000\n"
      "[  282.271760] NVRM: os_schedule: Attempted to yield the CPU while in atomic or interrupt "
      "context\n"
      "[ 4577.308065] NVRM: Xid (0000:01:00): 8, Channel 00000001\n"
      "NVRM: Xid (0006:00): 53, CMDre 00000000 00000000 00000000 00000000\n");
  ASSERT_EQ(ev.size(), 8u);  // Incl. the "boot" inferred when the clock went back to 280 s.
  EXPECT_EQ(ev[0].xid, 32u);
  EXPECT_EQ(ev[0].detail, "Channel ID 00000000 intr 00004000");
  EXPECT_EQ(ev[1].xid, 31u);
  EXPECT_EQ(ev[1].detail, "Ch 00000003, engmask 00000101, intr 10000000");
  EXPECT_FALSE(ev[1].pid);
  EXPECT_EQ(ev[2].kind, "boot");
  EXPECT_EQ(ev[3].xid, 13u);
  EXPECT_EQ(ev[3].pci_bus_id, "00000000:01:00.0");
  EXPECT_EQ(ev[3].detail, "0004 00000000 00009097 00002480 00001030 00000000");
  EXPECT_EQ(ev[4].detail, "Ch 00000004, engmask 00000101, intr 10000000");
  EXPECT_EQ(ev[5].kind, "os_schedule_atomic");
  EXPECT_EQ(ev[6].xid, 8u);
  EXPECT_EQ(ev[6].detail, "Channel 00000001");
  EXPECT_EQ(ev[7].xid, 53u);
  EXPECT_EQ(ev[7].pci_bus_id, "00000000:06:00.0");
  EXPECT_EQ(ev[7].detail, "CMDre 00000000 00000000 00000000 00000000");
}

TEST(NvrmXid, Driver340WithUuidAnnouncement) {
  // C.4 #22 (340.65).
  auto ev = Parse(
      "[  121.331400] NVRM: GPU at PCI:0000:01:00: GPU-b47b78f9-b9d9-272f-5f10-043e977b5633\n"
      "[  121.331414] NVRM: Xid (PCI:0000:01:00): 62, 12b2(1fa0) 00000000 00000000\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, "gpu_uuid");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:01:00.0");
  EXPECT_EQ(ev[0].detail, "GPU-b47b78f9-b9d9-272f-5f10-043e977b5633");
  EXPECT_EQ(ev[1].xid, 62u);
  EXPECT_EQ(ev[1].detail, "12b2(1fa0) 00000000 00000000");
}

TEST(NvrmXid, UuidLineWithoutPciPrefix) {
  // The form of NVIDIA's own Xid documentation: "GPU at 0000:03:00: GPU-...".
  auto ev = Parse(
      "[  121.331400] NVRM: GPU at 0000:03:00: GPU-b47b78f9-b9d9-272f-5f10-043e977b5633\n"
      "[  121.331414] NVRM: Xid (PCI:0000:03:00): 13, pid=10, name=a, Graphics Exception\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, "gpu_uuid");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:03:00.0");
  EXPECT_EQ(ev[0].detail, "GPU-b47b78f9-b9d9-272f-5f10-043e977b5633");
  EXPECT_EQ(ev[1].xid, 13u);
}

TEST(NvrmProbe, ProbeFailedCountsDevices) {
  auto ev = Parse(
      "[    5.100000] NVRM: The NVIDIA probe routine failed for 3 device(s).\n"
      "[    5.200000] NVRM: The NVIDIA probe routine failed for x device(s).\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, "probe_failed");
  EXPECT_EQ(ProbeFailedDevices(ev[0]), 3u);
  EXPECT_FALSE(ProbeFailedDevices(ev[1]));  // Unreadable count: the event, no number.
  KernelEvent other;
  other.kind = "xid";
  other.detail = "The NVIDIA probe routine failed for 3 device(s).";
  EXPECT_FALSE(ProbeFailedDevices(other));
}

// --- Fallen off the bus ----------------------------------------------------

TEST(NvrmFallenOffBus, Rm570WithUuidXidAndDeviceNotice) {
  // C.4 #1 (RTX 5080).
  auto ev = Parse(
      "kernel: NVRM: GPU at PCI:0000:2b:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae\n"
      "kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n"
      "kernel: NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.\n");
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].kind, "gpu_uuid");
  EXPECT_EQ(ev[0].detail, "GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae");
  EXPECT_EQ(ev[1].kind, "xid");
  EXPECT_EQ(ev[1].xid, 79u);
  EXPECT_EQ(ev[1].detail, "GPU has fallen off the bus.");
  EXPECT_EQ(ev[2].kind, "fallen_off_bus");
  EXPECT_EQ(ev[2].pci_bus_id, "00000000:2B:00.0");
  EXPECT_FALSE(ev[2].xid);
  EXPECT_EQ(ev[2].detail, "GPU has fallen off the bus.");
}

TEST(NvrmFallenOffBus, ProbeTimeThreeLineForm) {
  // C.4 #2 (570.158.01): one message over three lines, then unrelated NVRM lines.
  auto ev = Parse(
      "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
      "NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
      "NVRM: fallen off the bus and is not responding to commands.\n"
      "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
      "[ 1843.439669] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  "
      "Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025\n");
  // The banner is the driver-load marker of the event-age rules (event_age.h);
  // the probe failure says how many GPUs the driver could not take.
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[1].kind, "probe_failed");
  EXPECT_EQ(ProbeFailedDevices(ev[1]), 1u);
  EXPECT_EQ(ev[2].kind, "driver_load");
  EXPECT_EQ(ev[2].detail.rfind("NVIDIA UNIX Open Kernel Module for x86_64  570.158.01", 0), 0u);
  EXPECT_EQ(ev[0].kind, "fallen_off_bus");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:B3:00.0");
  EXPECT_DOUBLE_EQ(*ev[0].monotonic_s, 1843.308145);
  EXPECT_EQ(ev[0].detail,
            "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen "
            "off the bus and is not responding to commands.");
  EXPECT_EQ(ev[0].raw,
            "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
            "NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
            "NVRM: fallen off the bus and is not responding to commands.");
}

TEST(NvrmRmInit, MinorNumberIsRead) {
  auto ev = Parse(
      "[87669.726564] NVRM: RmInitAdapter failed! (0x26:0xffff:1375)\n"
      "[87669.726572] NVRM: rm_init_adapter failed for device bearing minor number 2\n"
      "[  903.610907] NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)\n"
      "[  903.611884] NVRM: GPU 0000:98:00.0: rm_init_adapter failed, device minor number 0\n");
  ASSERT_EQ(ev.size(), 3u) << ev.size();  // A clock going back starts a boot.
  EXPECT_EQ(ev[0].kind, "rm_init_adapter_failed");
  EXPECT_FALSE(ev[0].pci_bus_id);
  EXPECT_EQ(ev[0].minor_number, 2u);
  EXPECT_EQ(ev[2].pci_bus_id, "00000000:98:00.0");
  EXPECT_EQ(ev[2].minor_number, 0u);
}

TEST(NvrmFallenOffBus, OlderOneLineProbeForm) {
  auto ev = Parse(
      "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1e07) installed in this system has fallen "
      "off the bus and is not responding to commands.\n"
      "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, "fallen_off_bus");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:01:00.0");
  // C.4 #3: no final period.
  EXPECT_EQ(ev[1].xid, 79u);
  EXPECT_EQ(ev[1].pci_bus_id, "00000000:44:00.0");
  EXPECT_EQ(ev[1].detail, "GPU has fallen off the bus");
}

TEST(NvrmFallenOffBus, OldDriverGpuAtForm) {
  // C.4 #4 (Bumblebee-era driver).
  auto ev = Parse(
      "[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus.\n"
      "[   49.261465] NVRM: os_pci_init_handle: invalid context!\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, "fallen_off_bus");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:01:00.0");
  EXPECT_EQ(ev[0].detail, "GPU at 0000:01:00.0 has fallen off the bus.");
}

TEST(NvrmFallenOffBus, H100WithSerialsAndCrashDump) {
  // C.4 #23: the serial line comes before the Xid that names the GPU.
  auto ev = Parse(
      "[ 4254.197854] NVRM: GPU Board Serial Number: 1653923026510\n"
      "[ 4254.197860] NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has "
      "fallen off the bus.\n"
      "[ 4254.197871] NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.\n"
      "[ 4254.197878] NVRM: GPU 0000:5d:00.0: GPU serial number is 1653923026510.\n"
      "[ 4254.197913] NVRM: A GPU crash dump has been created. If possible, please run\n");
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0].kind, "board_serial");
  EXPECT_EQ(ev[0].detail, "1653923026510");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:5D:00.0");
  EXPECT_EQ(ev[1].kind, "xid");
  EXPECT_EQ(ev[1].xid, 79u);
  EXPECT_FALSE(ev[1].pid);
  EXPECT_EQ(ev[2].kind, "fallen_off_bus");
  EXPECT_EQ(ev[3].kind, "board_serial");
  EXPECT_EQ(ev[3].pci_bus_id, "00000000:5D:00.0");
  EXPECT_EQ(ev[3].detail, "1653923026510");
  EXPECT_EQ(ev[4].kind, "crash_dump");  // Cut after its first line: still one event.
  EXPECT_FALSE(ev[4].pci_bus_id);
}

TEST(NvrmFallenOffBus, OlderStyleWithThreeLineCrashDump) {
  // C.4 #24 plus the crash-dump continuation of C.1.
  auto ev = Parse(
      "[  239.061387] NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.\n"
      "[  239.061389] NVRM: GPU at 0000:06:00.0 has fallen off the bus.\n"
      "[  239.061398] NVRM: A GPU crash dump has been created. If possible, please run\n"
      "NVRM: nvidia-bug-report.sh as root to collect this data before\n"
      "NVRM: the NVIDIA kernel module is unloaded.\n"
      "[  239.070000] NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.\n");
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].xid, 79u);
  EXPECT_EQ(ev[1].kind, "fallen_off_bus");
  EXPECT_EQ(ev[1].pci_bus_id, "00000000:06:00.0");
  EXPECT_EQ(ev[2].kind, "crash_dump");
  EXPECT_EQ(ev[2].detail,
            "A GPU crash dump has been created. If possible, please run nvidia-bug-report.sh as "
            "root to collect this data before the NVIDIA kernel module is unloaded.");
  EXPECT_EQ(std::count(ev[2].raw.begin(), ev[2].raw.end(), '\n'), 2);
  EXPECT_EQ(ev[3].xid, 79u);
}

TEST(NvrmUnsupported, NotSupportedGpuIsNotFallenOff) {
  auto ev = Parse(
      "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1c82)\n"
      "NVRM: installed in this system is not supported by the\n"
      "NVRM: NVIDIA 470.xx driver release.\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, "gpu_unsupported");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:01:00.0");
}

// --- Initialisation failures -----------------------------------------------

TEST(NvrmRmInit, DeviceFormWithMinorFollowUp) {
  // C.4 #25 (Titan V).
  auto ev = Parse(
      "[Sun Apr 14 12:48:42 2024] NVRM: GPU 0000:81:00.0: RmInitAdapter failed! (0x25:0x40:1470)\n"
      "[Sun Apr 14 12:48:42 2024] NVRM: GPU 0000:81:00.0: rm_init_adapter failed, device minor "
      "number 0\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, "rm_init_adapter_failed");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:81:00.0");
  EXPECT_EQ(ev[0].detail, "RmInitAdapter failed! (0x25:0x40:1470); device minor number 0");
  EXPECT_EQ(ev[0].time_unix_ms, 1713098922000);
}

TEST(NvrmRmInit, GspReasonIsKept) {
  // C.4 #26 (550.144.03).
  auto ev = Parse(
      "[  903.609564] NVRM: RmInitAdapter: Cannot initialize GSP firmware RM\n"
      "[  903.610907] NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)\n"
      "[  903.611884] NVRM: GPU 0000:98:00.0: rm_init_adapter failed, device minor number 0\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:98:00.0");
  EXPECT_EQ(ev[0].detail,
            "RmInitAdapter failed! (0x62:0x65:1792); Cannot initialize GSP firmware RM; device "
            "minor number 0");
}

TEST(NvrmRmInit, SyslogShortPrefixInfersYear) {
  // C.4 #27 (RTX 5090): "Jul 01" read in June 2025 is July 2024.
  auto ev = Parse(
      "Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! "
      "(0x22:0x56:884)\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, "rm_init_adapter_failed");
  EXPECT_EQ(ev[0].time_unix_ms, 1751410507000 - 365LL * 86400000);
  ParseOptions later;
  later.reference_unix_ms = 1751410507000 + 86400000;  // 2025-07-02.
  auto ev2 = Parse(
      "Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)\n",
      later);
  ASSERT_EQ(ev2.size(), 1u);
  EXPECT_EQ(ev2[0].time_unix_ms, 1751410507000);
}

TEST(NvrmRmInit, OldFormWithoutBusId) {
  // C.4 #28 (2016 driver).
  auto ev = Parse(
      "[87669.726564] NVRM: RmInitAdapter failed! (0x26:0xffff:1375)\n"
      "[87669.726572] NVRM: rm_init_adapter failed for device bearing minor number 0\n"
      "[87669.726589] NVRM: nvidia_frontend_open: minor 0, module->open() failed, error -5\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, "rm_init_adapter_failed");
  EXPECT_FALSE(ev[0].pci_bus_id);
  EXPECT_EQ(ev[0].detail, "RmInitAdapter failed! (0x26:0xffff:1375); device minor number 0");
}

TEST(NvrmRmInit, NoAdapterProbed) {
  // C.4 #29.
  auto ev = Parse(
      "[188497.595099] NVRM: No NVIDIA graphics adapter probed!\n"
      "NVRM: The NVIDIA probe routine was not called for 3 device(s).\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, "no_adapter_probed");
  EXPECT_DOUBLE_EQ(*ev[0].monotonic_s, 188497.595099);
}

// --- GSP, os_schedule -----------------------------------------------------

TEST(NvrmGsp, TimeoutAndRpcBuffer) {
  // C.4 #15.
  auto ev = Parse(
      "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting "
      "for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).\n"
      "NVRM: GPU4 GSP RPC buffer contains function 103 (GSP_RM_ALLOC) and data "
      "0x0000000000002081 0x0000000000000004.\n"
      "NVRM: GPU7 GSP RPC buffer contains function 10 (FREE) and data 0x0 0x0.\n");
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].xid, 119u);
  EXPECT_EQ(ev[0].process_name, "nvidia-smi");
  EXPECT_EQ(ev[1].kind, "gsp_rpc_timeout");
  EXPECT_EQ(ev[1].pci_bus_id, "00000000:9B:00.0");  // GPU4, named by the Xid line.
  EXPECT_EQ(ev[2].kind, "gsp_rpc_timeout");
  EXPECT_FALSE(ev[2].pci_bus_id);  // GPU7 was never named.
}

TEST(NvrmOsSchedule, AfterHang) {
  // C.4 #21.
  auto ev = Parse(
      "[ 4577.308065] NVRM: Xid (0000:01:00): 8, Channel 00000001\n"
      "[ 4579.308028] NVRM: os_schedule: Attempted to yield the CPU while in atomic or interrupt "
      "context\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].kind, "os_schedule_atomic");
  EXPECT_FALSE(ev[1].pci_bus_id);
}

// --- Timestamp prefixes ----------------------------------------------------

TEST(NvrmPrefix, IsoSyslogAndJournalForms) {
  auto ev = Parse(
      "2024-08-30T11:43:09.123456+00:00 host kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=1, "
      "name=a, x\n"
      "2024-08-30T11:43:09+0200 host kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=2, name=b, x\n"
      "Aug  3 11:43:09 host kernel: [ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 31, pid=3, "
      "name=c, x\n"
      "[ 1235.000001] host kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=4, name=d, x\n"
      "<4>[ 1236.5] NVRM: Xid (PCI:0000:3b:00): 31, pid=5, name=e, x\n"
      "6,1000,1237000000,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=6, name=f, x\n");
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[0].time_unix_ms, 1725018189123);
  EXPECT_EQ(ev[1].time_unix_ms, 1725010989000);
  EXPECT_EQ(ev[2].time_unix_ms, 1722685389000);
  EXPECT_DOUBLE_EQ(*ev[2].monotonic_s, 1234.56789);
  EXPECT_DOUBLE_EQ(*ev[3].monotonic_s, 1235.000001);
  EXPECT_DOUBLE_EQ(*ev[4].monotonic_s, 1236.5);
  EXPECT_DOUBLE_EQ(*ev[5].monotonic_s, 1237.0);
  for (const auto& e : ev) EXPECT_EQ(e.xid, 31u);
}

TEST(NvrmPrefix, UserSpaceProgramQuotingNvrmIsNotTheKernel) {
  auto ev = Parse(
      "Aug 30 11:43:09 host gpud[123]: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the "
      "bus.\n"
      "2024-08-30T11:43:09+00:00 host python3[9]: NVRM: Xid (PCI:0000:3b:00): 79, x\n"
      "[ 12.000000] some text mentioning NVRMx: Xid (PCI:0000:3b:00): 79, x\n");
  EXPECT_TRUE(ev.empty());
}

// --- Boots -----------------------------------------------------------------

TEST(NvrmBoots, LinuxVersionAndClockGoingBack) {
  auto ev = Parse(
      "[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12) #1 "
      "SMP\n"
      "[  100.000000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
      "[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) #1 SMP\n"
      "[  200.000000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
      "[   50.000000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
      "Linux version is printed by uname\n");
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[0].kind, "boot");
  EXPECT_EQ(ev[0].detail, "Linux version 6.1.0-18-amd64");
  EXPECT_EQ(ev[0].boot_id, "file#0");
  EXPECT_EQ(ev[1].boot_id, "file#0");
  EXPECT_EQ(ev[2].kind, "boot");
  EXPECT_EQ(ev[2].boot_id, "file#1");
  EXPECT_EQ(ev[3].boot_id, "file#1");
  EXPECT_EQ(ev[4].kind, "boot");  // Inferred: 200 s -> 50 s.
  EXPECT_EQ(ev[4].boot_id, "file#2");
  EXPECT_NE(ev[4].detail.find("went back"), std::string::npos);
  EXPECT_EQ(ev[5].boot_id, "file#2");
}

// journalctl -k -b all -p warning drops the banner; its "-- Boot <id> --"
// and "-- Reboot --" lines still part the boots. A banner (or the kernel's
// first lines) right after a marker is the boot the marker opened.
TEST(NvrmBoots, JournalMarkersPartBoots) {
  auto ev = Parse(
      "-- Logs begin at Mon 2026-03-02 08:00:00 UTC, end at Tue 2026-03-10 14:30:00 UTC. --\n"
      "Mar 06 14:30:00 gpu-n07 kernel: NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=a, DBE\n"
      "-- Boot 9e01b2c3d4e5f60718293a4b5c6d7e8f --\n"
      "Mar 09 08:00:00 gpu-n07 kernel: Linux version 6.1.0-18-amd64 (debian-kernel@lists) #1\n"
      "Mar 10 14:00:00 gpu-n07 kernel: NVRM: Xid (PCI:0000:18:00): 13, pid=2, name=b, x\n"
      "-- Reboot --\n"
      "Mar 10 14:20:00 gpu-n07 kernel: NVRM: Xid (PCI:0000:18:00): 13, pid=3, name=c, x\n"
      "Mar 10 14:21:00 gpu-n07 kernel: NVRM: note -- Boot ff -- in prose is not a marker\n");
  ASSERT_GE(ev.size(), 5u);
  EXPECT_EQ(ev[0].kind, "xid");
  EXPECT_EQ(ev[0].boot_id, "file#0");
  EXPECT_EQ(ev[1].kind, "boot");
  EXPECT_EQ(ev[1].boot_id, "file#1");
  EXPECT_EQ(ev[1].detail,
            "journal boot 9e01b2c3d4e5f60718293a4b5c6d7e8f; Linux version 6.1.0-18-amd64");
  EXPECT_EQ(ev[2].boot_id, "file#1");  // The banner did not start another boot.
  EXPECT_EQ(ev[3].kind, "boot");
  EXPECT_EQ(ev[3].detail, "journal reboot marker");
  EXPECT_EQ(ev[4].boot_id, "file#2");
  for (size_t i = 5; i < ev.size(); ++i) EXPECT_NE(ev[i].kind, "boot");
}

TEST(NvrmBoots, PinnedBootIdIsNotCounted) {
  ParseOptions o;
  o.boot_id = "0123456789abcdef0123456789abcdef";
  auto ev = Parse(
      "[  200.000000] NVRM: Xid (PCI:0000:3b:00): 13, x\n"
      "[   50.000000] NVRM: Xid (PCI:0000:3b:00): 13, x\n",
      o);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].boot_id, o.boot_id);
  EXPECT_EQ(ev[1].boot_id, o.boot_id);
}

// --- /dev/kmsg records and journal entries ---------------------------------

TEST(NvrmKmsg, RecordsWithEscapesAndDictionary) {
  ParseOptions o;
  o.source = "kmsg";
  o.boot_id = "b0";
  o.boot_time_unix_ms = 1'700'000'000'000;
  NvrmParser p(o);
  p.FeedKmsgRecord("6,1000,5000000,-;usb 1-1: new high-speed USB device\n");
  p.FeedKmsgRecord(
      "4,1001,5250000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has "
      "fallen off the bus.\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n");
  // One printk holding the three-line probe message: newlines escaped.
  p.FeedKmsgRecord(
      "3,1002,6000000,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: (PCI ID: 10de:26b5) installed "
      "in this system has\\x0aNVRM: fallen off the bus and is not responding to commands.\n");
  p.FeedKmsgRecord("not a record");
  auto ev = p.TakeEvents();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].xid, 79u);
  EXPECT_EQ(ev[0].detail, "GPU has fallen off the bus.");
  EXPECT_DOUBLE_EQ(*ev[0].monotonic_s, 5.25);
  EXPECT_EQ(ev[0].time_unix_ms, 1'700'000'005'250);
  EXPECT_EQ(ev[0].source, "kmsg");
  EXPECT_EQ(ev[0].boot_id, "b0");
  EXPECT_EQ(ev[1].kind, "fallen_off_bus");
  EXPECT_EQ(ev[1].pci_bus_id, "00000000:B3:00.0");
  EXPECT_NE(ev[1].detail.find("not responding to commands"), std::string::npos);
}

TEST(NvrmJournal, MultiLineMessageInOneEntry) {
  ParseOptions o;
  o.source = "journal";
  NvrmParser p(o);
  JournalEntryMeta meta{1'700'000'000'000'000, 5'000'000, "b1"};
  p.FeedJournalMessage(
      "NVRM: A GPU crash dump has been created. If possible, please run\nNVRM: "
      "nvidia-bug-report.sh "
      "as root to collect this data before\nNVRM: the NVIDIA kernel module is unloaded.",
      meta);
  // Continuation lines without their "NVRM: " prefix.
  p.FeedJournalMessage(
      "NVRM: The NVIDIA GPU 0000:b3:00.0\n(PCI ID: 10de:26b5) installed in this system has\nfallen "
      "off the bus and is not responding to commands.\n",
      meta);
  p.FeedJournalMessage("NVRM: Xid (PCI:0000:b3:00): 79, GPU has fallen off the bus.", meta);
  auto ev = p.TakeEvents();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].kind, "crash_dump");
  EXPECT_EQ(ev[0].time_unix_ms, 1'700'000'000'000);
  EXPECT_DOUBLE_EQ(*ev[0].monotonic_s, 5.0);
  EXPECT_EQ(ev[0].boot_id, "b1");
  EXPECT_EQ(ev[1].kind, "fallen_off_bus");
  EXPECT_EQ(ev[1].pci_bus_id, "00000000:B3:00.0");
  EXPECT_EQ(ev[2].xid, 79u);
}

// --- Malformed input -------------------------------------------------------

TEST(NvrmMalformed, BrokenXidLinesAreSkipped) {
  NvrmParser p(ParseOptions{});
  p.FeedText(
      "NVRM: Xid (PCI:0000:3b:00\n"
      "NVRM: Xid (PCI:0000:3b:00): abc, x\n"
      "NVRM: Xid\n"
      "NVRM: Xid (PCI:zzzz): 13, pid=1, name=a, still an Xid without a bus\n"
      "NVRM:\n"
      "NVRM\n"
      "NVRM: GPU4 RPC history (CPU -> GSP):\n"
      "NVRM: Xid (PCI:0000:3b:00): 99999999999, x\n",
      true);
  auto ev = p.TakeEvents();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].xid, 13u);
  EXPECT_FALSE(ev[0].pci_bus_id);
  EXPECT_GE(p.stats().unrecognised_lines, 5u);
}

// Lines cut right after a bus id, found by fuzzing mutated real lines.
TEST(NvrmMalformed, CutAfterTheBusId) {
  auto ev = Parse(
      "NVRM: GPU 0000:81:00.0: RmInitAdapter failed! (0x25:0x40:1470)\n"
      "NVRM: GPU 0000:81:00.0\n"
      "NVRM: RmInitAdapter failed! (0x26:0xffff:1375)\n"
      "NVRM: GPU 0000:81:00.0:\n"
      "NVRM: GPU at PCI:0000:2b:00\n"
      "NVRM: GPU at PCI:0000:2b:00:\n"
      "NVRM: GPU 0000:5d:00.0: GPU serial number is \n"
      "NVRM: Xid (PCI:0000:3b:00 GPU-I:\n"
      "NVRM: Xid (PCI:0000:3b:00 GPU-CI:): 13\n"
      "NVRM: Xid (PCI:0000:3b:00): 13, pid=\n"
      "NVRM: Xid (PCI:0000:3b:00): 13, name=\n"
      "NVRM: GPU4 GSP RPC buffer contains function\n"
      "NVRM: Rate limiting GSP RPC error prints for GPU at \n");
  ASSERT_EQ(ev.size(), 6u);  // An empty serial or rate-limit notice says nothing.
  EXPECT_EQ(ev[0].kind, "rm_init_adapter_failed");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:81:00.0");
  EXPECT_EQ(ev[1].kind, "rm_init_adapter_failed");
  EXPECT_FALSE(ev[1].pci_bus_id);
  EXPECT_EQ(ev[2].xid, 13u);
  EXPECT_FALSE(ev[2].compute_instance);
  EXPECT_FALSE(ev[3].pid);
  EXPECT_FALSE(ev[4].process_name);
  EXPECT_EQ(ev[5].kind, "gsp_rpc_timeout");
}

TEST(NvrmMalformed, BinaryGarbageAndNulBytes) {
  const std::string nul_one("\x00\x01", 2);
  std::string text = nul_one + "NVRM\xff\xfe\n";
  text += "NVRM: Xid (PCI:0000:3b:00): 31, pid=12" + nul_one + ", name=\x1b[31mevil\x07, x\n";
  for (int i = 0; i < 1000; ++i) text += "NVRMNVRMLinux versionLinux version\xff";
  text += "\nNVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=ok, fine\n";
  auto ev = Parse(text);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].xid, 31u);
  EXPECT_FALSE(ev[0].pid);                            // "12\0\1" is not a number.
  EXPECT_EQ(ev[0].process_name, "\x1b[31mevil\x07");  // Kept as bytes; renderers sanitise.
  EXPECT_EQ(ev[1].xid, 13u);
}

TEST(NvrmMalformed, VeryLongLinesAreCutNotFatal) {
  std::string text = "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=a, ";
  text += std::string(5 << 20, 'A');  // 5 MiB, then the line ends.
  text += "\n";
  text += std::string(3 << 20, 'B') + " NVRM: Xid (PCI:0000:3b:00): 79, deep inside a line\n";
  text += "NVRM: Xid (PCI:0000:3b:00): 31, pid=2, name=b, after";  // No final newline.
  NvrmParser p(ParseOptions{});
  EXPECT_EQ(p.FeedText(text, true), text.size());
  auto ev = p.TakeEvents();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].xid, 13u);
  EXPECT_LE(ev[0].raw.size(), kMaxLineBytes);
  EXPECT_LE(ev[0].detail.size(), kMaxLineBytes);
  EXPECT_EQ(ev[1].xid, 31u);
  EXPECT_EQ(ev[1].detail, "after");
  EXPECT_EQ(p.stats().truncated_lines, 1u);
}

TEST(NvrmMalformed, TruncatedAtEndOfInput) {
  auto ev = Parse("[ 1.000000] NVRM: Xid (PCI:0000:3b:00): 4");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].xid, 4u);
  auto ev2 = Parse(
      "[ 1.000000] NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:26b5) installed in this "
      "system has\nNVRM: fallen off the b");
  ASSERT_EQ(ev2.size(), 1u);
  EXPECT_EQ(ev2[0].kind, "fallen_off_bus");
}

// --- Streaming --------------------------------------------------------------

// Feeding a log in chunks of any size gives the same events as feeding it whole.
TEST(NvrmStreaming, ChunkBoundariesDoNotMatter) {
  const std::string log =
      "[    0.000000] Linux version 6.1.0 (x) #1\n"
      "[    1.000000] usb 1-1: new device\n"
      "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
      "NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
      "NVRM: fallen off the bus and is not responding to commands.\n"
      "[ 1900.000000] NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d\n"
      "[ 1900.000001] NVRM: GPU Board Serial Number: 1650124014249\n"
      "[ 1900.000002] NVRM: Xid (PCI:0000:9b:00): 119, pid=2, name=nvidia-smi, Timeout after 6s "
      "of waiting for RPC response from GPU4 GSP!\n"
      "[ 1900.000003] NVRM: GPU4 GSP RPC buffer contains function 103 (GSP_RM_ALLOC) and data 0x1 "
      "0x2.\n"
      "[ 1901.000000] EXT4-fs (sda1): mounted filesystem\n";
  const auto whole = Parse(log);
  ASSERT_EQ(whole.size(), 6u);
  for (size_t chunk = 1; chunk <= 64; chunk += 7) {
    ParseOptions o;
    o.reference_unix_ms = testing::kReferenceMs;
    NvrmParser p(o);
    std::string carry;
    for (size_t off = 0; off < log.size(); off += chunk) {
      carry += log.substr(off, chunk);
      const size_t used = p.FeedText(carry, false);
      carry.erase(0, used);
    }
    p.FeedText(carry, true);
    const auto ev = p.TakeEvents();
    ASSERT_EQ(ev.size(), whole.size()) << "chunk " << chunk;
    for (size_t i = 0; i < ev.size(); ++i) {
      EXPECT_EQ(ev[i].kind, whole[i].kind) << chunk << "/" << i;
      EXPECT_EQ(ev[i].pci_bus_id, whole[i].pci_bus_id) << chunk << "/" << i;
      EXPECT_EQ(ev[i].detail, whole[i].detail) << chunk << "/" << i;
      EXPECT_EQ(ev[i].raw, whole[i].raw) << chunk << "/" << i;
    }
  }
}

TEST(NvrmStreaming, RateLimitNotice) {
  auto ev = Parse(
      "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of every "
      "30).  The GPU likely needs to be reset.\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, "gsp_rpc_rate_limited");
  EXPECT_EQ(ev[0].pci_bus_id, "00000000:9B:00.0");
}

}  // namespace
}  // namespace gw::kmsg
