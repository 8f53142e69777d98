// Tests of the kernel-log sources: files (plain, gzip, rotated), /dev/kmsg
// through a fake device, the journal through canned JSON and a fake journalctl
// (a real child process), and the merging in ReadKernelEvents.
#include "kmsg/sources.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kmsg/escalation.h"
#include "kmsg/kmsg_test_util.h"

namespace gw::kmsg {
namespace {

namespace fs = std::filesystem;
using testing::OfKind;

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gw_kmsg_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string Write(const std::string& name, const std::string& data) {
    std::ofstream(Path(name), std::ios::binary) << data;
    return Path(name);
  }
  std::string WriteGzip(const std::string& name, const std::string& data, int level = 6) {
    const std::string path = Path(name);
    gzFile f = gzopen(path.c_str(), level == 1 ? "wb1" : "wb6");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, data.data(), static_cast<unsigned>(data.size())),
              static_cast<int>(data.size()));
    gzclose(f);
    return path;
  }
  std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string WriteScript(const std::string& name, const std::string& body) {
    const std::string path = Write(name, "#!/bin/sh\n" + body);
    chmod(path.c_str(), 0755);
    return path;
  }
  std::string dir_;
};

const char kLog[] =
    "[Sun Feb 23 16:24:18 2025] NVRM: GPU at PCI:0000:9b:00: "
    "GPU-509665ad-b600-ac93-3616-d754b23d636d\n"
    "[Sun Feb 23 16:24:18 2025] usb 1-1: new high-speed USB device number 2\n"
    "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.\n";

// --- Files -------------------------------------------------------------------

using KmsgFiles = TempDir;

TEST_F(KmsgFiles, ExplicitPlainFile) {
  ReadOptions o;
  o.kernel_log_file = Write("dmesg.txt", kLog);
  auto r = ReadKernelEvents(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_EQ(r->events[1].xid, 79u);
  EXPECT_EQ(r->events[1].time_unix_ms, 1740327858000);
  EXPECT_EQ(r->events[1].source, o.kernel_log_file);
  ASSERT_EQ(r->sources.size(), 1u);
  EXPECT_EQ(r->sources[0].status, "used");
  EXPECT_EQ(r->sources[0].events, 2u);
}

TEST_F(KmsgFiles, ExplicitGzipFileIsDetectedByContent) {
  ReadOptions o;
  o.kernel_log_file = WriteGzip("kern.log.2.gz", kLog);
  auto r = ReadKernelEvents(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_EQ(r->events[1].xid, 79u);
  // The same bytes under a name without .gz.
  fs::rename(o.kernel_log_file, Path("renamed"));
  o.kernel_log_file = Path("renamed");
  auto r2 = ReadKernelEvents(o);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->events.size(), 2u);
}

TEST_F(KmsgFiles, ConcatenatedGzipMembers) {
  const std::string a = Slurp(WriteGzip("a.gz", kLog));
  const std::string b = Slurp(WriteGzip("b.gz", "NVRM: Xid (PCI:0000:3b:00): 48, x\n"));
  ReadOptions o;
  o.kernel_log_file = Write("both.gz", a + b);
  auto r = ReadKernelEvents(o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->events.size(), 3u);
  EXPECT_EQ(r->events[2].xid, 48u);
  EXPECT_TRUE(r->sources[0].reason.empty()) << r->sources[0].reason;
}

// A log of many lines with the two NVRM events of kLog at its start.
std::string LongLog() {
  std::string log = kLog;
  for (int i = 0; i < 20000; ++i) {
    log += "[Sun Feb 23 16:24:19 2025] audit: type=1400 audit(" + std::to_string(i) +
           "): apparmor=\"DENIED\" operation=\"open\"\n";
  }
  return log;
}

// Bytes that look like nothing at all (a fixed pseudo-random sequence).
std::string NoiseBytes(size_t n) {
  std::string out(n, '\0');
  uint32_t x = 2463534242u;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xff);
  }
  return out;
}

// Issue 12, class 10: what cannot be read is never "no NVRM events".
void ExpectUnreadable(const std::string& path, const std::string& problem) {
  ReadOptions o;
  o.kernel_log_file = path;
  auto r = ReadKernelEvents(o);
  ASSERT_FALSE(r.ok()) << path << ": read as " << r->events.size() << " events";
  EXPECT_EQ(r.error().code, "unreadable");
  EXPECT_EQ(r.error().message.rfind(path + ": ", 0), 0u) << r.error().message;
  EXPECT_NE(r.error().message.find(problem), std::string::npos) << r.error().message;
}

