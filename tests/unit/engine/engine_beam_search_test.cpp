// Beam search is exact where it must be and equals a plain re-implementation everywhere else. Tiny
// random models (vocabularies of 6-8 tokens, two layers) so every continuation can be enumerated:
// the log-probabilities come from plain forwards of whole sequences (no KV reuse, no batching), and
// the reference search below is a straightforward transcription of the documented rule, independent
// of the engine's sequences, forks and parking.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "unit/engine/beam_fixture.h"
#include "unit/model/random_model.h"

namespace lemma::testing {
namespace {

constexpr int32_t kBlockSize = 4;

ModelConfig tiny_config(int64_t vocab) {
  ModelConfig c = small_config();
  c.vocab_size = vocab;
  return c;
}

// log-softmax rows of the next token after a token sequence, by plain forwards (memoised).
class Scorer {
 public:
  explicit Scorer(const Model& model)
      : model_(model), cache_(KvCache::for_model(model.config(), 16, kBlockSize)), workspace_(1, false) {}

  const std::vector<double>& row(const std::vector<int32_t>& tokens) {
    auto [it, fresh] = rows_.try_emplace(tokens);
    if (!fresh) return it->second;
    const auto vocab = static_cast<size_t>(model_.config().vocab_size);
    std::vector<int32_t> table(16);
    std::iota(table.begin(), table.end(), 0);
    ForwardBatch batch;
    SequenceInput in;
    in.token_ids = tokens;
    in.block_table = table;
    in.logits = LogitsRequest::kLast;
    batch.sequences.push_back(in);
    std::vector<float> logits(vocab);
    model_.forward(batch, cache_, workspace_, logits);
    const double max = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
    std::vector<double>& out = it->second;
    for (float l : logits) out.push_back(static_cast<double>(l) - max - std::log(sum));
    return out;
  }

  // Sum of the continuation's log-probabilities after the prompt.
  double logprob(const std::vector<int32_t>& prompt, const std::vector<int32_t>& continuation) {
    std::vector<int32_t> seq = prompt;
    double total = 0.0;
    for (int32_t t : continuation) {
      total += row(seq)[static_cast<size_t>(t)];
      seq.push_back(t);
    }
    return total;
  }

