#include "lemma/kv/block_hash.h"

namespace lemma {
namespace {

// A 64-bit finaliser (xor-shift / multiply rounds) with lane-specific constants.
inline uint64_t mix(uint64_t x, uint64_t m1, uint64_t m2) {
  x ^= x >> 31;
  x *= m1;
  x ^= x >> 29;
  x *= m2;
  x ^= x >> 32;
  return x;
}

struct Lane {
  uint64_t state;
  uint64_t m1, m2, step;
  void absorb(uint64_t word) { state = mix(state ^ (word + step), m1, m2) + step; }
};

}  // namespace

BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> token_ids,
                     std::span<const uint64_t> extra_keys) {
  Lane a{0x243f6a8885a308d3ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull, 0x9e3779b97f4a7c15ull};
  Lane b{0x13198a2e03707344ull, 0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull, 0xd6e8feb86659fd93ull};
  for (Lane* lane : {&a, &b}) {
    lane->absorb(parent.lo);
    lane->absorb(parent.hi);
    lane->absorb(token_ids.size());
    for (int32_t t : token_ids) lane->absorb(static_cast<uint32_t>(t));
    lane->absorb(extra_keys.size() + 0x100000000ull);
    for (uint64_t k : extra_keys) lane->absorb(k);
  }
  return BlockHash{a.state, b.state};
}

}  // namespace lemma
