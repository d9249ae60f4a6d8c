#include "lemma/bench/serving/serving_report.h"

#include <fmt/format.h>

#include <vector>

namespace lemma::bench::serving {

namespace {
double per_second(double count, double duration_s) { return duration_s > 0.0 ? count / duration_s : 0.0; }

Summary summarize_ms(std::vector<double> seconds) {
  for (double& v : seconds) v *= 1000.0;
  return summarize(seconds);
}

nlohmann::json summary_json(const Summary& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99},
          {"min", s.min},     {"max", s.max},   {"stddev", s.stddev}};
}

void append_row(std::string& out, const char* name, const Summary& s) {
  out += fmt::format("{:<10} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>8}\n", name, s.mean, s.p50, s.p90, s.p99,
                     s.max, s.count);
}
}  // namespace

ServingReport make_serving_report(std::span<const RequestOutcome> outcomes, double duration_s, const Slo& slo) {
  ServingReport r;
  r.num_requests = static_cast<int64_t>(outcomes.size());
  r.duration_s = duration_s;
  r.slo = slo;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestOutcome& o : outcomes) {
    if (!o.ok) {
      ++r.failed;
      ++r.failures[o.error.empty() ? "unknown" : o.error];
      continue;
    }
    ++r.completed;
    r.input_tokens += o.prompt_tokens;
    r.output_tokens += o.output_tokens;
    if (o.usage_reported) ++r.usage_reported;
    ttft.push_back(o.ttft_s);
    e2e.push_back(o.e2e_s);
    if (o.has_tpot()) tpot.push_back(o.tpot_s());
    itl.insert(itl.end(), o.itl_s.begin(), o.itl_s.end());
    const bool ttft_ok = slo.ttft_ms <= 0.0 || o.ttft_s * 1000.0 <= slo.ttft_ms;
    const bool tpot_ok = slo.tpot_ms <= 0.0 || !o.has_tpot() || o.tpot_s() * 1000.0 <= slo.tpot_ms;
    if (slo.any() && ttft_ok && tpot_ok) ++r.good_requests;
  }
  r.request_throughput = per_second(static_cast<double>(r.completed), duration_s);
  r.output_throughput = per_second(static_cast<double>(r.output_tokens), duration_s);
  r.total_token_throughput = per_second(static_cast<double>(r.input_tokens + r.output_tokens), duration_s);
  r.goodput = per_second(static_cast<double>(r.good_requests), duration_s);
  r.ttft_ms = summarize_ms(std::move(ttft));
  r.tpot_ms = summarize_ms(std::move(tpot));
  r.itl_ms = summarize_ms(std::move(itl));
  r.e2e_ms = summarize_ms(std::move(e2e));
  return r;
}

std::string format_serving_table(const ServingReport& r, const RunLabel& label) {
  std::string out;
  out += fmt::format("target: {} (model {}, {} endpoint)\n", label.url, label.model, label.endpoint);
  out += fmt::format("workload: {}; arrivals: {}\n", label.workload, label.arrivals);
  out += fmt::format("requests: {} completed, {} failed of {} in {:.2f} s\n", r.completed, r.failed, r.num_requests,
                     r.duration_s);
  for (const auto& [reason, count] : r.failures) out += fmt::format("  failed x{}: {}\n", count, reason);
  out += fmt::format("tokens: {} input, {} output (usage reported by {} of {} completed requests)\n", r.input_tokens,
                     r.output_tokens, r.usage_reported, r.completed);
  out += fmt::format("throughput: {:.2f} requests/s, {:.2f} output tokens/s, {:.2f} total tokens/s\n",
                     r.request_throughput, r.output_throughput, r.total_token_throughput);
  if (r.slo.any()) {
    out += fmt::format("goodput: {:.2f} requests/s ({} of {} met TTFT <= {} ms and TPOT <= {} ms)\n", r.goodput,
                       r.good_requests, r.num_requests, r.slo.ttft_ms > 0 ? fmt::format("{:g}", r.slo.ttft_ms) : "any",
                       r.slo.tpot_ms > 0 ? fmt::format("{:g}", r.slo.tpot_ms) : "any");
  }
  // max: the worst gap (ITL) shows a long prefill stalling running requests, which percentiles hide.
  out += fmt::format("{:<10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}\n", "ms", "mean", "p50", "p90", "p99", "max",
                     "count");
  append_row(out, "TTFT", r.ttft_ms);
  append_row(out, "TPOT", r.tpot_ms);
  append_row(out, "ITL", r.itl_ms);
  append_row(out, "E2E", r.e2e_ms);
  return out;
}

nlohmann::json serving_report_json(const ServingReport& r, const RunLabel& label) {
  nlohmann::json failures = nlohmann::json::object();
  for (const auto& [reason, count] : r.failures) failures[reason] = count;
  nlohmann::json j = {{"test", "serve"},
                      {"url", label.url},
                      {"model", label.model},
                      {"endpoint", label.endpoint},
                      {"workload", label.workload},
                      {"arrivals", label.arrivals},
                      {"num_requests", r.num_requests},
                      {"completed", r.completed},
                      {"failed", r.failed},
                      {"failures", failures},
                      {"duration_s", r.duration_s},
                      {"input_tokens", r.input_tokens},
                      {"output_tokens", r.output_tokens},
                      {"usage_reported", r.usage_reported},
                      {"request_throughput", r.request_throughput},
                      {"output_throughput", r.output_throughput},
                      {"total_token_throughput", r.total_token_throughput},
                      {"ttft_ms", summary_json(r.ttft_ms)},
                      {"tpot_ms", summary_json(r.tpot_ms)},
                      {"itl_ms", summary_json(r.itl_ms)},
                      {"e2e_ms", summary_json(r.e2e_ms)}};
  if (r.slo.any()) {
    j["slo"] = {{"ttft_ms", r.slo.ttft_ms}, {"tpot_ms", r.slo.tpot_ms}};
    j["good_requests"] = r.good_requests;
    j["goodput"] = r.goodput;
  }
  return j;
}

}  // namespace lemma::bench::serving
