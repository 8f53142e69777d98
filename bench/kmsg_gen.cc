// kmsg_gen: writes a realistic kernel log for the kernel-log benchmark.
//
//   kmsg_gen OUT_FILE SIZE_MIB [SEED]
//
// dmesg-style lines ("[ 1234.567890] ...") of the usual kernel chatter (USB,
// network, systemd, audit, EXT4, OOM, NVMe, docker bridges, the NVIDIA module
// itself) with about 0.1 % NVRM lines of every kind gpuwarden parses (Xid
// lines of all eras and MIG, fallen-off-the-bus notices, GSP timeouts with RPC
// history tables, crash dumps, RmInitAdapter failures, ...) and a reboot
// every ~256 MiB. Deterministic for a given seed.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

uint64_t state = 0x9E3779B97F4A7C15ull;
uint64_t Next() {  // xorshift64*
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1Dull;
}
unsigned Pick(unsigned n) { return static_cast<unsigned>(Next() % n); }

const char* const kGpus[] = {"0000:1b:00", "0000:3b:00", "0000:5d:00", "0000:9b:00",
                             "0000:bb:00", "0000:cb:00", "0000:db:00", "0000:e9:00"};
const char* const kNames[] = {"python3",  "pt_main_thread", "nvidia-smi",
                              "torchrun", "ollama",         "cache_mgr_main"};

// One ordinary kernel line (without the timestamp).
std::string Chatter(char* buf, size_t n) {
  const unsigned pid = 1000 + Pick(400000);
  switch (Pick(16)) {
    case 0:
      snprintf(buf, n, "usb 1-1.%u: new high-speed USB device number %u using xhci_hcd", Pick(8),
               Pick(128));
      break;
    case 1:
      snprintf(buf, n,
               "usb 1-1.%u: New USB device found, idVendor=046d, idProduct=c52b, bcdDevice=12.11",
               Pick(8));
      break;
    case 2:
      snprintf(buf, n,
               "e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, Flow "
               "Control: Rx/Tx");
      break;
    case 3:
      snprintf(buf, n, "IPv6: ADDRCONF(NETDEV_CHANGE): veth%05x: link becomes ready",
               Pick(1 << 20));
      break;
    case 4:
      snprintf(buf, n, "docker0: port %u(veth%07x) entered %s state", 1 + Pick(32), Pick(1 << 28),
               Pick(2) ? "blocking" : "forwarding");
      break;
    case 5:
      snprintf(buf, n, "systemd[1]: Started session-%u.scope - Session %u of User alice.",
               Pick(100000), Pick(100000));
      break;
    case 6:
      snprintf(buf, n,
               "audit: type=1400 audit(1740327858.%03u:%u): apparmor=\"DENIED\" operation=\"open\" "
               "profile=\"snap.code.code\" name=\"/proc/%u/environ\" pid=%u comm=\"code\" "
               "requested_mask=\"r\" denied_mask=\"r\" fsuid=1000 ouid=0",
               Pick(1000), Pick(1000000), pid, pid);
      break;
    case 7:
      snprintf(buf, n,
               "EXT4-fs (nvme0n1p%u): mounted filesystem %08x-1c2d-4e5f-8a9b-%012x r/w "
               "with ordered data mode. Quota mode: none.",
               1 + Pick(4), Pick(0xffffffffu), Pick(0xffffffu));
      break;
    case 8:
      snprintf(buf, n,
               "python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), "
               "order=0, oom_score_adj=0");
      break;
    case 9:
      snprintf(buf, n,
               "Out of memory: Killed process %u (python3) total-vm:%ukB, anon-rss:%ukB, "
               "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:%ukB oom_score_adj:0",
               pid, Pick(90000000), Pick(80000000), Pick(200000));
      break;
    case 10:
      snprintf(buf, n, "nvme nvme0: I/O %u QID %u timeout, completion polled", Pick(1024),
               Pick(64));
      break;
    case 11:
      snprintf(buf, n,
               "perf: interrupt took too long (%u > %u), lowering "
               "kernel.perf_event_max_sample_rate to %u",
               2500 + Pick(2000), 2500, 40000 + Pick(40000));
      break;
    case 12:
      snprintf(buf, n,
               "TCP: request_sock_TCP: Possible SYN flooding on port %u. Sending cookies.  "
               "Check SNMP counters.",
               1024 + Pick(60000));
      break;
    case 13:
      snprintf(buf, n, "nvidia-nvlink: Nvlink Core is being initialized, major device number %u",
               200 + Pick(50));
      break;
    case 14:
      snprintf(buf, n, "nvidia %s.0: enabling device (0000 -> 0003)", kGpus[Pick(8)]);
      break;
    default:
      snprintf(buf, n, "mlx5_core 0000:41:00.%u: mlx5e_update_carrier:%u:(pid %u): Link up",
               Pick(2), 300 + Pick(50), pid);
      break;
  }
  return buf;
}

