#include "diagnose/xid.h"

namespace gw::diagnose {
namespace {

using X = XidClass;

// Application Xids are the Kubernetes device plugin's list (13, 31, 43, 45, 68,
// 109): they leave the GPU healthy. Fatal ones are DCGM's "always FAIL" Xids
// plus those NVIDIA's catalog resolves with a GPU reset or reboot.
constexpr XidInfo kXids[] = {
    {8, X::kOther, "stopped processing (channel idle timeout)"},
    {13, X::kApplication, "reported a graphics engine exception from an application"},
    {31, X::kApplication, "reported a GPU memory page fault from an application"},
    {32, X::kOther, "reported a corrupted push buffer stream"},
    {38, X::kOther, "reported a driver firmware watchdog timeout"},
    {39, X::kHardwareWarning, "reported a PCIe error"},
    {42, X::kHardwareWarning, "reported a PCIe error"},
    {43, X::kApplication, "reset a channel after an application fault"},
    {45, X::kApplication, "cleaned up channels after an earlier error"},
    {46, X::kHardwareFatal, "stopped processing"},
    {48, X::kHardwareFatal, "had a double-bit ECC error"},
    {54, X::kHardwareWarning, "lacks auxiliary power"},
    {56, X::kHardwareWarning, "reported a display engine error"},
    {57, X::kHardwareWarning, "failed to program its memory interface"},
    {58, X::kHardwareWarning, "reported a power or clock error"},
    {60, X::kHardwareWarning, "reported a thermal or micro-controller error"},
    {61, X::kHardwareWarning, "hit a micro-controller breakpoint"},
    {62, X::kHardwareFatal, "halted its power micro-controller"},
    {63, X::kOther, "recorded a page retirement or row remap"},
    {64, X::kHardwareFatal, "failed to record a page retirement or row remap"},
    {67, X::kHardwareWarning, "reported an NVLink error"},
    {68, X::kApplication, "reported a video decoder exception from an application"},
    {69, X::kOther, "reported a graphics engine class error"},
    {73, X::kHardwareWarning, "reported an NVLink error"},
    {74, X::kHardwareFatal, "had an NVLink error"},
    {78, X::kHardwareWarning, "reported a power error"},
    {79, X::kHardwareFatal, "fell off the bus"},
    {92, X::kHardwareWarning, "reported a high single-bit ECC error rate"},
    {94, X::kHardwareWarning, "had a contained ECC error"},
    {95, X::kHardwareFatal, "had an uncontained ECC error"},
    {109, X::kApplication, "reported a context-switch timeout"},
    {119, X::kHardwareFatal, "timed out talking to its GSP firmware"},
    {120, X::kHardwareFatal, "reported a GSP firmware error"},
    {121, X::kHardwareWarning, "reported a chip-to-chip link error"},
    {136, X::kHardwareFatal, "failed link training"},
    {137, X::kHardwareWarning, "reported an NVLink privilege error"},
    {140, X::kHardwareFatal, "had an unrecovered ECC error"},
    {143, X::kHardwareFatal, "failed to initialise"},
    {144, X::kHardwareWarning, "reported an NVLink error"},
    {145, X::kHardwareWarning, "reported an NVLink error"},
    {146, X::kHardwareWarning, "reported an NVLink error"},
    {147, X::kHardwareWarning, "reported an NVLink error"},
    {148, X::kHardwareWarning, "reported an NVLink error"},
    {149, X::kHardwareWarning, "reported an NVLink error"},
    {150, X::kHardwareWarning, "reported an NVLink error"},
    {154, X::kHardwareWarning, "changed its recovery action"},
    {158, X::kHardwareFatal, "hit a fatal timeout"},
};

}  // namespace

XidInfo ClassifyXid(unsigned xid) {
  for (const XidInfo& info : kXids) {
    if (info.xid == xid) return info;
  }
  return XidInfo{xid, XidClass::kOther, "logged an Xid gpuwarden does not classify"};
}

}  // namespace gw::diagnose
