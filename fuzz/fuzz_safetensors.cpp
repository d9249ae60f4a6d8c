// libFuzzer target: SafetensorsFile::parse must either accept the bytes or throw lemma::Error, never
// crash, hang or read out of bounds. Accepted files must survive a round trip through the writer.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include "lemma/base/error.h"
#include "lemma/io/safetensors.h"

namespace {

uint8_t touch_tensors(const lemma::SafetensorsFile& file) {
  uint8_t sink = 0;
  for (const auto& t : file.tensors()) {
    const uint64_t n = t.view.bytes();
    if (n) sink ^= t.view.bytes_ptr()[0] ^ t.view.bytes_ptr()[n - 1];
  }
  return sink;
}

void round_trip(const lemma::SafetensorsFile& file) {
  const auto bytes = lemma::encode_safetensors(file.tensors(), file.metadata());
  const auto again = lemma::SafetensorsFile::parse(lemma::MappedFile::from_bytes(bytes, "round-trip"));
  if (again.tensors().size() != file.tensors().size() || again.metadata() != file.metadata()) __builtin_trap();
  for (const auto& t : file.tensors()) {
    const auto* u = again.tensor(t.name);
    if (!u || !(u->view.shape == t.view.shape) || u->view.dtype != t.view.dtype ||
        std::memcmp(u->view.data, t.view.data, t.view.bytes()) != 0)
      __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<lemma::SafetensorsFile> file;
  try {
    file.emplace(lemma::SafetensorsFile::parse(lemma::MappedFile::from_bytes({data, size}, "fuzz.safetensors")));
  } catch (const lemma::Error&) {
    return 0;  // rejected cleanly
  }
  volatile uint8_t sink = touch_tensors(*file);
  (void)sink;
  round_trip(*file);
  return 0;
}
