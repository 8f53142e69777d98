// What an Xid number means for the diagnosis: whose fault it usually is. From
// NVIDIA's Xid catalog, DCGM's Xid health mapping and the Kubernetes device
// plugin's list of application Xids (see docs/diagnosis.md).
#ifndef GPUWARDEN_DIAGNOSE_XID_H_
#define GPUWARDEN_DIAGNOSE_XID_H_

#include <string_view>

namespace gw::diagnose {

enum class XidClass {
  kApplication,      // The program on the GPU faulted; the GPU is fine.
  kHardwareFatal,    // Hardware or firmware failure: the GPU needs a reset, reboot or RMA.
  kHardwareWarning,  // Points at hardware, not fatal by itself.
  kOther,            // Informational, driver-side, or not in the table.
};

struct XidInfo {
  unsigned xid = 0;
  XidClass cls = XidClass::kOther;
  // Completes "GPU 3 ...": "fell off the bus", "had a double-bit ECC error".
  std::string_view what;
};

// The entry for `xid`; unknown numbers get kOther and a generic `what`.
XidInfo ClassifyXid(unsigned xid);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_XID_H_
