// KvHandoff: the K/V of a prompt's full blocks as one engine computed them, carried to another
// engine (prefill/decode disaggregation, G24). The receiver files the blocks in its prefix cache, so
// only what it does not hold travels (`first_block`) and its request starts as an ordinary prefix
// hit: outputs are those of one engine. Plain data; the KvCache inside holds just these blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "lemma/model/kv_cache.h"

namespace lemma {

struct KvHandoff {
  std::vector<int32_t> token_ids;    // the tokens the blocks hold (whole blocks, from the prompt's start)
  std::vector<uint64_t> extra_keys;  // the prefix-cache namespace (adapter identity), as the sender used
  int32_t first_block = 0;           // block index of blocks' block 0; the receiver holds those before
  KvCache blocks = {};               // block i: the K/V of full block first_block + i, every layer

  int32_t num_blocks() const { return static_cast<int32_t>(blocks.num_blocks()); }
  // K/V bytes carried (what a transfer between processes would send).
  uint64_t bytes() const { return blocks.bytes(); }
};

}  // namespace lemma
