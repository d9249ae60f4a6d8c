#include "lemma/server/call_encoder.h"

namespace lemma::server {

std::string sse_named_event(const std::string& name, const ojson& payload) {
  return "event: " + name + "\n" + sse_event(payload);
}

}  // namespace lemma::server