 private:
  const Model& model_;
  KvCache cache_;
  ForwardWorkspace workspace_;
  std::map<std::vector<int32_t>, std::vector<double>> rows_;
};

double score_of(double cum, size_t length, float length_penalty) {
  return cum / std::pow(static_cast<double>(length), static_cast<double>(length_penalty));
}

struct Search {
  int32_t width = 1;
  float length_penalty = 1.0f;
  EarlyStopping early_stopping = EarlyStopping::kHeuristic;
  int32_t eos = -1;  // < 0: none (ignore_eos)
  int64_t max_tokens = 5;
};

// The documented rule, written out plainly: rank every (beam, one of its 2W best tokens) by
// cumulative log-probability (ties: beam, then rank in the row); EOS among the first W ranks
// finishes a hypothesis, other tokens extend beams until W are live; keep the W best hypotheses;
// stop as HF's early_stopping says, or at max_tokens (the live beams then finish by length).
std::vector<Hypothesis> reference_beam_search(Scorer& scorer, const std::vector<int32_t>& prompt, const Search& s) {
  struct Beam {
    std::vector<int32_t> tokens;
    double cum = 0.0;
  };
  const auto width = static_cast<size_t>(s.width);
  std::vector<Hypothesis> kept;  // best first
  const auto keep = [&](Hypothesis h) {
    if (kept.size() >= width && !(h.score > kept.back().score)) return;
    auto at = kept.begin();
    while (at != kept.end() && at->score >= h.score) ++at;
    kept.insert(at, std::move(h));
    if (kept.size() > width) kept.pop_back();
  };
  std::vector<Beam> live{Beam{}};
  for (int64_t length = 1; !live.empty(); ++length) {
    struct Candidate {
      double cum;
      size_t beam, rank;
      int32_t token;
    };
    std::vector<Candidate> candidates;
    for (size_t b = 0; b < live.size(); ++b) {
      std::vector<int32_t> seq = prompt;
      seq.insert(seq.end(), live[b].tokens.begin(), live[b].tokens.end());
      const std::vector<double>& row = scorer.row(seq);
      std::vector<int32_t> ids(row.size());
      std::iota(ids.begin(), ids.end(), 0);
      std::stable_sort(ids.begin(), ids.end(), [&](int32_t x, int32_t y) { return row[size_t(x)] > row[size_t(y)]; });
      for (size_t r = 0; r < std::min(ids.size(), 2 * width); ++r)
        candidates.push_back({live[b].cum + row[size_t(ids[r])], b, r, ids[r]});
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& x, const Candidate& y) {
      if (x.cum != y.cum) return x.cum > y.cum;
      return x.beam != y.beam ? x.beam < y.beam : x.rank < y.rank;
    });
    std::vector<Beam> next;
    for (size_t rank = 0; rank < candidates.size() && next.size() < width; ++rank) {
      const Candidate& c = candidates[rank];
      std::vector<int32_t> tokens = live[c.beam].tokens;
      tokens.push_back(c.token);
      if (c.token == s.eos) {
        if (rank < width) keep({tokens, c.cum, score_of(c.cum, tokens.size(), s.length_penalty), RequestStatus::kFinishedStopped});
        continue;
      }
      next.push_back({tokens, c.cum});
    }
    live = std::move(next);
    if (live.empty()) break;
    if (kept.size() >= width) {
      if (s.early_stopping == EarlyStopping::kWhenFull) break;
      const bool never = s.early_stopping == EarlyStopping::kNever && s.length_penalty > 0.0f;
      const double best_possible = score_of(live.front().cum, never ? size_t(s.max_tokens) : size_t(length), s.length_penalty);
      if (kept.back().score >= best_possible) break;
    }
    if (length == s.max_tokens) {
      for (const Beam& b : live) keep({b.tokens, b.cum, score_of(b.cum, b.tokens.size(), s.length_penalty), RequestStatus::kFinishedLength});
      break;
    }
  }
  return kept;
}

RequestOptions options_of(const Search& s) {
  RequestOptions o = beam_options(s.width, s.max_tokens, s.length_penalty, s.early_stopping);
  o.stop.ignore_eos = s.eos < 0;
  o.stop.eos_token_id = s.eos;
  return o;
}

EngineConfig tiny_engine_config(int32_t num_blocks, int32_t max_seqs) {
  EngineConfig c;
  c.scheduler.max_num_batched_tokens = 256;
  c.scheduler.max_num_seqs = max_seqs;
  c.scheduler.max_model_len = 32;
  c.kv.num_device_blocks = num_blocks;
  c.kv.block_size = kBlockSize;
  c.kv.watermark = 0.0;
  return c;
}

void expect_same_hypotheses(const std::vector<Hypothesis>& got, const std::vector<Hypothesis>& want,
                            const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].tokens, want[i].tokens) << label << " choice " << i;
    EXPECT_EQ(got[i].status, want[i].status) << label << " choice " << i;
    EXPECT_NEAR(got[i].cum_logprob, want[i].cum_logprob, 1e-4) << label << " choice " << i;
    EXPECT_NEAR(got[i].score, want[i].score, 1e-4) << label << " choice " << i;
    EXPECT_EQ(got[i].finish_count, 1) << label << " choice " << i;
  }
}

// With W >= V^(L-1) beams every prefix of length L - 1 stays live and the last step ranks all V^L
// continuations, so the search must return the exact best ones: enumerate them all.
TEST(EngineBeamSearch, WideEnoughBeamsFindTheExhaustiveArgmax) {
  for (const uint32_t seed : {11u, 12u}) {
    SCOPED_TRACE(seed);
    const RandomModel random = make_random_model(tiny_config(6), seed);
    const Model model = random.build();
    Scorer scorer(model);
    const std::vector<int32_t> prompt = {1, 4, 2};
    constexpr int kLength = 3, kVocab = 6, kWidth = 36, kN = 5;  // 36 = 6^2
    std::vector<std::pair<double, std::vector<int32_t>>> all;
    for (int a = 0; a < kVocab; ++a)
      for (int b = 0; b < kVocab; ++b)
        for (int c = 0; c < kVocab; ++c) {
          const std::vector<int32_t> t = {a, b, c};
          all.emplace_back(scorer.logprob(prompt, t), t);
        }
    std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first > y.first; });

    Engine engine(model, tiny_engine_config(/*num_blocks=*/96, /*max_seqs=*/64));
    engine.add_request(1, prompt, beam_options(kWidth, kLength), kN);
    const BeamResults results = run_beams(engine, {1});
    const std::vector<Hypothesis>& got = results.at(1);
    ASSERT_EQ(got.size(), size_t(kN));
    for (size_t i = 0; i < size_t(kN); ++i) {
      EXPECT_NEAR(got[i].cum_logprob, all[i].first, 1e-5) << "rank " << i;
      EXPECT_NEAR(scorer.logprob(prompt, got[i].tokens), got[i].cum_logprob, 1e-5) << "rank " << i;
      const bool clear_gap = all[i + 1].first < all[i].first - 1e-4 && (i == 0 || all[i].first < all[i - 1].first - 1e-4);
      if (clear_gap) {
        EXPECT_EQ(got[i].tokens, all[i].second) << "rank " << i;
      }
      EXPECT_EQ(got[i].status, RequestStatus::kFinishedLength);
    }
    EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
    EXPECT_EQ(engine.runner().num_tracked(), 0u);
  }
}

