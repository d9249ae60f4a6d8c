// safetensors serialisation: JSON header (tensors in data order, then __metadata__), padded with
// spaces so the data section starts 8-byte aligned, then the tensors' bytes back to back.
#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/io/file_write.h"
#include "lemma/io/safetensors.h"

namespace lemma {

std::vector<uint8_t> encode_safetensors(std::span<const SafetensorsTensor> tensors,
                                        const std::map<std::string, std::string>& metadata) {
  // Like the reference writer, lay data out by element size (largest first, stable otherwise): with
  // the data section 8-byte aligned, every tensor then starts at a multiple of its element size.
  std::vector<const SafetensorsTensor*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const SafetensorsTensor* a, const SafetensorsTensor* b) {
    return dtype_info(a->view.dtype).block_bytes > dtype_info(b->view.dtype).block_bytes;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto* tp : order) {
    const auto& t = *tp;
    const auto dtype = dtype_to_safetensors(t.view.dtype);
    if (dtype.empty())
      fail<InvalidArgument>("tensor '{}': dtype {} cannot be stored in safetensors", t.name, dtype_name(t.view.dtype));
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      fail<InvalidArgument>("tensor name '{}' is duplicated or reserved", t.name);
    auto shape = nlohmann::ordered_json::array();
    for (int d = 0; d < t.view.shape.rank; ++d) {
      if (t.view.shape[d] < 0) fail<InvalidArgument>("tensor '{}' has a negative dimension", t.name);
      shape.push_back(t.view.shape[d]);
    }
    const uint64_t bytes = t.view.bytes();
    header[t.name] = {{"dtype", std::string(dtype)}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + offset);
  const uint64_t header_len = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(header_len >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const auto* t : order) out.insert(out.end(), t->view.bytes_ptr(), t->view.bytes_ptr() + t->view.bytes());
  return out;
}

void write_safetensors(const std::string& path, std::span<const SafetensorsTensor> tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, encode_safetensors(tensors, metadata));
}

}  // namespace lemma
