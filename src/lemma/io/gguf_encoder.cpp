#include "lemma/io/gguf_encoder.h"

namespace lemma {

GgufEncoder& GgufEncoder::value(const GgufValue& v) {
  u32(static_cast<uint32_t>(v.type()));
  if (!v.is_array()) {
    element(v, 0);
    return *this;
  }
  u32(static_cast<uint32_t>(v.element_type()));
  u64(v.size());
  for (size_t i = 0; i < v.size(); ++i) element(v, i);
  return *this;
}

void GgufEncoder::element(const GgufValue& v, size_t i) {
  const auto t = v.is_array() ? v.element_type() : v.type();
  switch (t) {
    case GgufValueType::kString: string(v.string_at(i)); return;
    case GgufValueType::kF32: put(static_cast<float>(v.float_at(i))); return;
    case GgufValueType::kF64: put(v.float_at(i)); return;
    default: break;
  }
  const uint64_t bits = v.raw_at(i);
  switch (gguf_scalar_bytes(t)) {
    case 1: put(static_cast<uint8_t>(bits)); return;
    case 2: put(static_cast<uint16_t>(bits)); return;
    case 4: put(static_cast<uint32_t>(bits)); return;
    default: put(bits); return;
  }
}

}  // namespace lemma
