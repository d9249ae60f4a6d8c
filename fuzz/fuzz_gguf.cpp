// libFuzzer target: GgufFile::parse must either accept the bytes or throw lemma::Error, never crash,
// hang or read out of bounds. Accepted files must survive a round trip through GgufWriter.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include "lemma/base/error.h"
#include "lemma/io/gguf.h"
#include "lemma/io/gguf_writer.h"

namespace {

// Reads the first and last byte of every tensor so ASan checks the views' bounds.
uint8_t touch_tensors(const lemma::GgufFile& file) {
  uint8_t sink = 0;
  for (const auto& t : file.tensors()) {
    const uint64_t n = t.view.bytes();
    if (n) sink ^= t.view.bytes_ptr()[0] ^ t.view.bytes_ptr()[n - 1];
  }
  return sink;
}

void exercise_values(const lemma::GgufFile& file) {
  for (const auto& [key, value] : file.metadata()) {
    (void)value.to_display();
    try {
      if (value.is_array()) (void)value.as_floats();
      else (void)value.as_float();
    } catch (const lemma::FormatError&) {
    }
  }
}

// What the reader accepts, the writer must reproduce with the same metadata and tensor bytes.
void round_trip(const lemma::GgufFile& file) {
  lemma::GgufWriter writer;
  for (const auto& [key, value] : file.metadata()) writer.set(value);
  for (const auto& t : file.tensors()) writer.add_tensor(t.name, t.view);
  const auto again = lemma::GgufFile::parse(lemma::MappedFile::from_bytes(writer.to_bytes(), "round-trip"));
  if (again.metadata().size() != file.metadata().size() || again.tensors().size() != file.tensors().size())
    __builtin_trap();
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const auto& a = file.tensors()[i].view;
    const auto& b = again.tensors()[i].view;
    if (!(a.shape == b.shape) || a.dtype != b.dtype || std::memcmp(a.data, b.data, a.bytes()) != 0) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<lemma::GgufFile> file;
  try {
    file.emplace(lemma::GgufFile::parse(lemma::MappedFile::from_bytes({data, size}, "fuzz.gguf")));
  } catch (const lemma::Error&) {
    return 0;  // rejected cleanly
  }
  volatile uint8_t sink = touch_tensors(*file);
  (void)sink;
  exercise_values(*file);
  round_trip(*file);
  return 0;
}
