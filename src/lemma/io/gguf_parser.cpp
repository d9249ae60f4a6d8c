// GGUF parsing and validation (spec: github.com/ggml-org/ggml docs/gguf.md).
// Layout: magic u32, version u32, tensor_count u64, kv_count u64, kv pairs, tensor infos, padding to
// `general.alignment`, then the data section. All integers little-endian.
// Every count is checked against the bytes left before anything is reserved: a 2^60 "array length"
// in a 100-byte file fails immediately instead of exhausting memory.
#include <algorithm>
#include <numeric>

#include "lemma/io/byte_reader.h"
#include "lemma/io/gguf.h"

namespace lemma {

namespace {
// Smallest encodings, used to bound counts by the bytes that remain.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // empty key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, n_dims, one dim, type, offset
constexpr uint64_t kMaxKeyBytes = 65535;                 // the spec's limit on key length

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
}  // namespace

class GgufParser {
 public:
  explicit GgufParser(GgufFile& out)
      : out_(out), name_(out.file_.path()), in_(out.file_.bytes(), name_) {}

  void run() {
    uint64_t tensor_count = 0, kv_count = 0;
    read_header(tensor_count, kv_count);
    read_metadata(kv_count);
    read_tensor_infos(tensor_count);
    place_tensors();
  }

 private:
  void read_header(uint64_t& tensor_count, uint64_t& kv_count) {
    if (in_.size() < 4) fail<FormatError>("{}: not a GGUF file: only {} bytes", name_, in_.size());
    const auto magic = in_.read<uint32_t>("magic");
    if (magic != kGgufMagic) {
      const auto* b = out_.file_.data();
      fail<FormatError>("{}: not a GGUF file: magic is {:02x} {:02x} {:02x} {:02x}, expected 'GGUF'", name_, b[0],
                        b[1], b[2], b[3]);
    }
    const auto version = in_.read<uint32_t>("version");
    if (version == 1)
      fail<FormatError>("{}: GGUF version 1 is not supported (it uses 32-bit counts); re-convert to v3", name_);
    if (version != 2 && version != 3) {
      const uint32_t swapped = __builtin_bswap32(version);
      if (swapped == 2 || swapped == 3)
        fail<FormatError>("{}: big-endian GGUF (version {}) is not supported", name_, swapped);
      fail<FormatError>("{}: unsupported GGUF version {} (expected 2 or 3)", name_, version);
    }
    out_.version_ = version;
    tensor_count = in_.read<uint64_t>("tensor count");
    kv_count = in_.read<uint64_t>("metadata count");
    if (kv_count > in_.remaining() / kMinKvBytes)
      fail<FormatError>("{}: metadata count {} is impossible: only {} bytes remain", name_, kv_count, in_.remaining());
    if (tensor_count > in_.remaining() / kMinTensorInfoBytes)
      fail<FormatError>("{}: tensor count {} is impossible: only {} bytes remain", name_, tensor_count,
                        in_.remaining());
  }

  void read_metadata(uint64_t kv_count) {
    out_.metadata_.reserve(static_cast<size_t>(kv_count));
    for (uint64_t i = 0; i < kv_count; ++i) {
      const size_t at = in_.position();
      std::string key = in_.read_string(fmt::format("key of metadata entry {}", i));
      if (key.empty()) fail<FormatError>("{}: metadata entry {} at offset {} has an empty key", name_, i, at);
      if (key.size() > kMaxKeyBytes)
        fail<FormatError>("{}: metadata key at offset {} is {} bytes long (limit {})", name_, at, key.size(),
                          kMaxKeyBytes);
      if (out_.key_index_.count(key)) fail<FormatError>("{}: duplicate metadata key '{}'", name_, key);
      const auto type = in_.read<uint32_t>("metadata value type");
      GgufValue value = read_value(key, type);
      if (key == "general.alignment") apply_alignment(value);
      out_.key_index_.emplace(key, out_.metadata_.size());
      out_.metadata_.emplace_back(std::move(key), std::move(value));
    }
  }

  GgufValueType checked_type(const std::string& key, uint32_t type) {
    if (!gguf_type_name(type))
      fail<FormatError>("{}: metadata key '{}' has unknown value type {} (expected 0..12)", name_, key, type);
    return static_cast<GgufValueType>(type);
  }

