#include "lemma/sched/request_status.h"

#include <array>

namespace lemma {
namespace {

struct StatusNames {
  std::string_view name;
  std::string_view finish_reason;
};

constexpr std::array<StatusNames, 9> kNames{{
    {"waiting", ""},
    {"running", ""},
    {"preempted", ""},
    {"swapped", ""},
    {"finished_stopped", "stop"},
    {"finished_length", "length"},
    {"finished_cancelled", "abort"},
    {"finished_timeout", "abort"},
    {"finished_failed", "error"},
}};

}  // namespace

std::string_view to_string(RequestStatus s) {
  const auto i = static_cast<size_t>(s);
  return i < kNames.size() ? kNames[i].name : "unknown";
}

std::string_view finish_reason(RequestStatus s) {
  const auto i = static_cast<size_t>(s);
  return i < kNames.size() ? kNames[i].finish_reason : "";
}

}  // namespace lemma
