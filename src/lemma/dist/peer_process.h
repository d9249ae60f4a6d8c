// Which process each world rank is (host and pid), gathered once when the world is made. When a
// collective hears nothing from several ranks (one died; the others are stuck waiting on it), this
// tells them apart on this host: the one whose process is gone is the lost one.
#pragma once

#include <string>

namespace lemma::dist {

struct PeerProcess {
  std::string host = {};
  long pid = 0;
};

enum class PeerState { kExited, kAlive, kUnknown };

// kUnknown for a process on another host; kExited when its pid is gone or a zombie.
PeerState peer_state(const PeerProcess& peer);

PeerProcess this_process();

}  // namespace lemma::dist
