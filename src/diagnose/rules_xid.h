// The kernel-log rule's mapping from the Xid catalog (kmsg/xid_catalog.h) to
// findings, exposed for the catalog tests. Pure.
#ifndef GPUWARDEN_DIAGNOSE_RULES_XID_H_
#define GPUWARDEN_DIAGNOSE_RULES_XID_H_

#include <string_view>

#include "diagnose/finding.h"
#include "kmsg/xid_catalog.h"

namespace gw::diagnose {

// The finding category of an Xid's cause (CategorySource::kXidCause):
// application; engine; driver for driver, GSP / firmware and unknown codes;
// memory; bus; power for thermal and power; nvlink; hardware for
// informational (Xid 154 with no Xid before it on its GPU).
// CategoryName(XidCategory(c)) == kmsg::CategoryWord(c).
Category XidCategory(kmsg::CauseClass cause);

// The code of a finding about a current Xid, by its impact: kFault ->
// XID_FATAL (an application's Xid too: 109 needs a GPU reset), kDegraded ->
// XID_WARNING, kNone -> XID_APPLICATION for the application's Xids, else
// XID_OTHER.
std::string_view XidFindingCode(kmsg::CauseClass cause, kmsg::XidImpact impact);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_RULES_XID_H_
