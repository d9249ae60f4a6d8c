// Optional traits of the interleaved kernels' format structs (interleaved_blocks.h), shared by the
// AVX2 and AVX-512 VNNI kernels: a struct states kMins (Q4_1 / Q5_1: an m term per block) or
// kSubBlocks (IQ4_XS: 32-value blocks per superblock) only when it has them. Plain C++.
#pragma once

namespace lemma::kernels::x86 {

template <class W>
constexpr bool has_mins() {
  if constexpr (requires { W::kMins; }) {
    return W::kMins;
  } else {
    return false;
  }
}

template <class W>
constexpr int sub_blocks() {
  if constexpr (requires { W::kSubBlocks; }) {
    return W::kSubBlocks;
  } else {
    return 1;
  }
}

}  // namespace lemma::kernels::x86