// Narrow beams, length penalties, EOS ending hypotheses early and every early-stopping rule: the
// engine's hypotheses (all W, best first) equal the reference's, whether each request runs with
// room to spare or all of them share a cache and slots so tight that beams wait, park, recompute
// and are preempted.
TEST(EngineBeamSearch, NarrowBeamsEqualTheReferenceSearch) {
  int early_stops = 0;
  for (const int64_t vocab : {6, 7, 8}) {
    SCOPED_TRACE(vocab);
    const RandomModel random = make_random_model(tiny_config(vocab), static_cast<uint32_t>(100 + vocab));
    const Model model = random.build();
    Scorer scorer(model);
    const std::vector<int32_t> prompt = {2, 0, static_cast<int32_t>(vocab - 1), 3, 1};
    // EOS is the most likely first token, so some hypotheses end after one token.
    const std::vector<double>& first = scorer.row(prompt);
    const auto eos = static_cast<int32_t>(std::max_element(first.begin(), first.end()) - first.begin());
    std::vector<Search> searches;
    for (const int32_t w : {1, 2, 3}) {
      searches.push_back({w, 1.0f, EarlyStopping::kHeuristic, -1, 5});
      searches.push_back({w, 0.5f, EarlyStopping::kHeuristic, eos, 5});
      searches.push_back({w, 2.0f, EarlyStopping::kWhenFull, eos, 5});
      searches.push_back({w, 1.0f, EarlyStopping::kNever, eos, 6});
      searches.push_back({w, -0.5f, EarlyStopping::kHeuristic, eos, 4});
    }
    std::vector<std::vector<Hypothesis>> want;
    for (const Search& s : searches) {
      want.push_back(reference_beam_search(scorer, prompt, s));
      for (const Hypothesis& h : want.back()) early_stops += h.status == RequestStatus::kFinishedStopped;
    }
    // Roomy: every beam of every request at once. Tight: few slots or blocks for 15 searches and
    // three greedy requests, which compete with the beams for blocks and preempt them.
    std::map<RequestId, Finished> greedy_roomy;
    uint64_t preemptions = 0;
    for (const auto& [blocks, seqs] : {std::pair{256, 64}, std::pair{12, 4}, std::pair{10, 16}, std::pair{9, 3}}) {
      SCOPED_TRACE(fmt::format("{} blocks, {} sequences", blocks, seqs));
      Engine engine(model, tiny_engine_config(blocks, seqs));
      std::set<RequestId> ids;
      for (size_t k = 0; k < searches.size(); ++k) {
        const RequestId id = 10 * (k + 1);
        engine.add_request(id, prompt, options_of(searches[k]), searches[k].width);
        ids.insert(id);
        if (k % 5 == 0) engine.add_request(1000 + k, {1, 2, 3, 4, 5, static_cast<int32_t>(k % 6)}, greedy(12));
      }
      std::map<RequestId, Finished> others;
      const BeamResults got = run_beams(engine, ids, &others);
      for (size_t k = 0; k < searches.size(); ++k) {
        const Search& s = searches[k];
        expect_same_hypotheses(got.at(10 * (k + 1)), want[k],
                               fmt::format("W={} lp={} stop={} eos={}", s.width, s.length_penalty,
                                           static_cast<int>(s.early_stopping), s.eos));
      }
      if (blocks == 256) greedy_roomy = others;
      for (const auto& [id, f] : greedy_roomy) EXPECT_EQ(others.at(id).tokens, f.tokens) << "greedy request " << id;
      EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
      EXPECT_EQ(engine.runner().num_tracked(), 0u);
      if (blocks != 256) preemptions += engine.scheduler().num_preemptions();
    }
    EXPECT_GT(preemptions, 0u) << "the tight runs must preempt";
  }
  EXPECT_GT(early_stops, 0) << "no hypothesis ended at EOS: the test would not check it";
}

}  // namespace
}  // namespace lemma::testing
