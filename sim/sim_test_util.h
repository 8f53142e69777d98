// Helpers shared by the simulator's tests: running a program with a chosen
// environment, reading the C client's key=value output, and finding the shipped
// scenarios.
#ifndef GPUWARDEN_SIM_SIM_TEST_UTIL_H_
#define GPUWARDEN_SIM_SIM_TEST_UTIL_H_

#include <map>
#include <string>
#include <vector>

namespace gw::sim::test {

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal or the timeout.
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with the current environment plus `set` (a value
// replaces) minus `unset`; kills it after `timeout_s`.
RunResult RunProgram(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& set,
                     const std::vector<std::string>& unset = {}, double timeout_s = 60);

// "a=b\nc=d\n" → {a: b, c: d}. A repeated key keeps its first value and is
// reported in `duplicates` when given.
std::map<std::string, std::string> ParseKeyValues(const std::string& text,
                                                  std::vector<std::string>* duplicates = nullptr);

// The simulated libnvidia-ml.so.1 the build made (full, and the legacy one that
// exports only the entry points of an old driver), and the C test client.
std::string SimLibrary();
std::string LegacySimLibrary();
std::string SimClient();

// Absolute paths of every scenarios/*.json, sorted.
std::vector<std::string> ShippedScenarios();

// Writes `text` to a fresh file under the test's temporary directory; returns its path.
std::string WriteTempFile(const std::string& name, const std::string& text);

// Unix time now, in seconds.
double UnixNow();

}  // namespace gw::sim::test

#endif  // GPUWARDEN_SIM_SIM_TEST_UTIL_H_
