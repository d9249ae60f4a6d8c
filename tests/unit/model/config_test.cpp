// ModelConfig from HF config.json and from GGUF metadata: every supported architecture and
// feature, and clear failures for what lemma does not implement.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/io/gguf_writer.h"
#include "lemma/model/config_from_gguf.h"
#include "lemma/model/config_from_hf.h"

namespace lemma {
namespace {

nlohmann::json llama_json() {
  return nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 512, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
    "max_position_embeddings": 512, "hidden_act": "silu", "tie_word_embeddings": true,
    "bos_token_id": 1, "eos_token_id": [2, 3], "torch_dtype": "bfloat16", "some_new_field": 7})");
}

template <typename E>
std::string error_of(const nlohmann::json& j) {
  try {
    config_from_hf_json(j);
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigFromHf, Llama) {
  const ModelConfig c = config_from_hf_json(llama_json());
  EXPECT_EQ(c.arch, "llama");
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope.theta, 500000.0);
  EXPECT_EQ(c.rope.layout, RopeLayout::kHalfSplit);
  EXPECT_EQ(c.rope.scaling.type, RopeScalingType::kNone);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_id, 2);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_TRUE(c.sliding_window.empty());
}

TEST(ConfigFromHf, MhaDefaultsKvHeadsToHeads) {
  auto j = llama_json();
  j.erase("num_key_value_heads");
  EXPECT_EQ(config_from_hf_json(j).num_kv_heads, 4);
}

TEST(ConfigFromHf, RopeScalingTypes) {
  auto j = llama_json();
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
  auto c = config_from_hf_json(j);
  EXPECT_EQ(c.rope.scaling.type, RopeScalingType::kLlama3);
  EXPECT_EQ(c.rope.scaling.factor, 8.0);
  EXPECT_EQ(c.rope.scaling.original_max_position_embeddings, 64);
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};  // old-style key
  EXPECT_EQ(config_from_hf_json(j).rope.scaling.type, RopeScalingType::kLinear);
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  EXPECT_EQ(config_from_hf_json(j).rope.scaling.type, RopeScalingType::kDynamicNtk);
  // YaRN: transformers replaces factor by max_position_embeddings / original (512 / 64 = 8).
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 64}};
  c = config_from_hf_json(j);
  EXPECT_EQ(c.rope.scaling.type, RopeScalingType::kYarn);
  EXPECT_EQ(c.rope.scaling.factor, 8.0);
  j["rope_scaling"] = {{"rope_type", "longrope"}, {"factor", 4.0}};
  EXPECT_NE(error_of<Unsupported>(j).find("longrope"), std::string::npos);
}

TEST(ConfigFromHf, Mistral) {
  auto j = llama_json();
  j["architectures"] = {"MistralForCausalLM"};
  j["sliding_window"] = 4096;
  const auto c = config_from_hf_json(j);
  EXPECT_EQ(c.arch, "mistral");
  ASSERT_EQ(c.sliding_window.size(), 2u);
  EXPECT_EQ(c.layer_sliding_window(1), 4096);
  j["sliding_window"] = nullptr;
  EXPECT_TRUE(config_from_hf_json(j).sliding_window.empty());
}

TEST(ConfigFromHf, Qwen2HasBiasesAndDerivedHeadDim) {
  auto j = llama_json();
  j["architectures"] = {"Qwen2ForCausalLM"};
  j["head_dim"] = 99;  // ignored by transformers' Qwen2
  j["use_sliding_window"] = true;
  j["sliding_window"] = 32;
  j["max_window_layers"] = 1;
  const auto c = config_from_hf_json(j);
  EXPECT_EQ(c.arch, "qwen2");
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.layer_sliding_window(0), 0);
  EXPECT_EQ(c.layer_sliding_window(1), 32);
}

TEST(ConfigFromHf, Qwen3HasQkNormAndIndependentHeadDim) {
  auto j = llama_json();
  j["architectures"] = {"Qwen3ForCausalLM"};
  j["head_dim"] = 32;
  const auto c = config_from_hf_json(j);
  EXPECT_EQ(c.arch, "qwen3");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.q_dim(), 128);
}

TEST(ConfigFromHf, ClearFailures) {
  auto j = llama_json();
  j["architectures"] = {"GPT2LMHeadModel"};
  j["model_type"] = "gpt2";
  EXPECT_NE(error_of<Unsupported>(j).find("GPT2LMHeadModel"), std::string::npos);
  j = llama_json();
  j["hidden_act"] = "gelu";
  EXPECT_NE(error_of<Unsupported>(j).find("gelu"), std::string::npos);
  j = llama_json();
  j["attention_bias"] = true;
  EXPECT_NE(error_of<Unsupported>(j).find("attention_bias"), std::string::npos);
  j = llama_json();
  j["quantization_config"] = {{"quant_method", "bitsandbytes"}, {"load_in_4bit", true}};
  EXPECT_NE(error_of<Unsupported>(j).find("bitsandbytes"), std::string::npos);
  j = llama_json();
  j["num_key_value_heads"] = 3;
  EXPECT_NE(error_of<InvalidArgument>(j).find("num_kv_heads"), std::string::npos);
  j = llama_json();
  j.erase("hidden_size");
  EXPECT_NE(error_of<FormatError>(j).find("hidden_size"), std::string::npos);
  j = llama_json();
  j["hidden_size"] = "64";
  EXPECT_NE(error_of<FormatError>(j).find("hidden_size"), std::string::npos);
}

