#include "queue/process_stat.h"

#include <string>

#include "os/file_io.h"

namespace gw::queue {

Result<proc::StatFields> ReadProcessStat(const proc::ProcReader& procs, pid_t pid) {
  const std::string path = procs.proc_root() + "/" + std::to_string(pid) + "/stat";
  Result<std::string> text = os::ReadFileBounded(path, 65536);
  if (!text.ok()) return text.error();
  Result<proc::StatFields> stat = proc::ParseStat(*text);
  if (!stat.ok()) return MakeError("malformed", path + ": " + stat.error().message);
  return stat;
}

}  // namespace gw::queue
