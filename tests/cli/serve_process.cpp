#include "serve_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "run_command.h"

namespace lemma::testing {

ServeProcess::ServeProcess(const std::string& args, const std::string& shell_prefix) {
  char path[] = "/tmp/lemma_serve_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd >= 0) ::close(fd);
  log_path_ = path;
  const std::string command = shell_prefix + " exec " + shell_quote(LEMMA_BINARY) + " serve " + args + " 2> " +
                              shell_quote(log_path_) + " > /dev/null";
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const std::regex listening("listening on http://[^:]+:([0-9]+)");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until && wait_exit(0) < 0) {
    std::smatch m;
    const std::string text = log();
    if (std::regex_search(text, m, listening)) {
      port_ = static_cast<uint16_t>(std::stoi(m[1]));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ServeProcess::~ServeProcess() {
  if (wait_exit(0) < 0) {
    ::kill(pid_, SIGKILL);
    wait_exit(5000);
  }
  std::remove(log_path_.c_str());
}

void ServeProcess::signal(int sig) const { ::kill(pid_, sig); }

int ServeProcess::wait_exit(int timeout_ms) {
  if (exit_code_ >= 0 || pid_ <= 0) return exit_code_;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() >= until) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string ServeProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double ServeProcess::cpu_seconds() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string f;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stol(f);
    if (i == 15) stime = std::stol(f);
  }
  return double(utime + stime) / double(::sysconf(_SC_CLK_TCK));
}

int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string raw_http(uint16_t port, const std::string& request, int timeout_ms) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, size_t(n));
    // A complete Content-Length response is enough.
    const size_t head = got.find("\r\n\r\n");
    const size_t cl = got.find("Content-Length: ");
    if (head != std::string::npos && cl != std::string::npos && cl < head &&
        got.size() >= head + 4 + std::stoul(got.substr(cl + 16))) {
      break;
    }
  }
  ::close(fd);
  return got;
}

JsonReply post_json(uint16_t port, const std::string& path, const nlohmann::json& body, int timeout_ms) {
  const std::string text = body.dump();
  const std::string raw = raw_http(port, "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                              "Connection: close\r\nContent-Length: " + std::to_string(text.size()) +
                                              "\r\n\r\n" + text, timeout_ms);
  JsonReply r;
  if (raw.size() >= 12) r.status = std::stoi(raw.substr(9, 3));
  const size_t at = raw.find("\r\n\r\n");
  if (at != std::string::npos) r.body = nlohmann::json::parse(raw.substr(at + 4), nullptr, false);
  return r;
}

}  // namespace lemma::testing
