// RuntimeOptions: how this process runs a model — which instruction set the kernels use, the
// activation precision policy, whether matrices are re-laid for the interleaved kernels, whether
// decode steps replay captured plans, the threads per forward and their pinning, and the KV cache
// dtype. Built once by the CLI (its flags, with the LEMMA_* environment variables as defaults,
// read there and nowhere else: src/cli/runtime_flags.h) and passed to Model (kernels and layout
// chosen when the model is built) and to the Engine (threads, KV dtype). Plain data.
#pragma once

#include <optional>

#include "lemma/base/progress.h"

#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/matmul.h"

namespace lemma {

struct RuntimeOptions {
  kernels::Isa isa = kernels::detected_isa();  // at most detected_isa() (Model checks)
  kernels::ActivationPolicy activations = kernels::ActivationPolicy::kAuto;
  bool interleave = true;    // re-lay matrices where an interleaved kernel pays (kernel_policy.h)
  bool decode_plans = true;  // decode steps replay their captured matmul plans (decode_plans.h)
  int num_threads = 0;       // threads per forward, the caller's included; 0: one per allowed CPU
  bool pin_threads = true;   // pin each worker to one allowed CPU when there are enough of them
  std::optional<kernels::KvDtype> kv_dtype;  // unset: from the weights (cli/kv_cache_option.h)
  ProgressOptions load_progress = {};        // how loading shows its progress (the CLI: by isatty)

  // The MatmulOptions of this model's matmuls (precision from the policy table).
  kernels::MatmulOptions matmul_options() const { return {isa, std::nullopt, activations}; }
};

}  // namespace lemma
