// Event age: history vs current by boot, driver load and wall time; one Xid 79
// incident per fall off the bus.
#include "kmsg/event_age.h"

#include <gtest/gtest.h>

#include "kmsg/kmsg_test_util.h"

namespace gw::kmsg {
namespace {

using testing::Parse;

std::vector<AgedEvent> AgeOf(const std::vector<KernelEvent>& ev, const EventAgeOptions& o = {},
                             int64_t reference = 0) {
  return AgeEvents(ev, o, reference);
}

// Index of the first event of `kind` (and Xid).
size_t IndexOf(const std::vector<KernelEvent>& ev, std::string_view kind, unsigned xid = 0) {
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind == kind && (xid == 0 || ev[i].xid == xid)) return i;
  }
  ADD_FAILURE() << "no " << kind;
  return 0;
}

TEST(KmsgEventAge, EventsOfAnEarlierBootInAFileAreHistory) {
  const auto ev = Parse(
      "[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)\n"
      "[ 5000.100000] NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, An "
      "uncorrectable double bit error (DBE) has been detected\n"
      "[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)\n"
      "[   60.000000] NVRM: Xid (PCI:0000:3b:00): 13, pid=42, name=python, Graphics Exception\n");
  const auto age = AgeOf(ev);
  const size_t dbe = IndexOf(ev, kKindXid, 48), app = IndexOf(ev, kKindXid, 13);
  EXPECT_EQ(age[dbe].age, EventAge::kHistory);
  EXPECT_EQ(age[dbe].reason, HistoryReason::kEarlierBoot);
  EXPECT_EQ(age[app].age, EventAge::kCurrent);
}

TEST(KmsgEventAge, OneBootWithKernelTimeOnlyIsCurrent) {
  // An Xid 79 stamped [ 1234.5] with no wall time: placed by order, never aged.
  const auto ev =
      Parse("[ 1234.500000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n");
  const auto age = AgeOf(ev, {}, testing::kReferenceMs);
  ASSERT_EQ(age.size(), 1u);
  EXPECT_EQ(age[0].age, EventAge::kCurrent);
}

TEST(KmsgEventAge, EventsBeforeTheLastDriverLoadAreHistoryButItsProbeMessagesAreNot) {
  const auto ev = Parse(
      "[  100.000000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
      "[  100.000100] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
      "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
      "NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
      "NVRM: fallen off the bus and is not responding to commands.\n"
      "[ 1843.439669] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  "
      "Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025\n"
      "[ 1900.000000] NVRM: Xid (PCI:0000:5d:00): 119, pid=1, name=nvidia-smi, Timeout\n");
  ASSERT_EQ(ev.size(), 5u);
  const auto age = AgeOf(ev);
  EXPECT_EQ(ev[3].kind, kKindDriverLoad);
  EXPECT_EQ(ev[3].detail.rfind("NVIDIA UNIX Open Kernel Module", 0), 0u) << ev[3].detail;
  EXPECT_EQ(age[0].reason, HistoryReason::kEarlierDriverLoad);  // The old Xid 79 ...
  EXPECT_EQ(age[1].reason, HistoryReason::kEarlierDriverLoad);  // ... and its notice.
  EXPECT_EQ(age[2].age, EventAge::kCurrent);  // Fell off the bus at this load's probe.
  EXPECT_EQ(age[2].reason, HistoryReason::kNone);
  EXPECT_EQ(age[4].age, EventAge::kCurrent);
}

TEST(KmsgEventAge, ProbeMessagesLongBeforeTheBannerBelongToTheEarlierLoad) {
  const auto ev = Parse(
      "[  100.000000] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
      "[  400.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 "
      "19:39:15 UTC 2024\n");
  const auto age = AgeOf(ev);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(age[0].reason, HistoryReason::kEarlierDriverLoad);
}

TEST(KmsgEventAge, AThreeYearOldXidIsHistory) {
  const auto ev = Parse(
      "[Fri Aug 30 11:43:09 2022] NVRM: Xid (PCI:0000:52:00): 48, pid='<unknown>', "
      "name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU\n"
      "[Sat May 31 23:00:00 2025] NVRM: Xid (PCI:0000:52:00): 13, pid=7, name=x, Graphics\n");
  ASSERT_EQ(ev.size(), 2u);
  ASSERT_TRUE(ev[0].time_unix_ms);
  const auto age = AgeOf(ev, {}, testing::kReferenceMs);
  EXPECT_EQ(age[0].age, EventAge::kHistory);
  EXPECT_EQ(age[0].reason, HistoryReason::kTooOld);
  EXPECT_EQ(age[1].age, EventAge::kCurrent);  // One hour old.
  // Without a reference time nothing can be too old.
  EXPECT_EQ(AgeOf(ev)[0].age, EventAge::kCurrent);
  EXPECT_EQ(HistoryReasonText(HistoryReason::kTooOld, {}), "more than 7 days before the snapshot");
}

TEST(KmsgEventAge, SinceLeavesOlderEventsOut) {
  const auto ev = Parse(
      "[Sat May 31 20:00:00 2025] NVRM: Xid (PCI:0000:52:00): 79, GPU has fallen off the bus.\n"
      "[Sat May 31 23:30:00 2025] NVRM: Xid (PCI:0000:52:00): 13, pid=7, name=x, Graphics\n"
      "[ 99.000000] NVRM: Xid (PCI:0000:52:00): 13, pid=7, name=x, Graphics\n");
  EventAgeOptions o;
  o.since_s = 3600;
  const auto age = AgeOf(ev, o, testing::kReferenceMs);
  ASSERT_EQ(age.size(), 3u);
  EXPECT_EQ(age[0].age, EventAge::kOutOfRange);
  EXPECT_EQ(age[1].age, EventAge::kCurrent);
  EXPECT_EQ(age[2].age, EventAge::kCurrent);  // No wall time: cannot be placed, kept.
}

