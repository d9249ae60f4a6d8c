// The arguments of one flash-attention split kernel call: plain data with no inline code, so the
// per-ISA files (x86/avx2, x86/avx512) can include it without exporting weak symbols.
#pragma once

#include <cstdint>

#include "lemma/kernels/attention/kv_dtype.h"

namespace lemma::kernels {

class KernelScratch;  // kernel_scratch.h

// One split of keys [key_begin, key_end) for `num_rows` query tokens x `group` query heads that
// share one KV head. Query token r sits at position first_position + r and sees key j only if
// j <= its position and (sliding_window == 0 or position - j < sliding_window). Only keys some row
// sees are read (blocks wholly before the first row's window may be freed).
struct FlashSplitArgs {
  const float* q;          // query (r, g) at q + r * q_row_stride + g * head_dim
  int64_t q_row_stride;    // floats between consecutive tokens' queries (num_heads * head_dim)
  int64_t num_rows;        // query tokens
  int64_t group;           // query heads per KV head (stored next to each other)
  int64_t head_dim;
  int64_t first_position;  // position of query row 0
  int64_t sliding_window;  // 0 = unlimited
  int64_t key_begin;       // absolute key positions of this split (tiles of 16 keys start at
                           // absolute multiples of 16 whatever key_begin is)
  int64_t key_end;
  float scale;             // applied to q.k (usually 1/sqrt(head_dim))
  // Paged K/V for this KV head, elements of kv_dtype: key j's row starts token_stride * slot(j)
  // elements after keys, where slot(j) = block_table[j / block_size] * block_size + j % block_size.
  // int8/fp8 rows are scaled by key_scales[slot(j) * scale_stride] (value_scales likewise).
  const void* keys;
  const void* values;
  const int32_t* block_table;
  int64_t block_size;
  int64_t token_stride;    // elements per cache slot (num_kv_heads * head_dim)
  KvDtype kv_dtype;        // kF32 when value-initialised
  const float* key_scales;    // int8/fp8 only
  const float* value_scales;  // int8/fp8 only
  int64_t scale_stride;       // scales per cache slot (num_kv_heads)
  // Output, [num_rows, group, head_dim + 2]: per query (max score, sum of exp, unnormalised
  // sum of exp * v [head_dim]). A query that sees no key of the split gets (-inf, 0, zeros).
  float* partial;
  // The calling thread's scratch for kernels that stage tiles (the AMX one); null: such a kernel
  // uses its own for this call. Other kernels ignore it.
  KernelScratch* scratch;
};

}  // namespace lemma::kernels
