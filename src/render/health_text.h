// `gpuwarden health` as text: quiet when healthy, one line per problem — made
// for a scheduler's node health check log (Slurm HealthCheckProgram, ...).
#ifndef GPUWARDEN_RENDER_HEALTH_TEXT_H_
#define GPUWARDEN_RENDER_HEALTH_TEXT_H_

#include <string>

#include "core/snapshot.h"
#include "diagnose/verdict.h"

namespace gw::render {

// The health is diagnose::AssessHealth of the diagnosis's findings (which of
// them are health findings is decided there). Nothing at all when the node is
// healthy, unless `verbose` (then
// `healthy: N GPUs`). Otherwise one '\n'-terminated line per GPU that is not
// healthy, in index order:
//   GPU 3 00000000:BB:00.0 FAULT: fell off the bus (Xid 79) — STEP; STEP [CODES]
// (the worst finding's message without its "GPU n" subject, its first two
// next steps, the codes of the GPU's health findings), then one `node LEVEL:`
// line per server-level health finding, or one naming the summary when the
// node is unknown without any. LEVEL is FAULT, DEGRADED or UNKNOWN. A GPU
// that could not be read is UNKNOWN (never healthy); without a finding that
// says more, its line says why: `GPU 3 N/A UNKNOWN: not read: REASON`. Verbose
// adds `healthy: M of N GPUs` when some are not. Lines are not cut (logs have
// no width); text is sanitised.
std::string RenderHealthText(const diagnose::Diagnosis& diagnosis, const Snapshot& latest,
                             bool verbose, bool color);

// The worst health problem in one line, for a Slurm drain reason (no next
// steps): "GPU 3 FAULT: fell off the bus (Xid 79) [XID_79]", then
// " (+2 more GPUs)" when others are not healthy either; a server-level
// finding as "node FAULT: ...". "" when healthy. Sanitised, at most
// `max_columns` wide (cut with "…").
std::string RenderHealthReason(const diagnose::Diagnosis& diagnosis, const Snapshot& latest,
                               int max_columns);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_HEALTH_TEXT_H_
