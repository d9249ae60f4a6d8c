// Unit tests of pipeline pieces and metadata handling (no golden vectors).
#include <thread>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/tokenizer/gguf_pre_tokenizers.h"
#include "lemma/tokenizer/pre_tokenizers.h"
#include "lemma/tokenizer/tokenizer.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

TEST(GgufPreTokenizers, EveryCommonNameResolvesAndCompiles) {
  const char* names[] = {"default", "llama3", "llama-bpe", "deepseek-llm", "deepseek-coder", "deepseek-v3",
                         "falcon", "mpt", "starcoder", "gpt-2", "refact", "command-r", "qwen2", "stablelm2",
                         "olmo", "dbrx", "smaug-bpe", "poro-chat", "jais", "tekken", "chatglm-bpe", "viking",
                         "codeshell", "bloom", "gpt3-finnish", "exaone", "chameleon", "minerva-7b", "gpt-4o",
                         "superbpe", "trillion", "bailingmoe", "seed-coder", "kimi-k2", "hunyuan", "smollm",
                         "llama4", "grok-2", "glm4", "megrez", "deepseek-r1-qwen"};
  for (const char* name : names) {
    const auto* pre = tok::find_gguf_pre_tokenizer(name);
    ASSERT_NE(pre, nullptr) << name;
    ASSERT_FALSE(pre->regexes.empty()) << name;
    for (const auto& re : pre->regexes) {
      EXPECT_NO_THROW(tok::make_split(re, false, tok::SplitBehavior::kIsolated, false)) << name << ": " << re;
    }
  }
  EXPECT_EQ(tok::find_gguf_pre_tokenizer("no-such-tokenizer"), nullptr);
}

}  // namespace
}  // namespace lemma
