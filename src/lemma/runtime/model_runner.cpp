#include "lemma/runtime/model_runner.h"

#include <algorithm>

#include "lemma/base/error.h"
#include "lemma/base/trace.h"

namespace lemma {

ModelRunner::ModelRunner(const Model& model, const ModelRunnerConfig& config)
    : model_(model), config_(config), workspace_(std::max(1, config.num_threads), model.runtime().pin_threads) {
  if (config.num_device_blocks <= 0 || config.block_size <= 0 || config.max_num_seqs <= 0 || config.num_host_blocks < 0)
    fail<InvalidArgument>("model runner: device blocks ({}), block size ({}) and max_num_seqs ({}) must be positive",
                          config.num_device_blocks, config.block_size, config.max_num_seqs);
  device_ = KvCache::for_model(model.config(), config.num_device_blocks, config.block_size, config.kv_dtype);
  if (config.num_host_blocks > 0)
    host_ = KvCache::for_model(model.config(), config.num_host_blocks, config.block_size, config.kv_dtype);
  logits_.resize(static_cast<size_t>(config.max_num_seqs * model.config().vocab_size));
  batch_.sequences.reserve(static_cast<size_t>(config.max_num_seqs));
}

std::span<const float> ModelRunner::last_logits(RequestId id) const {
  auto it = kept_logits_.find(id);
  if (it == kept_logits_.end()) return {};
  return it->second;
}

void ModelRunner::apply_plan_state(const StepPlan& plan) {
  for (RequestId id : plan.preempted_ids) state_.erase(id);
  for (const auto& n : plan.new_requests) {
    Sampler sampler(n.sampling, config_.default_seed ^ n.id, model_.runtime().isa);
    State s{n.token_ids, n.num_prompt_tokens, {n.block_table.begin(), n.block_table.end()}, std::move(sampler)};
    state_.insert_or_assign(n.id, std::move(s));
  }
  for (const auto& d : plan.cached_requests) {
    auto it = state_.find(d.id);
    if (it == state_.end()) fail<InvalidArgument>("model runner: plan names request {} it has no state for", d.id);
    State& s = it->second;
    s.tokens.insert(s.tokens.end(), d.new_token_ids.begin(), d.new_token_ids.end());
    s.block_table.insert(s.block_table.end(), d.new_block_ids.begin(), d.new_block_ids.end());
    for (const auto& r : d.replaced_blocks) s.block_table.at(static_cast<size_t>(r.index)) = r.block;
  }
}

void ModelRunner::copy_blocks(const StepPlan& plan) {
  if ((!plan.swap_out.empty() || !plan.swap_in.empty()) && host_.num_blocks() == 0)
    fail<InvalidArgument>("model runner: the plan swaps blocks but there is no host tier");
  for (const auto& c : plan.swap_out) copy_kv_block(device_, c.src, host_, c.dst);
  for (const auto& c : plan.swap_in) copy_kv_block(host_, c.src, device_, c.dst);
  for (const auto& c : plan.copies) copy_kv_block(device_, c.src, device_, c.dst);
}

RunnerOutput ModelRunner::run(const StepPlan& plan) {
  trace::Scope t_prepare("runner_prepare", "runtime");
  apply_plan_state(plan);
  copy_blocks(plan);
  RunnerOutput out;
  if (!plan.has_work()) return out;
  if (static_cast<int64_t>(plan.scheduled.size()) > config_.max_num_seqs)
    fail<InvalidArgument>("model runner: {} sequences in one step, more than max_num_seqs {}", plan.scheduled.size(),
                          config_.max_num_seqs);

  batch_.sequences.clear();
  for (const auto& s : plan.scheduled) {
    auto it = state_.find(s.id);
    if (it == state_.end()) fail<InvalidArgument>("model runner: request {} is scheduled but unknown", s.id);
    const State& st = it->second;
    const int64_t end = s.num_computed_tokens + s.num_new_tokens;
    if (s.num_computed_tokens < 0 || end > static_cast<int64_t>(st.tokens.size()))
      fail<InvalidArgument>("model runner: request {} is granted tokens [{}, {}) but has {}", s.id,
                            s.num_computed_tokens, end, st.tokens.size());
    SequenceInput in;
    in.token_ids = std::span<const int32_t>(st.tokens).subspan(static_cast<size_t>(s.num_computed_tokens),
                                                               static_cast<size_t>(s.num_new_tokens));
    in.num_cached = s.num_computed_tokens;
    in.block_table = st.block_table;
    in.logits = s.needs_sample ? LogitsRequest::kLast : LogitsRequest::kNone;
    batch_.sequences.push_back(in);
  }
  const int64_t rows = batch_.num_logit_rows();
  t_prepare.end();
  model_.forward(batch_, device_, workspace_,
                 std::span<float>(logits_).first(static_cast<size_t>(rows * model_.config().vocab_size)));
  out.num_sequences = static_cast<int64_t>(batch_.sequences.size());
  out.num_tokens = batch_.num_tokens();
  trace::Scope t_sample("sampling", "kernel");
  sample(plan, out);
  return out;
}

void ModelRunner::sample(const StepPlan& plan, RunnerOutput& out) {
  const auto vocab = static_cast<size_t>(model_.config().vocab_size);
  sampled_.clear();
  for (const auto& s : plan.scheduled) {
    if (s.needs_sample) sampled_.push_back(&state_.at(s.id));
  }
  samples_.resize(sampled_.size());
  if (sampler_scratch_.size() < sampled_.size()) sampler_scratch_.resize(sampled_.size());
  // A 152K-entry row costs 0.1-0.4 ms to sample (bench/sampling_bench): at 32 sequences that is
  // milliseconds per step, which the team's other threads would otherwise spend waiting. Rows go
  // one per tile whatever the vocabulary (a small one costs a team dispatch, about a microsecond).
  workspace_.team->parallel_for(static_cast<int64_t>(sampled_.size()), 1, [&](int64_t r0, int64_t r1) {
    for (auto row = static_cast<size_t>(r0); row < static_cast<size_t>(r1); ++row) {
      State& st = *sampled_[row];
      const std::span<const int32_t> tokens(st.tokens);
      const auto prompt = tokens.first(static_cast<size_t>(st.num_prompt_tokens));
      const auto outputs = tokens.subspan(static_cast<size_t>(st.num_prompt_tokens));
      st.sampler.seek(static_cast<uint64_t>(outputs.size()));
      samples_[row] = st.sampler.sample(std::span<const float>(logits_).subspan(row * vocab, vocab), prompt, outputs,
                                        sampler_scratch_[row]);
    }
  });
  out.result.sampled.reserve(sampled_.size());  // one allocation, not one per doubling
  size_t row = 0;
  for (const auto& s : plan.scheduled) {
    if (!s.needs_sample) continue;
    SampleResult& r = samples_[row];
    if (keep_logits_) {
      const auto logits = std::span<const float>(logits_).subspan(row * vocab, vocab);
      kept_logits_[s.id].assign(logits.begin(), logits.end());
    }
    ++row;
    if (r.token == kNoToken)
      fail<Error>("request {}: no finite logit to sample from (the model produced NaN/-inf everywhere)", s.id);
    out.result.sampled.push_back({s.id, {std::move(r)}});
  }
}

}  // namespace lemma
