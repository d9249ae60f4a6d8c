#include "lemma/bench/model_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "lemma/base/error.h"
#include "lemma/base/trace.h"

namespace lemma::bench {

namespace {
constexpr int64_t kBlockSize = 16;
constexpr int64_t kDepthChunk = 512;  // the depth is prefilled in chunks of this many tokens
using Clock = std::chrono::steady_clock;

int64_t blocks_for(int64_t tokens) { return (tokens + kBlockSize - 1) / kBlockSize; }

std::vector<int32_t> random_tokens(int64_t count, int64_t vocab, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (auto& id : ids) id = dist(rng);
  return ids;
}

// G5: a benchmark of garbage is worthless, so outputs are checked before anything is timed.
void check_logits(std::span<const float> logits, const std::string& what) {
  float lo = logits.empty() ? 0.0f : logits[0], hi = lo;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!std::isfinite(logits[i])) {
      throw Error("bench: " + what + ": logit " + std::to_string(i) + " is not finite (" + std::to_string(logits[i]) + ")");
    }
    lo = std::min(lo, logits[i]);
    hi = std::max(hi, logits[i]);
  }
  if (logits.empty() || lo == hi) throw Error("bench: " + what + ": logits are all equal; the forward is degenerate");
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

class Runner {
 public:
  Runner(const Model& model, const ModelBenchOptions& options)
      : model_(model), options_(options), workspace_(options.num_threads, model.runtime().pin_threads), rng_(options.seed) {
    const ModelConfig& c = model.config();
    const int64_t depth = options.depth;
    const int64_t blocks_per_seq =
        std::max(blocks_for(depth + options.prompt_tokens), blocks_for(depth + options.gen_tokens * options.step_tokens));
    cache_ = KvCache::for_model(c, std::max<int64_t>(1, blocks_per_seq * options.batch), kBlockSize, options.kv_dtype);
    for (int64_t b = 0; b < options.batch; ++b) {
      std::vector<int32_t> table(static_cast<size_t>(blocks_per_seq));
      for (int64_t i = 0; i < blocks_per_seq; ++i) table[static_cast<size_t>(i)] = static_cast<int32_t>(b * blocks_per_seq + i);
      tables_.push_back(std::move(table));
    }
    const int64_t step_rows = options.batch * options.step_tokens;
    const int64_t max_tokens = std::max({options.prompt_tokens, step_rows, std::min(depth, kDepthChunk)});
    const int64_t max_context = depth + std::max(options.prompt_tokens, options.gen_tokens * options.step_tokens);
    workspace_.reserve(c, max_tokens, options.batch, max_context);  // nothing grows while timed
    logits_.resize(static_cast<size_t>(step_rows * c.vocab_size));
  }

  // Caches positions [0, depth) of every sequence (once: the tests only write after them).
  void fill_depth(const std::function<void(const std::string&)>& note) {
    for (int64_t b = 0; b < options_.batch; ++b) {
      note("filling depth " + std::to_string(options_.depth) + " of sequence " + std::to_string(b + 1) + "/" +
           std::to_string(options_.batch));
      for (int64_t at = 0; at < options_.depth; at += kDepthChunk) {
        const auto ids = random_tokens(std::min(kDepthChunk, options_.depth - at), model_.config().vocab_size, rng_);
        ForwardBatch batch;
        batch.sequences.push_back({ids, at, tables_[static_cast<size_t>(b)], LogitsRequest::kNone, {}, {}, lora_of(b)});
        model_.forward(batch, cache_, workspace_, logits_);
      }
    }
  }

  // One prefill of the whole prompt into the cache of sequence 0, after its depth.
  double prefill(bool check) {
    const auto prompt = random_tokens(options_.prompt_tokens, model_.config().vocab_size, rng_);
    ForwardBatch batch;
    batch.sequences.push_back({prompt, options_.depth, tables_[0], LogitsRequest::kLast, {}, {}, lora_of(0)});
    const auto start = Clock::now();
    model_.forward(batch, cache_, workspace_, logits_);
    const double s = seconds_since(start);
    if (check) check_logits(std::span(logits_).first(static_cast<size_t>(model_.config().vocab_size)), "prefill");
    return s;
  }

  // `steps` decode steps of every sequence, after its depth.
  double decode(int64_t steps, bool check) {
    const int64_t vocab = model_.config().vocab_size;
    const int64_t per_step = options_.step_tokens;
    const auto ids = random_tokens(steps * options_.batch * per_step, vocab, rng_);
    ForwardBatch batch;
    batch.sequences.resize(static_cast<size_t>(options_.batch));
    for (int64_t b = 0; b < options_.batch; ++b) {
      batch.sequences[static_cast<size_t>(b)].block_table = tables_[static_cast<size_t>(b)];
      batch.sequences[static_cast<size_t>(b)].logits = per_step > 1 ? LogitsRequest::kAll : LogitsRequest::kLast;
      batch.sequences[static_cast<size_t>(b)].lora = lora_of(b);
    }
    const auto start = Clock::now();
    for (int64_t step = 0; step < steps; ++step) {
      for (int64_t b = 0; b < options_.batch; ++b) {
        auto& seq = batch.sequences[static_cast<size_t>(b)];
        seq.token_ids = std::span(ids).subspan(static_cast<size_t>((step * options_.batch + b) * per_step),
                                               static_cast<size_t>(per_step));
        seq.num_cached = options_.depth + step * per_step;
      }
      trace::Scope t_step("decode_step", "step", "step", step);
      model_.forward(batch, cache_, workspace_, logits_);
      active_experts_ += workspace_.moe.stats.active_experts;  // 0 for dense models
      ++decode_steps_;
    }
    const double s = seconds_since(start);
    if (check) check_logits(std::span(logits_).first(static_cast<size_t>(options_.batch * per_step * vocab)), "decode");
    return s;
  }