TEST_F(KmsgFiles, TruncatedGzipIsUnreadable) {
  const std::string gz = Slurp(WriteGzip("full.gz", LongLog(), 1));
  ExpectUnreadable(Write("cut.gz", gz.substr(0, gz.size() / 2)), "ends early");
  // Cut inside the trailer (CRC and length) too, and right after the header.
  ExpectUnreadable(Write("cut2.gz", gz.substr(0, gz.size() - 3)), "ends early");
  ExpectUnreadable(Write("cut3.gz", gz.substr(0, 2)), "ends early");
}

TEST_F(KmsgFiles, GzipWithABadCrcIsUnreadable) {
  std::string gz = Slurp(WriteGzip("full.gz", kLog));
  gz[gz.size() - 8] = static_cast<char>(gz[gz.size() - 8] ^ 0x5a);  // CRC-32 of the trailer.
  ExpectUnreadable(Write("crc.gz", gz), "incorrect data check");
}

TEST_F(KmsgFiles, DamagedGzipIsUnreadable) {
  ExpectUnreadable(Write("bad.gz", std::string("\x1f\x8b\x08\x00garbage that is not deflate", 31)),
                   "damaged gzip data");
}

TEST_F(KmsgFiles, PaddingAfterACompleteGzipIsAWarning) {
  ReadOptions o;
  o.kernel_log_file = Write("padded.gz", Slurp(WriteGzip("a.gz", kLog)) + std::string(512, '\0'));
  auto r = ReadKernelEvents(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->events.size(), 2u);
  EXPECT_NE(r->sources[0].reason.find("trailing garbage"), std::string::npos);
}

TEST_F(KmsgFiles, BinaryFilesAreUnreadable) {
  ExpectUnreadable(Write("noise.bin", NoiseBytes(64 << 10)), "binary data, not a text log");
  // An executable: mostly NUL bytes.
  std::string elf =
      "\x7f"
      "ELF\x02\x01\x01";
  elf += std::string(3000, '\0') + "NVRM: Xid (PCI:0000:3b:00): 79, inside a binary\n" +
         std::string(3000, '\0');
  ExpectUnreadable(Write("a.out", elf), "NUL");
  // Shorter than one block.
  ExpectUnreadable(Write("short.bin", NoiseBytes(100)), "binary data");
  // Gzip of a binary file.
  ExpectUnreadable(WriteGzip("noise.gz", NoiseBytes(10000)), "gzip of binary data");
}

TEST_F(KmsgFiles, OtherCompressionIsNamed) {
  ExpectUnreadable(Write("kern.log.xz", std::string("\xFD"
                                                    "7zXZ\0\0\x04\xE6\xD6\xB4\x46",
                                                    12) +
                                            NoiseBytes(200)),
                   "xz-compressed");
  ExpectUnreadable(Write("kern.log.zst", "\x28\xB5\x2F\xFD" + NoiseBytes(200)), "zstd");
}

TEST_F(KmsgFiles, ARealLogWithAnOddByteStillReads) {
  std::string log = kLog;
  log.insert(log.find("usb 1-1"), std::string("\xff", 1));  // One stray byte.
  log.insert(log.find("new high-speed"), std::string(1, '\0'));
  log +=
      "[Sun Feb 23 16:24:19 2025] caf\xe9 (Latin-1) and Gr\xc3\xbc\xc3\x9f"
      "e (UTF-8)\n";
  ReadOptions o;
  o.kernel_log_file = Write("odd.log", log);
  auto r = ReadKernelEvents(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_EQ(r->events[1].xid, 79u);
  // NUL padding later in the file (a crash while the log was written) does
  // not make it binary: only the first block is judged.
  const std::string padded = LongLog() + std::string(8192, '\0') + "\n" + kLog;
  o.kernel_log_file = Write("padded.log", padded);
  auto p = ReadKernelEvents(o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->events.size(), 4u);
  // The same log compressed.
  o.kernel_log_file = WriteGzip("odd.log.gz", log);
  auto g = ReadKernelEvents(o);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->events.size(), 2u);
  // An empty file is a log with nothing in it.
  o.kernel_log_file = Write("empty.log", "");
  auto e = ReadKernelEvents(o);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->events.empty());
}

