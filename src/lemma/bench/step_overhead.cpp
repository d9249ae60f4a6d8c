#include "lemma/bench/step_overhead.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace lemma::bench {

StepOverhead step_overhead(std::span<const trace::Event> events, const char* step_name) {
  std::vector<const trace::Event*> steps, kernels;
  for (const auto& e : events) {
    if (std::strcmp(e.name, step_name) == 0) steps.push_back(&e);
    else if (std::strcmp(e.category, "kernel") == 0) kernels.push_back(&e);
  }
  std::sort(kernels.begin(), kernels.end(), [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  StepOverhead r;
  uint64_t step_ns = 0, kernel_ns = 0;
  for (const trace::Event* s : steps) {
    const uint64_t end = s->start_ns + s->duration_ns;
    uint64_t covered_until = s->start_ns;  // kernels on one thread nest, so skip any inside the last one
    auto it = std::lower_bound(kernels.begin(), kernels.end(), s->start_ns,
                               [](const trace::Event* k, uint64_t t) { return k->start_ns < t; });
    for (; it != kernels.end() && (*it)->start_ns < end; ++it) {
      const trace::Event* k = *it;
      if (k->tid != s->tid || k->start_ns < covered_until) continue;
      const uint64_t k_end = std::min(end, k->start_ns + k->duration_ns);
      kernel_ns += k_end - k->start_ns;
      covered_until = k_end;
    }
    step_ns += s->duration_ns;
  }
  r.steps = static_cast<int64_t>(steps.size());
  if (r.steps == 0) return r;
  r.step_ms = static_cast<double>(step_ns) / 1e6 / static_cast<double>(r.steps);
  r.kernel_ms = static_cast<double>(kernel_ns) / 1e6 / static_cast<double>(r.steps);
  r.overhead_ms = r.step_ms - r.kernel_ms;
  return r;
}

}  // namespace lemma::bench
