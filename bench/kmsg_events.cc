// kmsg_events: the benchmark driver for the kernel-log reader, standing in for
// `gpuwarden events --kernel-log FILE --json` until the CLI wires it: reads
// FILE with ReadKernelEvents and prints the events as a JSON array.
//
//   kmsg_events FILE
//
// Exit 0 and the JSON on stdout; the event count on stderr. Exit 1 when the
// file cannot be read.
#include <cstdio>

#include "kmsg/event_json.h"
#include "kmsg/sources.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kmsg_events FILE\n");
    return 2;
  }
  gw::kmsg::ReadOptions options;
  options.kernel_log_file = argv[1];
  auto result = gw::kmsg::ReadKernelEvents(options);
  if (!result.ok()) {
    std::fprintf(stderr, "kmsg_events: %s\n", result.error().message.c_str());
    return 1;
  }
  // One event at a time: a large log gives many events, and one giant JSON
  // value would cost more memory than the whole parse.
  std::fputs("[", stdout);
  bool first = true;
  for (const auto& ev : result->events) {
    const std::string one =
        gw::kmsg::EventToJson(ev).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::fputs(first ? "\n" : ",\n", stdout);
    std::fwrite(one.data(), 1, one.size(), stdout);
    first = false;
  }
  std::fputs("\n]\n", stdout);
  std::fprintf(stderr, "kmsg_events: %zu events\n", result->events.size());
  return 0;
}
