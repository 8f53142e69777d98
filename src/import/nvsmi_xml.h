// Offline input: an `nvidia-smi -q -x` dump (XML, DTD nvsmi_device_v10..v13 and the
// older DOCTYPE-less R418 layout) read into a Snapshot, so that a capture taken on
// another machine, or before a crash, can be diagnosed like a live probe.
//
// Contract of the Snapshot returned:
//   - source = kXmlDump, source_detail = the path (or name_for_errors);
//     processes_scanned = false, host and processes (/proc view) stay empty.
//   - time_unix_ms: from <timestamp>, read as local time of this machine (the dump
//     has no zone, see ParseTimestampLocal); 0 when absent or not understood (an
//     unreadable timestamp is also reported in `errors`).
//   - system: driver_version, cuda_driver_version ("12.2" -> 12020), gpu_count
//     (<attached_gpus>). nvml_version is not in the dump and stays unknown.
//   - gpus: one per <gpu> element, index = position in the file (nvidia-smi lists
//     GPUs in NVML index order). Every value the dump prints as "N/A", "Not
//     Supported" or similar is std::nullopt; so is anything that does not parse.
//     A value that is an NVML error string ("Unknown Error", "GPU is lost", ...) is
//     std::nullopt too and is reported once per GPU and error text as a ProbeError
//     (source "xml", gpu_index set, code from MatchNvmlError, nvml_return set);
//     text that is neither a value nor a known word is reported with code
//     "unexpected_value". A GPU with any "GPU is lost" value gets `unreachable`.
//     An <attached_gpus> count that differs from the number of <gpu> sections is
//     reported with code "gpu_count_mismatch" (no gpu_index): normal for a capture
//     made with `-i`, otherwise GPUs nvidia-smi could not read.
//   - ECC counts: volatile/aggregate corrected = sram_correctable + dram_correctable,
//     uncorrected = sram_uncorrectable (v13: sram_uncorrectable_parity +
//     sram_uncorrectable_secded) + dram_uncorrectable; R418-era dumps:
//     single_bit/total and double_bit/total. A location printed as N/A adds
//     nothing; the sum is unknown only when no location has a number.
//   - clock_event_reasons: the mask of the children (clocks_event_reasons or the
//     older clocks_throttle_reasons) that read "Active"; unknown when none reads
//     "Active"/"Not Active". The dump has no "supported" mask: that stays unknown.
//   - Temperatures: slowdown = gpu_temp_slow_threshold, shutdown =
//     gpu_temp_max_threshold. v13 prints only T.Limit-relative thresholds
//     (*_tlimit_threshold); those are not absolute and are not converted.
//   - Power: draw = power_draw, else average_power_draw, else instant_power_draw
//     (gpu_power_readings in v12+, power_readings before); limit = the enforced one
//     (current_power_limit, or enforced_power_limit, else power_limit).
//   - processes: processes_known = true when <processes> is present (even empty).
//     Entries are kept in file order; entries with the same (pid, GPU instance,
//     compute instance) are merged (types combined, the larger memory kept).
//     process_name is kept byte for byte (control characters included): callers
//     sanitise before printing. sm/mem utilisation are not in the dump.
//
// Input: UTF-8 (a BOM is skipped) or UTF-16 with a BOM (what PowerShell's `>`
// writes), converted to UTF-8 first, so line:column refer to the UTF-8 text.
//
// Bad input is one Error whose message names the file and the problem, with code:
//   "not_found"      the file does not exist;
//   "unreadable"     it cannot be opened or read (permission, a directory, I/O);
//   "too_large"      more than kMaxXmlBytes (refused before parsing);
//   "malformed"      empty, binary, compressed, not well-formed XML (the message
//                    gives line:column and says when the file looks truncated),
//                    or more than 4096 <gpu> sections;
//   "not_nvidia_smi" well-formed XML whose root is not <nvidia_smi_log>, or a
//                    text file without XML (e.g. `nvidia-smi -q` output or an
//                    nvidia-smi failure message).
//   "not_one_dump"   more than one XML document one after another (dumps
//                    appended with `>>`): judging one would judge an old moment.
// Nothing throws out of these functions.
#ifndef GPUWARDEN_IMPORT_NVSMI_XML_H_
#define GPUWARDEN_IMPORT_NVSMI_XML_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "core/snapshot.h"

namespace gw::import {

// Larger dumps are refused: a real one is ~20-70 KiB per GPU.
inline constexpr uint64_t kMaxXmlBytes = uint64_t{256} << 20;

// Reads and parses the dump at `path` (a regular file, or a pipe such as
// `<(ssh host nvidia-smi -q -x)`; at most kMaxXmlBytes are read).
Result<Snapshot> ReadNvidiaSmiXmlFile(const std::string& path);

// Parses a dump held in memory. `name_for_errors` names it in error messages and
// becomes source_detail.
Result<Snapshot> ParseNvidiaSmiXml(std::string_view xml, const std::string& name_for_errors);

namespace internal {
// The functions above with another size cap, so tests can exercise the cap
// without 256 MiB inputs.
Result<Snapshot> ReadNvidiaSmiXmlFile(const std::string& path, uint64_t max_bytes);
Result<Snapshot> ParseNvidiaSmiXml(std::string_view xml, const std::string& name_for_errors,
                                   uint64_t max_bytes);
}  // namespace internal

}  // namespace gw::import

#endif  // GPUWARDEN_IMPORT_NVSMI_XML_H_
