// ServeProcess: a real `lemma serve` child process for tests that need one (signals, file-descriptor
// limits), with its stderr in a file, the bound port read from its "listening on" line, and a small
// loopback HTTP helper. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace lemma::testing {

class ServeProcess {
 public:
  // `shell_prefix` runs first in the child's shell (e.g. "ulimit -n 64;"); `args` follow `serve`.
  ServeProcess(const std::string& args, const std::string& shell_prefix = "");
  ~ServeProcess();
  bool started() const { return port_ != 0; }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  // Waits up to `timeout_ms` for the child to exit; returns its exit code (128 + signal when
  // killed by one), or -1 if it is still running.
  int wait_exit(int timeout_ms);
  std::string log() const;  // its stderr so far
  // CPU seconds (user + system) the child used so far, from /proc.
  double cpu_seconds() const;

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  int exit_code_ = -1;
  std::string log_path_;
};

// One HTTP/1.1 request on a new loopback connection; returns the raw response ("" on failure).
std::string raw_http(uint16_t port, const std::string& request, int timeout_ms = 5000);
// A connected loopback socket (or -1).
int connect_loopback(uint16_t port);

// A JSON POST on a new connection (Connection: close) and its answer: the status (0 when none came)
// and the parsed body (discarded when it is not JSON).
struct JsonReply {
  int status = 0;
  nlohmann::json body;
};
JsonReply post_json(uint16_t port, const std::string& path, const nlohmann::json& body, int timeout_ms = 30000);

}  // namespace lemma::testing
