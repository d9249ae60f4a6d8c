// Beam search on the engine's sequences (G12): the Engine members that map a BeamSearch onto
// scheduler sequences. Every live beam is an ordinary sequence of the one continuous batch; a beam
// whose last token is computed parks (Scheduler::fork_sequence's comment) with its best 2W
// candidates until its siblings have theirs, then the search steps and the sequences follow it:
// dropped beams are released (blocks freed), kept ones append their token, extra continuations of
// one beam fork it copy-on-write at its current length. The request's outputs come only at the end.
#include <algorithm>

#include "lemma/base/error.h"
#include "lemma/engine/engine.h"

namespace lemma {

void Engine::add_beam_request(RequestId id, std::vector<int32_t> prompt, RequestOptions options, int n) {
  const BeamSearchParams beam = *options.sampling.beam_search;
  const SchedulerConfig& sc = scheduler_.config();
  if (n > beam.width) fail<InvalidArgument>("request {}: n = {} is more than the beam width {}", id, n, beam.width);
  if (beam.width > sc.max_num_seqs)
    fail<InvalidArgument>("request {}: beam width {} is more than max_num_seqs {} (each beam is a sequence)", id,
                          beam.width, sc.max_num_seqs);
  // Every beam may come to own all its blocks: W whole sequences must fit in the cache.
  const auto num_prompt = static_cast<int64_t>(prompt.size());
  const int64_t length = std::min(num_prompt + options.stop.max_tokens, sc.max_model_len);
  const KvManager& kv = scheduler_.kv();
  const int64_t need = static_cast<int64_t>(beam.width) * kv.blocks_for(length);
  const int64_t usable = static_cast<int64_t>(kv.device_pool().num_blocks() - kv.watermark_blocks());
  if (need > usable)
    fail<InvalidArgument>("request {}: {} beams of up to {} tokens need {} KV blocks, the cache has {} usable", id,
                          beam.width, length, need, usable);
  const RequestId first = next_beam_sequence_++;
  scheduler_.validate(Request(first, prompt, options));  // what add_request would refuse, refused now
  BeamRequest br{.id = id,
                 .n = n,
                 .search = BeamSearch(beam, std::min(options.stop.max_tokens, sc.max_model_len - num_prompt)),
                 .prompt = std::move(prompt),
                 .options = std::move(options),
                 .num_blocks = need};
  br.stop = br.options.stop;
  br.num_prompt_tokens = num_prompt;
  br.first_sequence = first;
  br.deadline = br.options.deadline;
  br.logprobs = br.options.sampling.logprobs;
  beam_requests_.emplace(id, std::move(br));
  queued_beams_.push_back(id);
  request_trace_.added(id);
  start_beam_requests();
}

void Engine::start_beam_requests() {
  const int64_t usable = static_cast<int64_t>(scheduler_.kv().device_pool().num_blocks() -
                                              scheduler_.kv().watermark_blocks());
  while (!queued_beams_.empty()) {
    BeamRequest& br = beam_requests_.at(queued_beams_.front());
    const int32_t width = br.search.params().width;
    if (active_beam_seqs_ + width > scheduler_.config().max_num_seqs || active_beam_blocks_ + br.num_blocks > usable)
      return;
    queued_beams_.pop_front();
    br.active = true;
    active_beam_seqs_ += width;
    active_beam_blocks_ += br.num_blocks;
    scheduler_.add_request(Request(br.first_sequence, std::move(br.prompt), std::move(br.options)));
    br.sequences.push_back(br.first_sequence);
    beam_of_sequence_[br.first_sequence] = br.id;
  }
}

Engine::BeamRequest* Engine::beam_request_of_choice(RequestId id) {
  const auto it = beam_requests_.upper_bound(id);
  if (it == beam_requests_.begin()) return nullptr;
  BeamRequest& br = std::prev(it)->second;
  return id - br.id < static_cast<RequestId>(br.n) ? &br : nullptr;
}

Engine::BeamRequest* Engine::beam_request_of_sequence(RequestId seq) {
  const auto it = beam_of_sequence_.find(seq);
  return it == beam_of_sequence_.end() ? nullptr : &beam_requests_.at(it->second);
}

std::vector<std::pair<RequestId, std::vector<TokenLogprob>>> Engine::take_beam_candidates(StepResult& result) const {
  std::vector<std::pair<RequestId, std::vector<TokenLogprob>>> taken;
  if (beam_of_sequence_.empty()) return taken;
  for (SampledTokens& s : result.sampled)
    if (beam_of_sequence_.count(s.id) != 0) taken.emplace_back(s.id, std::move(s.candidates));
  return taken;
}

void Engine::advance_beams(const StepPlan& plan, std::vector<std::pair<RequestId, std::vector<TokenLogprob>>> candidates) {
  if (beam_of_sequence_.empty()) return;
  for (const ScheduledRequest& s : plan.scheduled) {
    BeamRequest* br = beam_request_of_sequence(s.id);
    const Request* r = scheduler_.find(s.id);
    // Only a sequence the step left parked (every token computed) has its next candidates; one the
    // runner gave none (no finite logit) is ready with no continuation.
    if (!s.needs_sample || br == nullptr || r == nullptr || r->status() != RequestStatus::kRunning ||
        r->num_computed_tokens() != r->num_tokens())
      continue;
    const auto it = std::find_if(candidates.begin(), candidates.end(), [&](const auto& c) { return c.first == s.id; });
    if (s.id == br->first_sequence) br->num_cached_tokens = r->num_cached_tokens();  // its prefix-cache hit
    br->ready[s.id] = it != candidates.end() ? std::move(it->second) : std::vector<TokenLogprob>{};
  }
  std::vector<RequestId> complete;  // in request id order: deterministic
  for (const auto& [id, br] : beam_requests_)
    if (!br.ready.empty() && br.ready.size() == br.sequences.size()) complete.push_back(id);
  for (RequestId id : complete) step_beam_request(beam_requests_.at(id));
}

void Engine::step_beam_request(BeamRequest& br) {
  std::vector<std::vector<TokenLogprob>> rows;
  rows.reserve(br.sequences.size());
  for (RequestId seq : br.sequences) rows.push_back(std::move(br.ready.at(seq)));
  br.ready.clear();
  const int64_t max_model_len = scheduler_.config().max_model_len;
  const auto ends = [&](std::span<const int32_t> tokens) {
    return check_stop(br.stop, tokens, br.num_prompt_tokens + static_cast<int64_t>(tokens.size()), max_model_len);
  };
  const std::vector<BeamContinuation> next = br.search.step(rows, ends);
  if (br.search.is_over()) {
    end_beam_request(br.id);
    return;
  }
  // Released first, so their slots and blocks serve the forks.
  std::vector<int> uses(br.sequences.size(), 0);
  for (const BeamContinuation& c : next) ++uses[static_cast<size_t>(c.parent)];
  for (size_t b = 0; b < br.sequences.size(); ++b)
    if (uses[b] == 0) release_beam_sequence(br.sequences[b]);
  // Every fork before any append: a fork copies its parent as it was before this step.
  std::vector<RequestId> sequences(next.size());
  std::vector<bool> kept(br.sequences.size(), false);
  for (size_t i = 0; i < next.size(); ++i) {
    const auto parent = static_cast<size_t>(next[i].parent);
    if (!kept[parent]) {
      kept[parent] = true;
      sequences[i] = br.sequences[parent];
      continue;
    }
    sequences[i] = next_beam_sequence_++;
    scheduler_.fork_sequence(br.sequences[parent], sequences[i]);
    beam_of_sequence_[sequences[i]] = br.id;
  }
  for (size_t i = 0; i < next.size(); ++i) scheduler_.append_tokens(sequences[i], std::span(&next[i].token, 1));
  br.sequences = std::move(sequences);
}

void Engine::release_beam_sequence(RequestId seq) {
  scheduler_.release(seq);
  runner_.forget(seq);
  beam_of_sequence_.erase(seq);
}

void Engine::end_beam_request(RequestId id, std::optional<RequestStatus> status, const std::string& error) {
  const auto it = beam_requests_.find(id);
  if (it == beam_requests_.end()) return;
  BeamRequest& br = it->second;
  for (RequestId seq : br.sequences) release_beam_sequence(seq);
  if (br.active) {
    active_beam_seqs_ -= br.search.params().width;
    active_beam_blocks_ -= br.num_blocks;
  } else {
    queued_beams_.erase(std::find(queued_beams_.begin(), queued_beams_.end(), id));
  }
  const std::vector<BeamHypothesis>& hypotheses = br.search.finished();
  for (int i = 0; i < br.n; ++i) {
    RequestOutput out;
    out.id = br.id + static_cast<RequestId>(i);
    out.num_prompt_tokens = br.num_prompt_tokens;
    out.num_cached_tokens = br.num_cached_tokens;
    std::string message = error;
    std::optional<BeamScore> score;
    if (status) {
      out.status = *status;
    } else if (static_cast<size_t>(i) < hypotheses.size()) {
      const BeamHypothesis& h = hypotheses[static_cast<size_t>(i)];
      out.status = h.status;
      out.new_token_ids = h.tokens;
      out.num_output_tokens = static_cast<int64_t>(h.tokens.size());
      if (br.logprobs)  // the log-probabilities the search ranked by (after logit processors)
        for (size_t k = 0; k < h.tokens.size(); ++k) out.logprobs.push_back({h.tokens[k], h.token_logprobs[k], 0, {}});
      score = BeamScore{h.cum_logprob, h.score};
    } else {
      out.status = RequestStatus::kFinishedFailed;
      message = fmt::format("beam search ended with {} hypotheses, fewer than n = {}", hypotheses.size(), br.n);
    }
    EngineOutput e = output_of(std::move(out), std::move(message));
    e.choice = i;
    e.beam = score;
    beam_outputs_.push_back(std::move(e));
  }
  beam_requests_.erase(it);
  start_beam_requests();
}

void Engine::route(RequestOutput out, std::vector<EngineOutput>& outs, const std::string& error) {
  if (out.id < kFirstBeamSequence) {
    outs.push_back(output_of(std::move(out), error));
    return;
  }
  runner_.forget(out.id);
  const auto it = beam_of_sequence_.find(out.id);
  if (it == beam_of_sequence_.end()) return;  // its request has already ended
  const RequestId id = it->second;
  beam_of_sequence_.erase(it);
  end_beam_request(id, out.status, error);
}

}  // namespace lemma
