#include "lemma/model/mtp/mtp_module.h"

#include <fmt/format.h>

#include <memory>

#include "lemma/base/error.h"
#include "lemma/io/safetensors_checkpoint.h"
#include "lemma/model/config_from_hf.h"
#include "lemma/model/layers/linear.h"
#include "lemma/model/layers/rms_norm.h"

namespace lemma {

namespace {

std::vector<float> read_vector(const TensorLookup& lookup, const std::string& name, int64_t n) {
  const auto t = lookup(name);
  if (!t) fail<FormatError>("safetensors model: missing tensor {}", name);
  if (t->shape.rank != 1 || t->shape[0] != n)
    fail<FormatError>("tensor {}: expected shape [{}], got {}", name, n, t->shape.to_string());
  std::vector<float> out(static_cast<size_t>(n));
  layers::read_all_f32(*t, out);
  return out;
}

}  // namespace

MtpModule MtpModule::open(const std::filesystem::path& path, LoadMode mode, const RuntimeOptions& runtime) {
  if (!std::filesystem::is_directory(path))
    fail<Unsupported>("{}: the MTP module is read from a Hugging Face directory (GGUF conversions drop it)", path.string());
  const ModelConfig main = config_from_hf_file(path / "config.json");
  if (main.num_nextn_predict_layers < 1)
    fail<Unsupported>("{}: the model has no multi-token-prediction module (num_nextn_predict_layers 0)", path.string());
  auto file = std::make_shared<SafetensorsCheckpoint>(SafetensorsCheckpoint::open(path.string(), mode));
  const SafetensorsCheckpoint* f = file.get();
  const int64_t L = main.num_layers;
  const std::string prefix = fmt::format("model.layers.{}.", L);
  const TensorLookup raw = [f](const std::string& name) -> std::optional<TensorView> {
    const SafetensorsTensor* t = f->tensor(name);
    if (!t) return std::nullopt;
    return t->view;
  };
  // The one-layer model's names -> the module's: layer 0 is model.layers.L, the embedding, final
  // norm and head are the module's embed_tokens, shared_head.norm and shared_head.head.
  const TensorLookup renamed = [raw, prefix](const std::string& name) -> std::optional<TensorView> {
    if (name == "model.embed_tokens.weight") return raw(prefix + "embed_tokens.weight");
    if (name == "model.norm.weight") return raw(prefix + "shared_head.norm.weight");
    if (name == "lm_head.weight") return raw(prefix + "shared_head.head.weight");
    if (name.starts_with("model.layers.0.")) return raw(prefix + name.substr(15));
    return std::nullopt;
  };
  ModelConfig config = main;
  config.num_layers = 1;
  config.tie_word_embeddings = false;
  config.num_nextn_predict_layers = 0;
  config.moe.first_dense_layers = L < main.moe.first_dense_layers ? 1 : 0;
  const int64_t H = main.hidden_size;
  std::vector<float> enorm = read_vector(raw, prefix + "enorm.weight", H);
  std::vector<float> hnorm = read_vector(raw, prefix + "hnorm.weight", H);
  const auto eh = raw(prefix + "eh_proj.weight");
  if (!eh) fail<FormatError>("safetensors model: missing tensor {}eh_proj.weight", prefix);
  if (eh->shape.rank != 2 || eh->shape[0] != H || eh->shape[1] != 2 * H)
    fail<FormatError>("tensor {}eh_proj.weight: expected shape [{}, {}], got {}", prefix, H, 2 * H, eh->shape.to_string());
  // Not owns_sources: eh_proj is read straight from the mapping, which the block's re-laid matrices
  // must then not hand back.
  Model block = Model::from_tensors(std::move(config), WeightFormat::kHf, renamed, file, false, runtime);
  return MtpModule(std::move(block), std::move(enorm), std::move(hnorm), *eh);
}

void MtpModule::inputs(std::span<const float> hidden, std::span<const int32_t> next_tokens, std::span<float> u) const {
  const int64_t H = hidden_size(), n = static_cast<int64_t>(next_tokens.size());
  if (static_cast<int64_t>(hidden.size()) != n * H || static_cast<int64_t>(u.size()) != n * H)
    fail<InvalidArgument>("mtp inputs: {} hidden values and {} u values for {} tokens of {}", hidden.size(), u.size(), n, H);
  const float eps = block_.config().rms_norm_eps;
  std::vector<float> cat(static_cast<size_t>(n * 2 * H));
  for (int64_t i = 0; i < n; ++i) {
    const auto e = std::span(cat).subspan(static_cast<size_t>(i * 2 * H), static_cast<size_t>(H));
    const auto h = std::span(cat).subspan(static_cast<size_t>(i * 2 * H + H), static_cast<size_t>(H));
    const int32_t t = next_tokens[static_cast<size_t>(i)];
    if (t < 0 || t >= block_.config().vocab_size)
      fail<InvalidArgument>("mtp inputs: token id {} outside the vocabulary [0, {})", t, block_.config().vocab_size);
    layers::read_row(block_.weights().token_embedding, t, e);
    layers::rms_norm(e, 1, H, enorm_, eps, e, block_.runtime().isa);
    layers::rms_norm(hidden.subspan(static_cast<size_t>(i * H), static_cast<size_t>(H)), 1, H, hnorm_, eps, h,
                     block_.runtime().isa);
  }
  layers::linear(cat, n, eh_proj_, {}, u);
}

std::vector<float> final_hidden_states(const Model& main, std::span<const int32_t> tokens, int num_threads) {
  constexpr int64_t kBlockSize = 16;
  const auto n = static_cast<int64_t>(tokens.size());
  KvCache cache = KvCache::for_model(main.config(), (n + kBlockSize - 1) / kBlockSize, kBlockSize);
  const auto table = contiguous_block_table(n, kBlockSize);
  ForwardWorkspace ws(num_threads);
  ForwardBatch batch;
  batch.sequences.push_back({tokens, 0, table, LogitsRequest::kAll});
  std::vector<float> logits(static_cast<size_t>(n * main.config().vocab_size));
  main.forward(batch, cache, ws, logits);
  const auto H = static_cast<size_t>(main.config().hidden_size);
  return std::vector<float>(ws.head_input.begin(), ws.head_input.begin() + static_cast<ptrdiff_t>(tokens.size() * H));
}

std::vector<float> mtp_sequence_logits(const Model& main, const MtpModule& mtp, std::span<const int32_t> tokens,
                                       int num_threads) {
  if (tokens.size() < 2) fail<InvalidArgument>("mtp logits: need at least 2 tokens, got {}", tokens.size());
  const std::vector<float> hidden = final_hidden_states(main, tokens, num_threads);
  const auto n = static_cast<int64_t>(tokens.size()) - 1;
  const int64_t H = mtp.hidden_size();
  std::vector<float> u(static_cast<size_t>(n * H));
  mtp.inputs(std::span(hidden).first(u.size()), tokens.subspan(1), u);
  constexpr int64_t kBlockSize = 16;
  const Model& block = mtp.block();
  KvCache cache = KvCache::for_model(block.config(), (n + kBlockSize - 1) / kBlockSize, kBlockSize);
  const auto table = contiguous_block_table(n, kBlockSize);
  ForwardWorkspace ws(num_threads);
  ForwardBatch batch;
  batch.sequences.push_back({tokens.subspan(1), 0, table, LogitsRequest::kAll});
  batch.sequences.back().input_embeddings = u;
  std::vector<float> logits(static_cast<size_t>(n * block.config().vocab_size));
  block.forward(batch, cache, ws, logits);
  return logits;
}

}  // namespace lemma
