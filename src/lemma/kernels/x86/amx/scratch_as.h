// A kernel's working set (the AMX-INT8 panel, the flash split's tiles) placed in the caller's
// KernelScratch (kernel_scratch.h): the kernels keep no buffers of their own. The contents are
// whatever the scratch's last user left; the kernels write every byte before they read it.
// Internal linkage: included by the AMX kernel templates only.
#pragma once

#include <new>
#include <type_traits>

#include "lemma/kernels/kernel_scratch.h"
#include "lemma/kernels/x86/amx/amx_scratch.h"

namespace lemma::kernels::x86::amx {
namespace {

template <class T>
T& scratch_as(KernelScratch& scratch) {
  // Plain arrays and numbers (an implicit-lifetime type): the bytes are the object, nothing to
  // construct or destroy.
  static_assert(std::is_trivially_destructible_v<T> && std::is_aggregate_v<T> && alignof(T) <= 64);
  static_assert(sizeof(T) <= kAmxScratchBytes, "callers grow their scratch to kAmxScratchBytes up front");
  return *std::launder(reinterpret_cast<T*>(scratch.reserve(sizeof(T))));
}

}  // namespace
}  // namespace lemma::kernels::x86::amx