 private:
  const LoraAdapter* lora_of(int64_t b) const {
    const auto& l = options_.loras;
    return l.empty() ? nullptr : l[static_cast<size_t>(b) % l.size()];
  }

  const Model& model_;
  const ModelBenchOptions& options_;
  KvCache cache_;
  ForwardWorkspace workspace_;
  int64_t active_experts_ = 0, decode_steps_ = 0;  // MoE: experts run over the decode steps since reset

 public:
  void reset_expert_count() { active_experts_ = decode_steps_ = 0; }
  double mean_active_experts() const {
    return decode_steps_ > 0 ? static_cast<double>(active_experts_) / static_cast<double>(decode_steps_) : 0.0;
  }

 private:
  std::vector<std::vector<int32_t>> tables_;
  std::vector<float> logits_;
  std::mt19937_64 rng_;
};

PhaseResult finish(std::string test, int64_t batch, int64_t tokens, std::vector<double> seconds) {
  PhaseResult r{std::move(test), batch, tokens, std::move(seconds), {}, {}, {}};
  std::vector<double> rates;
  for (double s : r.seconds) rates.push_back(static_cast<double>(tokens) / s);
  r.tokens_per_s = summarize(rates);
  return r;
}
}  // namespace

int64_t model_bench_steps(const ModelBenchOptions& options) {
  int64_t steps = options.depth > 0 ? options.batch : 0;  // one per sequence filled
  if (options.prompt_tokens > 0) steps += 1 + options.reps;  // warm-up, reps
  if (options.gen_tokens > 0) steps += 2 + options.reps;     // warm-up, reps, traced run
  return steps;
}

std::vector<PhaseResult> run_model_bench(const Model& model, const ModelBenchOptions& options,
                                         const BenchProgress& progress) {
  if (options.prompt_tokens < 0 || options.gen_tokens < 0 || options.reps < 1 || options.num_threads < 1 ||
      options.batch < 1 || options.depth < 0 || options.step_tokens < 1) {
    throw InvalidArgument("bench: need pp >= 0, tg >= 0, reps >= 1, threads >= 1, batch >= 1, depth >= 0 and step tokens >= 1");
  }
  const int64_t test_tokens = std::max(options.prompt_tokens, options.gen_tokens * options.step_tokens);
  const int64_t longest = options.depth + test_tokens;
  if (model.config().max_position_embeddings > 0 && longest > model.config().max_position_embeddings) {
    throw InvalidArgument("bench: depth " + std::to_string(options.depth) + " + " +
                          std::to_string(test_tokens) + " tokens exceed the model's context of " +
                          std::to_string(model.config().max_position_embeddings));
  }
  const auto note = [&](const std::string& what) { if (progress) progress(what); };
  const std::string at_depth = options.depth > 0 ? "@d" + std::to_string(options.depth) : "";
  Runner runner(model, options);
  if (options.depth > 0) runner.fill_depth(note);
  std::vector<PhaseResult> results;
  if (options.prompt_tokens > 0) {
    const std::string test = "pp" + std::to_string(options.prompt_tokens) + at_depth;
    note(test + " warm-up");
    runner.prefill(/*check=*/true);
    std::vector<double> seconds;
    for (int r = 0; r < options.reps; ++r) {
      note(test + " rep " + std::to_string(r + 1) + "/" + std::to_string(options.reps));
      seconds.push_back(runner.prefill(/*check=*/r + 1 == options.reps));
    }
    results.push_back(finish(test, 1, options.prompt_tokens, std::move(seconds)));
  }
  if (options.gen_tokens > 0) {
    const std::string test = "tg" + std::to_string(options.gen_tokens) +
                             (options.step_tokens > 1 ? "x" + std::to_string(options.step_tokens) : "") + at_depth;
    note(test + " warm-up");
    runner.decode(std::min<int64_t>(options.gen_tokens, 4), /*check=*/true);
    std::vector<double> seconds, bandwidth;
    if (options.read_bandwidth) bandwidth.push_back(options.read_bandwidth());
    runner.reset_expert_count();
    for (int r = 0; r < options.reps; ++r) {
      note(test + " rep " + std::to_string(r + 1) + "/" + std::to_string(options.reps));
      seconds.push_back(runner.decode(options.gen_tokens, /*check=*/r + 1 == options.reps));
      if (options.read_bandwidth) bandwidth.push_back(options.read_bandwidth());
    }
    results.push_back(finish(test, options.batch, options.gen_tokens * options.batch * options.step_tokens, std::move(seconds)));
    results.back().bandwidth_gbps = std::move(bandwidth);
    results.back().moe_active_experts = runner.mean_active_experts();
    // The overhead figure: one more run with tracing on (left on if --trace already had it on).
    note(test + " traced run (framework overhead)");
    const bool was_tracing = trace::enabled();
    trace::set_enabled(true);
    // Buffer space first: allocating a chunk inside a step would count as overhead.
    trace::reserve_this_thread(static_cast<size_t>(options.gen_tokens * (model.config().num_layers * 16 + 8)));
    const size_t first_event = trace::thread_event_count();
    runner.decode(options.gen_tokens, /*check=*/false);
    trace::set_enabled(was_tracing);
    results.back().overhead = step_overhead(trace::thread_events_since(first_event), "decode_step");
  }
  return results;
}

}  // namespace lemma::bench
