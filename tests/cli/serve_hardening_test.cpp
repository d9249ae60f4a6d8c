// `lemma serve` as a process under hostile load: out of file descriptors (a low `ulimit -n`), the
// connection cap held by idle and half-sent connections, and a second SIGTERM while draining.
// Prints the figures the server issue asks for (idle CPU, /health latency while the cap is held).
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "run_command.h"
#include "serve_process.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }

constexpr const char* kHealth = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";

int status_of(const std::string& raw) { return raw.size() >= 12 && raw.rfind("HTTP/1.", 0) == 0 ? std::stoi(raw.substr(9, 3)) : 0; }

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// CPU seconds the server burns in `ms` of wall time.
double cpu_during(const ServeProcess& server, int ms) {
  const double before = server.cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return server.cpu_seconds() - before;
}

struct Sockets {
  std::vector<int> fds;
  ~Sockets() { close_all(); }
  void close_all() {
    for (int fd : fds) ::close(fd);
    fds.clear();
  }
};

TEST(ServeHardening, OutOfFileDescriptorsNeitherSpinsNorHangsAndRecovers) {
  LEMMA_REQUIRE_SHARED(stories());
  ServeProcess server("--model " + shell_quote(stories()) + " --port 0 --threads 1 --max-connections 4000",
                      "ulimit -n 64;");
  ASSERT_TRUE(server.started()) << server.log();
  Sockets held;
  for (int i = 0; i < 120; ++i) held.fds.push_back(connect_loopback(server.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double cpu = cpu_during(server, 1000);
  std::printf("[figure] out of fds, 120 connections held: server CPU %.1f%% of a core\n", cpu * 100.0);
  EXPECT_LT(cpu, 0.25) << "the accept loop spins";
  const auto t0 = std::chrono::steady_clock::now();
  const std::string answer = raw_http(server.port(), kHealth, 5000);
  std::printf("[figure] out of fds: /health answered %d in %.1f ms\n", status_of(answer), ms_since(t0));
  EXPECT_EQ(status_of(answer), 503) << answer;
  EXPECT_NE(answer.find("out of file descriptors"), std::string::npos) << answer;
  held.close_all();
  std::string health;
  for (int i = 0; i < 100 && status_of(health) != 200; ++i) {
    health = raw_http(server.port(), kHealth, 1000);
    if (status_of(health) != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status_of(health), 200) << health;
  const std::string metrics = raw_http(server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(metrics.find("lemma_http_connections_refused_total{reason=\"fd_limit\"} 0\n"), std::string::npos);
  EXPECT_NE(metrics.find("lemma_http_connections_refused_total{reason=\"fd_limit\"}"), std::string::npos);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(20000), 0) << server.log();
}

TEST(ServeHardening, ConnectionCapHeldKeepsTheServerIdleAndAnswering) {
  LEMMA_REQUIRE_SHARED(stories());
  // `ulimit -n 64`: the default cap is half of it, 32 connections.
  ServeProcess server("--model " + shell_quote(stories()) + " --port 0 --threads 1", "ulimit -n 64;");
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_NE(server.log().find("32 connections at most"), std::string::npos) << server.log();
  {  // Half-sent headers hold the cap: newcomers get a 503 at once.
    Sockets held;
    for (int i = 0; i < 40; ++i) {
      held.fds.push_back(connect_loopback(server.port()));
      ::send(held.fds.back(), "GET /health HTTP/1.1\r\n", 22, MSG_NOSIGNAL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double cpu = cpu_during(server, 1000);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string answer = raw_http(server.port(), kHealth);
    std::printf("[figure] cap held by half-sent headers: CPU %.1f%% of a core; /health %d in %.2f ms\n",
                cpu * 100.0, status_of(answer), ms_since(t0));
    EXPECT_LT(cpu, 0.25);
    EXPECT_EQ(status_of(answer), 503) << answer;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {  // Idle keep-alive connections hold it: the longest-idle one makes room.
    Sockets held;
    char buf[4096];
    for (int i = 0; i < 32; ++i) {
      held.fds.push_back(connect_loopback(server.port()));
      ::send(held.fds.back(), kHealth, std::strlen(kHealth), MSG_NOSIGNAL);
      ::recv(held.fds.back(), buf, sizeof buf, 0);
    }
    const double cpu = cpu_during(server, 1000);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string answer = raw_http(server.port(), kHealth);
    std::printf("[figure] cap held by idle keep-alive connections: CPU %.1f%% of a core; /health %d in %.2f ms\n",
                cpu * 100.0, status_of(answer), ms_since(t0));
    EXPECT_LT(cpu, 0.25);
    EXPECT_EQ(status_of(answer), 200) << answer;
  }
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(20000), 0) << server.log();
}

TEST(ServeHardening, SecondSignalWhileDrainingExitsAtOnce) {
  LEMMA_REQUIRE_SHARED(stories());
  // Four sequences at a time, so the 16 choices below take several seconds even on a fast machine.
  ServeProcess server("--model " + shell_quote(stories()) + " --port 0 --threads 1 --max-num-seqs 4 --shutdown-grace 60");
  ASSERT_TRUE(server.started()) << server.log();
  // A stream whose reader reads nothing keeps a request in flight (its writes stall).
  int small = 4096;
  const int reader = connect_loopback(server.port());
  ASSERT_GE(reader, 0);
  ::setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":400,"n":16,"logprobs":20,"ignore_eos":true,"stream":true})";
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  ::send(reader, request.data(), request.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(500), -1) << "no request kept the drain busy:\n" << server.log();
  const std::string health = raw_http(server.port(), kHealth, 2000);
  EXPECT_EQ(status_of(health), 503) << health;
  EXPECT_NE(health.find("draining"), std::string::npos) << health;
  const auto t0 = std::chrono::steady_clock::now();
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(5000), 128 + SIGTERM) << server.log();
  std::printf("[figure] second SIGTERM: exited in %.0f ms\n", ms_since(t0));
  EXPECT_NE(server.log().find("received again while draining"), std::string::npos) << server.log();
  ::close(reader);
}

}  // namespace
}  // namespace lemma::testing
