#include "lemma/model/config_from_gguf.h"

#include <vector>

#include <fmt/format.h>

#include "lemma/base/error.h"
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/layers/linear.h"

namespace lemma {

namespace {

class Keys {
 public:
  Keys(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  std::optional<int64_t> opt_int(std::string_view suffix) const { return file_.get_int(key(suffix)); }
  std::optional<double> opt_float(std::string_view suffix) const { return file_.get_float(key(suffix)); }
  std::optional<std::string> opt_string(std::string_view suffix) const { return file_.get_string(key(suffix)); }
  int64_t require_int(std::string_view suffix) const {
    auto v = opt_int(suffix);
    if (!v) fail<FormatError>("{}: missing metadata key {}", file_.path(), key(suffix));
    return *v;
  }
  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

 private:
  const GgufFile& file_;
  std::string arch_;
};

void read_rope_scaling(const GgufFile& file, const Keys& keys, ModelConfig& c) {
  RopeScaling& s = c.rope.scaling;
  std::string type = keys.opt_string("rope.scaling.type").value_or("none");
  double factor = keys.opt_float("rope.scaling.factor").value_or(0.0);
  if (auto legacy = keys.opt_float("rope.scale_linear"); legacy && type == "none" && *legacy != 1.0) {
    type = "linear";
    factor = *legacy;
  }
  if (type == "none" || ((type == "linear" || type == "yarn") && (factor == 0.0 || factor == 1.0))) {
    s.type = RopeScalingType::kNone;
  } else if (type == "linear") {
    s.type = RopeScalingType::kLinear;
    s.factor = factor;
  } else if (type == "yarn") {
    s.type = RopeScalingType::kYarn;
    s.factor = factor;
    s.original_max_position_embeddings =
        keys.opt_int("rope.scaling.original_context_length").value_or(c.max_position_embeddings);
    s.beta_fast = keys.opt_float("rope.scaling.yarn_beta_fast").value_or(32.0);
    s.beta_slow = keys.opt_float("rope.scaling.yarn_beta_slow").value_or(1.0);
    if (auto attn = keys.opt_float("rope.scaling.attn_factor"); attn && *attn != 1.0)
      fail<Unsupported>("{}: {} = {} is not supported", file.path(), keys.key("rope.scaling.attn_factor"), *attn);
  } else {
    fail<Unsupported>("{}: {} \"{}\" is not supported (none, linear, yarn)", file.path(),
                      keys.key("rope.scaling.type"), type);
  }
  if (const GgufTensor* freqs = file.tensor("rope_freqs.weight")) {
    // Llama-3 scaling as per-frequency divisors of the base frequencies.
    if (freqs->view.elements() != c.head_dim / 2)
      fail<FormatError>("{}: rope_freqs.weight has {} values, expected head_dim/2 = {}", file.path(),
                        freqs->view.elements(), c.head_dim / 2);
    s.freq_divisors.resize(static_cast<size_t>(c.head_dim / 2));
    layers::read_all_f32(freqs->view, s.freq_divisors);
    if (s.type == RopeScalingType::kNone) s.type = RopeScalingType::kLlama3;
  }
}

// llama.cpp's MoE keys (G27): <arch>.expert_count, expert_used_count, expert_feed_forward_length
// (else feed_forward_length), expert_shared_feed_forward_length (a shared expert; gated when
// ffn_gate_inp_shexp is there), expert_weights_norm, expert_weights_scale, expert_gating_func.
void read_moe_keys(const GgufFile& file, const Keys& keys, const ArchSpec& arch, ModelConfig& c) {
  const int64_t experts = keys.opt_int("expert_count").value_or(0);
  if (experts <= 0) return;
  MoeConfig& m = c.moe;
  m.num_experts = experts;
  m.routing.top_k = keys.require_int("expert_used_count");
  m.expert_intermediate_size = keys.opt_int("expert_feed_forward_length").value_or(c.intermediate_size);
  m.shared_intermediate_size = keys.opt_int("expert_shared_feed_forward_length").value_or(0);
  m.shared_expert_gate = m.shared_intermediate_size > 0 && file.tensor("blk.0.ffn_gate_inp_shexp.weight") != nullptr;
  m.routing.normalize_top_k = file.get_bool(keys.key("expert_weights_norm")).value_or(arch.gguf_moe_normalize_top_k);
  m.routing.routed_scaling_factor = static_cast<float>(keys.opt_float("expert_weights_scale").value_or(1.0));
  if (m.routing.routed_scaling_factor == 0.0f) m.routing.routed_scaling_factor = 1.0f;  // llama.cpp: 0 = unset
  const int64_t gating = keys.opt_int("expert_gating_func").value_or(1);
  if (gating != 1 && gating != 2)
    fail<Unsupported>("{}: {} = {} is not supported (1 softmax, 2 sigmoid)", file.path(), keys.key("expert_gating_func"),
                      gating);
  m.routing.scoring = gating == 1 ? RouterScoring::kSoftmax : RouterScoring::kSigmoid;
  m.first_dense_layers = keys.opt_int("leading_dense_block_count").value_or(0);
}

// llama.cpp's deepseek2 keys (G28): attention.kv_lora_rank makes the model MLA; key_length is
// nope + rope, value_length the value head, rope.dimension_count the rope part,
// [attention.q_lora_rank]; rope.scaling.yarn_log_multiplier = 0.1 x mscale_all_dim. llama.cpp leaves
// the YaRN cos/sin unscaled for this arch (its attn_factor cancels YaRN's) and puts mscale^2 into the
// softmax scale. MoE: expert_shared_count shared experts of the expert width, expert groups
// (expert_group_count / _used_count) scored by the group's best (softmax gating, V2) or the sum of
// its two best (sigmoid gating, V3, with exp_probs_b.bias).
void read_mla_keys(const GgufFile& file, const Keys& keys, ModelConfig& c) {
  const auto kv_lora_rank = keys.opt_int("attention.kv_lora_rank");
  if (!kv_lora_rank) return;
  MlaConfig& m = c.mla;
  m.kv_lora_rank = *kv_lora_rank;
  m.q_lora_rank = keys.opt_int("attention.q_lora_rank").value_or(0);
  m.qk_rope_head_dim = c.rope.rotary_dim;
  m.qk_nope_head_dim = c.head_dim - m.qk_rope_head_dim;
  m.v_head_dim = keys.require_int("attention.value_length");
  RopeScaling& s = c.rope.scaling;
  if (s.type == RopeScalingType::kYarn) {
    s.mscale_all_dim = keys.opt_float("rope.scaling.yarn_log_multiplier").value_or(0.0) / 0.1;
    s.attention_factor = 1.0;
  }
  m.softmax_scale = mla_softmax_scale(c.head_dim, s.type == RopeScalingType::kYarn ? s.factor : 1.0, s.mscale_all_dim);
  MoeConfig& moe = c.moe;
  if (!moe.enabled()) return;
  moe.shared_intermediate_size = moe.expert_intermediate_size * keys.opt_int("expert_shared_count").value_or(0);
  moe.shared_expert_gate = false;
  moe.naming = MoeTensorNaming::kDeepSeek;
  const int64_t groups = keys.opt_int("expert_group_count").value_or(1);
  const bool sigmoid = moe.routing.scoring == RouterScoring::kSigmoid;
  moe.score_correction_bias = file.tensor(fmt::format("blk.{}.exp_probs_b.bias", moe.first_dense_layers)) != nullptr;
  if (groups > 1) {
    moe.routing.group_score = sigmoid ? GroupScore::kTop2Sum : GroupScore::kMax;
    moe.routing.num_groups = groups;
    moe.routing.top_groups = keys.opt_int("expert_group_used_count").value_or(groups);
  }
}

}  // namespace

ModelConfig config_from_gguf(const GgufFile& file) {
  const auto arch_name = file.get_string("general.architecture");
  if (!arch_name) fail<FormatError>("{}: missing general.architecture", file.path());
  const ArchSpec* arch = find_arch_by_gguf(*arch_name);
  if (!arch)
    fail<Unsupported>("{}: unsupported architecture \"{}\"; supported: {}", file.path(), *arch_name,
                      supported_arch_names());
  const Keys keys(file, *arch_name);
  ModelConfig c;
  c.arch = std::string(arch->name);
  c.hidden_size = keys.require_int("embedding_length");
  c.num_layers = keys.require_int("block_count");
  c.intermediate_size = keys.opt_int("feed_forward_length").value_or(keys.opt_int("expert_feed_forward_length").value_or(0));
  if (c.intermediate_size == 0) keys.require_int("feed_forward_length");  // names the missing key
  c.num_heads = keys.require_int("attention.head_count");
  c.num_kv_heads = keys.opt_int("attention.head_count_kv").value_or(c.num_heads);
  c.head_dim = keys.opt_int("attention.key_length").value_or(c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
  const bool is_mla = keys.opt_int("attention.kv_lora_rank").has_value();  // value_length is MLA's v_head_dim
  if (auto value_length = keys.opt_int("attention.value_length"); !is_mla && value_length && *value_length != c.head_dim)
    fail<Unsupported>("{}: value_length {} != key_length {} is not supported", file.path(), *value_length, c.head_dim);
  c.max_position_embeddings = keys.opt_int("context_length").value_or(2048);
  c.rms_norm_eps = static_cast<float>(keys.opt_float("attention.layer_norm_rms_epsilon").value_or(1e-5));

  const GgufTensor* embedding = file.tensor("token_embd.weight");
  if (auto vocab = keys.opt_int("vocab_size")) {
    c.vocab_size = *vocab;
  } else if (const GgufValue* tokens = file.find("tokenizer.ggml.tokens"); tokens && tokens->is_array()) {
    c.vocab_size = static_cast<int64_t>(tokens->size());
  } else if (embedding) {
    c.vocab_size = embedding->view.shape[0];
  }
  c.tie_word_embeddings = file.tensor("output.weight") == nullptr;

  c.rope.theta = keys.opt_float("rope.freq_base").value_or(10000.0);
  c.rope.rotary_dim = keys.opt_int("rope.dimension_count").value_or(c.head_dim);
  c.rope.layout = arch->gguf_rope_layout;
  c.rope.max_position_embeddings = c.max_position_embeddings;
  read_rope_scaling(file, keys, c);

  if (auto window = keys.opt_int("attention.sliding_window"); window && *window > 0)
    c.sliding_window.assign(static_cast<size_t>(c.num_layers), *window);
  c.qkv_bias = arch->qkv_bias;
  c.qk_norm = arch->qk_norm;
  read_moe_keys(file, keys, *arch, c);
  read_mla_keys(file, keys, c);
  if (auto bos = file.get_int("tokenizer.ggml.bos_token_id")) c.bos_token_id = static_cast<int32_t>(*bos);
  if (auto eos = file.get_int("tokenizer.ggml.eos_token_id")) c.eos_token_id = static_cast<int32_t>(*eos);
  c.validate();
  return c;
}

}  // namespace lemma