TEST(NotTextReason, ATenthOfTheBlock) {
  EXPECT_EQ(NotTextReason(""), "");
  EXPECT_EQ(NotTextReason("plain text\n\twith tabs\r\n\x1b[31mcolour\x1b[0m\n"), "");
  EXPECT_EQ(NotTextReason(std::string("abc\x01", 4)), "");  // One odd byte.
  EXPECT_EQ(NotTextReason("Gr\xc3\xbc\xc3\x9f"
                          "e \xe2\x82\xac"),
            "");
  std::string block(1000, 'a');
  for (int i = 0; i < 100; ++i) block[i * 10] = '\0';
  EXPECT_EQ(NotTextReason(block), "");  // Exactly a tenth.
  block[5] = '\x02';
  EXPECT_EQ(NotTextReason(block),
            "binary data, not a text log (101 of its first 1000 bytes are not text, 100 of them "
            "NUL)");
}

TEST_F(KmsgFiles, ADamagedRotatedFileKeepsWhatWasReadable) {
  const std::string gz = Slurp(WriteGzip("full.gz", LongLog(), 1));
  Write("kern.log.2.gz", gz.substr(0, gz.size() / 2));
  Write("kern.log.1", NoiseBytes(5000));
  Write("kern.log", "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a, x\n");
  auto source = LogFileSource::FirstFamily({Path("kern.log")});
  SourceContext ctx;
  auto r = source->Read(ctx);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // The events before the cut, none of the binary file, the live file's.
  ASSERT_EQ(OfKind(r->events, kKindXid).size(), 2u);
  const std::string warnings = [&] {
    std::string all;
    for (const auto& w : r->warnings) all += w + "\n";
    return all;
  }();
  EXPECT_NE(warnings.find(Path("kern.log.2.gz") + ": gzip data ends early"), std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find(Path("kern.log.1") + ": binary data"), std::string::npos) << warnings;
}

TEST_F(KmsgFiles, MissingFileAndDirectory) {
  ReadOptions o;
  o.kernel_log_file = Path("nope");
  auto r = ReadKernelEvents(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "not_found");
  o.kernel_log_file = dir_;
  auto r2 = ReadKernelEvents(o);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code, "unreadable");
}

TEST_F(KmsgFiles, LinesLongerThanTheBufferAreSkippedPastNotFatal) {
  std::string log = "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=a, " + std::string(10 << 20, 'x');
  log += "\n" + std::string(20 << 20, 'y') + "\n";
  log += std::string(9 << 20, 'z') + "NVRM: Xid (PCI:0000:3b:00): 79, deep\n";
  log += "NVRM: Xid (PCI:0000:3b:00): 31, pid=2, name=b, after\n";
  const std::string path = Write("long.log", log);
  ParseOptions po;
  NvrmParser parser(po);
  std::vector<std::string> warnings;
  ASSERT_TRUE(ReadLogFile(path, parser, &warnings).ok());
  auto ev = parser.TakeEvents();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].xid, 13u);
  EXPECT_LE(ev[0].raw.size(), kMaxLineBytes);
  EXPECT_EQ(ev[1].xid, 31u);
  EXPECT_EQ(ev[1].detail, "after");
  EXPECT_EQ(parser.stats().truncated_lines, 1u);
}

TEST_F(KmsgFiles, RotatedFamilyOrder) {
  for (const char* n :
       {"kern.log", "kern.log.1", "kern.log.2.gz", "kern.log.10.gz", "kern.log-20240101.gz",
        "kern.log-20231201", "kern.logx", "kern.log.bak", "kern.log.1.old"}) {
    Write(n, "");
  }
  EXPECT_EQ(RotatedFamily(Path("kern.log")),
            (std::vector<std::string>{Path("kern.log-20231201"), Path("kern.log-20240101.gz"),
                                      Path("kern.log.10.gz"), Path("kern.log.2.gz"),
                                      Path("kern.log.1"), Path("kern.log")}));
  EXPECT_TRUE(RotatedFamily(Path("syslog")).empty());
}

