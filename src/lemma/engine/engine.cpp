#include "lemma/engine/engine.h"

#include <algorithm>
#include <exception>

#include "lemma/base/error.h"
#include "lemma/base/trace.h"
#include "lemma/model/lora/lora_adapter.h"
#include "lemma/spec/jump_forward.h"

namespace lemma {

namespace {

ModelRunnerConfig runner_config(const EngineConfig& c) {
  ModelRunnerConfig r;
  r.num_device_blocks = c.kv.num_device_blocks;
  r.num_host_blocks = c.kv.num_host_blocks;
  r.block_size = c.kv.block_size;
  r.max_num_seqs = c.scheduler.max_num_seqs;
  r.num_threads = c.num_threads;
  r.default_seed = c.default_seed;
  r.kv_dtype = c.kv_dtype;
  return r;
}

// The window KvManager frees blocks behind: the widest layer window when every layer has one, else 0
// (a full-attention layer reads the whole context). Matches ModelConfig::first_attended_position.
KvManagerConfig kv_config(const Model& model, const EngineConfig& c) {
  KvManagerConfig kv = c.kv;
  kv.sliding_window = 0;
  const ModelConfig& m = model.config();
  if (c.drop_blocks_outside_window && !m.sliding_window.empty() &&
      std::none_of(m.sliding_window.begin(), m.sliding_window.end(), [](int64_t w) { return w <= 0; }))
    kv.sliding_window = *std::max_element(m.sliding_window.begin(), m.sliding_window.end());
  return kv;
}

SchedulerConfig scheduler_config(const EngineConfig& c) {
  SchedulerConfig s = c.scheduler;
  s.speculative.num_tokens = std::max(c.speculative.enabled() ? c.speculative.num_tokens : 0, c.jump_forward_tokens);
  s.speculative.disable_by_batch_size = c.speculative.disable_by_batch_size;
  return s;
}

spec::DraftModelConfig draft_config(const EngineConfig& c) {
  spec::DraftModelConfig d;
  d.num_blocks = c.kv.num_device_blocks;
  d.block_size = c.kv.block_size;
  d.num_threads = c.num_threads;
  d.default_seed = c.default_seed;
  d.kv_dtype = c.kv_dtype;
  return d;
}

// The proposer of the speculative options, behind jump-forward decoding when that is on.
std::unique_ptr<DraftSource> draft_source(const Model& model, const EngineConfig& c) {
  if (c.jump_forward_tokens < 0 || c.jump_forward_tokens > 64)
    fail<InvalidArgument>("jump-forward decoding: {} tokens per step; use 0 (off) to 64", c.jump_forward_tokens);
  auto source = spec::make_draft_source(c.speculative, model, draft_config(c));
  if (c.jump_forward_tokens == 0) return source;
  return std::make_unique<spec::JumpForwardSource>(std::move(source), c.speculative.enabled() ? c.speculative.num_tokens : 0);
}

// Attention sinks (G10): refused up front what the forward could not run, so step() never throws.
void validate_streaming(const ModelConfig& m, const RequestOptions& options, RequestId id) {
  const StreamingWindow& w = options.streaming;
  if (const std::string error = streaming_window_error(w, m.max_position_embeddings); !error.empty())
    fail<InvalidArgument>("request {}: {}", id, error);
  if (!w.enabled()) return;
  if (options.sampling.beam_search) fail<InvalidArgument>("request {}: beam search is not supported with attention sinks", id);
  if (std::any_of(m.sliding_window.begin(), m.sliding_window.end(), [](int64_t x) { return x > 0; }))
    fail<InvalidArgument>("request {}: attention sinks are not supported on a model with sliding-window layers", id);
  if (m.rope.scaling.type == RopeScalingType::kDynamicNtk && m.rope.scaling.freq_divisors.empty())
    fail<InvalidArgument>("request {}: attention sinks need fixed RoPE frequencies, not dynamic NTK", id);
}

}  // namespace

Engine::Engine(const Model& model, const EngineConfig& config)
    : model_(model),
      config_(config),
      scheduler_(scheduler_config(config), kv_config(model, config)),
      runner_(model, runner_config(config)),
      draft_source_(draft_source(model, config)) {
  runner_.set_keep_logits(config.keep_logits);
  scheduler_.set_draft_source(draft_source_.get());
}

uint64_t choice_seed(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void Engine::add_request(RequestId id, std::vector<int32_t> prompt, RequestOptions options, int n) {
  const int64_t vocab = model_.config().vocab_size;
  if (n < 1) fail<InvalidArgument>("request {}: n = {}, at least one choice", id, n);
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab)
      fail<InvalidArgument>("prompt token {} (id {}) is outside the vocabulary [0, {})", i, prompt[i], vocab);
  options.sampling.validate(vocab);
  validate_streaming(model_.config(), options, id);
  if (options.pooling != Pooling::kNone &&
      (n != 1 || options.stop.max_tokens != 1 || options.sampling.beam_search || options.streaming.enabled()))
    fail<InvalidArgument>("request {}: a pooling (embedding) request has one choice, max_tokens 1, no beams, no window", id);
  // Prefix-cache blocks computed with an adapter hold that adapter's K/V: its identity joins the
  // keys (every choice and beam copies these options), so a hit never crosses adapters.
  if (options.lora) options.extra_keys.push_back(lora_prefix_key(*options.lora));
  if (id >= kFirstBeamSequence || static_cast<RequestId>(n) > kFirstBeamSequence - id)
    fail<InvalidArgument>("request {}: ids from {} are the engine's own (beam sequences)", id, kFirstBeamSequence);
  for (int i = 0; i < n; ++i)  // checked first, so a refused request queues nothing
    if (id_in_use(id + static_cast<RequestId>(i)))
      fail<InvalidArgument>("request {}: choice {} would run as id {}, which is in use", id, i, id + i);
  if (options.sampling.beam_search) {
    add_beam_request(id, std::move(prompt), std::move(options), n);
    return;
  }
  std::vector<RequestOptions> choices(static_cast<size_t>(n - 1), options);
  scheduler_.add_request(Request(id, std::move(prompt), std::move(options)));
  request_trace_.added(id);
  for (int i = 1; i < n; ++i) {
    RequestOptions& o = choices[static_cast<size_t>(i - 1)];
    if (o.sampling.seed) o.sampling.seed = choice_seed(*o.sampling.seed, static_cast<uint64_t>(i));
    add_choice(id, id + static_cast<RequestId>(i), std::move(o));
    choice_index_[id + static_cast<RequestId>(i)] = i;
  }
}

bool Engine::id_in_use(RequestId id) const {
  if (const auto it = beam_requests_.upper_bound(id); it != beam_requests_.begin() && id - std::prev(it)->first <
                                                                                         static_cast<RequestId>(std::prev(it)->second.n))
    return true;
  return scheduler_.find(id) != nullptr ||
         std::any_of(pending_choices_.begin(), pending_choices_.end(), [&](const auto& c) { return c.child == id; }) ||
         std::any_of(beam_outputs_.begin(), beam_outputs_.end(), [&](const auto& o) { return o.output.id == id; });
}

void Engine::add_choice(RequestId parent, RequestId child, RequestOptions options) {
  const Request* p = scheduler_.find(parent);
  if (p == nullptr) fail<InvalidArgument>("choice {}: parent request {} is unknown or finished", child, parent);
  if (id_in_use(child)) fail<InvalidArgument>("choice {}: the id is already in use", child);
  options.sampling.validate(model_.config().vocab_size);
  const auto prompt = p->prompt_token_ids();
  pending_choices_.push_back({parent, child, {prompt.begin(), prompt.end()}, std::move(options)});
  request_trace_.added(child);
}

// Pending choices start as forks (sharing the parent's prompt blocks) once the parent has computed
// its prompt, or as ordinary requests when the parent is gone.
void Engine::start_pending_choices() {
  for (auto it = pending_choices_.begin(); it != pending_choices_.end();) {
    const Request* parent = scheduler_.find(it->parent);
    bool started = false;
    if (parent == nullptr || parent->is_finished()) {
      scheduler_.add_request(Request(it->child, std::move(it->prompt), std::move(it->options)));
      started = true;
    } else if (parent->status() == RequestStatus::kRunning &&
               parent->num_computed_tokens() >= parent->num_prompt_tokens() - 1) {
      started = scheduler_.fork_request(it->parent, it->child, it->options);
    }
    it = started ? pending_choices_.erase(it) : it + 1;
  }
}

std::optional<EngineOutput> Engine::abort(RequestId id, RequestStatus status) {
  if (beam_request_of_choice(id) != nullptr) end_beam_request(beam_request_of_choice(id)->id, status);
  for (auto it = beam_outputs_.begin(); it != beam_outputs_.end(); ++it) {  // an ended beam search's choice
    if (it->output.id != id) continue;
    EngineOutput out = std::move(*it);
    beam_outputs_.erase(it);
    return out;
  }
  if (id >= kFirstBeamSequence) return std::nullopt;  // internal: ended with its request
  for (auto it = pending_choices_.begin(); it != pending_choices_.end(); ++it) {
    if (it->child != id) continue;
    RequestOutput out;
    out.id = id;
    out.status = status;
    out.num_prompt_tokens = static_cast<int64_t>(it->prompt.size());
    pending_choices_.erase(it);
    return output_of(std::move(out));
  }
  auto out = scheduler_.abort(id, status);
  if (!out) return std::nullopt;
  return output_of(std::move(*out));
}

std::vector<EngineOutput> Engine::abort_expired(double now) {
  std::vector<EngineOutput> outs;
  for (auto& o : scheduler_.abort_expired(now)) route(std::move(o), outs);
  std::vector<RequestId> expired;  // queued beam requests are not in the scheduler yet
  for (RequestId id : queued_beams_) {
    const double deadline = beam_requests_.at(id).deadline;
    if (deadline > 0.0 && deadline <= now) expired.push_back(id);
  }
  for (RequestId id : expired) end_beam_request(id, RequestStatus::kFinishedTimeout);
  outs.insert(outs.end(), std::make_move_iterator(beam_outputs_.begin()), std::make_move_iterator(beam_outputs_.end()));
  beam_outputs_.clear();
  return outs;
}

EngineOutput Engine::output_of(RequestOutput out, std::string error) {
  EngineOutput e;
  if (!choice_index_.empty())
    if (const auto it = choice_index_.find(out.id); it != choice_index_.end()) e.choice = it->second;
  if (out.finished()) {
    runner_.forget(out.id);
    if (draft_source_) draft_source_->forget(out.id);
    request_trace_.finished(out.id);
    choice_index_.erase(out.id);
  }
  e.output = std::move(out);
  e.error = std::move(error);
  return e;
}

void Engine::fail_step(const StepPlan& plan, const std::string& message, StepReport& report) {
  for (const auto& s : plan.scheduled)
    if (auto out = scheduler_.abort(s.id, RequestStatus::kFinishedFailed)) route(std::move(*out), report.outputs, message);
  flush_beam_outputs(report);
}

void Engine::flush_beam_outputs(StepReport& report) {
  report.outputs.insert(report.outputs.end(), std::make_move_iterator(beam_outputs_.begin()),
                        std::make_move_iterator(beam_outputs_.end()));
  beam_outputs_.clear();
}

StepReport Engine::step() {
  trace::Scope t_step("engine_step", "step");
  start_pending_choices();
  StepReport report;
  trace::Scope t_schedule("schedule", "engine");
  const StepPlan plan = scheduler_.schedule();
  t_schedule.end();
  for (const auto& s : plan.scheduled) request_trace_.scheduled(s.id);
  for (const auto& n : plan.new_requests) {
    if (!n.first_scheduled) continue;
    if (n.id < kFirstBeamSequence) {
      report.first_scheduled.push_back(n.id);
    } else if (BeamRequest* br = beam_request_of_sequence(n.id); br != nullptr && br->first_sequence == n.id) {
      report.first_scheduled.push_back(br->id);
      request_trace_.scheduled(br->id);
    }
  }
  // A preempted beam sequence recomputes its candidates when it runs again.
  for (RequestId id : plan.preempted_ids)
    if (BeamRequest* br = beam_request_of_sequence(id)) br->ready.erase(id);
  RunnerOutput ran;
  try {
    ran = runner_.run(plan);
  } catch (const std::exception& e) {
    fail_step(plan, e.what(), report);
    return report;
  }
  report.num_sequences = ran.num_sequences;
  report.num_tokens = ran.num_tokens;
  report.moe = std::move(ran.moe);
  trace::Scope t_update("update", "engine");
  auto beam_candidates = take_beam_candidates(ran.result);
  auto outputs = scheduler_.update(plan, std::move(ran.result));
  report.outputs.reserve(report.outputs.size() + outputs.size());
  for (auto& out : outputs) {
    request_trace_.produced(out);
    EngineOutput e = output_of(std::move(out));
    if (e.output.status == RequestStatus::kFinishedFailed && e.error.empty()) e.error = "the step produced no token";
    report.outputs.push_back(std::move(e));
  }
  advance_beams(plan, std::move(beam_candidates));
  flush_beam_outputs(report);
  start_pending_choices();
  return report;
}

}  // namespace lemma
