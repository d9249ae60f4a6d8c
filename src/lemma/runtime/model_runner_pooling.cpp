// ModelRunner::pool: embedding requests (sched/pooling.h) read their rows of the step's final
// hidden states, which the forward leaves in the workspace (ForwardWorkspace::normed).
#include <algorithm>

#include "lemma/runtime/model_runner.h"

namespace lemma {

void ModelRunner::pool(const StepPlan& plan, RunnerOutput& out) {
  const int64_t hidden = model_.config().hidden_size;
  int64_t offset = 0;  // the sequence's first row in the forward
  for (size_t i = 0; i < plan.scheduled.size(); ++i) {
    const ScheduledRequest& s = plan.scheduled[i];
    const int64_t rows = batch_.sequences[i].num_tokens();
    const int64_t first = offset;
    offset += rows;
    State& st = state_.at(s.id);
    if (st.pooling == Pooling::kNone) continue;
    // Prompt rows of this chunk (a pooling request computes only its prompt).
    const int64_t prompt_rows = std::clamp<int64_t>(st.num_prompt_tokens - s.num_computed_tokens, 0, rows);
    const float* x = workspace_.normed.data() + first * hidden;
    if (st.pooling == Pooling::kMean) {
      if (s.num_computed_tokens == 0) {  // the first chunk, or a recompute after preemption
        st.pooled_sum.assign(static_cast<size_t>(hidden), 0.0);
        st.pooled_rows = 0;
      }
      if (st.pooled_rows == s.num_computed_tokens && !st.pooled_sum.empty()) {
        for (int64_t r = 0; r < prompt_rows; ++r)
          for (int64_t h = 0; h < hidden; ++h) st.pooled_sum[static_cast<size_t>(h)] += x[r * hidden + h];
        st.pooled_rows += prompt_rows;
      }
    }
    if (!s.needs_sample) continue;
    auto sampled = std::find_if(out.result.sampled.begin(), out.result.sampled.end(),
                                [&](const SampledTokens& t) { return t.id == s.id; });
    if (sampled == out.result.sampled.end() || prompt_rows == 0) continue;
    std::vector<float>& e = sampled->embedding;
    if (st.pooling == Pooling::kLast) {
      e.assign(x + (prompt_rows - 1) * hidden, x + prompt_rows * hidden);
    } else if (st.pooled_rows == st.num_prompt_tokens) {  // else its sum was lost (swap): no vector
      e.resize(static_cast<size_t>(hidden));
      for (size_t h = 0; h < e.size(); ++h) e[h] = static_cast<float>(st.pooled_sum[h] / static_cast<double>(st.pooled_rows));
    }
  }
}

}  // namespace lemma
