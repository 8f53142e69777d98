// The socket server with a real client on a real Unix socket: a reply of
// several MiB in pieces (a RawReply, as a 7-day "history" gives) reaches the
// client whole, through many partial sends, and the next request on the same
// connection is answered after it.
#include "queue/socket_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/clock.h"
#include "os/unique_fd.h"
#include "queue/protocol.h"

namespace gw::queue {
namespace {

using nlohmann::json;

TEST(SocketServer, SendsALargeRawReplyWholeThenTheNextOne) {
  const std::string dir = ::testing::TempDir() + "/gw-sock-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/s.sock";
  // ~6 MiB of JSON text in pieces of ~100 KB: 200,000 small objects.
  std::vector<std::string> pieces = {R"({"ok":true,"points":[)"};
  const std::string item = R"({"i":12345,"s":"abcdefghij"})";
  constexpr int kItems = 200'000;
  size_t size = 0;
  for (int i = 0; i < kItems; ++i) {
    if (pieces.back().size() > 100'000) {
      size += pieces.back().size();
      pieces.emplace_back();
    }
    if (i > 0) pieces.back() += ',';
    pieces.back() += item;
  }
  pieces.back() += "]}";
  ASSERT_GT(size, SocketServer::kLargeReplyBytes);
  RealClock clock;
  auto server = SocketServer::Listen(path, /*system_mode=*/false, clock,
                                     [&](const Caller&, std::string_view line) -> json {
                                       if (line == "big") return RawReply(pieces);
                                       json r = OkReply();
                                       r["echo"] = std::string(line);
                                       return r;
                                     });
  ASSERT_TRUE(server.ok()) << server.error().message;

  os::UniqueFd client(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  ASSERT_TRUE(client.valid());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0)
      << std::strerror(errno);
  const std::string requests = "big\nsmall\n";
  ASSERT_EQ(write(client.get(), requests.data(), requests.size()),
            static_cast<ssize_t>(requests.size()));

  // The daemon's loop and a client that reads as it comes.
  std::string got;
  const int64_t deadline = clock.MonotonicMs() + 20'000;
  while (std::count(got.begin(), got.end(), '\n') < 2 && clock.MonotonicMs() < deadline) {
    std::vector<pollfd> fds;
    const size_t n = (*server)->AppendPollFds(fds);
    poll(fds.data(), fds.size(), 5);
    (*server)->OnPoll(fds.data(), n);
    char buf[65536];
    for (;;) {
      const ssize_t r = read(client.get(), buf, sizeof buf);
      if (r <= 0) break;
      got.append(buf, static_cast<size_t>(r));
    }
  }
  const size_t nl = got.find('\n');
  ASSERT_NE(nl, std::string::npos) << "no reply within 20 s";
  const json big = json::parse(got.substr(0, nl), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(big.is_discarded());
  EXPECT_EQ(big["ok"], true);
  ASSERT_EQ(big["points"].size(), static_cast<size_t>(kItems));
  EXPECT_EQ(big["points"][kItems - 1]["s"], "abcdefghij");
  const json small = json::parse(got.substr(nl + 1), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(small.is_discarded()) << got.substr(nl + 1);
  EXPECT_EQ(small["echo"], "small");
  server->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gw::queue
