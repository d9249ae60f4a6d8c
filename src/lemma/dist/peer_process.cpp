#include "lemma/dist/peer_process.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

namespace lemma::dist {

namespace {
std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// A killed process stays a zombie until mpirun's daemon reaps it: kill(pid, 0) still succeeds then.
bool is_zombie(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  // "<pid> (<comm>) <state> ...": comm may hold spaces, so the state follows the last ')'.
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}
}  // namespace

PeerProcess this_process() { return {host_name(), static_cast<long>(getpid())}; }

PeerState peer_state(const PeerProcess& peer) {
  if (peer.pid <= 0 || peer.host != host_name()) return PeerState::kUnknown;
  if (kill(static_cast<pid_t>(peer.pid), 0) != 0 && errno == ESRCH) return PeerState::kExited;
  return is_zombie(peer.pid) ? PeerState::kExited : PeerState::kAlive;
}

}  // namespace lemma::dist