GgufFile gguf_of(const GgufWriter& w) {
  return GgufFile::parse(MappedFile::from_bytes(w.to_bytes(), "test.gguf"));
}

GgufWriter llama_gguf(const std::string& arch = "llama") {
  GgufWriter w;
  w.set_string("general.architecture", arch);
  w.set_scalar<uint32_t>(arch + ".embedding_length", 64);
  w.set_scalar<uint32_t>(arch + ".block_count", 2);
  w.set_scalar<uint32_t>(arch + ".feed_forward_length", 128);
  w.set_scalar<uint32_t>(arch + ".attention.head_count", 4);
  w.set_scalar<uint32_t>(arch + ".attention.head_count_kv", 1);
  w.set_scalar<uint32_t>(arch + ".context_length", 256);
  w.set_scalar<uint32_t>(arch + ".vocab_size", 512);
  w.set_scalar<float>(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_scalar<float>(arch + ".rope.freq_base", 10000.0f);
  return w;
}

TEST(ConfigFromGguf, LlamaIsInterleavedAndTiedWithoutOutput) {
  const GgufFile f = gguf_of(llama_gguf());
  const ModelConfig c = config_from_gguf(f);
  EXPECT_EQ(c.arch, "llama");
  EXPECT_EQ(c.num_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.rope.layout, RopeLayout::kInterleaved);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_NEAR(c.rms_norm_eps, 1e-6f, 1e-12);
}

TEST(ConfigFromGguf, QwenArchsAreHalfSplit) {
  auto w = llama_gguf("qwen3");
  w.set_scalar<uint32_t>("qwen3.attention.key_length", 32);
  w.set_scalar<uint32_t>("qwen3.attention.value_length", 32);
  const auto c = config_from_gguf(gguf_of(w));
  EXPECT_EQ(c.arch, "qwen3");
  EXPECT_EQ(c.rope.layout, RopeLayout::kHalfSplit);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_TRUE(config_from_gguf(gguf_of(llama_gguf("qwen2"))).qkv_bias);
}

TEST(ConfigFromGguf, RopeScalingKeys) {
  auto w = llama_gguf();
  w.set_string("llama.rope.scaling.type", "yarn");
  w.set_scalar<float>("llama.rope.scaling.factor", 4.0f);
  w.set_scalar<uint32_t>("llama.rope.scaling.original_context_length", 64);
  auto c = config_from_gguf(gguf_of(w));
  EXPECT_EQ(c.rope.scaling.type, RopeScalingType::kYarn);
  EXPECT_EQ(c.rope.scaling.factor, 4.0);
  EXPECT_EQ(c.rope.scaling.original_max_position_embeddings, 64);

  auto w2 = llama_gguf();
  const std::vector<float> divisors(8, 2.0f);
  w2.add_tensor("rope_freqs.weight", DType::kF32, Shape{8},
                std::span(reinterpret_cast<const uint8_t*>(divisors.data()), divisors.size() * 4));
  c = config_from_gguf(gguf_of(w2));
  EXPECT_EQ(c.rope.scaling.type, RopeScalingType::kLlama3);
  EXPECT_EQ(c.rope.scaling.freq_divisors, divisors);

  auto w3 = llama_gguf();
  w3.set_string("llama.rope.scaling.type", "su");
  EXPECT_THROW(config_from_gguf(gguf_of(w3)), Unsupported);
}

// A llama GGUF with expert keys is Mixtral (G27): renormalised top-k unless expert_weights_norm says
// otherwise; the experts-per-token key is required and named when missing.
TEST(ConfigFromGguf, MixtureOfExpertsKeys) {
  auto w = llama_gguf();
  w.set_scalar<uint32_t>("llama.expert_count", 8);
  try {
    config_from_gguf(gguf_of(w));
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("llama.expert_used_count"), std::string::npos) << e.what();
  }
  w.set_scalar<uint32_t>("llama.expert_used_count", 2);
  const ModelConfig c = config_from_gguf(gguf_of(w));
  EXPECT_EQ(c.moe.num_experts, 8);
  EXPECT_EQ(c.moe.routing.top_k, 2);
  EXPECT_EQ(c.moe.expert_intermediate_size, c.intermediate_size);
  EXPECT_TRUE(c.moe.routing.normalize_top_k);
  EXPECT_EQ(c.moe.routing.scoring, RouterScoring::kSoftmax);
  const auto with_gating = [](uint32_t gating) {
    auto g = llama_gguf();
    g.set_scalar<uint32_t>("llama.expert_count", 8);
    g.set_scalar<uint32_t>("llama.expert_used_count", 2);
    g.set_scalar<bool>("llama.expert_weights_norm", false);
    g.set_scalar<uint32_t>("llama.expert_gating_func", gating);
    return g;
  };
  const ModelConfig sigmoid = config_from_gguf(gguf_of(with_gating(2)));
  EXPECT_FALSE(sigmoid.moe.routing.normalize_top_k);
  EXPECT_EQ(sigmoid.moe.routing.scoring, RouterScoring::kSigmoid);
  EXPECT_THROW(config_from_gguf(gguf_of(with_gating(3))), Unsupported);
}

TEST(ConfigFromGguf, UnknownArchitecture) {
  GgufWriter w;
  w.set_string("general.architecture", "falcon");
  try {
    config_from_gguf(gguf_of(w));
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("falcon"), std::string::npos);
  }
}

}  // namespace
}  // namespace lemma
