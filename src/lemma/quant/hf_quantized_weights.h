// A Hugging Face GPTQ / AWQ / FP8 checkpoint (or the GGUF container `lemma quantize` writes for a
// GGUF input, which keeps the quantization_config under kHfQuantConfigKey) as TensorViews the
// matmul kernels consume: Model::open serves it through find(). Converted once at open:
//   GPTQ/AWQ: lossless 32-value blocks (symmetric: GGUF Q4_0/Q8_0; asymmetric: lemma i4z32/i8z32)
//     when every aligned run of 32 inputs is in one group (always, without act-order, for groups of
//     32/64/128 or one group). GPTQ act-order scatters each group over k: such a matrix is served
//     with its inputs sorted by group, and "<base>.input_order" (I32 [K]) names the input each
//     column reads (y = W . x[input_order]; listed by reordered()). Otherwise (groups that are not
//     whole blocks in any order, K not whole blocks) the exact f32 values — listed by widened();
//   FP8: bf16 (each value e4m3 * scale rounded once to nearest even).
// Other tensors (embeddings, norms, biases, kept matrices) are served as stored.
// Move-only; find() is thread-safe; views live as long as owner().
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "lemma/base/mapped_file.h"
#include "lemma/io/gguf.h"
#include "lemma/io/safetensors_checkpoint.h"
#include "lemma/quant/hf_quant_config.h"

namespace lemma::quant {

// The suffix of a matrix's input order ("<base>.input_order" beside "<base>.weight").
inline constexpr std::string_view kInputOrderSuffix = ".input_order";

class HfQuantizedWeights {
 public:
  // `path`: an HF directory / .safetensors / index (the config comes from config.json's
  // quantization_config, passed in), or a .gguf container (config from its metadata; `config`
  // ignored). Throws FormatError naming the tensor for missing, mis-shaped or out-of-range parts.
  static HfQuantizedWeights open(const std::string& path, const std::optional<HfQuantConfig>& config,
                                 LoadMode mode = LoadMode::kLazyMmap);

  std::optional<TensorView> find(const std::string& name) const;
  const HfQuantConfig& config() const { return config_; }
  // "<base>.weight" names of the converted weights, and of those served as f32 (not whole blocks).
  const std::vector<std::string>& converted() const { return converted_; }
  const std::vector<std::string>& widened() const { return widened_; }
  // "<base>.weight" names of those served with an input order (act-order, see above).
  const std::vector<std::string>& reordered() const { return reordered_; }
  std::shared_ptr<const void> owner() const { return state_; }

 private:
  struct State {
    std::optional<SafetensorsCheckpoint> safetensors;
    std::optional<GgufFile> gguf;
    std::map<std::string, std::vector<uint8_t>, std::less<>> bytes;  // by "<base>.weight" / ".input_order"
    std::map<std::string, TensorView, std::less<>> views;
  };
  HfQuantConfig config_;
  std::vector<std::string> converted_, widened_, reordered_;
  std::shared_ptr<State> state_;
};

// The quantization_config a GGUF container declares; nullopt when it has none.
std::optional<HfQuantConfig> hf_quant_config_of(const GgufFile& file);
// The GPTQ/AWQ/FP8 quantization_config of a config.json; nullopt when it has none or another
// method. Throws FormatError / Unsupported (naming the field) for a malformed or unsupported one.
std::optional<HfQuantConfig> hf_quant_config_of_file(const std::filesystem::path& config_json);

}  // namespace lemma::quant
