// Property test: random walks through the masks of a vocabulary large enough for the matcher's
// shortcuts (string-character token sets, whole trie subtrees) to fire. At every step the mask
// equals brute force (a token is allowed iff the recognizer can feed its bytes), and each finished
// text is checked by an independent validator: nlohmann's parser plus the schema's rules written
// out by hand (types, enum, required, no unknown or repeated keys).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "grammar_test_util.h"
#include "lemma/grammar/token_matcher.h"

namespace lemma::grammar::testing {
namespace {

// Single bytes (so any text can be spelled), JSON punctuation, and thousands of random ASCII
// words, some with quotes, spaces or escapes in them, so that trie subtrees are large and mixed.
TokenVocabulary random_vocab(std::mt19937& rng) {
  TokenVocabulary v;
  for (int b = 1; b < 256; ++b) v.bytes.push_back(std::string(1, static_cast<char>(b)));
  for (const char* s : {"{\"", "\": ", "\", \"", "\"}", ", ", "true", "false", "null", "\": \"", "\\n", "\\\"", "é", "日本",
                        "name", "kind", "cat"}) {
    v.bytes.push_back(s);
  }
  const std::string letters = "abcdefghijklmnopqrstuvwxyz";
  const std::string extra = " \"\\-_.,:{}0123456789";
  for (int i = 0; i < 4000; ++i) {
    std::string w;
    const int len = 2 + static_cast<int>(rng() % 7);
    for (int k = 0; k < len; ++k) {
      w += rng() % 8 == 0 ? extra[rng() % extra.size()] : letters[rng() % letters.size()];
    }
    v.bytes.push_back(w);
  }
  // Stems with hundreds of plain continuations: subtrees big enough to be taken whole.
  for (const char* stem : {"qa", "qe", "qi", "zo", "zu", "Xy"}) {
    for (int i = 0; i < 300; ++i) {
      std::string w = stem;
      const int len = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < len; ++k) w += letters[rng() % letters.size()];
      v.bytes.push_back(w);
    }
  }
  v.bytes.push_back("");  // end of text
  v.special.assign(v.bytes.size(), false);
  v.special.back() = true;
  v.end_ids = {static_cast<int32_t>(v.bytes.size() - 1)};
  return v;
}

const char* kSchema = R"({"type":"object","properties":{
    "name":{"type":"string"},"kind":{"enum":["cat","dog"]},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},
    "required":["name","kind"],"additionalProperties":false})";
// The same with extra keys of integer values: keys are where whole subtrees get taken.
const char* kOpenSchema = R"({"type":"object","properties":{
    "name":{"type":"string"},"kind":{"enum":["cat","dog"]},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},
    "required":["name","kind"],"additionalProperties":{"type":"integer"}})";

// The independent check of a finished text.
bool valid_instance(const std::string& text, bool open) {
  std::map<std::string, int> top_keys;
  int depth = 0;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, [&](int d, nlohmann::json::parse_event_t e, nlohmann::json& parsed) {
      if (e == nlohmann::json::parse_event_t::key && d == 1) ++top_keys[parsed.get<std::string>()];
      depth = d;
      return true;
    });
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  if (!j.is_object()) return false;
  for (const auto& [k, n] : top_keys) {
    if (n > 1) return false;
    if (k != "name" && k != "kind" && k != "age" && k != "tags" && !(open && j[k].is_number_integer())) return false;
  }
  if (!j.contains("name") || !j["name"].is_string()) return false;
  if (!j.contains("kind") || (j["kind"] != "cat" && j["kind"] != "dog")) return false;
  if (j.contains("age") && !j["age"].is_number_integer()) return false;
  if (j.contains("tags")) {
    if (!j["tags"].is_array()) return false;
    for (const auto& t : j["tags"]) {
      if (!t.is_string()) return false;
    }
  }
  return true;
}

TEST(MaskProperty, RandomWalksMatchBruteForceAndValidate) {
  std::mt19937 rng(1234);
  const TokenVocabulary vocab = random_vocab(rng);
  const TokenTrie trie(vocab);
  auto id_of = [&](const std::string& t) {
    return static_cast<int32_t>(std::find(vocab.bytes.begin(), vocab.bytes.end(), t) - vocab.bytes.begin());
  };
  const std::vector<int32_t> closing = {vocab.end_ids[0], id_of("\"}"), id_of("}"), id_of("\""), id_of("]"), id_of("\": "),
                                        id_of("1"), id_of("name"), id_of("kind"), id_of("cat"), id_of(", ")};
  int finished = 0;  // random walks may wander: only some reach the end
  for (const bool open : {false, true}) {
  for (PropertyOrder order : {PropertyOrder::kDefinition, PropertyOrder::kAny}) {
    JsonSchemaOptions o;
    o.property_order = order;
    o.max_whitespace = 2;
    ParserStates states(std::make_shared<const Grammar>(json_schema_grammar(nlohmann::ordered_json::parse(open ? kOpenSchema : kSchema), o)));
    MaskCache cache;
    for (int walk = 0; walk < 40; ++walk) {
      TokenMatcher m(states, vocab, trie, &cache);
      Recognizer brute(states);
      std::string text;
      for (int step = 0; step < 300; ++step) {
        const TokenMask& mask = m.next_mask();
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < vocab.size(); ++id) {
          const bool end = id == vocab.end_ids[0];
          const bool expected = end ? brute.accepting() : brute.can_feed(vocab.bytes[static_cast<size_t>(id)]);
          ASSERT_EQ(mask_allows(mask, id), expected) << "walk " << walk << " after '" << text << "' token '"
                                                     << vocab.bytes[static_cast<size_t>(id)] << "'";
          if (expected) allowed.push_back(id);
        }
        ASSERT_FALSE(allowed.empty()) << text;
        // Any allowed token; after a while, half the time the first allowed of a few closing ones
        // (the end first), so that texts finish.
        int32_t pick = allowed[rng() % allowed.size()];
        if (step > 25 && rng() % 2 == 0) {
          for (int32_t id : closing) {
            if (mask_allows(mask, id)) {
              pick = id;
              break;
            }
          }
        }
        ASSERT_TRUE(m.accept(pick));
        if (pick == vocab.end_ids[0]) {
          EXPECT_TRUE(valid_instance(text, open)) << text;
          ++finished;
          break;
        }
        ASSERT_TRUE(brute.feed(vocab.bytes[static_cast<size_t>(pick)]));
        text += vocab.bytes[static_cast<size_t>(pick)];
      }
    }
  }
  }
  EXPECT_GE(finished, 20);
}

}  // namespace
}  // namespace lemma::grammar::testing
