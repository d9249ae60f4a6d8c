// `lemma bench grammar --tokenizer M DIR [--json]`: the MaskBench method (see
// ../shared/data/maskbench/README.md) over a directory of its files, on one thread. For each file
// the schema is compiled (time to first mask, TTFM); each test instance is serialised as Python's
// json.dumps does, tokenised without special tokens, and fed token by token, timing each mask
// (time between masks, TBM) and checking the next token is allowed; the end must be allowed
// exactly when the instance is valid. Objects take their properties in any order by default
// (PropertyOrder::kAny): JSON Schema fixes no order, MaskBench writes each instance's properties in
// the instance's order, and kAny accepts exactly what a validator accepts; `--property-order
// definition` measures the serving default instead.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "lemma/base/error.h"
#include "lemma/grammar/tokenizer_vocabulary.h"
#include "lemma/grammar/json_schema.h"
#include "lemma/grammar/json_text.h"
#include "lemma/grammar/token_matcher.h"
#include "lemma/tokenizer/tokenizer.h"

namespace lemma::cli {

namespace {

using ordered_json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct GrammarBenchFlags {
  std::string tokenizer;
  std::string dir;
  bool json = false;
  bool verbose = false;  // each compile error and each test decided wrong, on stderr
  std::string property_order = "any";
  std::string shard;  // "I/N": only the files whose index in name order is I mod N
};

// Keeps the files of shard "I/N" (a whole directory split over several runs, e.g. parallel tests).
void keep_shard(const std::string& shard, std::vector<std::filesystem::path>& files) {
  if (shard.empty()) return;
  size_t i = 0, n = 0;
  if (std::sscanf(shard.c_str(), "%zu/%zu", &i, &n) != 2 || n == 0 || i >= n) {
    fail<InvalidArgument>("bench grammar: --shard '{}' is not I/N with 0 <= I < N", shard);
  }
  std::vector<std::filesystem::path> kept;
  for (size_t k = i; k < files.size(); k += n) kept.push_back(files[k]);
  files = std::move(kept);
}

// Python's json.dumps(value, ensure_ascii=False): ", " and ": " separators, keys in order.
void python_dumps(const ordered_json& v, std::string& out) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      if (!first) out += ", ";
      first = false;
      out += grammar::json_quote(k);
      out += ": ";
      python_dumps(x, out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      python_dumps(v[i], out);
    }
    out += ']';
  } else if (v.is_string()) {
    out += grammar::json_quote(v.get<std::string>());
  } else {
    out += v.dump();
  }
}

double percentile(std::vector<double>& xs, double p) {
  if (xs.empty()) return 0;
  const size_t i = std::min(xs.size() - 1, static_cast<size_t>(p * static_cast<double>(xs.size())));
  std::nth_element(xs.begin(), xs.begin() + static_cast<long>(i), xs.end());
  return xs[i];
}

double average(const std::vector<double>& xs) {
  double s = 0;
  for (double x : xs) s += x;
  return xs.empty() ? 0 : s / static_cast<double>(xs.size());
}

double micros_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