  GgufValue read_value(const std::string& key, uint32_t raw_type) {
    const auto type = checked_type(key, raw_type);
    if (type != GgufValueType::kArray) return read_elements(key, type, 1, false);
    const auto element_type = checked_type(key, in_.read<uint32_t>("array element type"));
    if (element_type == GgufValueType::kArray)
      fail<FormatError>("{}: metadata key '{}' is a nested array (not supported)", name_, key);
    const auto count = in_.read<uint64_t>("array length");
    const uint64_t min_bytes = element_type == GgufValueType::kString ? 8 : gguf_scalar_bytes(element_type);
    if (count > in_.remaining() / min_bytes)
      fail<FormatError>("{}: metadata key '{}' claims {} {} elements but only {} bytes remain", name_, key, count,
                        gguf_type_name(element_type), in_.remaining());
    return read_elements(key, element_type, count, true);
  }

  GgufValue read_elements(const std::string& key, GgufValueType type, uint64_t count, bool is_array) {
    const std::string what = fmt::format("value of '{}'", key);
    const auto n = static_cast<size_t>(count);
    switch (type) {
      case GgufValueType::kString: {
        std::vector<std::string> v;
        v.reserve(n);
        for (size_t i = 0; i < n; ++i) v.push_back(in_.read_string(what));
        return GgufValue::strings(key, is_array, std::move(v));
      }
      case GgufValueType::kF32: {
        std::vector<double> v(n);
        for (auto& x : v) x = in_.read<float>(what);
        return GgufValue::floats(key, type, is_array, std::move(v));
      }
      case GgufValueType::kF64: {
        std::vector<double> v(n);
        for (auto& x : v) x = in_.read<double>(what);
        return GgufValue::floats(key, type, is_array, std::move(v));
      }
      default: {
        std::vector<uint64_t> v(n);
        for (auto& x : v) x = read_integer(type, what);
        if (type == GgufValueType::kBool)
          for (uint64_t b : v)
            if (b > 1) fail<FormatError>("{}: metadata key '{}' has bool value {} (expected 0 or 1)", name_, key, b);
        return GgufValue::integers(key, type, is_array, std::move(v));
      }
    }
  }

  // Reads one integer (or bool) and returns its 64-bit pattern, sign-extending signed types.
  uint64_t read_integer(GgufValueType type, const std::string& what) {
    switch (type) {
      case GgufValueType::kU8: case GgufValueType::kBool: return in_.read<uint8_t>(what);
      case GgufValueType::kI8: return static_cast<uint64_t>(static_cast<int64_t>(in_.read<int8_t>(what)));
      case GgufValueType::kU16: return in_.read<uint16_t>(what);
      case GgufValueType::kI16: return static_cast<uint64_t>(static_cast<int64_t>(in_.read<int16_t>(what)));
      case GgufValueType::kU32: return in_.read<uint32_t>(what);
      case GgufValueType::kI32: return static_cast<uint64_t>(static_cast<int64_t>(in_.read<int32_t>(what)));
      case GgufValueType::kU64: return in_.read<uint64_t>(what);
      case GgufValueType::kI64: return static_cast<uint64_t>(in_.read<int64_t>(what));
      default: break;
    }
    fail<FormatError>("{}: internal: {} is not an integer type", name_, gguf_type_name(type));
  }

  void apply_alignment(const GgufValue& value) {
    if (value.type() != GgufValueType::kU32)
      fail<FormatError>("{}: general.alignment must be a u32, found {}", name_,
                        value.is_array() ? "array" : gguf_type_name(value.type()));
    const uint64_t alignment = value.as_uint();
    if (!is_power_of_two(alignment))
      fail<FormatError>("{}: general.alignment is {}, expected a nonzero power of two", name_, alignment);
    out_.alignment_ = alignment;
  }

