#include "render/events_text.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/json_out.h"
#include "core/text.h"
#include "render/events_json.h"
#include "render/test_diagnoses.h"

namespace gw::render {
namespace {

using kmsg::KernelEvent;
using nlohmann::json;

KernelEvent Xid(unsigned xid, const std::string& bus) {
  KernelEvent ev;
  ev.kind = kmsg::kKindXid;
  ev.xid = xid;
  ev.pci_bus_id = bus;
  ev.monotonic_s = 1234.5;
  ev.source = "kmsg";
  ev.boot_id = "b1";
  ev.detail = "some detail";
  ev.raw = "NVRM: Xid (PCI:0000:5d:00): " + std::to_string(xid) + ", some detail";
  return ev;
}

EventsContext Context() {
  EventsContext c;
  c.sources_used = {"kmsg"};
  c.sources_unavailable = {"journal: journalctl not found"};
  Snapshot s;
  s.gpus.resize(2);
  s.gpus[0].index = 0;
  s.gpus[0].pci_bus_id = "00000000:19:00.0";
  s.gpus[1].index = 3;
  s.gpus[1].pci_bus_id = "00000000:5D:00.0";
  c.gpus = MapGpusToPci(std::vector<Snapshot>{s}, {});
  return c;
}

// Sets TZ for the life of the object.
class EventsTz {
 public:
  explicit EventsTz(const char* tz) {
    const char* old = std::getenv("TZ");
    if (old) saved_ = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~EventsTz() {
    if (saved_) {
      setenv("TZ", saved_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  std::optional<std::string> saved_;
};

TEST(GpuIndexForBusId, MatchesEverySpellingOfTheAddress) {
  const EventsContext c = Context();
  for (const char* bus :
       {"00000000:5D:00.0", "00000000:5d:00.0", "0000:5d:00.0", "0000:5d:00", "PCI:0000:5d:00"}) {
    EXPECT_EQ(GpuIndexForBusId(c, std::string(bus)), 3u) << bus;
  }
  EXPECT_EQ(GpuIndexForBusId(c, std::string("00000000:19:00.0")), 0u);
  EXPECT_EQ(GpuIndexForBusId(c, std::string("0001:5d:00.0")), std::nullopt);  // Other domain.
  EXPECT_EQ(GpuIndexForBusId(c, std::string("00000000:AA:00.0")), std::nullopt);
  EXPECT_EQ(GpuIndexForBusId(c, std::string("not a bus")), std::nullopt);
  EXPECT_EQ(GpuIndexForBusId(c, std::nullopt), std::nullopt);
}

// An Xid 79 at the kernel's "0000:bb:00" on GPU 5, which NVML lists as lost:
// with its bus id (a dump), or without one (a live probe whose handle failed),
// placed then by NVML's PCI order between its neighbours.
TEST(GpuIndexForBusId, ALostGpuIsFoundByTheKernelsShortAddress) {
  for (const bool listed_with_address : {true, false}) {
    SCOPED_TRACE(listed_with_address);
    Snapshot s;
    const char* buses[] = {"19", "3B", "4C", "5D", "9B", "BB", "CB", "DB"};
    for (unsigned i = 0; i < 8; ++i) {
      Gpu g;
      g.index = i;
      g.pci_bus_id = fmt::format("00000000:{}:00.0", buses[i]);
      s.gpus.push_back(g);
    }
    s.gpus[5].unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 5, 15};
    if (!listed_with_address) s.gpus[5].pci_bus_id.reset();
    EventsContext c;
    c.gpus = MapGpusToPci(std::vector<Snapshot>{s}, std::vector<std::string>{"00000000:BB:00.0"});
    EXPECT_EQ(GpuIndexForBusId(c, std::string("0000:bb:00")), 5u);
    KernelEvent ev = Xid(79, "00000000:BB:00.0");
    const std::string out = RenderEventsText({ev}, c, false, 300);
    EXPECT_NE(out.find("  GPU 5 (PCI 0000:bb:00)  Xid 79 "), std::string::npos) << out;
    const json j = EventsJson({ev}, c);
    EXPECT_EQ(j["events"][0]["gpu_index"], 5);
    EXPECT_EQ(j["events"][0]["gpu_placed_by_order"], !listed_with_address);
  }
}

// A kernel time alone (plain dmesg) of the running boot is placed on the wall
// clock from the boot's start; the JSON keeps the kernel time and says how.
TEST(EventsText, AKernelTimeOfTheRunningBootIsShownAtItsWallTime) {
  EventsTz utc("UTC");
  KernelEvent ev = Xid(79, "00000000:5D:00.0");
  ev.monotonic_s = 12877.6;
  ev.boot_id = "running";
  EventsContext c = Context();
  c.running_boot_ids = {"running"};
  c.running_boot_start_unix_ms = testing::kTime;  // 2025-01-20T10:18:26Z.
  const std::string out = RenderEventsText({ev}, c, false, 200);
  // 10:18:26 + 12877.6 s = 13:53:03.6.
  EXPECT_NE(out.find("\n2025-01-20T13:53:03+00:00  GPU 3 (PCI 0000:5d:00)  Xid 79"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("boot+"), std::string::npos) << out;
  const json e = EventsJson({ev}, c)["events"][0];
  EXPECT_EQ(e["monotonic_s"], 12877.6);
  EXPECT_EQ(e["time_unix_ms"], testing::kTime + 12'877'600);
  EXPECT_EQ(e["time_utc"], "2025-01-20T13:53:03.600Z");
  EXPECT_EQ(e["time_source"], "boot_start");
}

// A kernel time of another boot, or of a file not shown to be of this boot,
// gets no invented wall time.
TEST(EventsText, AKernelTimeOfAnotherBootCannotBePlaced) {
  EventsTz utc("UTC");
  KernelEvent ev = Xid(79, "00000000:5D:00.0");
  ev.monotonic_s = 12877.6;
  ev.boot_id = "older";
  EventsContext c = Context();
  c.running_boot_ids = {"running"};
  c.running_boot_start_unix_ms = testing::kTime;
  const std::string out = RenderEventsText({ev}, c, false, 200);
  EXPECT_NE(out.find("\nboot+12877.6s (another boot; no wall-clock time)  GPU 3 (PCI 0000:5d:00)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  times: boot+N s: seconds since that boot."), std::string::npos) << out;
  const json e = EventsJson({ev}, c)["events"][0];
  EXPECT_TRUE(e["time_unix_ms"].is_null());
  EXPECT_TRUE(e["time_utc"].is_null());
  EXPECT_EQ(e["time_source"], "other_boot");
  EXPECT_EQ(e["monotonic_s"], 12877.6);

  // A file whose boot the running kernel's log did not confirm: its last boot
  // is not known to be another one; its earlier boots are.
  c.running_boot_ids.clear();
  KernelEvent earlier = ev;
  earlier.boot_id = "file#1";
  ev.boot_id = "file#2";
  const std::string file = RenderEventsText({earlier, ev}, c, false, 200);
  EXPECT_NE(file.find("\nboot+12877.6s (another boot; no wall-clock time)"), std::string::npos)
      << file;
  EXPECT_NE(file.find("\nboot+12877.6s (boot not matched to this one; no wall-clock time)"),
            std::string::npos)
      << file;
  EXPECT_EQ(EventsJson({earlier, ev}, c)["events"][1]["time_source"], "unmatched_boot");
}

// A wall time the log carried is the log's.
TEST(EventsJson, ALoggedWallTimeSaysSo) {
  KernelEvent ev = Xid(79, "00000000:5D:00.0");
  ev.time_unix_ms = testing::kTime;
  json e = EventsJson({ev}, Context())["events"][0];
  EXPECT_EQ(e["time_source"], "log");
  EXPECT_EQ(e["time_utc"], "2025-01-20T10:18:26.000Z");
  ev.time_from_boot_start = true;  // /dev/kmsg: the running boot's start + usec.
  e = EventsJson({ev}, Context())["events"][0];
  EXPECT_EQ(e["time_source"], "boot_start");
}

TEST(EventsText, NoEvents) {
  const std::string out = RenderEventsText({}, Context(), false, 100);
  EXPECT_EQ(out,
            "NVRM events from kmsg\n"
            "  not read: journal: journalctl not found\n"
            "no NVRM events\n");
  EventsContext none;
  EXPECT_NE(RenderEventsText({}, none, false, 100).find("no kernel log source could be read"),
            std::string::npos);
}

TEST(EventsText, OneLinePerEventAttributedAndExplained) {
  KernelEvent app = Xid(13, "00000000:19:00.0");
  app.pid = 4242;
  app.process_name = "python";
  const std::vector<KernelEvent> events = {
      Xid(79, "00000000:5D:00.0"), app, Xid(79, "00000000:5d:00.0"), Xid(79, "00000000:AA:00.0")};
  const std::string out = RenderEventsText(events, Context(), false, 200);
  std::vector<std::string> lines = testing::SplitLines(out);
  const auto first = std::find_if(lines.begin(), lines.end(),
                                  [](const std::string& l) { return l.starts_with("boot+"); });
  ASSERT_GE(lines.end() - first, 9) << out;
  lines.erase(lines.begin(), first);
  EXPECT_EQ(lines[0],
            "boot+1234.5s (boot not matched to this one; no wall-clock time)  GPU 3 (PCI "
            "0000:5d:00)  Xid 79 GPU_HAS_FALLEN_OFF_THE_BUS  — GPU fell off the bus; reboot the "
            "node (admin)");
  EXPECT_NE(lines[1].find("GPU 0 (PCI 0000:19:00)  Xid 13 "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("pid 4242 python"), std::string::npos) << lines[1];
  // Too wide for one line: the meaning goes below.
  EXPECT_NE(lines[2].find("restart the application (user)"), std::string::npos) << lines[2];
  // Bus ids match case-insensitively.
  EXPECT_NE(lines[3].find("  GPU 3 (PCI 0000:5d:00)  "), std::string::npos) << lines[3];
  // Not in the snapshot.
  EXPECT_NE(lines[4].find("  PCI 0000:aa:00 (no GPU listed)  "), std::string::npos) << lines[4];
  // Each Xid explained once.
  const size_t meaning = out.find("What they mean:");
  ASSERT_NE(meaning, std::string::npos);
  const std::string rest = out.substr(meaning);
  EXPECT_NE(rest.find("The GPU stopped answering on PCIe."), std::string::npos) << rest;
  EXPECT_EQ(rest.find("The GPU stopped answering"), rest.rfind("The GPU stopped answering"));
}

TEST(EventsText, WallTimeIsLocalIso) {
  KernelEvent ev = Xid(79, "00000000:5D:00.0");
  ev.time_unix_ms = testing::kTime;
  std::string out;
  {
    EventsTz utc("UTC");
    out = RenderEventsText({ev}, Context(), false, 200);
  }
  EXPECT_NE(out.find("\n2025-01-20T10:18:26+00:00  GPU 3 (PCI 0000:5d:00)  Xid 79"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("  times: "), std::string::npos) << out;  // Nothing left unplaced.
}

TEST(EventsText, OtherKindsAndBoots) {
  KernelEvent boot;
  boot.kind = kmsg::kKindBoot;
  boot.monotonic_s = 0.0;
  KernelEvent off;
  off.kind = kmsg::kKindFallenOffBus;
  off.pci_bus_id = "00000000:5D:00.0";
  const std::string out = RenderEventsText({boot, off}, Context(), false, 200);
  EXPECT_NE(out.find("boot+0.0s (boot not matched to this one; no wall-clock time)  --- boot ---"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("GPU 3 (PCI 0000:5d:00)  GPU fell off the bus  — GPU fell off the bus; "
                     "reboot the node"),
            std::string::npos)
      << out;
  // Boots alone are not NVRM events.
  EXPECT_NE(RenderEventsText({boot}, Context(), false, 100).find("no NVRM events"),
            std::string::npos);
}

// `events` and `why` explain an Xid with the one catalog: the JSON carries the
// category and the verdict `why` files it under.
TEST(EventsJson, XidInfoCarriesCategoryAndImpact) {
  std::string out;
  render::WriteEventsJson({Xid(94, "00000000:5D:00.0"), Xid(119, "00000000:5D:00.0")}, Context(),
                          false, [&](std::string_view piece) { out.append(piece); });
  const nlohmann::json j = nlohmann::json::parse(out);
  ASSERT_EQ(j["events"].size(), 2u);
  EXPECT_EQ(j["events"][0]["xid_info"]["category"], "memory");
  EXPECT_EQ(j["events"][0]["xid_info"]["impact"], "degraded");
  EXPECT_EQ(j["events"][1]["xid_info"]["category"], "driver");
  EXPECT_EQ(j["events"][1]["xid_info"]["impact"], "fault");
}

TEST(EventsText, DriverLoadIsExplained) {
  KernelEvent load;
  load.kind = kmsg::kKindDriverLoad;
  load.monotonic_s = 5.0;
  const std::string out = RenderEventsText({load}, Context(), false, 200);
  EXPECT_NE(out.find("driver loaded"), std::string::npos) << out;
  EXPECT_EQ(out.find("does not explain"), std::string::npos) << out;
}

TEST(EventsText, HostileTextColourAndWidth) {
  KernelEvent ev = Xid(13, "00000000:19:00.0\x1b[2J");
  ev.pid = 7;
  ev.process_name = "evil\x1b]0;pwned\x07\xff";
  EventsContext c = Context();
  c.sources_used = {"/var/log/\x1b[31mkern.log"};
  kmsg::Escalation esc;
  esc.kind = kmsg::EscalationKind::kHardwareInspection;
  esc.pci_bus_ids = {"00000000:5D:00.0"};
  esc.xids = {79};
  esc.reason = "Xid 79 recurred on this GPU across 2 reboots";
  c.escalations = {esc};
  for (int width : {1, 30, 80, 120}) {
    const std::string out = RenderEventsText({ev, Xid(79, "00000000:5D:00.0")}, c, false, width);
    EXPECT_EQ(out.find('\x1b'), std::string::npos);
    EXPECT_EQ(out.find('\x07'), std::string::npos);
    for (const std::string& line : testing::SplitLines(out)) {
      EXPECT_LE(DisplayWidth(line), width) << line;
    }
  }
  const std::string wide = RenderEventsText({ev}, c, false, 300);
  EXPECT_NE(wide.find("pid 7 evil\\x1b]0;pwned\\x07\\xff"), std::string::npos) << wide;
  EXPECT_NE(wide.find("Patterns across events:\n  ! hardware inspection: GPU 3 "
                      "(PCI 0000:5d:00): Xid 79 recurred on this GPU across 2 reboots\n"),
            std::string::npos)
      << wide;
  EXPECT_NE(RenderEventsText({ev}, c, true, 300).find('\x1b'), std::string::npos);
}

TEST(EventsJson, ShapeAndXidInfo) {
  KernelEvent unknown = Xid(4242, "00000000:19:00.0");
  KernelEvent off;
  off.kind = kmsg::kKindFallenOffBus;
  off.pci_bus_id = "00000000:AA:00.0";
  off.raw = "bad \xff";
  EventsContext c = Context();
  kmsg::Escalation esc;
  esc.kind = kmsg::EscalationKind::kRunDiagnostics;
  esc.pci_bus_ids = {"00000000:19:00.0"};
  esc.xids = {13};
  esc.bursts = 2;
  esc.processes = 2;
  esc.reason = "r";
  c.escalations = {esc};
  const json j = EventsJson({Xid(79, "00000000:5D:00.0"), unknown, off}, c);
  EXPECT_EQ(j["schema"], "gpuwarden.events");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["sources"]["used"], json::array({"kmsg"}));
  EXPECT_EQ(j["sources"]["unavailable"][0],
            (json{{"name", "journal"}, {"reason", "journalctl not found"}}));
  ASSERT_EQ(j["events"].size(), 3u);
  const json& e0 = j["events"][0];
  EXPECT_EQ(e0["xid"], 79);
  EXPECT_EQ(e0["kind"], "xid");
  EXPECT_EQ(e0["gpu_index"], 3);
  EXPECT_EQ(e0["xid_info"]["known"], true);
  EXPECT_EQ(e0["xid_info"]["name"], "GPU fell off the bus");
  EXPECT_EQ(e0["xid_info"]["mnemonic"], "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
  EXPECT_EQ(e0["xid_info"]["meaning"], "The GPU stopped answering on PCIe.");
  EXPECT_EQ(e0["xid_info"]["cause_class"], "bus_pcie");
  EXPECT_EQ(e0["xid_info"]["action"], "reboot_node");
  EXPECT_EQ(e0["xid_info"]["actor"], "admin");
  EXPECT_EQ(e0["xid_info"]["hardware"], true);
  EXPECT_FALSE(e0.contains("catalog"));  // One explanation per event: xid_info.
  EXPECT_TRUE(e0.contains("raw"));       // kmsg::EventToJson's fields are kept.
  const json& e1 = j["events"][1];
  EXPECT_EQ(e1["gpu_index"], 0);
  EXPECT_EQ(e1["xid_info"]["known"], false);
  EXPECT_EQ(e1["xid_info"]["cause_class"], "unknown");
  EXPECT_EQ(e1["xid_info"]["action"], "contact_support");
  EXPECT_TRUE(e1["xid_info"]["mnemonic"].is_null());
  const json& e2 = j["events"][2];
  EXPECT_TRUE(e2["gpu_index"].is_null());
  EXPECT_TRUE(e2["xid_info"].is_null());
  EXPECT_EQ(e2["raw"], "bad \xEF\xBF\xBD");
  ASSERT_EQ(j["escalations"].size(), 1u);
  EXPECT_EQ(j["escalations"][0]["kind"], "run_diagnostics");
  EXPECT_EQ(j["escalations"][0]["gpu_indices"], json::array({0}));
  EXPECT_EQ(j["escalations"][0]["bursts"], 2);
  const std::string text = RenderEventsJson({off}, c, true);
  EXPECT_EQ(json::parse(text)["events"][0]["raw"], "bad \xEF\xBF\xBD");
}

// The streamed text is exactly the one-tree dump, pretty and compact, with and
// without events or escalations, and whatever size the sink's pieces are.
TEST(EventsJson, StreamedEqualsTreeDump) {
  KernelEvent hostile = Xid(13, "00000000:5D:00.0");
  hostile.process_name = "evil\u202e\x1b[31m\n";
  hostile.raw = std::string(300'000, 'x');  // Forces more than one chunk.
  EventsContext c = Context();
  kmsg::Escalation esc;
  esc.kind = kmsg::EscalationKind::kHardwareInspection;
  esc.pci_bus_ids = {"00000000:5D:00.0", "00000000:77:00.0"};
  esc.xids = {79};
  esc.reason = "recurs \u2028 after reboots";
  for (const bool pretty : {true, false}) {
    for (const bool with_escalation : {false, true}) {
      c.escalations.clear();
      if (with_escalation) c.escalations = {esc};
      for (const std::vector<KernelEvent>& events :
           {std::vector<KernelEvent>{}, std::vector<KernelEvent>{Xid(79, "00000000:5D:00.0")},
            std::vector<KernelEvent>{hostile, Xid(48, "00000000:19:00.0"), hostile}}) {
        const std::string tree =
            DumpJsonForTerminal(EventsJson(events, c), pretty, kEventsSchemaName);
        size_t pieces = 0;
        std::string streamed;
        WriteEventsJson(events, c, pretty, [&](std::string_view piece) {
          ++pieces;
          streamed += piece;
        });
        EXPECT_EQ(streamed, tree) << "pretty=" << pretty << " events=" << events.size();
        EXPECT_EQ(RenderEventsJson(events, c, pretty), tree);
        if (events.size() == 3) {
          EXPECT_GE(pieces, 2u);
        }
        EXPECT_EQ(streamed.find('\x1b'), std::string::npos);
      }
    }
  }
}

}  // namespace
}  // namespace gw::render
