// Plain words for one kernel-log event: the Xid catalog for Xid events, a
// small table for the other NVRM notices. Shared by the events renderers.
#ifndef GPUWARDEN_RENDER_EVENTS_EXPLAIN_H_
#define GPUWARDEN_RENDER_EVENTS_EXPLAIN_H_

#include <string>
#include <string_view>

#include "kmsg/kernel_event.h"

namespace gw::render {

struct EventMeaning {
  std::string name;       // "GPU fell off the bus".
  std::string meaning;    // One sentence.
  std::string advice;     // What to do, incl. what to check if it repeats.
  std::string action;     // "reboot the node", "restart the application", ...
  std::string actor;      // "user", "admin", "vendor".
  bool hardware = false;  // Points at the hardware by itself.
};

// For Xid events the catalog entry of the attributed Xid (Xid 45 -> its
// cause; Xid 154 -> the new recovery action); for other kinds fixed text.
EventMeaning ExplainEvent(const kmsg::KernelEvent& ev);

// "GPU fell off the bus" for kind "fallen_off_bus", ...; the kind with spaces
// for kinds it does not know.
std::string EventKindTitle(std::string_view kind);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_EVENTS_EXPLAIN_H_
