#include "lemma/quant/quantized_safetensors.h"

#include <cstring>

#include "lemma/base/error.h"

namespace lemma::quant {

std::string quantized_base_name(std::string_view weight_name) {
  constexpr std::string_view kSuffix = ".weight";
  if (weight_name.ends_with(kSuffix)) weight_name.remove_suffix(kSuffix.size());
  return std::string(weight_name);
}

std::vector<SafetensorsTensor> quantized_tensors(const std::string& base, const QuantizedWeight& w) {
  const int64_t groups = w.groups_per_row();
  const DType qtype = (w.spec.bits == 8 && w.spec.symmetric) ? DType::kI8 : DType::kU8;
  std::vector<SafetensorsTensor> out;
  out.push_back({base + ".qweight", TensorView{w.qweight.data(), qtype, Shape{w.rows, w.qweight_row_bytes()}}});
  out.push_back({base + ".scales", TensorView{w.scales.data(), DType::kF16, Shape{w.rows, groups}}});
  if (!w.spec.symmetric) {
    out.push_back({base + ".zeros", TensorView{w.zeros.data(), DType::kU8, Shape{w.rows, groups}}});
  }
  return out;
}

std::map<std::string, std::string> quantized_metadata(const WeightQuantSpec& spec) {
  return {{std::string(kQuantFormatKey), std::string(kQuantFormatValue)},
          {std::string(kQuantSpecKey), spec.to_string()}};
}

QuantizedContainer container_of(const SafetensorsFile& file) {
  QuantizedContainer c;
  c.path = file.path();
  c.metadata = [&file](const std::string& key) -> std::optional<std::string> {
    const auto it = file.metadata().find(key);
    if (it == file.metadata().end()) return std::nullopt;
    return it->second;
  };
  c.tensor = [&file](const std::string& name) -> const TensorView* {
    const auto* t = file.tensor(name);
    return t != nullptr ? &t->view : nullptr;
  };
  for (const auto& t : file.tensors()) c.names.push_back(t.name);
  return c;
}

QuantizedContainer container_of(const GgufFile& file) {
  QuantizedContainer c;
  c.path = file.path();
  c.metadata = [&file](const std::string& key) { return file.get_string(key); };
  c.tensor = [&file](const std::string& name) -> const TensorView* {
    const auto* t = file.tensor(name);
    return t != nullptr ? &t->view : nullptr;
  };
  for (const auto& t : file.tensors()) c.names.push_back(t.name);
  c.u8_as_i8 = true;
  return c;
}

std::optional<WeightQuantSpec> quantized_spec_of(const QuantizedContainer& file) {
  const auto format = file.metadata(std::string(kQuantFormatKey));
  if (!format) return std::nullopt;
  if (*format != kQuantFormatValue) fail<FormatError>("{}: unknown {} '{}'", file.path, kQuantFormatKey, *format);
  const auto spec_text = file.metadata(std::string(kQuantSpecKey));
  const auto spec = spec_text ? parse_weight_quant_spec(*spec_text) : std::nullopt;
  if (!spec) fail<FormatError>("{}: missing or malformed {}", file.path, kQuantSpecKey);
  return spec;
}

std::optional<WeightQuantSpec> quantized_spec_of(const SafetensorsFile& file) {
  return quantized_spec_of(container_of(file));
}

std::vector<std::string> quantized_weight_bases(const QuantizedContainer& file) {
  constexpr std::string_view kSuffix = ".qweight";
  std::vector<std::string> bases;
  for (const auto& name : file.names) {
    if (std::string_view(name).ends_with(kSuffix)) bases.push_back(name.substr(0, name.size() - kSuffix.size()));
  }
  return bases;
}

std::vector<std::string> quantized_weight_bases(const SafetensorsFile& file) {
  return quantized_weight_bases(container_of(file));
}

namespace {

const TensorView& require(const QuantizedContainer& file, const std::string& name, DType dtype, int64_t rows,
                          std::optional<int64_t> cols) {
  const auto* v = file.tensor(name);
  if (!v) fail<FormatError>("{}: quantized weight is missing '{}'", file.path, name);
  const DType want = dtype == DType::kU8 && file.u8_as_i8 ? DType::kI8 : dtype;
  if (v->dtype != want || v->shape.rank != 2 || v->shape[0] != rows || (cols && v->shape[1] != *cols)) {
    fail<FormatError>("{}: '{}' is {} {}, expected {} [{}, {}]", file.path, name, dtype_name(v->dtype),
                      v->shape.to_string(), dtype_name(want), rows, cols ? std::to_string(*cols) : "?");
  }
  return *v;
}

template <typename T>
std::vector<T> copy_of(const TensorView& v) {
  std::vector<T> out(static_cast<size_t>(v.elements()));
  std::memcpy(out.data(), v.data, v.bytes());
  return out;
}

}  // namespace

QuantizedWeight read_quantized_weight(const QuantizedContainer& file, const std::string& base,
                                      const WeightQuantSpec& spec) {
  const DType qtype = (spec.bits == 8 && spec.symmetric) ? DType::kI8 : DType::kU8;
  const auto* q = file.tensor(base + ".qweight");
  if (!q || q->shape.rank != 2) fail<FormatError>("{}: '{}.qweight' missing or not 2-D", file.path, base);
  QuantizedWeight w;
  w.spec = spec;
  w.rows = q->shape[0];
  w.cols = spec.bits == 8 ? q->shape[1] : 2 * q->shape[1];
  if (!fits(spec, w.cols)) fail<FormatError>("{}: '{}' has {} columns, which {} cannot hold", file.path, base, w.cols, spec.to_string());
  const int64_t groups = w.groups_per_row();
  w.qweight = copy_of<uint8_t>(require(file, base + ".qweight", qtype, w.rows, w.qweight_row_bytes()));
  w.scales = copy_of<uint16_t>(require(file, base + ".scales", DType::kF16, w.rows, groups));
  if (!spec.symmetric) w.zeros = copy_of<uint8_t>(require(file, base + ".zeros", DType::kU8, w.rows, groups));
  return w;
}

QuantizedWeight read_quantized_weight(const SafetensorsFile& file, const std::string& base,
                                      const WeightQuantSpec& spec) {
  return read_quantized_weight(container_of(file), base, spec);
}

}  // namespace lemma::quant
