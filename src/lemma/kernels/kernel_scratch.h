// KernelScratch: bytes a caller owns and lends to kernels, so that no kernel keeps buffers of its
// own (per thread or global). 64-byte aligned, grown on demand and never shrunk: steady-state calls
// allocate nothing. What a kernel leaves there means nothing to the next call (kernels write before
// they read), so one scratch serves every kernel its thread runs, one call at a time.
// A thread team's caller keeps one per worker (ForwardWorkspace::kernel_scratch); a null
// KernelScratch* in MatmulArgs / FlashSplitArgs makes a kernel that needs one run through
// run_with_own_scratch() below. Not thread-safe.
// Nothing here is inline: the ISA files (x86/) use it, and must not instantiate inline code (an
// inline function compiled with AVX-512 could be picked by the linker for every caller, and a local
// KernelScratch there would need an exception cleanup; check_isa_symbols.cmake).
#pragma once

#include <cstddef>
#include <memory>

#include "lemma/kernels/attention/flash_split_args.h"
#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels {

class KernelScratch {
 public:
  KernelScratch();
  ~KernelScratch();
  KernelScratch(KernelScratch&& other) noexcept;
  KernelScratch& operator=(KernelScratch&& other) noexcept;

  // At least `bytes` bytes, 64-byte aligned. Allocates only to grow (the old contents are lost then).
  std::byte* reserve(size_t bytes);
  size_t capacity() const;  // bytes reserve() returns without allocating

 private:
  std::unique_ptr<std::byte[]> storage_;
  size_t capacity_ = 0;
};

// kernel(args) with args.scratch pointing at a scratch of this call's own (allocated, then freed):
// what a kernel that needs scratch does when the caller lent none (tests, one-off calls).
void run_with_own_scratch(const MatmulArgs& args, void (*kernel)(const MatmulArgs&));
void run_with_own_scratch(const FlashSplitArgs& args, void (*kernel)(const FlashSplitArgs&));

}  // namespace lemma::kernels