int run_bench_grammar(const GrammarBenchFlags& f) {
  const Tokenizer tok = Tokenizer::from_hf_dir(f.tokenizer);
  const grammar::TokenVocabulary vocab = grammar::tokenizer_vocabulary(tok);
  if (vocab.end_ids.empty()) fail<InvalidArgument>("bench grammar: the tokenizer at {} has no EOS token", f.tokenizer);
  const grammar::TokenTrie trie(vocab);
  const int32_t eos = vocab.end_ids[0];
  grammar::JsonSchemaOptions options;
  options.property_order = f.property_order == "definition" ? grammar::PropertyOrder::kDefinition : grammar::PropertyOrder::kAny;

  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(f.dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  keep_shard(f.shard, files);
  if (files.empty()) fail<InvalidArgument>("bench grammar: no .json files in {}", f.dir);

  size_t compiled = 0, passing = 0, valid_rejected = 0, invalid_accepted = 0, masks = 0;
  std::vector<double> ttfm, tbm;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    std::fprintf(stderr, "\r[%zu/%zu] %-60s", fi + 1, files.size(), files[fi].filename().string().c_str());
    std::ifstream in(files[fi]);
    std::stringstream ss;
    ss << in.rdbuf();
    const ordered_json doc = ordered_json::parse(ss.str());
    std::unique_ptr<grammar::ParserStates> states;
    grammar::MaskCache cache(2048);
    try {
      const auto t0 = Clock::now();
      auto g = std::make_shared<const grammar::Grammar>(grammar::json_schema_grammar(doc.at("schema"), options));
      states = std::make_unique<grammar::ParserStates>(g);
      grammar::TokenMatcher first(*states, vocab, trie, &cache);
      first.next_mask();
      ttfm.push_back(micros_since(t0));
    } catch (const Error& e) {
      if (f.verbose) std::fprintf(stderr, "\n%s: not compiled: %s\n", files[fi].filename().string().c_str(), e.what());
      continue;  // not compiled: counted, never passing
    }
    ++compiled;
    bool all_right = true;
    size_t test_index = 0;
    for (const auto& test : doc.value("tests", ordered_json::array())) {
      ++test_index;
      const bool valid = test.at("valid").get<bool>();
      std::string text;
      bool accepted = true;
      try {
        python_dumps(test.at("data"), text);
        const std::vector<int32_t> ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/false);
        grammar::TokenMatcher m(*states, vocab, trie, &cache);
        for (int32_t id : ids) {
          const auto t0 = Clock::now();
          const grammar::TokenMask& mask = m.next_mask();
          tbm.push_back(micros_since(t0));
          ++masks;
          if (!grammar::mask_allows(mask, id) || !m.accept(id)) {
            accepted = false;
            break;
          }
        }
        if (accepted) {
          const auto t0 = Clock::now();
          const grammar::TokenMask& mask = m.next_mask();
          tbm.push_back(micros_since(t0));
          ++masks;
          accepted = grammar::mask_allows(mask, eos);
        }
      } catch (const std::exception&) {
        accepted = false;
      }
      if (valid && !accepted) ++valid_rejected;
      if (!valid && accepted) ++invalid_accepted;
      if (valid != accepted) {
        all_right = false;
        if (f.verbose) {
          std::fprintf(stderr, "\n%s: test %zu (%s) %s: %s\n", files[fi].filename().string().c_str(), test_index,
                       valid ? "valid" : "invalid", accepted ? "accepted" : "rejected", text.c_str());
        }
      }
    }
    if (all_right) ++passing;
  }
  std::fprintf(stderr, "\n");

  ordered_json out;
  out["schemas"] = files.size();
  out["compiled"] = compiled;
  out["passing"] = passing;
  out["valid_rejected"] = valid_rejected;
  out["invalid_accepted"] = invalid_accepted;
  out["masks"] = masks;
  const double ttfm_avg = average(ttfm), tbm_avg = average(tbm);
  out["ttfm_us"] = {{"avg", ttfm_avg}, {"p50", percentile(ttfm, 0.5)}, {"p99", percentile(ttfm, 0.99)}};
  out["tbm_us"] = {{"avg", tbm_avg}, {"p50", percentile(tbm, 0.5)}, {"p99", percentile(tbm, 0.99)}, {"p999", percentile(tbm, 0.999)}};
  if (f.json) {
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::printf("schemas           %zu\ncompiled          %zu\npassing           %zu\nvalid rejected    %zu\ninvalid accepted  %zu\nmasks             %zu\n",
              files.size(), compiled, passing, valid_rejected, invalid_accepted, masks);
  std::printf("TTFM us           avg %.1f  p50 %.1f  p99 %.1f\n", ttfm_avg, out["ttfm_us"]["p50"].get<double>(), out["ttfm_us"]["p99"].get<double>());
  std::printf("TBM us            avg %.1f  p50 %.1f  p99 %.1f  p99.9 %.1f\n", tbm_avg, out["tbm_us"]["p50"].get<double>(),
              out["tbm_us"]["p99"].get<double>(), out["tbm_us"]["p999"].get<double>());
  return 0;
}

}  // namespace

void register_bench_grammar(CLI::App* bench) {
  auto flags = std::make_shared<GrammarBenchFlags>();
  auto* sub = bench->add_subcommand("grammar", "MaskBench: JSON-schema token masks over a directory of its files");
  sub->add_option("--tokenizer", flags->tokenizer, "Hugging Face tokenizer directory")->required();
  sub->add_option("dir", flags->dir, "Directory of MaskBench .json files")->required();
  sub->add_flag("--json", flags->json, "One JSON object");
  sub->add_option("--property-order", flags->property_order, "Object properties in 'any' order (what a validator accepts) or in 'definition' order")
      ->check(CLI::IsMember({"any", "definition"}));
  sub->add_option("--shard", flags->shard, "Only the files I, I+N, I+2N, ... in name order (I/N)");
  sub->add_flag("--verbose,-v", flags->verbose, "Print each compile error and each test decided wrong on stderr");
  bind(sub, [flags] { return run_bench_grammar(*flags); });
}

}  // namespace lemma::cli