TEST_F(KmsgFiles, RotatedSyslogAcrossBootsEscalates) {
  // Three boots over three rotated files; Xid 79 on the same GPU in the
  // oldest and the newest: two reboots apart.
  WriteGzip("kern.log.2.gz",
            "2025-01-01T10:00:00.000000+00:00 node kernel: [    0.000000] Linux version "
            "6.1.0-18-amd64 (x)\n"
            "2025-01-01T10:05:00.000000+00:00 node kernel: [  300.000000] NVRM: Xid "
            "(PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n");
  Write("kern.log.1",
        "2025-01-02T10:00:00.000000+00:00 node kernel: [    0.000000] Linux version 6.1.0-18-amd64 "
        "(x)\n"
        "2025-01-02T10:00:01.000000+00:00 node systemd[1]: Started foo.\n");
  Write("kern.log",
        "2025-01-03T10:00:00.000000+00:00 node kernel: [    0.000000] Linux version 6.1.0-18-amd64 "
        "(x)\n"
        "2025-01-03T11:00:00.000000+00:00 node kernel: [ 3600.000000] NVRM: Xid (PCI:0000:3b:00): "
        "79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
        "2025-01-03T11:00:00.000000+00:00 node kernel: [ 3600.000001] NVRM: GPU 0000:3b:00.0: GPU "
        "has fallen off the bus.\n");
  auto files = LogFileSource::FirstFamily({Path("messages"), Path("kern.log")});
  ReadOptions o;
  o.sources = {files.get()};
  o.boot_id_path = Path("no_boot_id");
  auto r = ReadKernelEvents(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->used, std::vector<std::string>{Path("kern.log")});
  const auto boots = OfKind(r->events, "boot");
  ASSERT_EQ(boots.size(), 3u);
  EXPECT_EQ(boots[0].boot_id, Path("kern.log") + "#0");
  EXPECT_EQ(boots[2].boot_id, Path("kern.log") + "#2");
  EXPECT_EQ(boots[0].source, Path("kern.log.2.gz"));
  const auto xids = OfKind(r->events, "xid");
  ASSERT_EQ(xids.size(), 2u);
  EXPECT_EQ(xids[0].time_unix_ms, 1735725900000);
  const auto esc = Escalate(r->events);
  ASSERT_EQ(esc.size(), 1u);
  EXPECT_EQ(esc[0].kind, EscalationKind::kHardwareInspection);
  EXPECT_EQ(esc[0].reboots, 2);
}

TEST_F(KmsgFiles, NoFamilyIsUnavailable) {
  auto files = LogFileSource::FirstFamily({Path("kern.log"), Path("syslog")});
  auto r = files->Read(SourceContext{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "unavailable");
  EXPECT_NE(r.error().message.find("none of"), std::string::npos);
}

// --- /dev/kmsg -------------------------------------------------------------

TEST(KmsgDevice, RecordsFromAFakeDevice) {
  FakeKmsgDevice dev({
      "6,1,1000,-;usb 1-1: new device\n SUBSYSTEM=usb\n",
      "4,2,2500000,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=42, name=python3, Graphics Exception\n",
      "3,3,2600000,c;NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n",
  });
  KmsgSource src(dev);
  SourceContext ctx;
  ctx.boot_time_unix_ms = 1'700'000'000'000;
  ctx.boot_id = "0123456789abcdef0123456789abcdef";
  auto r = src.Read(ctx);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->events.size(), 3u);
  EXPECT_EQ(r->events[0].kind, "boot");  // Synthesised: the ring no longer has "Linux version".
  EXPECT_EQ(r->events[0].time_unix_ms, 1'700'000'000'000);
  EXPECT_EQ(r->events[1].xid, 13u);
  EXPECT_EQ(r->events[1].time_unix_ms, 1'700'000'002'500);
  EXPECT_EQ(r->events[1].boot_id, ctx.boot_id);
  EXPECT_EQ(r->events[1].source, "kmsg");
  EXPECT_EQ(r->events[2].kind, "fallen_off_bus");
  ASSERT_EQ(r->boots.size(), 1u);
  EXPECT_EQ(r->boots[0].start_unix_ms, 1'700'000'000'000);
}

TEST(KmsgDevice, LinuxVersionRecordIsTheBootEvent) {
  FakeKmsgDevice dev({"5,0,0,-;Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)\n"});
  KmsgSource src(dev);
  SourceContext ctx;
  ctx.boot_time_unix_ms = 5000;
  auto r = src.Read(ctx);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].detail, "Linux version 6.1.0-18-amd64");
  EXPECT_EQ(r->events[0].boot_id, "current");
}

