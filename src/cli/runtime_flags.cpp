#include "cli/runtime_flags.h"

#include <optional>
#include <string>

#include "cli/progress_option.h"

#include "lemma/base/error.h"
#include "lemma/base/logging.h"

namespace lemma::cli {

namespace {

struct RuntimeFlags {
  std::string isa;  // empty: the machine's best
  std::string matmul_precision = "auto";
  bool interleave = true;
  bool decode_plans = true;
  bool pin_threads = true;
  std::string mla_attention = "auto";
};

RuntimeFlags& flags() {
  static RuntimeFlags f;
  return f;
}

RuntimeOptions resolve(const RuntimeFlags& f) {
  RuntimeOptions o;
  const kernels::Isa detected = kernels::detected_isa();
  if (!f.isa.empty()) {
    const auto isa = kernels::parse_isa(f.isa);
    if (!isa) fail<InvalidArgument>("--isa (LEMMA_ISA) {} is not one of amx, avx512, avx2, scalar", f.isa);
    if (*isa > detected) {
      fail<Unsupported>("--isa (LEMMA_ISA) {} but this machine supports at most {}", f.isa, kernels::isa_name(detected));
    }
    o.isa = *isa;
  }
  log().info("kernels: ISA {} (detected {}{})", kernels::isa_name(o.isa), kernels::isa_name(detected),
             f.isa.empty() ? "" : ", chosen by --isa or LEMMA_ISA");
  if (f.matmul_precision == "f32") {
    o.activations = kernels::ActivationPolicy::kF32;
    log().info("kernels: f32 activations for every matmul (--matmul-precision f32)");
  } else if (f.matmul_precision != "auto") {
    fail<InvalidArgument>("--matmul-precision (LEMMA_MATMUL_PRECISION) {} is not one of f32, auto", f.matmul_precision);
  }
  o.interleave = f.interleave;
  o.decode_plans = f.decode_plans;
  if (!o.decode_plans) log().info("model: decode plans off: every forward plans its matmuls");
  o.pin_threads = f.pin_threads;
  if (f.mla_attention == "absorbed") {
    o.mla_attention = MlaMode::kAbsorbed;
  } else if (f.mla_attention == "materialised") {
    o.mla_attention = MlaMode::kMaterialised;
  } else if (f.mla_attention != "auto") {
    fail<InvalidArgument>("--mla-attention (LEMMA_MLA_ATTENTION) {} is not one of auto, absorbed, materialised",
                          f.mla_attention);
  }
  o.load_progress = progress_options();
  return o;
}

}  // namespace

void add_runtime_flags(CLI::App& app) {
  RuntimeFlags& f = flags();
  app.add_option("--isa", f.isa, "Instruction set of the kernels: amx, avx512, avx2 or scalar (default: the best this CPU has)")
      ->envname("LEMMA_ISA");
  app.add_option("--matmul-precision", f.matmul_precision,
                 "auto (int8/bf16 activations where the project's accuracy gates accept them) or f32")
      ->envname("LEMMA_MATMUL_PRECISION")
      ->capture_default_str();
  app.add_option("--interleave", f.interleave, "Re-lay matrices in 16-row groups for the interleaved kernels (0 keeps the file's layout)")
      ->envname("LEMMA_INTERLEAVE")
      ->capture_default_str();
  app.add_option("--decode-plans", f.decode_plans, "Decode steps replay their captured matmul plans (0: plan every step)")
      ->envname("LEMMA_DECODE_PLANS")
      ->capture_default_str();
  app.add_option("--pin-threads", f.pin_threads, "Pin forward worker threads to CPUs (0: leave them to the scheduler)")
      ->envname("LEMMA_PIN_THREADS")
      ->capture_default_str();
  app.add_option("--mla-attention", f.mla_attention,
                 "Latent attention (DeepSeek MLA): auto (materialise K/V for long prefills, absorb for decode), "
                 "absorbed or materialised")
      ->envname("LEMMA_MLA_ATTENTION")
      ->capture_default_str();
}

const RuntimeOptions& runtime_options() {
  // Resolved on first use, after parsing; a bad value throws here, before any model is read.
  static const RuntimeOptions options = resolve(flags());
  return options;
}

}  // namespace lemma::cli
