#include "lemma/spec/mtp_proposer.h"

#include <algorithm>

#include "lemma/base/error.h"
#include "lemma/base/trace.h"
#include "lemma/model/greedy_generate.h"

namespace lemma::spec {

MtpProposer::MtpProposer(const Model& target, std::shared_ptr<const MtpModule> mtp, const DraftModelConfig& config)
    : target_(target),
      mtp_(std::move(mtp)),
      config_(config),
      target_ws_(std::max(1, config.num_threads), target.runtime().pin_threads),
      mtp_ws_(std::max(1, config.num_threads), target.runtime().pin_threads),
      table_(std::max<int64_t>(0, config.num_blocks)) {
  if (mtp_ == nullptr) fail<InvalidArgument>("mtp speculation: no MTP module");
  if (config.num_blocks <= 0 || config.block_size <= 0)
    fail<InvalidArgument>("mtp speculation: KV blocks ({}) and block size ({}) must be positive", config.num_blocks,
                          config.block_size);
  const ModelConfig& m = mtp_->block().config();
  if (m.vocab_size != target.config().vocab_size || m.hidden_size != target.config().hidden_size)
    fail<InvalidArgument>("mtp speculation: the module has vocabulary {} / hidden {}, the target {} / {}", m.vocab_size,
                          m.hidden_size, target.config().vocab_size, target.config().hidden_size);
  target_cache_ = KvCache::for_model(target.config(), config.num_blocks, config.block_size, config.kv_dtype);
  mtp_cache_ = KvCache::for_model(m, config.num_blocks, config.block_size, config.kv_dtype);
}

void MtpProposer::forget(uint64_t id) { table_.forget(id); }

void MtpProposer::propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) {
  trace::Scope t("mtp", "spec");
  table_.begin_call();
  out.assign(queries.size(), Drafts{});
  for (const DraftQuery& q : queries)
    if (q.max_drafts > 0) table_.mark(q.id);
  // Per drafted query: its tokens t_0..t_n and the first position c whose target hidden state and
  // MTP row are (re)computed; positions c..n-1 run, the last MTP row predicts t_{n+1}.
  struct Work {
    size_t query;
    State* state;
    int64_t first, n;
  };
  std::vector<Work> work;
  for (size_t i = 0; i < queries.size(); ++i) {
    const DraftQuery& q = queries[i];
    if (q.max_drafts <= 0 || q.tokens.size() < 2) continue;
    State& st = table_.at(q.id);
    const auto n = static_cast<int64_t>(q.tokens.size()) - 1;
    const auto shared = std::mismatch(st.seen.begin(), st.seen.end(), q.tokens.begin(), q.tokens.end()).first - st.seen.begin();
    // Position j's MTP row read t_{j+1}: rows below shared - 1 still hold; the last one always reruns.
    const int64_t first = std::min<int64_t>(std::max<int64_t>(0, shared - 1), n - 1);
    if (!table_.reserve(st, n, config_.block_size)) continue;  // no room: no draft for it this step
    work.push_back({i, &st, first, n});
  }
  if (work.empty()) return;
  // 1. The target's final-normed hidden states of positions first..n-1 (no LM head: kNone; the
  //    forward leaves every row's final-normed state in the workspace's normed buffer).
  ForwardBatch batch;
  for (const Work& w : work)
    batch.sequences.push_back({queries[w.query].tokens.subspan(static_cast<size_t>(w.first), static_cast<size_t>(w.n - w.first)),
                               w.first, w.state->blocks, LogitsRequest::kNone});
  target_.forward(batch, target_cache_, target_ws_, {});
  const int64_t H = target_.config().hidden_size, rows = batch.num_tokens();
  std::vector<float> u(static_cast<size_t>(rows * H));
  int64_t row = 0;
  for (const Work& w : work) {
    const int64_t count = w.n - w.first;
    mtp_->inputs(std::span<const float>(target_ws_.normed).subspan(static_cast<size_t>(row * H), static_cast<size_t>(count * H)),
                 queries[w.query].tokens.subspan(static_cast<size_t>(w.first + 1), static_cast<size_t>(count)),
                 std::span(u).subspan(static_cast<size_t>(row * H), static_cast<size_t>(count * H)));
    row += count;
  }
  // 2. The MTP layer over u_first .. u_{n-1} (its tokens t_{first+1} .. t_n), the last row's logits.
  ForwardBatch mtp_batch;
  row = 0;
  for (const Work& w : work) {
    const int64_t count = w.n - w.first;
    SequenceInput s{queries[w.query].tokens.subspan(static_cast<size_t>(w.first + 1), static_cast<size_t>(count)),
                    w.first, w.state->blocks, LogitsRequest::kLast};
    s.input_embeddings = std::span<const float>(u).subspan(static_cast<size_t>(row * H), static_cast<size_t>(count * H));
    mtp_batch.sequences.push_back(s);
    row += count;
  }
  const int64_t vocab = target_.config().vocab_size;
  std::vector<float> logits(work.size() * static_cast<size_t>(vocab));
  mtp_->block().forward(mtp_batch, mtp_cache_, mtp_ws_, logits);
  for (size_t k = 0; k < work.size(); ++k) {
    const Work& w = work[k];
    const auto& tokens = queries[w.query].tokens;
    w.state->seen.assign(tokens.begin(), tokens.end());
    out[w.query].tokens.push_back(greedy_token(std::span<const float>(logits).subspan(k * static_cast<size_t>(vocab),
                                                                                      static_cast<size_t>(vocab))));
  }
}

}  // namespace lemma::spec
