#include "render/events_explain.h"

#include <algorithm>

#include "kmsg/xid_catalog.h"

namespace gw::render {
namespace {

using kmsg::XidAction;

std::string ActionWords(XidAction a) {
  switch (a) {
    case XidAction::kRestartApp:
      return "restart the application";
    case XidAction::kResetGpu:
      return "reset the GPU";
    case XidAction::kRebootNode:
      return "reboot the node";
    case XidAction::kDrain:
      return "drain the GPU, then reset it";
    case XidAction::kCheckMechanicals:
      return "check power cables and seating";
    case XidAction::kUpdateSoftware:
      return "update the driver and firmware";
    case XidAction::kContactSupport:
      return "contact support";
    case XidAction::kIgnore:
      return "nothing to do";
  }
  return "contact support";
}

struct KindText {
  std::string_view kind;
  std::string_view name;
  std::string_view meaning;
  std::string_view advice;
  std::string_view action;
  std::string_view actor;
  bool hardware;
};

constexpr KindText kKinds[] = {
    {kmsg::kKindFallenOffBus, "GPU fell off the bus", "The GPU stopped answering on PCIe.",
     "Drain and reboot the node; check power, cooling and PCIe seating; replace (RMA) if it "
     "recurs.",
     "reboot the node", "admin", true},
    {kmsg::kKindRmInitAdapterFailed, "GPU initialisation failed",
     "The driver could not initialise the GPU (RmInitAdapter failed).",
     "Reset the GPU or reboot the node; check power and seating; replace (RMA) if it recurs "
     "after reboots.",
     "reboot the node", "admin", true},
    {kmsg::kKindProbeFailed, "GPU probe failed",
     "The driver found GPUs it could not take (its probe routine failed for them): NVML does "
     "not list them.",
     "Read the lines before it (RmInitAdapter, fell off the bus, unsupported GPU); reset or "
     "reseat the GPU, check power and the driver version; replace (RMA) if it recurs after "
     "reboots.",
     "reboot the node", "admin", true},
    {kmsg::kKindNoAdapterProbed, "no GPU probed",
     "The driver module loaded but found no GPU it could drive.",
     "Check that the GPU is visible on PCIe (lspci) and supported by this driver version.",
     "check the driver and the GPU", "admin", false},
    {kmsg::kKindGspRpcTimeout, "GSP firmware timeout",
     "The GPU's GSP firmware did not answer the driver in time (the details of an Xid 119).",
     "Reset the GPU or reboot the node; update the driver; contact support if it recurs.",
     "reset the GPU", "admin", false},
    {kmsg::kKindGspRpcRateLimited, "GSP timeouts rate-limited",
     "More GSP firmware timeouts happened than the driver printed.",
     "Treat as repeated Xid 119: reset the GPU or reboot the node; contact support if it "
     "recurs.",
     "reset the GPU", "admin", false},
    {kmsg::kKindCrashDump, "driver crash dump", "The driver wrote a crash dump of the GPU's state.",
     "Keep the dump (nvidia-bug-report.sh) for a support case.", "contact support", "admin", false},
    {kmsg::kKindGpuUuid, "GPU identity", "The driver named the GPU's UUID.",
     "Nothing to do; it identifies the GPU of the events around it.", "nothing to do", "admin",
     false},
    {kmsg::kKindBoardSerial, "board serial", "The driver named the GPU board's serial number.",
     "Nothing to do; quote it in a support case (RMA).", "nothing to do", "admin", false},
    {kmsg::kKindOsScheduleAtomic, "driver scheduling warning",
     "The driver tried to sleep where it may not (os_schedule in atomic context).",
     "Usually harmless; update the driver if it repeats with hangs.", "update the driver", "admin",
     false},
    {kmsg::kKindGpuUnsupported, "GPU not supported by this driver",
     "The installed driver does not support this GPU.",
     "Install a driver branch that supports the GPU.", "update the driver", "admin", false},
    {kmsg::kKindBoot, "boot", "The system booted.", "Nothing to do.", "nothing to do", "admin",
     false},
    {kmsg::kKindDriverLoad, "driver loaded",
     "The NVIDIA kernel module was loaded and initialised the GPUs again; `why` treats the events "
     "before it as history.",
     "Nothing to do.", "nothing to do", "admin", false},
};

}  // namespace

std::string EventKindTitle(std::string_view kind) {
  for (const KindText& k : kKinds) {
    if (k.kind == kind) return std::string(k.name);
  }
  std::string out(kind);
  std::replace(out.begin(), out.end(), '_', ' ');
  return out.empty() ? std::string("NVRM message") : out;
}

EventMeaning ExplainEvent(const kmsg::KernelEvent& ev) {
  EventMeaning m;
  if (ev.kind == kmsg::kKindXid && ev.xid) {
    const kmsg::XidAssessment a = kmsg::AssessXid(ev);
    m.name = std::string(a.info.name);
    m.meaning = std::string(a.info.meaning);
    m.advice = std::string(a.info.advice);
    m.action = ActionWords(a.recovery_action.value_or(a.info.action));
    m.actor = std::string(kmsg::ActorName(a.info.actor));
    m.hardware = a.info.hardware_fault;
    if (a.attributed_xid != a.xid) {
      m.meaning += " (Reported as Xid " + std::to_string(a.xid) + ", caused by Xid " +
                   std::to_string(a.attributed_xid) + ".)";
    }
    return m;
  }
  for (const KindText& k : kKinds) {
    if (k.kind != ev.kind) continue;
    m.name = std::string(k.name);
    m.meaning = std::string(k.meaning);
    m.advice = std::string(k.advice);
    m.action = std::string(k.action);
    m.actor = std::string(k.actor);
    m.hardware = k.hardware;
    return m;
  }
  m.name = EventKindTitle(ev.kind);
  m.meaning = "An NVIDIA driver message gpuwarden does not explain.";
  m.advice = "Read the message; contact support if it comes with failures.";
  m.action = "read the message";
  m.actor = "admin";
  return m;
}

}  // namespace gw::render
