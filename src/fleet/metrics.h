// The /metrics page: a FleetView written in the Prometheus text format.
//
// Two kinds of metric (docs/metrics.md lists each one):
//   - dcgm-exporter's, under its names and labels (gpu, UUID, pci_bus_id,
//     device, modelName, Hostname, DCGM_FI_DRIVER_VERSION), from
//     dcgm_fields.h and the kernel log's Xids;
//   - gpuwarden's own (gpuwarden_*): who holds what (per process and per
//     user), each GPU's state and verdict, the server's verdict, findings by
//     code, memory held by idle holders, and the queue.
//
// Cardinality is bounded: a process gets series of its own only when it holds
// at least `process_min_bytes` on a GPU, and at most `max_process_series` of
// them; the rest of each user's memory on a GPU is one series with
// pid="other". The per-GPU and per-state families grow with the GPUs, the
// findings family with the catalog, the per-user families with the users who
// hold GPU memory.
//
// Pure: the same view gives the same text.
#ifndef GPUWARDEN_FLEET_METRICS_H_
#define GPUWARDEN_FLEET_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "fleet/fleet_view.h"

namespace gw::fleet {

struct MetricsOptions {
  uint64_t process_min_bytes = uint64_t{64} << 20;
  size_t max_process_series = 1000;
  std::string version;  // gpuwarden_build_info{version}
};

std::string RenderMetrics(const FleetView& view, const MetricsOptions& options);

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_METRICS_H_
