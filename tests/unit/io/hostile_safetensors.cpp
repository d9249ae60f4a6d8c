// Hostile safetensors files: a JSON header (possibly broken) and a data section of zeros.
#include <cstring>

#include "hostile_cases.h"
#include "lemma/io/safetensors.h"

namespace lemma::testing {

namespace {

// 8-byte header length (or `claimed_len`), the header text, then `data_bytes` zero bytes.
std::vector<uint8_t> st_bytes(const std::string& header, size_t data_bytes,
                              std::optional<uint64_t> claimed_len = std::nullopt) {
  std::vector<uint8_t> out(8);
  const uint64_t len = claimed_len.value_or(header.size());
  std::memcpy(out.data(), &len, 8);
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0);
  return out;
}

const std::string kGood =
    R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
    R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]}})";

}  // namespace

std::vector<CraftedFile> valid_safetensors_files() {
  std::vector<CraftedFile> out;
  out.push_back({"valid_base", st_bytes(kGood, 32), {}});
  out.push_back({"valid_gap", st_bytes(R"({"a":{"dtype":"I8","shape":[2],"data_offsets":[6,8]}})", 8), {}});
  out.push_back({"valid_empty_and_scalar",
                 st_bytes(R"({"e":{"dtype":"F16","shape":[0,4],"data_offsets":[0,0]},)"
                          R"("s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}})",
                          8),
                 {}});
  out.push_back({"valid_no_tensors", st_bytes("{}", 0), {}});
  return out;
}

std::vector<CraftedFile> hostile_safetensors_files() {
  std::vector<CraftedFile> out;
  auto add = [&](std::string name, std::vector<uint8_t> bytes, std::vector<std::string> expected) {
    out.push_back({std::move(name), std::move(bytes), std::move(expected)});
  };
  add("too_short", {1, 0, 0, 0}, {"truncated", "4 bytes"});
  add("header_past_eof", st_bytes(kGood, 32, 4096), {"header length 4096 runs past the end"});
  add("header_absurd", st_bytes(kGood, 32, 1ull << 40), {"header length 1099511627776 is absurd"});
  add("header_len_overflow", st_bytes(kGood, 32, ~0ull), {"is absurd"});
  add("invalid_json", st_bytes(R"({"a":{"dtype":"F32",)", 0), {"invalid JSON"});
  add("trailing_garbage", st_bytes(kGood + "xx", 32), {"invalid JSON"});
  add("not_an_object", st_bytes("[1,2,3]", 0), {"must be a JSON object"});
  add("unknown_dtype", st_bytes(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,1]}})", 1),
      {"tensor 'a'", "unknown dtype 'Q4'"});
  add("shape_size_mismatch", st_bytes(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 24),
      {"tensor 'a'", "needs 24 bytes but data_offsets span 20"});
  add("offsets_past_data", st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 12),
      {"tensor 'a'", "runs past the end of the data (12 bytes)"});
  add("begin_after_end", st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 12),
      {"tensor 'a'", "begin 8 > end 4"});
  add("offsets_overflow",
      st_bytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[18446744073709551615,18446744073709551617]}})", 4),
      {"tensor 'a'", "data_offsets[1] must be a non-negative integer"});
  add("overlap",
      st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               12),
      {"'a' and 'b' overlap"});
  add("duplicate_name",
      st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
               R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
               8),
      {"duplicate key 'a'"});
  add("non_object_entry", st_bytes(R"({"a":5})", 0), {"tensor 'a' must be an object"});
  add("missing_fields", st_bytes(R"({"a":{"dtype":"F32","shape":[1]}})", 4), {"tensor 'a' needs dtype"});
  add("negative_dim", st_bytes(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
      {"tensor 'a'", "shape dimension must be a non-negative integer, found -1"});
  add("float_dim", st_bytes(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4),
      {"tensor 'a'", "non-negative integer"});
  add("element_overflow",
      st_bytes(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
      {"tensor 'a'", "element count overflows"});
  add("rank_too_high", st_bytes(R"({"a":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1),
      {"tensor 'a'", "rank 9"});
  add("bad_offsets_shape", st_bytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1),
      {"tensor 'a'", "data_offsets must be [begin, end]"});
  add("dtype_not_string", st_bytes(R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,1]}})", 1),
      {"tensor 'a'", "dtype must be a string"});
  add("metadata_not_string", st_bytes(R"({"__metadata__":{"k":1}})", 0), {"__metadata__ entry 'k'"});
  add("metadata_not_object", st_bytes(R"({"__metadata__":[]})", 0), {"__metadata__ must be an object"});
  add("deep_nesting", st_bytes(std::string(100, '[') + std::string(100, ']'), 0), {"nests deeper than 32"});
  add("empty_header", st_bytes("", 0), {"too short"});
  return out;
}

}  // namespace lemma::testing