TEST(KmsgDevice, UnavailableDevice) {
  FakeKmsgDevice dev({}, MakeError("unavailable", "/dev/kmsg: Operation not permitted"));
  KmsgSource src(dev);
  auto r = src.Read(SourceContext{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "unavailable");
  DevKmsg missing("/nonexistent/kmsg");
  auto s = missing.Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "unavailable");
}

TEST(KmsgDevice, RealDeviceRecordsHaveHeaders) {
  DevKmsg dev;
  if (!dev.Open().ok()) GTEST_SKIP() << "/dev/kmsg is not readable here";
  std::string rec;
  int n = 0;
  while (n < 100000) {
    auto next = dev.Next(&rec);
    ASSERT_TRUE(next.ok()) << next.error().message;
    if (!*next) break;
    ++n;
    const size_t semi = rec.find(';');
    ASSERT_NE(semi, std::string::npos) << rec;
    EXPECT_TRUE(ParseKmsgHeaderUsec(rec.substr(0, semi)).has_value()) << rec;
  }
  EXPECT_GT(n, 0);
}

// --- The journal -------------------------------------------------------------

const char kBootOld[] = "11111111111111111111111111111111";
const char kBootNew[] = "22222222222222222222222222222222";

std::string JournalLine(const std::string& boot, int64_t realtime_us, int64_t mono_us,
                        const std::string& message_json, bool spaced = false) {
  const char* sep = spaced ? " : " : ":";
  const char* comma = spaced ? ", " : ",";
  return std::string("{") + "\"__CURSOR\"" + sep + "\"s=abc\"" + comma +
         "\"__REALTIME_TIMESTAMP\"" + sep + "\"" + std::to_string(realtime_us) + "\"" + comma +
         "\"__MONOTONIC_TIMESTAMP\"" + sep + "\"" + std::to_string(mono_us) + "\"" + comma +
         "\"_BOOT_ID\"" + sep + "\"" + boot + "\"" + comma + "\"_TRANSPORT\"" + sep + "\"kernel\"" +
         comma + "\"MESSAGE\"" + sep + message_json + "}";
}

std::string ByteArray(const std::string& s) {
  std::string out = "[";
  for (unsigned char c : s) out += (out.size() > 1 ? "," : "") + std::to_string(c);
  return out + "]";
}

// Newest first, as `journalctl --reverse` prints them.
std::vector<std::string> CannedJournal() {
  return {
      JournalLine(kBootNew, 2'000'010'000'000, 10'000'000,
                  "\"NVRM: A GPU crash dump has been created. If possible, please run\\nNVRM: "
                  "nvidia-bug-report.sh as root to collect this data before\\nNVRM: the NVIDIA "
                  "kernel module is unloaded.\""),
      JournalLine(kBootNew, 2'000'005'000'000, 5'000'000,
                  ByteArray("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\xff"),
                  true),
      JournalLine(kBootNew, 2'000'001'000'000, 1'000'000, "\"e1000e: eth0 NIC Link is Up\""),
      "{not json but mentions NVRM",
      JournalLine(kBootOld, 1'000'005'000'000, 5'000'000,
                  "\"NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\"", true),
      JournalLine(kBootOld, 1'000'000'000'000, 0,
                  "\"Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)\""),
  };
}

