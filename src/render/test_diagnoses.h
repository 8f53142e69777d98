// Fixed Diagnosis values for the diagnosis renderer tests, built in code.
#ifndef GPUWARDEN_RENDER_TEST_DIAGNOSES_H_
#define GPUWARDEN_RENDER_TEST_DIAGNOSES_H_

#include <sstream>
#include <string>
#include <vector>

#include "diagnose/catalog.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"
#include "render/test_snapshots.h"

namespace gw::render::testing {

// A finding with the catalog's fixed fields for `code`.
inline diagnose::Finding MakeFinding(const std::string& code, std::vector<unsigned> gpus,
                                     std::string message) {
  return diagnose::fixtures::CatalogFinding(code, std::move(gpus), std::move(message));
}

// BusyBox() judged: GPU 0 BUSY (VRAM_EXHAUSTED, IDLE_HOLDER by bob 1002),
// GPU 3 FAULT (XID_FATAL, GPU_LOST), GPUs 1 and 2 OK, and a server-level
// PERSISTENCE_OFF note. Findings in rank order.
inline diagnose::Diagnosis BusyDiagnosis() {
  using diagnose::Verdict;
  diagnose::Diagnosis d;
  d.server = Verdict::kFault;
  d.summary = "FAULT — hardware: GPU 3 fell off the bus (Xid 79); 3 other GPUs usable";

  diagnose::Finding xid = MakeFinding("XID_FATAL", {3}, "GPU 3 fell off the bus (Xid 79)");
  xid.evidence = {{"xid", "79", 79.0, "count"}, {"bus", "00000000:5D:00.0", std::nullopt, ""}};
  xid.next_steps = {"admin: reboot the node", "vendor: hardware inspection if it recurs",
                    "admin: nvidia-bug-report.sh"};
  diagnose::Finding lost = MakeFinding("GPU_LOST", {3}, "GPU 3 is lost to the driver");
  lost.next_steps = {"admin: reboot the node"};
  diagnose::Finding vram =
      MakeFinding("VRAM_EXHAUSTED", {0}, "GPU 0 memory is full: 70.0 GiB of 79.6 GiB");
  vram.evidence = {{"used", "70.0 GiB of 79.6 GiB (88 %)", 70.0 * 1073741824.0, "bytes"}};
  vram.next_steps = {"gpuwarden status --gpu 0", "Use a GPU with free memory",
                     "Ask the owners of idle holders"};
  diagnose::Finding idle =
      MakeFinding("IDLE_HOLDER", {0}, "PID 1002 (bob) holds 10.0 GiB on GPU 0 and does no work");
  idle.pids = {1002};
  idle.evidence = {{"held", "10.0 GiB", 10.0 * 1073741824.0, "bytes"}};
  idle.next_steps = {"gpuwarden status --gpu 0", "gpuwarden clean --pid 1002 --dry-run"};
  diagnose::Finding pers = MakeFinding("PERSISTENCE_OFF", {}, "persistence mode is off");
  d.findings = {xid, lost, vram, idle, pers};

  diagnose::GpuVerdict g0{0,
                          Verdict::kBusy,
                          "GPU 0 BUSY — 70.0/79.6 GiB, 97 % [VRAM_EXHAUSTED]",
                          {2, 3},
                          10 * kGiB,
                          diagnose::GpuState::kBusy,
                          2 * kGiB,
                          3.0};
  diagnose::GpuVerdict g1{
      1,         Verdict::kOk, "GPU 1 OK — 20.0/79.6 GiB, 50 %", {}, 0, diagnose::GpuState::kInUse,
      59 * kGiB, 50.0};
  diagnose::GpuVerdict g2{
      2,         Verdict::kOk, "GPU 2 OK — 31.0/79.6 GiB, 5 %", {}, 0, diagnose::GpuState::kInUse,
      48 * kGiB, 95.0};
  diagnose::GpuVerdict g3{3,
                          Verdict::kFault,
                          "GPU 3 FAULT — fell off the bus (Xid 79) [XID_FATAL, GPU_LOST]",
                          {0, 1},
                          0,
                          diagnose::GpuState::kFault,
                          std::nullopt,
                          std::nullopt};
  d.gpus = {g0, g1, g2, g3};

  diagnose::UserHolding alice;
  alice.user = "alice";
  alice.uid = 1000;
  alice.gpus = {0, 1};
  alice.pids = {1001};
  alice.vram_bytes = 80 * kGiB;
  diagnose::UserHolding bob;
  bob.user = "bob";
  bob.uid = 1001;
  bob.gpus = {0};
  bob.pids = {1002};
  bob.vram_bytes = 10 * kGiB;
  bob.idle_vram_bytes = 10 * kGiB;
  d.users = {alice, bob};
  return d;
}

// Every GPU of BusyBox() OK, no findings.
inline diagnose::Diagnosis HealthyDiagnosis() {
  diagnose::Diagnosis d;
  d.server = diagnose::Verdict::kOk;
  d.summary = "OK — 4 GPUs healthy, none busy";
  for (unsigned i = 0; i < 4; ++i) {
    d.gpus.push_back({i,
                      diagnose::Verdict::kOk,
                      "GPU " + std::to_string(i) + " OK — idle",
                      {},
                      0,
                      diagnose::GpuState::kFree,
                      79 * kGiB,
                      100.0});
  }
  return d;
}

inline std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace gw::render::testing

#endif  // GPUWARDEN_RENDER_TEST_DIAGNOSES_H_
