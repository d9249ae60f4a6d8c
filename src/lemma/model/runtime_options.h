// RuntimeOptions: how this process runs a model — which instruction set the kernels use, the
// activation precision policy, the tensor-parallel group, whether matrices are re-laid for the interleaved kernels, whether
// decode steps replay captured plans, the threads per forward and their pinning, and the KV cache
// dtype. Built once by the CLI (its flags, with the LEMMA_* environment variables as defaults,
// read there and nowhere else: src/cli/runtime_flags.h) and passed to Model (kernels and layout
// chosen when the model is built) and to the Engine (threads, KV dtype). Plain data.
#pragma once

#include <memory>
#include <optional>

#include "lemma/base/progress.h"

#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/matmul.h"
#include "lemma/model/layers/mla_config.h"

namespace lemma::dist {
class Communicator;
}

namespace lemma {

struct RuntimeOptions {
  kernels::Isa isa = kernels::detected_isa();  // at most detected_isa() (Model checks)
  kernels::ActivationPolicy activations = kernels::ActivationPolicy::kAuto;
  bool interleave = true;    // re-lay matrices where an interleaved kernel pays (kernel_policy.h)
  bool decode_plans = true;  // decode steps replay their captured matmul plans (decode_plans.h)
  int num_threads = 0;       // threads per forward, the caller's included; 0: one per allowed CPU
  bool pin_threads = true;   // pin each worker to one allowed CPU when there are enough of them
  std::optional<kernels::KvDtype> kv_dtype = {};  // unset: from the weights (cli/kv_cache_option.h)
  MlaMode mla_attention = MlaMode::kAuto;     // latent attention (G28): absorbed / materialised choice
  // Tensor parallelism (G7): this rank's TP group. Set: the model loads only this rank's slices
  // (model/tensor_parallel.h) and every forward runs collectives over it, so all ranks must call
  // forward() with the same batches in the same order. Null: one rank holds the whole model.
  std::shared_ptr<dist::Communicator> tensor_parallel = {};
  // With a group: rank 0 drives (its forward() first sends the batch to ranks 1.., which sit in
  // Model::follow(): model/tensor_parallel_steps.h). Off: every rank calls forward() itself.
  bool tensor_parallel_leader = false;
  ProgressOptions load_progress = {};        // how loading shows its progress (the CLI: by isatty)

  // The MatmulOptions of this model's matmuls (precision from the policy table).
  kernels::MatmulOptions matmul_options() const { return {isa, std::nullopt, activations}; }
};

}  // namespace lemma
