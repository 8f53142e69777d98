#include "kmsg/xid_catalog.h"

#include <algorithm>
#include <array>
#include <deque>
#include <string>
#include <vector>

namespace gw::kmsg {

namespace {

using C = CauseClass;
using A = XidAction;
using R = NvidiaResolution;

// The Kubernetes NVIDIA device plugin's application Xids (internal/rm/health.go):
// errors it leaves a GPU healthy for.
constexpr unsigned kApplicationXids[] = {13, 31, 43, 45, 68, 109};

// The mnemonic's tokens, split at '_'; for "A / B" (two names of one code) the first name's.
std::vector<std::string_view> Tokens(std::string_view mnemonic) {
  mnemonic = mnemonic.substr(0, mnemonic.find(' '));
  std::vector<std::string_view> out;
  while (!mnemonic.empty()) {
    const size_t p = mnemonic.find('_');
    out.push_back(mnemonic.substr(0, p));
    if (p == std::string_view::npos) break;
    mnemonic.remove_prefix(p + 1);
  }
  return out;
}

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "CE12" -> true for prefix "CE".
bool IsNumbered(std::string_view token, std::string_view prefix) {
  return token.size() > prefix.size() && token.substr(0, prefix.size()) == prefix &&
         IsDigits(token.substr(prefix.size()));
}

// An engine that runs a job's work on a channel of its own.
bool IsEngineToken(std::string_view t) {
  for (std::string_view p : {"CE", "NVDEC", "NVENC", "NVJPG", "OFA"}) {
    if (IsNumbered(t, p)) return true;
  }
  for (std::string_view e : {"VIC", "DLA", "MSVLD", "MSPDEC", "MSPPP", "SEC", "SEC2", "MPEG", "ME",
                             "VP", "VP2", "BSP", "GR", "PBDMA", "FIFO"}) {
    if (t == e) return true;
  }
  return false;
}

bool AnyToken(const std::vector<std::string_view>& tokens,
              std::initializer_list<std::string_view> words) {
  return std::any_of(tokens.begin(), tokens.end(), [&](std::string_view t) {
    return std::find(words.begin(), words.end(), t) != words.end();
  });
}

// "Additional to Xid 48 ..." -> 48.
std::optional<unsigned> AdditionalTo(std::string_view description) {
  constexpr std::string_view kLead = "Additional to Xid ";
  if (description.substr(0, kLead.size()) != kLead) return std::nullopt;
  unsigned v = 0;
  size_t i = kLead.size();
  for (; i < description.size() && i < kLead.size() + 4 && description[i] >= '0' &&
         description[i] <= '9';
       ++i) {
    v = v * 10 + static_cast<unsigned>(description[i] - '0');
  }
  if (i == kLead.size()) return std::nullopt;
  return v;
}

XidAction ActionOfResolution(R r) {
  switch (r) {
    case R::kRestartApp:
    case R::kCheckUvm:
    case R::kWorkflowXid45:
      return A::kRestartApp;
    case R::kIgnore:
      return A::kIgnore;
    case R::kResetGpu:
    case R::kWorkflowNvlink:
    case R::kWorkflowNvlink5:
      return A::kResetGpu;
    case R::kRestartBareMetal:
    case R::kRestartVm:
      return A::kRebootNode;
    case R::kWorkflowXid48:
      return A::kDrain;
    case R::kCheckMechanicals:
      return A::kCheckMechanicals;
    case R::kUpdateSwFw:
      return A::kUpdateSoftware;
    case R::kContactSupport:
    case R::kFollowXid154:
    case R::kNotGiven:
      return A::kContactSupport;
  }
  return A::kContactSupport;
}

bool IsHardwareCause(CauseClass c) {
  return c == C::kMemory || c == C::kBus || c == C::kThermalPower || c == C::kNvlink;
}

}  // namespace

CauseClass CauseOf(const NvidiaXid& row) {
  if (std::find(std::begin(kApplicationXids), std::end(kApplicationXids), row.code) !=
      std::end(kApplicationXids)) {
    return C::kApplication;
  }
  std::vector<std::string_view> t = Tokens(row.mnemonic);
  // ROBUST_CHANNEL_<ENGINE>_..., PBDMA_...: an engine's channel.
  const bool channel = t.size() > 2 && t[0] == "ROBUST" && t[1] == "CHANNEL";
  if ((channel && IsEngineToken(t[2])) || (!t.empty() && t[0] == "PBDMA")) return C::kEngine;
  if (AnyToken(t, {"NVLINK", "ALI"})) return C::kNvlink;
  if (AnyToken(t,
               {"ECC", "DRAM", "SRAM", "SBE", "CONTAINED", "UNCONTAINED", "FB", "MEMORY", "LTC"}) ||
      row.mnemonic.find("RESOURCE_RETIREMENT") != std::string_view::npos) {
    return C::kMemory;
  }
  if (AnyToken(t, {"BUS", "PCIE", "C2C", "CHI"})) return C::kBus;
  if (AnyToken(t, {"PWR", "TEMP", "TEMPERATURE", "PSHC"}) ||
      row.mnemonic.find("SILENT_RUNNING") != std::string_view::npos) {
    return C::kThermalPower;
  }
  if (AnyToken(t, {"GSP", "PMU", "SEC2", "FECS", "SEC", "KEY", "INFOROM", "SPI", "SMBPBI"})) {
    return C::kFirmware;
  }
  if (row.mnemonic.find("RECOVERY_ACTION") != std::string_view::npos) return C::kInformational;
  return C::kDriver;
}

XidAction ActionOf(const NvidiaXid& row) {
  if (row.immediate != R::kNotGiven) return ActionOfResolution(row.immediate);
  if (std::optional<unsigned> n = AdditionalTo(row.description); n && *n != row.code) {
    if (std::optional<NvidiaXid> other = FindNvidiaXid(*n); other) {
      return ActionOfResolution(other->immediate);
    }
  }
  if (row.description.find("reengaged") != std::string_view::npos) return A::kIgnore;
  return A::kContactSupport;
}

XidImpact ImpactOf(CauseClass cause, XidAction action) {
  if (cause == C::kInformational) return XidImpact::kDegraded;
  switch (action) {
    case A::kIgnore:
      return XidImpact::kNone;
    case A::kRestartApp:
      // The application restarts; the bad row is remapped only at a reset.
      return cause == C::kMemory ? XidImpact::kDegraded : XidImpact::kNone;
    case A::kResetGpu:
    case A::kRebootNode:
    case A::kDrain:
    case A::kCheckMechanicals:
      return XidImpact::kFault;
    case A::kContactSupport:
    case A::kUpdateSoftware:
      return XidImpact::kDegraded;
  }
  return XidImpact::kDegraded;
}

Actor ActorOf(CauseClass cause, XidAction action) {
  if (action == A::kRestartApp) return Actor::kUser;
  if (action == A::kContactSupport && IsHardwareCause(cause)) return Actor::kVendor;
  return Actor::kAdmin;
}

namespace {
// The project's words for a code: a name, what it means, and what to check
// when it repeats (beyond NVIDIA's investigatory step). Codes of an engine
// family (CEn, NVDECn, NVJPGn, NVENCn, OFAn) and unused codes take words made
// from their mnemonic (FamilyWords); every other code NVIDIA uses is here.
struct Words {
  unsigned code;
  std::string_view name;
  std::string_view meaning;
  std::string_view hint;  // May be empty.
};

constexpr auto kWords = std::to_array<Words>({
    {8, "GPU stopped processing",
     "A channel timed out: the GPU stopped making progress on a job's work.",
     "If it repeats on this GPU with different programs, reset the GPU."},
    {11, "invalid push buffer stream",
     "The command stream a program sent to the graphics engine was invalid or corrupted.", ""},
    {13, "graphics engine exception",
     "A GPU kernel faulted (illegal instruction, illegal address, SM warp exception).",
     "Usually a bug in the application: debug it. If bursts hit the same GPU from different "
     "programs with known-good code, run diagnostics (dcgmi diag); on many GPUs, check the "
     "application and its CUDA version."},
    {25, "illegal push buffer stream",
     "The command stream a program sent to the graphics engine held an illegal notification.", ""},
    {31, "GPU memory page fault", "A GPU kernel accessed an address it has no mapping for.",
     "Usually a bug in the application: debug it. Repeated faults on the same GPU from different "
     "programs: run diagnostics (dcgmi diag); on different GPUs: check the application and its "
     "CUDA version."},
    {32, "corrupted push buffer",
     "The command stream reaching the GPU's DMA engine was invalid or corrupted.",
     "If it repeats, check for PCIe errors and system-memory errors as well."},
    {37, "driver firmware error",
     "The graphics engine's firmware (FECS) was sent a method it does not implement.", ""},
    {38, "driver firmware error", "A driver firmware watchdog (FECS) timed out.", ""},
    {43, "channel reset after an application fault",
     "The GPU stopped one application's channel after that application faulted; the GPU is "
     "healthy.",
     "The affected job has to be fixed or restarted."},
    {44, "graphics engine fault during context switch",
     "The graphics engine faulted while switching between programs' contexts.", ""},
    {45, "pre-emptive cleanup",
     "The driver tore down a process's GPU work because of an earlier error or because the "
     "process was killed.",
     "Look at the Xid that preceded it (\"caused by previous Xid N\"): that one says what "
     "happened; alone, it only means a process's GPU work was cleaned up."},
    {46, "GPU stopped processing", "The GPU stopped processing and needs a reset.",
     "If it recurs after reboots, inspect the hardware."},
    {48, "double-bit ECC error", "An uncorrectable (double-bit) ECC error hit GPU memory.",
     "The reset activates row remapping (or page retirement); replace the GPU (RMA) if remapping "
     "fails or the error repeats. With Xid 94 (contained) the GPU kept serving; with 95 it did "
     "not."},
    {54, "auxiliary power not connected",
     "The GPU's auxiliary power cable is not connected or not delivering power.", ""},
    {60, "video processor exception",
     "The video processor (on the SEC2 channel) raised an exception for a program's stream.", ""},
    {62, "micro-controller halt", "An internal micro-controller (PMU) halted.",
     "Reboot the node if the reset fails; check cooling (it can be thermal)."},
    {63, "row remap / page retirement event",
     "After ECC errors, a memory row was marked for remapping or a page for retirement.",
     "A GPU reset, when the GPU is idle, makes a pending remap take effect."},
    {64, "row remap / page retirement failure",
     "Remapping a bad memory row or retiring a bad page failed.",
     "If remapping keeps failing, the GPU meets the replacement (RMA) criterion."},
    {66, "illegal access by driver",
     "The graphics engine's firmware (FECS) saw a register access it does not allow.", ""},
    {67, "illegal access by driver",
     "The graphics engine's firmware (FECS) saw an access that failed its verification.", ""},
    {69, "graphics engine class error",
     "The graphics engine received a command it does not accept.", ""},
    {74, "NVLink error", "An NVLink link reported an error.",
     "Decode the register fields in the message; reseat or diagnose the link if it repeats."},
    {78, "vGPU start error", "A virtual GPU (vGPU) failed to start.",
     "Check the vGPU manager's log and that the guest and host drivers match."},
    {79, "GPU fell off the bus", "The GPU stopped answering on PCIe.",
     "Check power, cooling and PCIe seating or riser; replace (RMA) if it recurs."},
    {80, "corrupted data sent to GPU",
     "Data a program sent to the GPU failed its checksum (push-buffer CRC mismatch).", ""},
    {92, "high single-bit ECC error rate",
     "GPU memory is correcting single-bit errors at a high rate.",
     "Watch the rate; plan a replacement if it keeps growing."},
    {93, "InfoROM wear limit exceeded",
     "The GPU's InfoROM has been written more often than it is provisioned for (not fatal).", ""},
    {94, "contained memory error",
     "An uncorrectable memory error was contained: only the process using that memory was "
     "affected.",
     "Other work keeps running; reset the GPU at its next idle window to remap the row."},
    {95, "uncontained memory error",
     "An uncorrectable memory error could not be contained: every process on the GPU is "
     "affected.",
     "Replace the GPU (RMA) if it repeats."},
    {106, "SMBPBI test message", "A test message over the board's management interface (SMBPBI).",
     ""},
    {107, "SMBPBI test message",
     "A silent test message over the board's management interface (SMBPBI).", ""},
    {109, "context-switch timeout", "The GPU could not switch away from a job's work in time.",
     "Usually the application hung the GPU; if it recurs with different programs, contact "
     "support."},
    {110, "security fault", "The GPU reported a security fault.", ""},
    {119, "GSP RPC timeout",
     "The GPU System Processor (GSP) firmware did not answer the driver in time.",
     "Reboot if the reset fails, and update the driver; if it recurs after reboots, inspect the "
     "hardware."},
    {120, "GSP error", "The GPU System Processor (GSP) firmware reported an error.",
     "Reboot if the reset fails; update the driver if it recurs."},
    {121, "C2C link error",
     "The chip-to-chip (C2C) link of a Grace Hopper / Blackwell module reported an error.", ""},
    {136, "link training failed", "An NVLink link of the GPU failed to train.",
     "If it recurs after reboots, check the link's cabling and signal integrity."},
    {137, "NVLink privilege error", "An NVLink access violated its privilege level.", ""},
    {140, "unrecovered ECC error", "An uncorrectable ECC error escaped containment.",
     "Replace the GPU (RMA) if it repeats."},
    {141, "CUDA fast-path error", "CUDA's fast submission path reported an error.", ""},
    {143, "GPU initialisation failure", "The GPU failed to initialise.",
     "Reboot the node if the reset fails; replace (RMA) if it keeps failing."},
    {144, "NVLink SAW error", "The NVLink SAW unit reported an error.", ""},
    {145, "NVLink RLW error", "The NVLink RLW unit reported an error.", ""},
    {146, "NVLink TLW error", "The NVLink TLW unit reported an error.", ""},
    {147, "NVLink TREX error", "The NVLink TREX unit reported an error.", ""},
    {148, "NVLink NVLPW_CTRL error", "The NVLink NVLPW_CTRL unit reported an error.", ""},
    {149, "NVLink NETIR error",
     "The NVLink NETIR unit reported link down, bit-error-rate events or similar.",
     "Bit-error-rate events: check cables and signal integrity."},
    {150, "NVLink MSE error", "The NVLink MSE watchdog fired.", ""},
    {151, "key rotation error", "A confidential-computing key rotation failed.", ""},
    {152, "DLA SMMU error", "The deep-learning accelerator (DLA) reported an SMMU error.", ""},
    {153, "DLA timeout", "The deep-learning accelerator (DLA) timed out.", ""},
    {154, "recovery action changed",
     "The driver changed the GPU's recovery action; the message names the new one.",
     "NVML's recovery actions: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and "
     "reset, 5 recover the IMEX domain, 6 bus reset, 7 system reboot."},
    {155, "NVLink software-defined error", "NVLink reported a software-defined error.", ""},
    {156, "resource retirement event", "The GPU retired a failing internal resource.",
     "The reset makes the retirement take effect."},
    {157, "resource retirement failure", "Retiring a failing internal resource failed.", ""},
    {158, "GPU fatal timeout", "The GPU hit a fatal timeout.",
     "Inspect the hardware if it recurs."},
    {159, "CHI non-data error",
     "The coherent hub interface (CHI) between CPU and GPU reported a non-data error.",
     "The unified-memory (UVM) driver's messages say more."},
    {160, "channel retirement event", "The driver retired a GPU channel.", ""},
    {161, "channel retirement failure", "Retiring a GPU channel failed.", ""},
    {162, "power smoothing re-engaged",
     "The GPU's power-smoothing circuitry is working again after it was disengaged.", ""},
    {163, "power smoothing disengaged",
     "The GPU's power-smoothing circuitry stopped smoothing its power draw.",
     "Check the node's power delivery."},
    {164, "power smoothing near end of life",
     "The GPU's power-smoothing circuitry has little of its lifetime left.",
     "Plan the GPU's replacement."},
    {165, "power smoothing lifetime exhausted",
     "The GPU's power-smoothing circuitry has reached the end of its lifetime.",
     "Plan the GPU's replacement."},
    {166, "confidential-compute NVLink error",
     "Confidential-computing traffic reached an NVLink link not yet set up for encryption.", ""},
    {167, "PCIe fatal timeout", "A PCIe transaction to the GPU timed out fatally.",
     "Check PCIe seating, riser and platform."},
    {168, "reduced GPU memory capacity",
     "Errors in the GPU's write-protected region (WPR) leave it less usable memory.", ""},
    {169, "SEC2 halt", "The GPU's security micro-controller (SEC2) halted.", ""},
    {170, "confidential-compute NVLink interrupt",
     "NVLink raised an interrupt in confidential-computing mode.", ""},
    {171, "uncorrectable DRAM error detail",
     "Details of an uncorrectable DRAM error (accompanies Xid 48).", ""},
    {172, "uncorrectable SRAM error detail",
     "Details of an uncorrectable SRAM error (accompanies Xid 48).", ""},
});

static_assert(std::is_sorted(kWords.begin(), kWords.end(),
                             [](const Words& a, const Words& b) { return a.code < b.code; }));

const Words* FindWords(unsigned code) {
  auto it = std::lower_bound(kWords.begin(), kWords.end(), code,
                             [](const Words& w, unsigned c) { return w.code < c; });
  return it != kWords.end() && it->code == code ? &*it : nullptr;
}

// Words made from an engine family's mnemonic ("ROBUST_CHANNEL_CE12_ERROR"),
// or an unused code's.
struct Made {
  std::string name;
  std::string meaning;
};

std::optional<Made> FamilyWords(const NvidiaXid& row) {
  if (row.unused()) {
    return Made{"unused Xid", "NVIDIA's catalog lists this code (" + std::string(row.mnemonic) +
                                  ") as unused: no current driver should log it."};
  }
  const std::vector<std::string_view> t = Tokens(row.mnemonic);
  if (t.size() < 3 || t[0] != "ROBUST" || t[1] != "CHANNEL") return std::nullopt;
  struct Family {
    std::string_view prefix, name, what;
  };
  constexpr Family kFamilies[] = {
      {"CE", "copy engine", "a DMA engine that moves data to, from and within the GPU"},
      {"NVDEC", "video decoder", "NVDEC"},
      {"NVENC", "video encoder", "NVENC"},
      {"NVJPG", "JPEG engine", "NVJPG"},
      {"OFA", "optical-flow accelerator", "OFA"},
  };
  for (const Family& f : kFamilies) {
    if (!IsNumbered(t[2], f.prefix)) continue;
    const std::string n(t[2].substr(f.prefix.size()));
    std::string name = std::string(f.name) + " " + n + " exception";
    std::string meaning = std::string(1, static_cast<char>(f.name[0] - 'a' + 'A')) +
                          std::string(f.name.substr(1)) + " " + n + " (" + std::string(f.what) +
                          ") raised an exception while running a program's work.";
    return Made{std::move(name), std::move(meaning)};
  }
  return std::nullopt;
}

std::string_view ActionSentence(const NvidiaXid& row, CauseClass cause, XidAction action) {
  switch (action) {
    case A::kRestartApp:
      return cause == C::kMemory ? "Restart the affected application."
                                 : "Restart the application; the GPU serves on.";
    case A::kIgnore:
      return "Nothing to do for the GPU.";
    case A::kResetGpu:
      return "Drain the GPU and reset it (nvidia-smi -r).";
    case A::kRebootNode:
      return row.immediate == R::kRestartVm ? "Restart the virtual machine."
                                            : "Drain the node and reboot it.";
    case A::kDrain:
      return "Drain the GPU now, then reset it.";
    case A::kCheckMechanicals:
      return "Check the GPU's power cables and seating.";
    case A::kUpdateSoftware:
      return "Update the driver and firmware (for a vGPU, the vGPU manager and the guest "
             "driver).";
    case A::kContactSupport:
      if (row.unused()) {
        return "No current driver logs this code: read the message, check the driver version, "
               "and contact NVIDIA support if it recurs.";
      }
      if (row.immediate == R::kFollowXid154) return "Act on the recovery action the message names.";
      if (row.immediate == R::kNotGiven) {
        return "NVIDIA's catalog gives no first step: contact NVIDIA support "
               "(nvidia-bug-report.sh).";
      }
      return "Contact NVIDIA support (nvidia-bug-report.sh).";
  }
  return "Contact NVIDIA support (nvidia-bug-report.sh).";
}

// NVIDIA's investigatory step, in words; empty where it adds nothing.
std::string_view InvestigatorySentence(std::string_view token, XidAction action) {
  if (token == "CONTACT_SUPPORT") {
    return action == A::kContactSupport
               ? ""
               : "If it repeats, contact NVIDIA support (nvidia-bug-report.sh).";
  }
  if (token == "CHECK_APP/CUDA")
    return "If it repeats, check the application and its CUDA version.";
  if (token == "INVESTIGATE_SW" || token == "INVESTIGATE_SW_USER") {
    return "If it repeats, update the driver and look at the software that ran.";
  }
  if (token == "INVESTIGATE_LINK_SI") {
    return "If it repeats, check the link's cabling and signal integrity.";
  }
  if (token == "UPDATE_SWFW") {
    return action == A::kUpdateSoftware ? "" : "If it repeats, update the driver and firmware.";
  }
  if (token == "XID_137_FLOW") return "If it repeats, follow NVIDIA's Xid 137 workflow.";
  if (token == "SYMPATHETIC_REPORT_SOLO") {
    return "If it comes alone, without another Xid, report it to NVIDIA support.";
  }
  if (token == "WORKFLOW_NVLINK5_ERR") {
    return "The message says Fatal or Nonfatal: a Nonfatal event needs nothing now (watch for "
           "Xid 154).";
  }
  return "";
}

// Every entry, built once from NVIDIA's rows; the texts they point into live
// as long as the process (never destroyed: a late reader stays safe).
struct Built {
  std::deque<std::string> text;
  std::vector<XidInfo> entries;
};

std::string_view Keep(Built& b, std::string s) { return b.text.emplace_back(std::move(s)); }

const Built& Catalog() {
  static const Built* built = [] {
    auto* b = new Built;
    for (const NvidiaXid& row : NvidiaXidCatalog()) {
      XidInfo x;
      x.code = row.code;
      x.known = true;
      x.unused = row.unused();
      x.mnemonic = row.mnemonic;
      x.description = row.description;
      x.immediate = row.immediate;
      x.investigatory = row.investigatory;
      x.cause = CauseOf(row);
      x.action = ActionOf(row);
      x.impact = ImpactOf(x.cause, x.action);
      x.actor = ActorOf(x.cause, x.action);
      x.hardware_fault = x.impact == XidImpact::kFault && IsHardwareCause(x.cause);
      x.reboot_recoverable = x.action == A::kResetGpu || x.action == A::kRebootNode ||
                             x.action == A::kDrain ||
                             (x.cause == C::kMemory && x.action == A::kRestartApp);
      std::string_view hint;
      if (const Words* w = row.unused() ? nullptr : FindWords(row.code)) {
        x.name = w->name;
        x.meaning = w->meaning;
        hint = w->hint;
      } else if (std::optional<Made> m = FamilyWords(row)) {
        x.name = Keep(*b, std::move(m->name));
        x.meaning = Keep(*b, std::move(m->meaning));
      } else {
        x.name = row.description;
        x.meaning = Keep(*b, std::string(row.description) + ".");
      }
      std::string advice(ActionSentence(row, x.cause, x.action));
      const std::string_view more =
          hint.empty() ? InvestigatorySentence(row.investigatory, x.action) : hint;
      if (!more.empty()) advice += " " + std::string(more);
      x.advice = Keep(*b, std::move(advice));
      b->entries.push_back(x);
    }
    return b;
  }();
  return *built;
}

// "caused by previous Xid 149" -> 149.
std::optional<unsigned> CausedBy(std::string_view detail) {
  const size_t p = detail.find("previous Xid ");
  if (p == std::string_view::npos) return std::nullopt;
  unsigned v = 0;
  size_t i = p + 13, n = 0;
  while (i < detail.size() && n < 6 && detail[i] >= '0' && detail[i] <= '9') {
    v = v * 10 + static_cast<unsigned>(detail[i++] - '0');
    ++n;
  }
  if (n == 0) return std::nullopt;
  return v;
}

// "... changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)" -> the
// nvmlDeviceGpuRecoveryAction_t after "to": 0 none, 1 GPU reset, 2 node
// reboot, 3 drain P2P, 4 drain and reset, 5 recover the IMEX domain, 6 bus
// reset, 7 system reboot.
std::optional<XidAction> RecoveryAction(std::string_view detail) {
  const size_t p = detail.rfind(" to 0x");
  if (p == std::string_view::npos || p + 6 >= detail.size()) return std::nullopt;
  switch (detail[p + 6]) {
    case '0':
      return XidAction::kIgnore;
    case '1':
    case '6':  // A bus reset: the GPU is reset through its PCIe link.
      return XidAction::kResetGpu;
    case '2':
    case '7':
      return XidAction::kRebootNode;
    case '3':
    case '4':
      return XidAction::kDrain;
    case '5':  // The IMEX domain (multi-node NVLink): an admin's recovery.
      return XidAction::kResetGpu;
    default:
      return XidAction::kContactSupport;
  }
}

// `word` delimited by spaces (or the text's ends).
bool ContainsWord(std::string_view text, std::string_view word) {
  for (size_t p = text.find(word); p != std::string_view::npos; p = text.find(word, p + 1)) {
    const bool starts = p == 0 || text[p - 1] == ' ';
    const size_t end = p + word.size();
    const bool ends = end == text.size() || text[end] == ' ';
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

std::span<const XidInfo> XidCatalog() { return Catalog().entries; }

XidInfo LookupXid(unsigned code) {
  const std::vector<XidInfo>& all = Catalog().entries;
  auto it = std::lower_bound(all.begin(), all.end(), code,
                             [](const XidInfo& x, unsigned c) { return x.code < c; });
  if (it != all.end() && it->code == code) return *it;
  XidInfo unknown;
  unknown.code = code;
  unknown.known = false;
  unknown.name = "unknown Xid";
  unknown.meaning = code == 999 ? "NVML could not name this Xid (999)."
                                : "This Xid is not in NVIDIA's catalog (of 2025-10-29).";
  unknown.cause = CauseClass::kUnknown;
  unknown.action = XidAction::kContactSupport;
  unknown.actor = Actor::kAdmin;
  unknown.advice =
      "Unknown Xid: read the driver's message; a newer driver may define it (see NVIDIA's Xid "
      "catalog). Contact NVIDIA support if it recurs.";
  unknown.impact = XidImpact::kDegraded;
  return unknown;
}

XidAssessment AssessXid(const KernelEvent& ev) {
  XidAssessment a;
  a.xid = ev.xid.value_or(0);
  a.attributed_xid = a.xid;
  if (a.xid == 45) {
    if (auto n = CausedBy(ev.detail); n && *n != 45) a.attributed_xid = *n;
  }
  a.info = LookupXid(a.attributed_xid);
  // Xid 45 caused by Xid N is N's cleanup: N's cause, action and impact.
  a.cause = a.info.cause;
  a.impact = a.info.impact;
  if (a.xid == 154) {
    a.recovery_action = RecoveryAction(ev.detail);
    if (a.recovery_action) {
      a.impact = *a.recovery_action == XidAction::kIgnore           ? XidImpact::kNone
                 : *a.recovery_action == XidAction::kContactSupport ? XidImpact::kDegraded
                                                                    : XidImpact::kFault;
    }
  }
  if (a.xid >= 144 && a.xid <= 150) {
    // "145, RLW_RXPIPE Nonfatal XC0 ...", "149, NETIR_LINK_EVT Fatal XC0 ...".
    if (ContainsWord(ev.detail, "Nonfatal")) {
      // NVIDIA: a nonfatal NVLink5 event is to be ignored (watched): this
      // event's action, for why and events alike.
      a.impact = XidImpact::kNone;
      a.info.action = XidAction::kIgnore;
      a.info.advice = "Nonfatal: nothing to do now; watch for Xid 154 (a recovery action).";
    } else if (ContainsWord(ev.detail, "Fatal")) {
      a.impact = XidImpact::kFault;
    }
  }
  return a;
}

std::string_view CauseClassName(CauseClass c) {
  switch (c) {
    case CauseClass::kApplication:
      return "application";
    case CauseClass::kEngine:
      return "engine";
    case CauseClass::kDriver:
      return "driver";
    case CauseClass::kFirmware:
      return "firmware_gsp";
    case CauseClass::kMemory:
      return "memory_ecc";
    case CauseClass::kBus:
      return "bus_pcie";
    case CauseClass::kThermalPower:
      return "thermal_power";
    case CauseClass::kNvlink:
      return "nvlink";
    case CauseClass::kInformational:
      return "informational";
    case CauseClass::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view XidActionName(XidAction a) {
  switch (a) {
    case XidAction::kRestartApp:
      return "restart_app";
    case XidAction::kResetGpu:
      return "reset_gpu";
    case XidAction::kRebootNode:
      return "reboot_node";
    case XidAction::kDrain:
      return "drain";
    case XidAction::kCheckMechanicals:
      return "check_mechanicals";
    case XidAction::kUpdateSoftware:
      return "update_software";
    case XidAction::kContactSupport:
      return "contact_support";
    case XidAction::kIgnore:
      return "ignore";
  }
  return "contact_support";
}

std::string_view XidImpactName(XidImpact i) {
  switch (i) {
    case XidImpact::kNone:
      return "none";
    case XidImpact::kDegraded:
      return "degraded";
    case XidImpact::kFault:
      return "fault";
  }
  return "degraded";
}

std::string_view CategoryWord(CauseClass c) {
  switch (c) {
    case CauseClass::kApplication:
      return "application";
    case CauseClass::kEngine:
      return "engine";
    case CauseClass::kDriver:
    case CauseClass::kFirmware:
    case CauseClass::kUnknown:
      return "driver";
    case CauseClass::kMemory:
      return "memory";
    case CauseClass::kBus:
      return "bus";
    case CauseClass::kThermalPower:
      return "power";
    case CauseClass::kNvlink:
      return "nvlink";
    case CauseClass::kInformational:
      return "hardware";
  }
  return "driver";
}

std::string_view ActorName(Actor a) {
  switch (a) {
    case Actor::kUser:
      return "user";
    case Actor::kAdmin:
      return "admin";
    case Actor::kVendor:
      return "vendor";
  }
  return "admin";
}

}  // namespace gw::kmsg
