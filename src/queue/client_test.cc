#include "queue/client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "queue/protocol.h"

namespace gw::queue {
namespace {

using nlohmann::json;

// A connected pair: the client's end and the test's "daemon" end.
struct Pair {
  Pair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    client = os::UniqueFd(fds[0]);
    daemon = os::UniqueFd(fds[1]);
  }
  os::UniqueFd client;
  os::UniqueFd daemon;
};

TEST(Client, SendsOneVersionedLineAndReturnsTheOkReply) {
  Pair p;
  std::thread daemon([fd = p.daemon.get()] {
    std::string buffer;
    for (int i = 0; i < 2; ++i) {
      auto line = ReadLine(fd, buffer);
      ASSERT_TRUE(line.ok());
      const json req = json::parse(*line);
      EXPECT_EQ(req["v"], kProtocolVersion);
      // Two replies in one write: the client keeps the second for its next call.
      if (i == 0) {
        EXPECT_EQ(req["op"], "hello");
        EXPECT_TRUE(WriteLine(fd, R"({"v":1,"ok":true,"n":1})"
                                  "\n"
                                  R"({"v":1,"ok":true,"n":2})")
                        .ok());
      }
    }
  });
  Client client(std::move(p.client), 5000);
  auto first = client.Call({{"op", "hello"}});
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ((*first)["n"], 1);
  auto second = client.Call({{"op", "queue"}});
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ((*second)["n"], 2);
  daemon.join();
}

TEST(Client, AnErrorReplyKeepsTheDaemonsCodeAndMessage) {
  Pair p;
  ASSERT_TRUE(WriteLine(p.daemon.get(), R"({"v":1,"ok":false,"error":{"code":"storage",)"
                                        R"("message":"queue storage not writable: disk full"}})")
                  .ok());
  Client client(std::move(p.client), 5000);
  auto r = client.Call({{"op", "submit"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "storage");
  EXPECT_EQ(r.error().message, "queue storage not writable: disk full");
  EXPECT_FALSE(IsUnreachable(r.error()));
}

TEST(Client, ARefusedConnectionIsReadEvenWhenTheRequestCannotGoOut) {
  Pair p;
  ASSERT_TRUE(WriteLine(p.daemon.get(), R"({"v":1,"ok":false,"error":{"code":"busy",)"
                                        R"("message":"too many connections"}})")
                  .ok());
  p.daemon.Reset();  // Closed before reading anything.
  Client client(std::move(p.client), 5000);
  auto r = client.Call({{"op", "queue"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "busy");
  EXPECT_TRUE(IsUnreachable(r.error()));
}

TEST(Client, NotAReplyIsAProtocolError) {
  for (const char* text : {"not json", "[1,2]", R"({"v":1})", R"({"v":1,"ok":"yes"})"}) {
    Pair p;
    ASSERT_TRUE(WriteLine(p.daemon.get(), text).ok());
    Client client(std::move(p.client), 5000);
    auto r = client.Call({{"op", "queue"}});
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, kClientProtocol) << text;
    EXPECT_TRUE(IsUnreachable(r.error()));
  }
}

TEST(Client, ADaemonThatClosesIsADisconnection) {
  Pair p;
  std::thread daemon([fd = std::move(p.daemon)]() mutable {
    std::string buffer;
    EXPECT_TRUE(ReadLine(fd.get(), buffer).ok());
    fd.Reset();
  });
  Client client(std::move(p.client), 5000);
  auto r = client.Call({{"op", "queue"}});
  daemon.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kClientDisconnected);
  EXPECT_NE(r.error().message.find("lost the connection"), std::string::npos);
}

TEST(Client, ASilentDaemonTimesOut) {
  Pair p;
  Client client(std::move(p.client), 200);
  const auto start = std::chrono::steady_clock::now();
  auto r = client.Call({{"op", "queue"}});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kClientNoReply);
  EXPECT_NE(r.error().message.find("200 ms"), std::string::npos);
  EXPECT_GE(s, 0.19);
  EXPECT_LT(s, 5.0);
}

// Over a real Unix socket: connect, call, and nothing listening.
TEST(Client, ConnectsToAUnixSocketAndSaysWhenNothingListens) {
  char dir_template[] = "/tmp/gw-client-test.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/s.sock";

  auto none = Client::Connect(path, 1000);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, kClientNoDaemon);
  EXPECT_NE(none.error().message.find(path), std::string::npos);
  EXPECT_TRUE(IsUnreachable(none.error()));

  os::UniqueFd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener.get(), 4), 0);
  std::thread daemon([fd = listener.get()] {
    os::UniqueFd conn(accept(fd, nullptr, nullptr));
    std::string buffer;
    auto line = ReadLine(conn.get(), buffer);
    ASSERT_TRUE(line.ok());
    EXPECT_TRUE(WriteLine(conn.get(), R"({"v":1,"ok":true,"jobs":[]})").ok());
  });
  auto client = Client::Connect(path, 5000);
  ASSERT_TRUE(client.ok()) << client.error().message;
  auto r = client->Call({{"op", "queue"}});
  daemon.join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE((*r)["jobs"].is_array());
  unlink(path.c_str());
  rmdir(dir_template);
}

}  // namespace
}  // namespace gw::queue
