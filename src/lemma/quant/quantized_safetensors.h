// lemma's weight-only formats in safetensors (see weight_format.h for the per-tensor layout).
// A quantized weight "<base>.weight" [rows, cols] is stored as three tensors "<base>.qweight",
// "<base>.scales" and (asymmetric) "<base>.zeros"; other tensors keep their names and dtypes.
// The file's "__metadata__" says which format its quantized tensors use:
//   "lemma.quant.format": "lemma-weight-v1", "lemma.quant.spec": e.g. "int4-g128-asym"
// (every quantized tensor of a file has the same spec). Pure functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <functional>

#include "lemma/io/gguf.h"
#include "lemma/io/safetensors.h"
#include "lemma/quant/weight_format.h"

namespace lemma::quant {

constexpr std::string_view kQuantFormatKey = "lemma.quant.format";
constexpr std::string_view kQuantFormatValue = "lemma-weight-v1";
constexpr std::string_view kQuantSpecKey = "lemma.quant.spec";

// "<base>" of a weight name: "a.b.weight" -> "a.b"; other names are kept whole.
std::string quantized_base_name(std::string_view weight_name);

// The safetensors entries of `weight` (views into its vectors: `weight` must outlive them).
std::vector<SafetensorsTensor> quantized_tensors(const std::string& base, const QuantizedWeight& weight);
std::map<std::string, std::string> quantized_metadata(const WeightQuantSpec& spec);

// Where lemma quantized weights are read from: a safetensors file, or a GGUF file (what
// `lemma quantize` writes for a GGUF input: the source's metadata plus the two keys above as
// strings, and the same tensors, U8 ones stored as GGUF I8 with the same bytes since GGUF has no
// U8). The functions refer to the file: it must outlive the container.
struct QuantizedContainer {
  std::string path;
  std::function<std::optional<std::string>(const std::string& key)> metadata;
  std::function<const TensorView*(const std::string& name)> tensor;  // nullptr when absent
  std::vector<std::string> names;                                    // every tensor, file order
  bool u8_as_i8 = false;                                             // GGUF: U8 tensors read as I8
};
QuantizedContainer container_of(const SafetensorsFile& file);
QuantizedContainer container_of(const GgufFile& file);

// The spec a file declares; nullopt when it has no lemma quantization metadata. Throws FormatError
// for a malformed declaration.
std::optional<WeightQuantSpec> quantized_spec_of(const QuantizedContainer& file);
std::optional<WeightQuantSpec> quantized_spec_of(const SafetensorsFile& file);
// Bases of the quantized weights in `file` (names of "<base>.qweight" entries), in data order.
std::vector<std::string> quantized_weight_bases(const QuantizedContainer& file);
std::vector<std::string> quantized_weight_bases(const SafetensorsFile& file);
// Reads one quantized weight back (copies), checking dtypes and shapes; throws FormatError naming
// the tensor.
QuantizedWeight read_quantized_weight(const QuantizedContainer& file, const std::string& base,
                                      const WeightQuantSpec& spec);
QuantizedWeight read_quantized_weight(const SafetensorsFile& file, const std::string& base,
                                      const WeightQuantSpec& spec);

}  // namespace lemma::quant
