// Hostile GGUF files, each a small valid file with one thing broken.
#include <functional>

#include "hostile_cases.h"
#include "lemma/io/gguf.h"
#include "lemma/io/gguf_encoder.h"
#include "lemma/io/gguf_writer.h"

namespace lemma::testing {

namespace {

struct RawTensor {
  std::string name;
  std::vector<uint64_t> ne;  // innermost first, as on disk
  uint32_t type = 0;         // ggml type (0 = f32)
  uint64_t offset = 0;
};

// Everything that goes into a file, in raw form so each field can be broken on its own.
struct RawGguf {
  uint32_t magic = kGgufMagic;
  uint32_t version = 3;
  std::optional<uint64_t> tensor_count;  // default: tensors.size()
  std::optional<uint64_t> kv_count;      // default: kvs.size()
  std::vector<std::function<void(GgufEncoder&)>> kvs;
  std::vector<RawTensor> tensors;
  uint64_t alignment = 32;
  uint64_t data_bytes = 64;
  std::optional<size_t> truncate_to;

  std::vector<uint8_t> bytes() const {
    GgufEncoder e;
    e.u32(magic).u32(version).u64(tensor_count.value_or(tensors.size())).u64(kv_count.value_or(kvs.size()));
    for (const auto& kv : kvs) kv(e);
    for (const auto& t : tensors) {
      e.string(t.name).u32(static_cast<uint32_t>(t.ne.size()));
      for (auto d : t.ne) e.u64(d);
      e.u32(t.type).u64(t.offset);
    }
    e.pad_to(alignment).zeros(static_cast<size_t>(data_bytes));
    auto out = e.take();
    if (truncate_to) out.resize(*truncate_to);
    return out;
  }
};

std::function<void(GgufEncoder&)> kv_u32(std::string key, uint32_t v) {
  return [=](GgufEncoder& e) { e.string(key).u32(static_cast<uint32_t>(GgufValueType::kU32)).u32(v); };
}
std::function<void(GgufEncoder&)> kv_string(std::string key, std::string v) {
  return [=](GgufEncoder& e) { e.string(key).u32(static_cast<uint32_t>(GgufValueType::kString)).string(v); };
}
std::function<void(GgufEncoder&)> kv_raw(std::function<void(GgufEncoder&)> f) { return f; }

// A valid base: two metadata entries and two f32 tensors [4] and [2, 4] at offsets 0 and 32.
RawGguf base() {
  RawGguf g;
  g.kvs = {kv_string("general.architecture", "llama"), kv_u32("llama.block_count", 1)};
  g.tensors = {{"a.weight", {4}, 0, 0}, {"b.weight", {4, 2}, 0, 32}};
  g.data_bytes = 64;
  return g;
}

CraftedFile make(std::string name, const RawGguf& g, std::vector<std::string> expected) {
  return {std::move(name), g.bytes(), std::move(expected)};
}

}  // namespace

std::vector<CraftedFile> valid_gguf_files() {
  std::vector<CraftedFile> out;
  out.push_back(make("valid_base", base(), {}));
  {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_scalar<uint8_t>("t.u8", 200);
    w.set_scalar<int8_t>("t.i8", -5);
    w.set_scalar<uint16_t>("t.u16", 60000);
    w.set_scalar<int16_t>("t.i16", -30000);
    w.set_scalar<int32_t>("t.i32", -7);
    w.set_scalar<uint64_t>("t.u64", 1ull << 40);
    w.set_scalar<int64_t>("t.i64", -(1ll << 40));
    w.set_scalar<float>("t.f32", 1.5f);
    w.set_scalar<double>("t.f64", -2.25);
    w.set_scalar<bool>("t.bool", true);
    w.set_strings("tokenizer.ggml.tokens", {"<unk>", "a", "b"});
    w.set_array<int32_t>("tokenizer.ggml.token_type", std::vector<int32_t>{2, 1, 1});
    w.set_array<float>("tokenizer.ggml.scores", std::vector<float>{0.f, -1.f, -2.f});
    w.set_alignment(64);
    std::vector<uint8_t> q8(34 * 2, 0);
    w.add_tensor("q.weight", DType::kQ8_0, Shape{2, 32}, q8);
    std::vector<uint8_t> f16(2 * 3 * 4, 0);
    w.add_tensor("h.weight", DType::kF16, Shape{2, 3, 2}, f16);
    out.push_back({"valid_all_types", w.to_bytes(), {}});
  }
  {
    RawGguf v2 = base();
    v2.version = 2;
    out.push_back(make("valid_v2", v2, {}));
  }
  {
    RawGguf vocab;  // vocab-only files end right after the metadata
    vocab.kvs = {kv_string("tokenizer.ggml.model", "gpt2")};
    vocab.data_bytes = 0;
    vocab.alignment = 1;
    out.push_back(make("valid_vocab_only", vocab, {}));
  }
  return out;
}

std::vector<CraftedFile> hostile_gguf_files() {
  std::vector<CraftedFile> out;
  auto add = [&](std::string name, const RawGguf& g, std::vector<std::string> expected) {
    out.push_back(make(std::move(name), g, std::move(expected)));
  };
  RawGguf g;

  g = base(); g.magic = 0x58554747;  // "GGUX"
  add("bad_magic", g, {"not a GGUF file", "magic"});
  out.push_back({"too_short", {'G', 'G', 'U'}, {"not a GGUF file", "only 3 bytes"}});
  g = base(); g.version = 1;
  add("version_1", g, {"version 1 is not supported"});
  g = base(); g.version = 99;
  add("version_99", g, {"unsupported GGUF version 99"});
  g = base(); g.version = 0x03000000;
  add("big_endian", g, {"big-endian"});
  g = base(); g.kv_count = 1ull << 62;
  add("huge_kv_count", g, {"metadata count 4611686018427387904 is impossible"});
  g = base(); g.tensor_count = ~0ull;
  add("huge_tensor_count", g, {"tensor count", "impossible"});
  g = base(); g.truncate_to = 20;
  add("truncated_header", g, {"truncated at offset 16", "metadata count"});
  g = base(); g.truncate_to = 100;  // inside the value of the second metadata entry
  add("truncated_metadata", g, {"truncated at offset 98", "value of 'llama.block_count'"});
  g = base(); g.truncate_to = 120;  // inside the first tensor info
  add("truncated_tensor_info", g, {"truncated at offset", "tensor"});
  g = base(); g.truncate_to = 190;  // right after the tensor infos: no padding, no data
  add("missing_data_section", g, {"data section starts at 192", "190 bytes"});
  g = base(); g.data_bytes = 16;
  add("truncated_data", g, {"tensor 'b.weight'", "runs past the end"});
  g = base(); g.kvs[0] = kv_raw([](GgufEncoder& e) { e.u64(1000).raw("general", 7); });
  add("key_past_eof", g, {"key of metadata entry 0", "claims 1000 bytes"});
  g = base(); g.kvs[0] = kv_raw([](GgufEncoder& e) { e.string("general.name").u32(8).u64(1ull << 40); });
  add("string_past_eof", g, {"value of 'general.name'", "claims 1099511627776 bytes"});
  g = base(); g.kvs[0] = kv_raw([](GgufEncoder& e) { e.u64(0).u32(4).u32(1); });
  add("empty_key", g, {"empty key"});
  g = base(); g.kvs[0] = kv_raw([](GgufEncoder& e) { e.string("general.x").u32(13).u32(0); });
  add("unknown_value_type", g, {"'general.x'", "unknown value type 13"});
  g = base(); g.kvs[0] = kv_raw([](GgufEncoder& e) { e.string("general.x").u32(9).u32(9).u64(1).u32(4).u64(0); });
  add("nested_array", g, {"'general.x'", "nested array"});
  g = base(); g.kvs[0] = kv_raw([](GgufEncoder& e) { e.string("tokenizer.ggml.tokens").u32(9).u32(8).u64(1ull << 61); });
  add("huge_array_count", g, {"'tokenizer.ggml.tokens'", "claims 2305843009213693952 string elements"});
  g = base(); g.kvs[0] = kv_raw([](GgufEncoder& e) { e.string("x.scores").u32(9).u32(6).u64(1ull << 40); });
  add("huge_float_array", g, {"'x.scores'", "f32 elements"});
  g = base(); g.kvs[0] = kv_raw([](GgufEncoder& e) { e.string("general.alignment").u32(10).u64(32); });
  add("alignment_wrong_type", g, {"general.alignment must be a u32, found u64"});
  g = base(); g.kvs[0] = kv_u32("general.alignment", 48);
  add("alignment_not_power_of_two", g, {"general.alignment is 48", "power of two"});
  g = base(); g.kvs[0] = kv_u32("general.alignment", 0);
  add("alignment_zero", g, {"general.alignment is 0"});
  g = base(); g.kvs[1] = kv_string("general.architecture", "again");
  add("duplicate_key", g, {"duplicate metadata key 'general.architecture'"});
  g = base(); g.kvs[0] = kv_raw([](GgufEncoder& e) { e.string("general.flag").u32(7).put<uint8_t>(2); });
  add("bad_bool", g, {"'general.flag'", "bool value 2"});
  g = base(); g.tensors[0].type = 99;
  add("unknown_tensor_type", g, {"tensor 'a.weight'", "unknown ggml type 99"});
  g = base(); g.tensors[0].type = 21;  // IQ3_S: a real ggml type lemma does not read
  add("unread_tensor_type", g, {"tensor 'a.weight' is IQ3_S (ggml type 21)", "does not read", "IQ4_XS"});
  g = base(); g.tensors[0].type = 4;  // Q4_2, removed from ggml
  add("removed_tensor_type", g, {"tensor 'a.weight'", "unknown ggml type 4"});
  g = base(); g.tensors[0].ne = {};
  add("rank_0", g, {"tensor 'a.weight'", "rank 0"});
  g = base(); g.tensors[0].ne = {1, 1, 1, 1, 1};
  add("rank_5", g, {"tensor 'a.weight'", "rank 5"});
  g = base(); g.tensors[1].ne = {4, 0};
  add("zero_dim", g, {"tensor 'b.weight'", "dimension 1 = 0"});
  g = base(); g.tensors[1].ne = {4, ~0ull};
  add("negative_dim", g, {"tensor 'b.weight'", "dimension 1 = 18446744073709551615"});
  g = base(); g.tensors[1].ne = {1ull << 32, 1ull << 32};
  add("element_overflow", g, {"tensor 'b.weight'", "element count overflows"});
  g = base(); g.tensors[1].ne = {1ull << 62, 1}; g.tensors[1].type = 0;
  add("byte_size_overflow", g, {"tensor 'b.weight'", "byte size overflows"});
  g = base(); g.tensors[0].type = 8; g.tensors[0].ne = {31};
  add("row_not_block_multiple", g, {"tensor 'a.weight'", "row length 31", "q8_0 block size 32"});
  g = base(); g.tensors[1].offset = 20;
  add("offset_unaligned", g, {"tensor 'b.weight'", "offset 20", "alignment 32"});
  g = base(); g.tensors[1].offset = 64;
  add("data_past_eof", g, {"tensor 'b.weight'", "runs past the end"});
  g = base(); g.tensors[1].offset = ~0ull - 31;
  add("offset_overflow", g, {"tensor 'b.weight'", "runs past the end"});
  g = base(); g.tensors[1].ne = {8, 2}; g.tensors[1].offset = 0; g.tensors[0].offset = 32;
  add("overlapping_tensors", g, {"'b.weight' and 'a.weight' overlap"});
  g = base(); g.tensors[1].name = "a.weight";
  add("duplicate_tensor_name", g, {"duplicate tensor name 'a.weight'"});
  return out;
}

}  // namespace lemma::testing
