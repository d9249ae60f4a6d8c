// safetensors parsing and validation (format: github.com/huggingface/safetensors README).
// The JSON header goes through parse_strict_json, which also refuses duplicate keys and deep nesting.
#include <algorithm>
#include <cstring>

#include "lemma/base/error.h"
#include "lemma/io/safetensors.h"
#include "lemma/io/strict_json.h"

namespace lemma {

namespace {
using json = nlohmann::json;

// A JSON value for an error message, cut short (hostile headers can hold megabytes).
std::string short_dump(const json& v) {
  auto s = v.dump();
  if (s.size() > 40) s = s.substr(0, 40) + "...";
  return s;
}

// A non-negative JSON integer, or FormatError naming `what`.
uint64_t unsigned_field(const json& v, const std::string& name, const std::string& tensor, std::string_view what) {
  if (!v.is_number_unsigned())
    fail<FormatError>("{}: tensor '{}': {} must be a non-negative integer, found {}", name, tensor, what, short_dump(v));
  return v.get<uint64_t>();
}
}  // namespace

class SafetensorsParser {
 public:
  explicit SafetensorsParser(SafetensorsFile& out) : out_(out), name_(out.file_.path()) {}

  void run() {
    const auto bytes = out_.file_.bytes();
    if (bytes.size() < 8)
      fail<FormatError>("{}: truncated: {} bytes, a safetensors file needs at least 8", name_, bytes.size());
    uint64_t header_len = 0;
    std::memcpy(&header_len, bytes.data(), 8);
    if (header_len > kSafetensorsMaxHeaderBytes)
      fail<FormatError>("{}: header length {} is absurd (limit {})", name_, header_len, kSafetensorsMaxHeaderBytes);
    if (header_len > bytes.size() - 8)
      fail<FormatError>("{}: header length {} runs past the end of the file ({} bytes)", name_, header_len,
                        bytes.size());
    if (header_len < 2) fail<FormatError>("{}: header length {} is too short for a JSON object", name_, header_len);
    out_.data_offset_ = 8 + header_len;
    const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
    const json header = io::parse_strict_json(text, name_ + ": header");
    if (!header.is_object()) fail<FormatError>("{}: header must be a JSON object, found {}", name_, header.type_name());
    for (const auto& [key, value] : header.items()) {
      if (key == "__metadata__") read_metadata(value);
      else read_tensor(key, value);
    }
    check_layout(bytes.size() - out_.data_offset_);
  }

 private:
  void read_metadata(const json& value) {
    if (!value.is_object()) fail<FormatError>("{}: __metadata__ must be an object of strings", name_);
    for (const auto& [k, v] : value.items()) {
      if (!v.is_string()) fail<FormatError>("{}: __metadata__ entry '{}' must be a string, found {}", name_, k, short_dump(v));
      out_.metadata_.emplace(k, v.get<std::string>());
    }
  }

  void read_tensor(const std::string& key, const json& entry) {
    if (!entry.is_object())
      fail<FormatError>("{}: tensor '{}' must be an object, found {}", name_, key, entry.type_name());
    const auto dtype_it = entry.find("dtype");
    const auto shape_it = entry.find("shape");
    const auto offsets_it = entry.find("data_offsets");
    if (dtype_it == entry.end() || shape_it == entry.end() || offsets_it == entry.end())
      fail<FormatError>("{}: tensor '{}' needs dtype, shape and data_offsets", name_, key);
    if (!dtype_it->is_string()) fail<FormatError>("{}: tensor '{}': dtype must be a string", name_, key);
    const auto dtype_name = dtype_it->get<std::string>();
    const auto dtype = dtype_from_safetensors(dtype_name);
    if (!dtype) fail<FormatError>("{}: tensor '{}' has unknown dtype '{}'", name_, key, dtype_name);

    if (!shape_it->is_array()) fail<FormatError>("{}: tensor '{}': shape must be an array", name_, key);
    if (shape_it->size() > static_cast<size_t>(kMaxDims))
      fail<FormatError>("{}: tensor '{}' has rank {} (lemma supports up to {})", name_, key, shape_it->size(), kMaxDims);
    SafetensorsTensor t{key, TensorView{}};
    t.view.dtype = *dtype;
    uint64_t elements = 1;
    for (const auto& d : *shape_it) {
      const uint64_t dim = unsigned_field(d, name_, key, "a shape dimension");
      if (dim > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(elements, dim, &elements) ||
          elements > static_cast<uint64_t>(INT64_MAX))
        fail<FormatError>("{}: tensor '{}' element count overflows", name_, key);
      t.view.shape.dims[static_cast<size_t>(t.view.shape.rank++)] = static_cast<int64_t>(dim);
    }

    if (!offsets_it->is_array() || offsets_it->size() != 2)
      fail<FormatError>("{}: tensor '{}': data_offsets must be [begin, end]", name_, key);
    const uint64_t begin = unsigned_field((*offsets_it)[0], name_, key, "data_offsets[0]");
    const uint64_t end = unsigned_field((*offsets_it)[1], name_, key, "data_offsets[1]");
    if (begin > end) fail<FormatError>("{}: tensor '{}' data_offsets begin {} > end {}", name_, key, begin, end);
    const auto bytes = dtype_bytes(*dtype, elements);
    if (!bytes || *bytes != end - begin)
      fail<FormatError>("{}: tensor '{}': shape {} of {} needs {} bytes but data_offsets span {}", name_, key,
                        t.view.shape.to_string(), dtype_name, bytes ? std::to_string(*bytes) : "too many",
                        end - begin);
    ranges_.push_back({begin, end, out_.tensors_.size()});
    out_.tensors_.push_back(std::move(t));
  }

  // Bounds and overlaps; then views are placed and tensors put in data order.
  void check_layout(uint64_t data_size) {
    std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    for (size_t i = 0; i < ranges_.size(); ++i) {
      const auto& r = ranges_[i];
      const auto& t = out_.tensors_[r.tensor];
      if (r.end > data_size)
        fail<FormatError>("{}: tensor '{}' data [{}, {}) runs past the end of the data ({} bytes)", name_, t.name,
                          r.begin, r.end, data_size);
      if (i > 0 && r.begin < ranges_[i - 1].end)
        fail<FormatError>("{}: tensors '{}' and '{}' overlap ([{}, {}) and [{}, {}))", name_,
                          out_.tensors_[ranges_[i - 1].tensor].name, t.name, ranges_[i - 1].begin,
                          ranges_[i - 1].end, r.begin, r.end);
    }
    std::vector<SafetensorsTensor> ordered;
    ordered.reserve(ranges_.size());
    for (const auto& r : ranges_) {
      auto& t = out_.tensors_[r.tensor];
      t.view.data = out_.file_.data() + out_.data_offset_ + r.begin;
      out_.index_.emplace(t.name, ordered.size());
      ordered.push_back(std::move(t));
    }
    out_.tensors_ = std::move(ordered);
  }

  struct Range {
    uint64_t begin, end;
    size_t tensor;
  };
  SafetensorsFile& out_;
  const std::string& name_;
  std::vector<Range> ranges_;
};

SafetensorsFile SafetensorsFile::parse(MappedFile file) {
  SafetensorsFile out;
  out.file_ = std::move(file);
  SafetensorsParser(out).run();
  return out;
}

SafetensorsFile SafetensorsFile::open(const std::string& path, LoadMode mode) {
  return parse(MappedFile::open(path, mode));
}

const SafetensorsTensor* SafetensorsFile::tensor(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace lemma