KernelEvent Ev(const char* kind, std::string boot, Opt<int64_t> t = std::nullopt) {
  KernelEvent e;
  e.kind = kind;
  e.boot_id = std::move(boot);
  e.time_unix_ms = t;
  if (e.kind == kKindXid) e.xid = 79;
  e.pci_bus_id = "00000000:3B:00.0";
  return e;
}

TEST(KmsgEventAge, TheRunningBootOfThisMachine) {
  const std::string now(32, 'a'), before(32, 'b');
  std::vector<KernelEvent> ev = {Ev(kKindXid, before), Ev(kKindXid, now), Ev(kKindXid, before)};
  EventAgeOptions o;
  o.running_boot_id = now;
  const auto age = AgeOf(ev, o);
  EXPECT_EQ(age[0].reason, HistoryReason::kEarlierBoot);
  EXPECT_EQ(age[1].age, EventAge::kCurrent);
  // The last event's boot is not the current one when the running boot is known.
  EXPECT_EQ(age[2].reason, HistoryReason::kEarlierBoot);

  // Only a file's own boot ids: placed by the running boot's start instead.
  std::vector<KernelEvent> file = {Ev(kKindXid, "/var/log/kern.log#0", 1000),
                                   Ev(kKindXid, "/var/log/kern.log#0", 500'000)};
  o.running_boot_start_unix_ms = 400'000;
  const auto file_age = AgeOf(file, o);
  EXPECT_EQ(file_age[0].reason, HistoryReason::kEarlierBoot);
  EXPECT_EQ(file_age[1].age, EventAge::kCurrent);
  EXPECT_TRUE(file_age[1].running_boot);
  EXPECT_FALSE(file_age[0].running_boot);
  // Old but of the running boot: history for a verdict, still this boot.
  const auto old = AgeOf(file, o, 500'000 + 30LL * 24 * 3600 * 1000);
  EXPECT_EQ(old[1].reason, HistoryReason::kTooOld);
  EXPECT_TRUE(old[1].running_boot);
  // A file from elsewhere is never known to be this machine's boot.
  EXPECT_FALSE(AgeOf(file)[1].running_boot);
}

TEST(KmsgEventAge, Xid79AndItsNoticeAreOneIncident) {
  const auto ev = Parse(
      "[ 4254.197860] NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has "
      "fallen off the bus.\n"
      "[ 4254.197871] NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.\n"
      "[ 4254.197878] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
      "[ 9999.000000] NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.\n");
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_TRUE(SameFallOffTheBus(ev[0], ev[1], 1));
  EXPECT_FALSE(SameFallOffTheBus(ev[0], ev[2], 2));  // Another GPU.
  EXPECT_FALSE(SameFallOffTheBus(ev[0], ev[3], 3));  // Much later: a second fall.
  EXPECT_FALSE(SameFallOffTheBus(ev[1], ev[0], 1));  // Arguments in order.
  KernelEvent a = ev[0], b = ev[1];
  a.monotonic_s.reset();
  b.monotonic_s.reset();
  EXPECT_TRUE(SameFallOffTheBus(a, b, 1));  // No time: adjacent lines.
  EXPECT_FALSE(SameFallOffTheBus(a, b, 9));
}

// A dmesg file is of the running boot when the running kernel's log holds one
// of its NVRM lines at the same kernel time; boot markers and other boots'
// lines do not count.
TEST(BootsOfRunningKernel, AFileBootIsTheRunningOneWhenKmsgHoldsItsLines) {
  const auto event = [](std::string boot, double mono, std::string detail) {
    KernelEvent e;
    e.kind = kKindXid;
    e.xid = 79;
    e.pci_bus_id = "00000000:BB:00.0";
    e.monotonic_s = mono;
    e.detail = std::move(detail);
    e.boot_id = std::move(boot);
    return e;
  };
  KernelEvent file_boot;
  file_boot.kind = kKindBoot;
  file_boot.monotonic_s = 0.0;
  file_boot.boot_id = "f#1";
  std::vector<KernelEvent> file = {file_boot, event("f#0", 100.25, "GPU has fallen off the bus."),
                                   event("f#1", 12877.612345, "GPU has fallen off the bus.")};
  KernelEvent kmsg_boot = file_boot;
  kmsg_boot.boot_id = "0123";
  const std::vector<KernelEvent> running = {
      kmsg_boot, event("0123", 12877.612345, "GPU has fallen off the bus.")};
  EXPECT_EQ(BootsOfRunningKernel(file, running), std::set<std::string>{"f#1"});
  // Another microsecond, another text, or only the boot marker: not this boot.
  for (const KernelEvent& r : {event("0123", 12877.612347, "GPU has fallen off the bus."),
                               event("0123", 12877.612345, "something else")}) {
    EXPECT_TRUE(BootsOfRunningKernel(file, std::vector<KernelEvent>{kmsg_boot, r}).empty());
  }
  EXPECT_TRUE(BootsOfRunningKernel(file, std::vector<KernelEvent>{kmsg_boot}).empty());
}

}  // namespace
}  // namespace gw::kmsg