__attribute__((format(printf, 4, 5))) void Line(std::vector<std::string>& out, char* buf, size_t n,
                                                const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
  out.emplace_back(buf);
}

// One NVRM message: one or more lines (the first gets the timestamp).
std::vector<std::string> Nvrm(char* buf, size_t n) {
  const char* gpu = kGpus[Pick(8)];
  const char* name = kNames[Pick(6)];
  const unsigned pid = 1000 + Pick(4000000);
  std::vector<std::string> out;
  switch (Pick(20)) {
    case 0:
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s): 13, pid=%u, name=%s, Graphics SM Warp Exception on (GPC %u, TPC "
           "%u, SM 0): Out Of Range Address",
           gpu, pid, name, Pick(8), Pick(8));
      break;
    case 1:
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s): 31, pid=%u, name=%s, Ch 000000%02x, intr 00000000. MMU Fault: "
           "ENGINE GRAPHICS GPCCLIENT_T1_%u faulted @ 0x7f%x_%08x. Fault is of type FAULT_PDE "
           "ACCESS_TYPE_VIRT_READ",
           gpu, pid, name, Pick(256), Pick(16), Pick(0xffff), Pick(0xffffffffu));
      break;
    case 2:
      Line(out, buf, n, "NVRM: Xid (PCI:%s): 43, pid=%u, name=%s, Ch 000000%02x", gpu, pid, name,
           Pick(256));
      break;
    case 3:
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s): 45, pid=%u, name=%s, Ch 000000%02x caused by previous Xid %u", gpu,
           pid, name, Pick(256), Pick(2) ? 149u : 48u);
      break;
    case 4:
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit "
           "error (DBE) has been detected on GPU in the framebuffer at physAddr 0x%x partition %u, "
           "subpartition %u.",
           gpu, Pick(0x7fffffff), Pick(32), Pick(4));
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
           "(0x%016x) marked for remapping, reset gpu to activate.",
           gpu, Pick(0x7fffffff));
      break;
    case 5:
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s GPU-I:%02u): 94, pid=%u, name=%s, Contained: SM (0x1). RST: No, "
           "D-RST: No",
           gpu, Pick(8), pid, name);
      break;
    case 6:
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s GPU-I:%02u GPU-CI:%02u): 31, pid=%u, name=%s, Ch 00000008, intr "
           "00000000. MMU Fault: ENGINE CE3 HUBCLIENT_CE1 faulted @ 0x0_00000000.",
           gpu, Pick(8), Pick(4), pid, name);
      break;
    case 7:
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
           gpu);
      Line(out, buf, n, "NVRM: GPU %s.0: GPU has fallen off the bus.", gpu);
      Line(out, buf, n, "NVRM: A GPU crash dump has been created. If possible, please run");
      Line(out, buf, n, "NVRM: nvidia-bug-report.sh as root to collect this data before");
      Line(out, buf, n, "NVRM: the NVIDIA kernel module is unloaded.");
      break;
    case 8:
      Line(out, buf, n, "NVRM: GPU at PCI:%s: GPU-%08x-b600-ac93-3616-d754b23d636d", gpu,
           Pick(0xffffffffu));
      Line(out, buf, n, "NVRM: GPU Board Serial Number: %u%05u", 16501 + Pick(10), Pick(100000));
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s): 119, pid=%u, name=nvidia-smi, Timeout after 6s of waiting for RPC "
           "response from GPU%u GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801813 0x4c).",
           gpu, pid, Pick(8));
      Line(out, buf, n,
           "NVRM: GPU%u GSP RPC buffer contains function 76 (GSP_RM_CONTROL) and data "
           "0x0000000020801813 0x000000000000004c.",
           Pick(8));
      Line(out, buf, n, "NVRM: GPU%u RPC history (CPU -> GSP):", Pick(8));
      for (int i = 0; i < 8; ++i) {
        Line(out, buf, n,
             "NVRM:     %2d    76   GSP_RM_CONTROL        0x0000000020802a02 0x0000000000000008 "
             "0x00062ed1a6b480ff 0x00062ed1a6b48273    372us",
             -i);
      }
      break;
    case 9:
      Line(out, buf, n,
           "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:%s (printing 1 of every 30).  "
           "The GPU likely needs to be reset.",
           gpu);
      break;
    case 10:
      Line(out, buf, n,
           "NVRM: Xid (PCI:00%02x:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link %02u (0x004525c6 "
           "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
           Pick(32), Pick(18));
      break;
    case 11:
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset "
           "Required)",
           gpu);
      break;
    case 12:
      Line(out, buf, n, "NVRM: Xid (%s): 31, Ch 00000004, engmask 00000101, intr 10000000",
           gpu);  // Pre-R4xx, no "PCI:".
      break;
    case 13:
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s): 63, pid=%u, Row Remapper: New row marked for remapping, reset gpu "
           "to activate.",
           gpu, pid);
      break;
    case 14:
      Line(out, buf, n, "NVRM: The NVIDIA GPU %s.0", gpu);
      Line(out, buf, n, "NVRM: (PCI ID: 10de:2330) installed in this system has");
      Line(out, buf, n, "NVRM: fallen off the bus and is not responding to commands.");
      break;
    case 15:
      Line(out, buf, n, "NVRM: GPU %s.0: RmInitAdapter failed! (0x62:0x65:1792)", gpu);
      Line(out, buf, n, "NVRM: GPU %s.0: rm_init_adapter failed, device minor number %u", gpu,
           Pick(8));
      break;
    case 16:
      Line(out, buf, n,
           "NVRM: os_schedule: Attempted to yield the CPU while in atomic or interrupt context");
      break;
    case 17:
      Line(out, buf, n, "NVRM: No NVIDIA graphics adapter probed!");
      break;
    case 18:
      Line(out, buf, n,
           "NVRM: Xid (PCI:%s): 109, pid=%u, name=%s, Ch 00000008, errorString CTX SWITCH TIMEOUT, "
           "Info 0x58005",
           gpu, pid, name);
      break;
    default:
      Line(out, buf, n,
           "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  "
           "(dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025");
      break;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kmsg_gen OUT_FILE SIZE_MIB [SEED]\n");
    return 2;
  }
  const uint64_t target = std::strtoull(argv[2], nullptr, 10) << 20;
  if (argc > 3) state ^= std::strtoull(argv[3], nullptr, 10) * 0x9E3779B97F4A7C15ull;
  FILE* f = std::fopen(argv[1], "wb");
  if (!f) {
    std::perror(argv[1]);
    return 1;
  }
  static char iobuf[1 << 22];
  std::setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
  char msg[1024];
  uint64_t written = 0, lines = 0, nvrm_lines = 0, next_boot = 256ull << 20;
  uint64_t usec = 0;
  auto emit = [&](const std::string& text, bool stamp) {
    int n = 0;
    if (stamp) {
      n = std::fprintf(f, "[%5" PRIu64 ".%06" PRIu64 "] %s\n", usec / 1000000, usec % 1000000,
                       text.c_str());
    } else {
      n = std::fprintf(f, "%s\n", text.c_str());
    }
    written += static_cast<uint64_t>(n);
    ++lines;
  };
  emit(
      "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) "
      "12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1",
      true);
  while (written < target) {
    usec += 1 + Pick(20000);
    if (written >= next_boot) {  // A reboot: the kernel clock starts again.
      next_boot += 256ull << 20;
      usec = 0;
      emit("Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC",
           true);
      continue;
    }
    if (Pick(1000) == 0) {
      const auto msgs = Nvrm(msg, sizeof msg);
      for (size_t i = 0; i < msgs.size(); ++i) {
        // Multi-line messages: continuation lines carry no timestamp, as dmesg prints them.
        const std::string& m = msgs[i];
        const bool continuation =
            i > 0 && (m.rfind("NVRM: (PCI ID", 0) == 0 || m.rfind("NVRM: fallen off", 0) == 0 ||
                      m.rfind("NVRM: nvidia-bug-report", 0) == 0 ||
                      m.rfind("NVRM: the NVIDIA kernel", 0) == 0);
        emit(msgs[i], !continuation);
        ++nvrm_lines;
      }
    } else {
      emit(Chatter(msg, sizeof msg), true);
    }
  }
  std::fclose(f);
  std::fprintf(stderr, "kmsg_gen: %" PRIu64 " bytes, %" PRIu64 " lines, %" PRIu64 " NVRM lines\n",
               written, lines, nvrm_lines);
  return 0;
}
