#include "lemma/model/tensor_parallel_steps.h"

#include <array>
#include <cstring>
#include <map>
#include <span>

#include "lemma/base/error.h"
#include "lemma/dist/communicator.h"
#include "lemma/model/kv_cache.h"
#include "lemma/model/model.h"

namespace lemma {

namespace {

enum StepKind : int64_t { kStop = 0, kForward = 1 };
constexpr int64_t kWordsPerSequence = 7;  // tokens, num_cached, table, logits, parents, sinks, window

template <typename Container>
std::span<std::byte> bytes_of(Container& values) {
  return {reinterpret_cast<std::byte*>(values.data()), values.size() * sizeof(values[0])};
}

void broadcast_words(dist::Communicator& comm, std::vector<int64_t>& words) {
  std::array<int64_t, 2> header{kForward, static_cast<int64_t>(words.size())};
  comm.broadcast(bytes_of(header), 0);
  comm.broadcast(bytes_of(words), 0);
}

}  // namespace

void send_forward_step(dist::Communicator& comm, const ForwardBatch& batch, const KvCache& cache) {
  // Header words: cache id, blocks, block size, KV dtype, sequences; then per sequence its counts
  // and scalars; then every sequence's int32 lists, two to a word.
  std::vector<int64_t> words{static_cast<int64_t>(reinterpret_cast<uintptr_t>(&cache)), cache.num_blocks(),
                             cache.block_size(), static_cast<int64_t>(cache.dtype()),
                             static_cast<int64_t>(batch.sequences.size())};
  std::vector<int32_t> ints;
  for (const SequenceInput& s : batch.sequences) {
    words.insert(words.end(), {s.num_tokens(), s.num_cached, static_cast<int64_t>(s.block_table.size()),
                               static_cast<int64_t>(s.logits), static_cast<int64_t>(s.tree_parents.size()),
                               s.streaming.num_sinks, s.streaming.window});
    ints.insert(ints.end(), s.token_ids.begin(), s.token_ids.end());
    ints.insert(ints.end(), s.block_table.begin(), s.block_table.end());
    ints.insert(ints.end(), s.tree_parents.begin(), s.tree_parents.end());
  }
  const size_t first = words.size();
  words.resize(first + (ints.size() + 1) / 2);
  std::memcpy(words.data() + first, ints.data(), ints.size() * sizeof(int32_t));
  broadcast_words(comm, words);
}

void send_stop_step(dist::Communicator& comm) {
  std::array<int64_t, 2> header{kStop, 0};
  comm.broadcast(bytes_of(header), 0);
}

void receive_step(dist::Communicator& comm, ReceivedStep& step) {
  std::array<int64_t, 2> header{};
  comm.broadcast(bytes_of(header), 0);
  step.stop = header[0] == kStop;
  if (step.stop) return;
  std::vector<int64_t> words(static_cast<size_t>(header[1]));
  comm.broadcast(bytes_of(words), 0);
  if (words.size() < 5) fail<InvalidArgument>("tensor parallel: a forward step of {} words from rank 0", words.size());
  step.cache_id = static_cast<uint64_t>(words[0]);
  step.num_blocks = words[1];
  step.block_size = words[2];
  step.kv_dtype = static_cast<kernels::KvDtype>(words[3]);
  const auto num_sequences = static_cast<size_t>(words[4]);
  const size_t lists = 5 + num_sequences * kWordsPerSequence;
  if (words.size() < lists) fail<InvalidArgument>("tensor parallel: a forward step cut short ({} words)", words.size());
  size_t num_ints = 0;
  for (size_t s = 0; s < num_sequences; ++s) {
    const int64_t* w = words.data() + 5 + s * kWordsPerSequence;
    num_ints += static_cast<size_t>(w[0] + w[2] + w[4]);
  }
  step.ints.resize(num_ints);
  if ((words.size() - lists) * 2 < num_ints) fail<InvalidArgument>("tensor parallel: a forward step's lists cut short");
  std::memcpy(step.ints.data(), words.data() + lists, num_ints * sizeof(int32_t));
  step.batch.sequences.clear();
  size_t at = 0;
  const auto take = [&](int64_t n) {
    const std::span<const int32_t> list(step.ints.data() + at, static_cast<size_t>(n));
    at += static_cast<size_t>(n);
    return list;
  };
  for (size_t s = 0; s < num_sequences; ++s) {
    const int64_t* w = words.data() + 5 + s * kWordsPerSequence;
    SequenceInput seq;
    seq.token_ids = take(w[0]);
    seq.num_cached = w[1];
    seq.block_table = take(w[2]);
    seq.logits = static_cast<LogitsRequest>(w[3]);
    seq.tree_parents = take(w[4]);
    seq.streaming = {w[5], w[6]};
    step.batch.sequences.push_back(seq);
  }
}

void Model::follow(int num_threads) const {
  if (!tp_ || tp_->slices.rank == 0) fail<InvalidArgument>("Model::follow: only tensor-parallel ranks 1.. follow rank 0");
  ForwardWorkspace workspace(num_threads, runtime_.pin_threads);
  std::map<uint64_t, KvCache> caches;  // by the leader's cache: a follower's matches it block for block
  std::vector<float> logits;
  ReceivedStep step;
  for (;;) {
    receive_step(*tp_->comm, step);
    if (step.stop) return;
    auto it = caches.find(step.cache_id);
    if (it == caches.end() || it->second.num_blocks() != step.num_blocks || it->second.block_size() != step.block_size ||
        it->second.dtype() != step.kv_dtype) {
      if (it != caches.end()) caches.erase(it);
      if (caches.size() >= 4) caches.erase(caches.begin());  // the leader's earlier caches are gone by now
      it = caches.emplace(step.cache_id, KvCache::for_model(config_, step.num_blocks, step.block_size, step.kv_dtype)).first;
    }
    logits.resize(static_cast<size_t>(step.batch.num_logit_rows() * config_.vocab_size));
    forward(step.batch, it->second, workspace, logits);
  }
}

void Model::stop_followers() const {
  if (tp_ && tp_->slices.rank == 0) send_stop_step(*tp_->comm);
}

}  // namespace lemma
