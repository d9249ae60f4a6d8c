#include "lemma/bench/serving/workload.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "lemma/base/error.h"
#include "lemma/bench/serving/random.h"

namespace lemma::bench::serving {

namespace {
// Common words that GPT-2, Llama and Qwen tokenizers each encode as one token after a space.
constexpr std::array<std::string_view, 96> kWords = {
    "the",   "of",    "and",   "to",    "in",    "is",    "was",   "for",   "on",    "with",  "as",    "by",
    "at",    "from",  "his",   "her",   "they",  "we",    "you",   "this",  "that",  "which", "there", "their",
    "time",  "year",  "people", "way",  "day",   "man",   "thing", "world", "life",  "hand",  "part",  "child",
    "eye",   "place", "week",  "case",  "point", "number", "group", "house", "water", "city",  "story", "word",
    "good",  "new",   "first", "last",  "long",  "great", "little", "own",  "other", "old",   "right", "big",
    "high",  "small", "large", "next",  "early", "young", "few",   "public", "same", "able",  "make",  "know",
    "take",  "see",   "come",  "think", "look",  "want",  "give",  "use",   "find",  "tell",  "ask",   "work",
    "seem",  "feel",  "try",   "leave", "call",  "keep",  "write", "read",  "run",   "move",  "play",  "light"};

int64_t draw_length(SeededRandom& rng, int64_t len, double ratio) {
  if (ratio == 0.0 || len == 0) return len;
  const auto lo = std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(len) * (1.0 - ratio))));
  const auto hi = std::max(lo, static_cast<int64_t>(std::ceil(static_cast<double>(len) * (1.0 + ratio))));
  return rng.uniform_int(lo, hi);
}

void append_words(std::string& out, int64_t count, SeededRandom& rng) {
  for (int64_t i = 0; i < count; ++i) {
    if (!out.empty()) out += ' ';
    out += kWords[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(kWords.size()) - 1))];
  }
}
}  // namespace

std::string seeded_words(int64_t count, uint64_t seed) {
  SeededRandom rng(seed);
  std::string out;
  append_words(out, count, rng);
  return out;
}

void check_workload(const WorkloadSpec& spec) {
  if (spec.num_prompts < 1) throw InvalidArgument("--num-prompts must be >= 1");
  if (spec.input_len < 1) throw InvalidArgument("--input-len must be >= 1");
  if (spec.output_len < 1) throw InvalidArgument("--output-len must be >= 1");
  if (!(spec.range_ratio >= 0.0 && spec.range_ratio < 1.0)) {
    throw InvalidArgument("--random-range-ratio must be in [0, 1), got " + std::to_string(spec.range_ratio));
  }
  if (spec.shared_prefix_len < 0) throw InvalidArgument("--shared-prefix-len must be >= 0");
  if (spec.num_prefixes < 1) throw InvalidArgument("--num-prefixes must be >= 1");
  if (!(spec.shared_prefix_fraction >= 0.0 && spec.shared_prefix_fraction <= 1.0)) {
    throw InvalidArgument("--shared-prefix-fraction must be in [0, 1]");
  }
}

std::vector<WorkItem> make_workload(const WorkloadSpec& spec) {
  check_workload(spec);
  std::vector<std::string> prefixes;
  if (spec.shared_prefix_len > 0) {
    for (int64_t k = 0; k < spec.num_prefixes; ++k) {
      prefixes.push_back(seeded_words(spec.shared_prefix_len, spec.seed * 1000003 + static_cast<uint64_t>(k) + 1));
    }
  }
  // The first round(fraction * n) requests in a seeded shuffle get a prefix, so the share is exact.
  const auto num_shared = static_cast<int64_t>(std::llround(spec.shared_prefix_fraction * static_cast<double>(spec.num_prompts)));
  SeededRandom rng(spec.seed);
  std::vector<int64_t> order(static_cast<size_t>(spec.num_prompts));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(i) - 1))]);
  std::vector<bool> shares(order.size(), false);
  for (int64_t i = 0; i < num_shared && !prefixes.empty(); ++i) shares[static_cast<size_t>(order[static_cast<size_t>(i)])] = true;

  std::vector<WorkItem> items(order.size());
  int next_prefix = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    WorkItem& w = items[i];
    if (shares[i]) {
      w.prefix_group = next_prefix;
      next_prefix = static_cast<int>((next_prefix + 1) % spec.num_prefixes);
      w.prompt = prefixes[static_cast<size_t>(w.prefix_group)];
      w.input_words = spec.shared_prefix_len;
    }
    const int64_t own = draw_length(rng, spec.input_len, spec.range_ratio);
    append_words(w.prompt, own, rng);
    w.input_words += own;
    w.max_tokens = draw_length(rng, spec.output_len, spec.range_ratio);
  }
  return items;
}

}  // namespace lemma::bench::serving
