#include "lemma/io/gguf_writer.h"

#include <algorithm>
#include <memory>

#include "lemma/base/error.h"
#include "lemma/io/file_write.h"
#include "lemma/io/gguf_encoder.h"

namespace lemma {

template <typename T>
GgufValue make_gguf_value(std::string key, std::span<const T> values, bool is_array) {
  constexpr auto type = gguf_type_of<T>();
  if (!is_array && values.size() != 1) fail<InvalidArgument>("GGUF scalar '{}' needs exactly one value", key);
  if constexpr (std::is_floating_point_v<T>) {
    return GgufValue::floats(std::move(key), type, is_array, std::vector<double>(values.begin(), values.end()));
  } else {
    std::vector<uint64_t> raw(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      // Sign-extend signed values: the 64-bit pattern GgufValue stores.
      if constexpr (std::is_signed_v<T>) raw[i] = static_cast<uint64_t>(static_cast<int64_t>(values[i]));
      else raw[i] = static_cast<uint64_t>(values[i]);
    }
    return GgufValue::integers(std::move(key), type, is_array, std::move(raw));
  }
}

#define LEMMA_GGUF_INSTANTIATE(T) template GgufValue make_gguf_value<T>(std::string, std::span<const T>, bool);
LEMMA_GGUF_INSTANTIATE(bool)
LEMMA_GGUF_INSTANTIATE(uint8_t)
LEMMA_GGUF_INSTANTIATE(int8_t)
LEMMA_GGUF_INSTANTIATE(uint16_t)
LEMMA_GGUF_INSTANTIATE(int16_t)
LEMMA_GGUF_INSTANTIATE(uint32_t)
LEMMA_GGUF_INSTANTIATE(int32_t)
LEMMA_GGUF_INSTANTIATE(uint64_t)
LEMMA_GGUF_INSTANTIATE(int64_t)
LEMMA_GGUF_INSTANTIATE(float)
LEMMA_GGUF_INSTANTIATE(double)
#undef LEMMA_GGUF_INSTANTIATE

GgufValue make_gguf_string(std::string key, std::string value) {
  return GgufValue::strings(std::move(key), false, {std::move(value)});
}

GgufValue make_gguf_strings(std::string key, std::vector<std::string> values) {
  return GgufValue::strings(std::move(key), true, std::move(values));
}

void GgufWriter::set(GgufValue value) {
  if (value.key().empty()) fail<InvalidArgument>("GGUF metadata keys must not be empty");
  if (keys_.count(value.key())) fail<InvalidArgument>("duplicate GGUF metadata key '{}'", value.key());
  if (value.key() == "general.alignment") {
    if (value.type() != GgufValueType::kU32) fail<InvalidArgument>("general.alignment must be a u32");
    const uint64_t a = value.as_uint();
    if (a == 0 || (a & (a - 1)) != 0) fail<InvalidArgument>("general.alignment {} is not a power of two", a);
    alignment_ = a;
  }
  keys_.insert(value.key());
  metadata_.push_back(std::move(value));
}

void GgufWriter::set_array(std::string key, const std::vector<bool>& values) {
  const std::unique_ptr<bool[]> copy(new bool[values.size()]);
  std::copy(values.begin(), values.end(), copy.get());
  set_array<bool>(std::move(key), std::span<const bool>(copy.get(), values.size()));
}

void GgufWriter::add_tensor(std::string name, DType dtype, const Shape& shape, std::span<const uint8_t> data) {
  const auto ggml_type = dtype_to_ggml(dtype);
  if (!ggml_type) fail<InvalidArgument>("tensor '{}': dtype {} has no GGUF type", name, dtype_name(dtype));
  if (shape.rank < 1 || shape.rank > kGgufMaxDims)
    fail<InvalidArgument>("tensor '{}': rank {} (GGUF allows 1..{})", name, shape.rank, kGgufMaxDims);
  for (int d = 0; d < shape.rank; ++d)
    if (shape[d] < 1) fail<InvalidArgument>("tensor '{}': dimension {} is {}", name, d, shape[d]);
  const auto& info = dtype_info(dtype);
  if (shape[shape.rank - 1] % static_cast<int64_t>(info.block_elements) != 0)
    fail<InvalidArgument>("tensor '{}': row length {} is not a multiple of the {} block size {}", name,
                          shape[shape.rank - 1], info.name, info.block_elements);
  const auto bytes = dtype_bytes(dtype, static_cast<uint64_t>(shape.elements()));
  if (!bytes || *bytes != data.size())
    fail<InvalidArgument>("tensor '{}': {} {} needs {} bytes, got {}", name, shape.to_string(), info.name,
                          bytes.value_or(0), data.size());
  if (tensor_names_.count(name)) fail<InvalidArgument>("duplicate GGUF tensor name '{}'", name);
  tensor_names_.insert(name);
  tensors_.push_back({std::move(name), *ggml_type, shape, std::vector<uint8_t>(data.begin(), data.end())});
}

void GgufWriter::add_tensor(std::string name, const TensorView& view) {
  add_tensor(std::move(name), view.dtype, view.shape, {view.bytes_ptr(), static_cast<size_t>(view.bytes())});
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  GgufEncoder out;
  out.u32(kGgufMagic).u32(3).u64(tensors_.size()).u64(metadata_.size());
  for (const auto& v : metadata_) out.string(v.key()).value(v);
  uint64_t offset = 0;  // relative to the data section; each tensor starts aligned
  for (const auto& t : tensors_) {
    out.string(t.name).u32(static_cast<uint32_t>(t.shape.rank));
    for (int d = t.shape.rank - 1; d >= 0; --d) out.u64(static_cast<uint64_t>(t.shape[d]));  // innermost first
    out.u32(t.ggml_type).u64(offset);
    offset += t.data.size() + GgufEncoder::padding(t.data.size(), alignment_);
  }
  out.pad_to(alignment_);
  for (const auto& t : tensors_) out.raw(t.data.data(), t.data.size()).pad_to(alignment_);
  return out.take();
}

void GgufWriter::write(const std::string& path) const {
  const auto bytes = to_bytes();
  write_file_atomically(path, bytes);
}

}  // namespace lemma