  void read_tensor_infos(uint64_t tensor_count) {
    out_.tensors_.reserve(static_cast<size_t>(tensor_count));
    for (uint64_t i = 0; i < tensor_count; ++i) {
      std::string name = in_.read_string(fmt::format("name of tensor {}", i));
      if (out_.tensor_index_.count(name)) fail<FormatError>("{}: duplicate tensor name '{}'", name_, name);
      const auto n_dims = in_.read<uint32_t>("tensor rank");
      if (n_dims == 0 || n_dims > static_cast<uint32_t>(kGgufMaxDims))
        fail<FormatError>("{}: tensor '{}' has rank {} (expected 1..{})", name_, name, n_dims, kGgufMaxDims);
      uint64_t ne[kGgufMaxDims] = {};
      uint64_t elements = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        ne[d] = in_.read<uint64_t>("tensor dimension");
        if (ne[d] == 0 || ne[d] > static_cast<uint64_t>(INT64_MAX))
          fail<FormatError>("{}: tensor '{}' has dimension {} = {} (expected 1..2^63-1)", name_, name, d, ne[d]);
        if (__builtin_mul_overflow(elements, ne[d], &elements) || elements > static_cast<uint64_t>(INT64_MAX))
          fail<FormatError>("{}: tensor '{}' element count overflows 63 bits", name_, name);
      }
      const auto ggml_type = in_.read<uint32_t>("tensor type");
      const auto dtype = dtype_from_ggml(ggml_type);
      if (!dtype) {
        if (const auto known = unsupported_ggml_type_name(ggml_type); !known.empty())
          fail<FormatError>("{}: tensor '{}' is {} (ggml type {}), which lemma does not read; it reads f32, f16, bf16, "
                            "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL and IQ4_XS",
                            name_, name, known, ggml_type);
        fail<FormatError>("{}: tensor '{}' has unknown ggml type {}", name_, name, ggml_type);
      }
      const auto& info = dtype_info(*dtype);
      if (ne[0] % info.block_elements != 0)
        fail<FormatError>("{}: tensor '{}' row length {} is not a multiple of the {} block size {}", name_, name,
                          ne[0], info.name, info.block_elements);
      const auto offset = in_.read<uint64_t>("tensor offset");
      GgufTensor tensor{std::move(name), TensorView{}, ggml_type, offset};
      tensor.view.dtype = *dtype;
      tensor.view.shape.rank = static_cast<int>(n_dims);
      for (uint32_t d = 0; d < n_dims; ++d) tensor.view.shape.dims[n_dims - 1 - d] = static_cast<int64_t>(ne[d]);
      out_.tensor_index_.emplace(tensor.name, out_.tensors_.size());
      out_.tensors_.push_back(std::move(tensor));
    }
  }

  // Checks offsets, bounds and overlaps, then points each view into the mapped bytes.
  void place_tensors() {
    const uint64_t a = out_.alignment_;
    out_.data_offset_ = (in_.position() + a - 1) / a * a;
    const uint64_t size = in_.size();
    if (out_.tensors_.empty()) return;  // vocab-only files may end before the padding
    if (out_.data_offset_ > size)
      fail<FormatError>("{}: truncated: data section starts at {} but the file has {} bytes", name_,
                        out_.data_offset_, size);
    const uint64_t data_size = size - out_.data_offset_;
    std::vector<uint64_t> ends(out_.tensors_.size());
    for (size_t i = 0; i < out_.tensors_.size(); ++i) {
      auto& t = out_.tensors_[i];
      if (t.offset % a != 0)
        fail<FormatError>("{}: tensor '{}' offset {} is not a multiple of the alignment {}", name_, t.name, t.offset,
                          a);
      const auto bytes = dtype_bytes(t.view.dtype, static_cast<uint64_t>(t.view.shape.elements()));
      if (!bytes) fail<FormatError>("{}: tensor '{}' byte size overflows", name_, t.name);
      if (__builtin_add_overflow(t.offset, *bytes, &ends[i]) || ends[i] > data_size)
        fail<FormatError>("{}: tensor '{}' data [{}, +{}) runs past the end of the data section ({} bytes)", name_,
                          t.name, t.offset, *bytes, data_size);
      t.view.data = out_.file_.data() + out_.data_offset_ + t.offset;
    }
    std::vector<size_t> order(out_.tensors_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return out_.tensors_[x].offset < out_.tensors_[y].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const auto& prev = out_.tensors_[order[k - 1]];
      const auto& cur = out_.tensors_[order[k]];
      if (cur.offset < ends[order[k - 1]])
        fail<FormatError>("{}: tensors '{}' and '{}' overlap (data [{}, {}) and [{}, {}))", name_, prev.name,
                          cur.name, prev.offset, ends[order[k - 1]], cur.offset, ends[order[k]]);
    }
  }

  GgufFile& out_;
  const std::string& name_;
  io::ByteReader in_;
};

GgufFile GgufFile::parse(MappedFile file) {
  GgufFile out;
  out.file_ = std::move(file);
  GgufParser(out).run();
  return out;
}

}  // namespace lemma