TEST(KmsgJournal, JsonReaderBootsBytesAndMultiLine) {
  JournalJsonReader reader(/*reversed=*/true);
  for (const auto& l : CannedJournal()) reader.AddLine(l);
  SourceRead r = reader.Finish();
  ASSERT_EQ(r.events.size(), 5u);
  EXPECT_EQ(r.events[0].kind, "boot");
  EXPECT_EQ(r.events[0].boot_id, kBootOld);
  EXPECT_EQ(r.events[0].detail, "Linux version 6.1.0-18-amd64");
  EXPECT_EQ(r.events[1].xid, 79u);
  EXPECT_EQ(r.events[1].boot_id, kBootOld);
  EXPECT_EQ(r.events[1].time_unix_ms, 1'000'005'000);
  EXPECT_EQ(r.events[2].kind, "boot");  // Synthesised from the boot id.
  EXPECT_EQ(r.events[2].boot_id, kBootNew);
  EXPECT_EQ(r.events[2].time_unix_ms, 2'000'000'000);
  EXPECT_EQ(r.events[3].xid, 79u);  // From a byte-array MESSAGE.
  EXPECT_EQ(r.events[3].source, "journal");
  EXPECT_DOUBLE_EQ(*r.events[3].monotonic_s, 5.0);
  EXPECT_EQ(r.events[4].kind, "crash_dump");  // One entry, three lines.
  ASSERT_EQ(r.boots.size(), 2u);
  EXPECT_EQ(r.boots[0].boot_id, kBootOld);
  EXPECT_EQ(r.boots[0].start_unix_ms, 1'000'000'000);
  ASSERT_EQ(r.warnings.size(), 1u);  // The line that is not JSON.
  const auto esc = Escalate(r.events);
  EXPECT_TRUE(esc.empty());  // One reboot only.
}

using KmsgJournalProcess = TempDir;

TEST_F(KmsgJournalProcess, FakeJournalctlIsSpawnedWithArgv) {
  std::string lines;
  for (const auto& l : CannedJournal()) lines += l + "\n";
  Write("out.json", lines);
  const std::string exe = WriteScript("journalctl", "printf '%s\\n' \"$@\" > '" + Path("args") +
                                                        "'\ncat '" + Path("out.json") + "'\n");
  JournalSource src(exe, 10'000);
  SourceContext ctx;
  ctx.since_unix_ms = 1'234'567'000;
  auto r = src.Read(ctx);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->events.size(), 5u);
  EXPECT_EQ(Slurp(Path("args")),
            "-o\njson\n--no-pager\n--reverse\n--since=@1234567\n_TRANSPORT=kernel\n");
}

TEST_F(KmsgJournalProcess, MissingJournalctlIsUnavailable) {
  JournalSource src(Path("no-such-journalctl"));
  auto r = src.Read(SourceContext{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "unavailable");
  EXPECT_NE(r.error().message.find("not found"), std::string::npos);
}

TEST_F(KmsgJournalProcess, HangingJournalctlIsCutAtTheDeadline) {
  JournalSource src(WriteScript("journalctl", "exec sleep 30\n"), 300);
  auto r = src.Read(SourceContext{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "unavailable");
  EXPECT_NE(r.error().message.find("deadline"), std::string::npos);
}

TEST_F(KmsgJournalProcess, SlowJournalctlKeepsWhatArrivedBeforeTheDeadline) {
  std::string lines;
  for (const auto& l : CannedJournal()) lines += l + "\n";
  Write("out.json", lines);
  JournalSource src(WriteScript("journalctl", "cat '" + Path("out.json") + "'\nexec sleep 30\n"),
                    3000);
  auto r = src.Read(SourceContext{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->events.size(), 5u);
  ASSERT_FALSE(r->warnings.empty());
  EXPECT_NE(r->warnings.back().find("did not finish within 3.0 s"), std::string::npos)
      << r->warnings.back();
}

TEST_F(KmsgJournalProcess, NoPermissionAndFailure) {
  JournalSource hint(WriteScript("j1",
                                 "echo 'Hint: You are currently not seeing messages from other "
                                 "users and the system.' >&2\n"));
  auto r = hint.Read(SourceContext{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("permission"), std::string::npos) << r.error().message;
  JournalSource fails(WriteScript("j2", "echo 'Failed to open journal' >&2\nexit 1\n"));
  auto r2 = fails.Read(SourceContext{});
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message.find("Failed to open journal"), std::string::npos);
}

// --- Merging -----------------------------------------------------------------

KernelEvent Ev(const char* kind, const std::string& boot, int64_t t, std::optional<double> mono,
               const std::string& source, std::optional<unsigned> xid = std::nullopt) {
  KernelEvent ev;
  ev.kind = kind;
  ev.boot_id = boot;
  ev.time_unix_ms = t;
  ev.monotonic_s = mono;
  ev.source = source;
  if (xid) {
    ev.xid = xid;
    ev.pci_bus_id = "00000000:3B:00.0";
    ev.detail = "GPU has fallen off the bus.";
  }
  return ev;
}

TEST(KmsgMerge, DeduplicatesAndPlacesFileBoots) {
  const std::string K = "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", J = "jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj";
  SourceRead kmsg;
  kmsg.events = {Ev("boot", K, 1'000'000'000, 0.0, "kmsg"),
                 Ev("xid", K, 1'000'005'000, 5.0, "kmsg", 79)};
  kmsg.boots = {{K, 1'000'000'000}};
  SourceRead journal;
  journal.events = {Ev("boot", J, 900'000'000, 0.0, "journal"),
                    Ev("xid", J, 900'001'000, 1.0, "journal", 79),
                    Ev("boot", K, 1'000'000'000, 0.0, "journal"),
                    Ev("xid", K, 1'000'005'300, 5.0, "journal", 79)};
  journal.boots = {{J, 900'000'000}, {K, 1'000'000'000}};
  SourceRead file;
  file.events = {Ev("boot", "f#0", 800'000'000, 0.0, "/var/log/kern.log.1"),
                 Ev("xid", "f#0", 800'000'100, std::nullopt, "/var/log/kern.log.1", 79),
                 Ev("boot", "f#1", 900'002'000, std::nullopt, "/var/log/kern.log"),
                 Ev("xid", "f#1", 900'001'000, std::nullopt, "/var/log/kern.log", 79),
                 Ev("xid", "f#2", 1'000'005'000, std::nullopt, "/var/log/kern.log", 79)};
  FakeKernelLogSource a("kmsg", kmsg), b("journal", journal), c("/var/log/kern.log", file);
  ReadOptions o;
  o.sources = {&a, &b, &c};
  auto r = ReadKernelEvents(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& ev = r->events;
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[0].boot_id, "f#0");
  EXPECT_EQ(ev[1].boot_id, "f#0");
  EXPECT_EQ(ev[1].source, "/var/log/kern.log.1");
  EXPECT_EQ(ev[2].kind, "boot");
  EXPECT_EQ(ev[2].boot_id, J);
  EXPECT_EQ(ev[3].source, "journal");
  EXPECT_EQ(ev[4].kind, "boot");
  EXPECT_EQ(ev[4].source, "kmsg");
  EXPECT_EQ(ev[5].source, "kmsg");
  ASSERT_EQ(r->sources.size(), 3u);
  EXPECT_EQ(r->sources[0].events, 2u);
  EXPECT_EQ(r->sources[1].events, 2u);
  EXPECT_EQ(r->sources[2].events, 2u);
  EXPECT_EQ(r->used.size(), 3u);
  const auto esc = Escalate(ev);
  ASSERT_EQ(esc.size(), 1u);
  EXPECT_EQ(esc[0].reboots, 2);
}

TEST(KmsgMerge, RepeatedIdenticalLinesOfOneSourceAreKept) {
  SourceRead one;
  one.events = {Ev("xid", "b", 1000, 1.0, "kmsg", 79), Ev("xid", "b", 1000, 1.0, "kmsg", 79)};
  FakeKernelLogSource a("kmsg", one);
  ReadOptions o;
  o.sources = {&a};
  auto r = ReadKernelEvents(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->events.size(), 2u);
}

TEST(KmsgMerge, UnavailableSourcesAreReportedAndSinceFilters) {
  SourceRead journal;
  journal.events = {Ev("xid", "b", 1000, 1.0, "journal", 79),
                    Ev("xid", "b", 5000, 5.0, "journal", 79)};
  FakeKernelLogSource a("kmsg", MakeError("unavailable", "/dev/kmsg: Operation not permitted"));
  FakeKernelLogSource b("journal", journal);
  FakeKernelLogSource c("/var/log/kern.log", SourceRead{});
  ReadOptions o;
  o.sources = {&a, &b, &c};
  o.all_sources = false;
  o.since_unix_ms = 2000;
  auto r = ReadKernelEvents(o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].time_unix_ms, 5000);
  EXPECT_EQ(r->sources[0].status, "unavailable");
  EXPECT_EQ(r->sources[0].reason, "/dev/kmsg: Operation not permitted");
  EXPECT_EQ(r->sources[1].status, "used");
  EXPECT_EQ(r->sources[2].status, "not_tried");
  EXPECT_EQ(r->used, std::vector<std::string>{"journal"});
}

TEST(KmsgMerge, NothingReadableIsAnError) {
  FakeKernelLogSource a("kmsg", MakeError("unavailable", "no permission"));
  FakeKernelLogSource b("journal", MakeError("unavailable", "journalctl not found"));
  ReadOptions o;
  o.sources = {&a, &b};
  auto r = ReadKernelEvents(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "unavailable");
  EXPECT_NE(r.error().message.find("kmsg: no permission"), std::string::npos);
  EXPECT_NE(r.error().message.find("journal: journalctl not found"), std::string::npos);
}

}  // namespace
}  // namespace gw::kmsg
