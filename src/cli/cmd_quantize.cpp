// `lemma quantize`: a model into GGUF Q8_0/Q4_0/IQ4_NL/IQ4_XS (from a GGUF file) or into lemma's int8/int4/W8A8
// weights: a .safetensors file, an HF directory when the input is one, or (from a GGUF file) a .gguf
// that keeps the source's metadata and tokenizer (quant/quantized_gguf.h), which `lemma generate` /
// `perplexity` run directly.
// Progress goes to stderr, one line per tensor under a progress line (rate, ETA); the totals go to stdout.
#include <cstdio>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/model_source.h"
#include "cli/progress_option.h"
#include "cli/gptq_calibration.h"
#include "cli/quantize_calibration.h"
#include "lemma/base/error.h"
#include "lemma/io/file_write.h"
#include "lemma/quant/gguf_quantizer.h"
#include "lemma/quant/hf_quant_packer.h"
#include "lemma/quant/quantized_gguf.h"
#include "lemma/quant/weight_quantizer.h"

namespace lemma::cli {

namespace fs = std::filesystem;

namespace {

struct QuantizeCliOptions {
  std::string model, out, type;
  std::vector<std::string> tensor_types, keep;
  int64_t group_size = -1;
  bool asym = false;
  bool all_matrices = false;
  std::string calibrate;        // calibration text: SmoothQuant (w8a8) or GPTQ's Hessians (int8/int4, gptq types)
  float smooth_alpha = 0.5f;
  int64_t calibrate_tokens = 4096;
  int64_t calibrate_memory_mib = 4096;  // GPTQ: Hessians held at once
  int threads = 2;
};

constexpr const char* kCalibrateTypes =
    "--calibrate applies to --type w8a8 (SmoothQuant), int8/int4 and gptq types (GPTQ), not {}";

// One report line per tensor, above a progress line with the rate and ETA (progress_option.h).
void print_tensor_line(ProgressReporter& progress, size_t i, size_t n, const std::string& name, std::string_view from,
                       std::string_view to, uint64_t before, uint64_t after, const std::string& reason) {
  progress.set_total(static_cast<int64_t>(n));
  progress.message(fmt::format("[{:3}/{}] {:<32} {:>6} -> {:<16} {:>10} -> {:>10} bytes  ({})", i + 1, n, name, from, to,
                               before, after, reason));
  progress.update(static_cast<int64_t>(i + 1), name);
}

void print_totals(uint64_t tensor_before, uint64_t tensor_after, const std::string& in, const std::string& out) {
  std::printf("tensor bytes: %llu -> %llu (%.2fx smaller)\n", static_cast<unsigned long long>(tensor_before),
              static_cast<unsigned long long>(tensor_after),
              tensor_after ? static_cast<double>(tensor_before) / static_cast<double>(tensor_after) : 0.0);
  std::printf("file bytes: %llu -> %llu (%s)\n", static_cast<unsigned long long>(fs::file_size(in)),
              static_cast<unsigned long long>(fs::file_size(out)), out.c_str());
}

uint64_t source_bytes(const ModelSource& source) {
  if (source.gguf) return fs::file_size(source.gguf->path());
  return source.safetensors ? source.safetensors->total_bytes() : 0;
}

int quantize_to_gguf(const QuantizeCliOptions& opts, const ModelSource& source, DType type) {
  if (!source.gguf) fail<Unsupported>("--type {} writes GGUF and needs a .gguf input (got {})", opts.type, opts.model);
  if (!opts.calibrate.empty()) fail<InvalidArgument>(kCalibrateTypes, opts.type);
  quant::GgufQuantizeOptions options;
  options.type = type;
  for (const auto& k : opts.keep) options.overrides.push_back({k, DType::kF32});
  for (const auto& t : opts.tensor_types) options.overrides.push_back(quant::parse_tensor_type_override(t));
  uint64_t before = 0, after = 0;
  ProgressReporter progress("quantize", "tensors", 0, progress_options());
  const auto writer = quant::quantize_gguf(*source.gguf, options,
      [&](size_t i, size_t n, const quant::TensorPlan& plan, uint64_t b, uint64_t a) {
        before += b;
        after += a;
        print_tensor_line(progress, i, n, plan.name, dtype_name(plan.from), dtype_name(plan.to), b, a, plan.reason);
      });
  progress.finish();
  writer.write(opts.out);
  print_totals(before, after, source.gguf->path(), opts.out);
  return 0;
}

// The closing lines of every safetensors/HF output: tensor bytes before and after, and file sizes.
void print_size_summary(const ModelSource& source, uint64_t before, uint64_t after, const std::string& out_file) {
  std::printf("tensor bytes: %llu -> %llu (%.2fx smaller)\n", static_cast<unsigned long long>(before),
              static_cast<unsigned long long>(after),
              after ? static_cast<double>(before) / static_cast<double>(after) : 0.0);
  std::printf("model bytes: %llu -> %llu (%s)\n", static_cast<unsigned long long>(source_bytes(source)),
              static_cast<unsigned long long>(fs::file_size(out_file)), out_file.c_str());
}

// config.json of the quantized HF directory: the source's, plus a quantization_config.
std::string config_with(const std::string& config_json, const nlohmann::ordered_json& quantization_config) {
  auto config = nlohmann::ordered_json::parse(config_json);
  config["quantization_config"] = quantization_config;
  return config.dump(2) + "\n";
}

std::string quantized_config(const std::string& config_json, const quant::WeightQuantSpec& spec) {
  nlohmann::ordered_json q = {{"quant_method", "lemma"},
                              {"format", "lemma-weight-v1"},
                              {"bits", spec.bits},
                              {"group_size", spec.group_size == 0 ? -1 : spec.group_size},
                              {"sym", spec.symmetric}};
  if (spec.int8_activations) q["activations"] = "int8-per-token";
  return config_with(config_json, q);
}

// An HF directory's config.json and tokenizer files, for a directory output.
void write_hf_directory_files(const QuantizeCliOptions& opts, const std::string& config) {
  fs::create_directories(opts.out);
  write_file_atomically((fs::path(opts.out) / "config.json").string(),
                        {reinterpret_cast<const uint8_t*>(config.data()), config.size()});
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
                           "generation_config.json", "chat_template.jinja"}) {
    const fs::path from = fs::path(opts.model) / name;
    if (fs::exists(from)) fs::copy_file(from, fs::path(opts.out) / name, fs::copy_options::overwrite_existing);
  }
}

std::vector<quant::NamedTensor> source_tensors(const QuantizeCliOptions& opts, const ModelSource& source) {
  std::vector<quant::NamedTensor> tensors;
  if (source.gguf) {
    for (const auto& t : source.gguf->tensors()) tensors.push_back({t.name, t.view});
  } else if (source.safetensors) {
    for (const auto* t : source.safetensors->tensors()) tensors.push_back({t->name, t->view});
  } else {
    fail<InvalidArgument>("{} has no weights to quantize", opts.model);
  }
  return tensors;
}

// The first --calibrate-tokens tokens of the --calibrate text.
std::vector<int32_t> calibration_tokens(const QuantizeCliOptions& opts, const ModelSource& source) {
  if (opts.calibrate_tokens <= 0) fail<InvalidArgument>("--calibrate-tokens {} must be positive", opts.calibrate_tokens);
  auto tokens = load_tokenizer(source).encode(read_text_file(opts.calibrate), true, false);
  tokens.resize(static_cast<size_t>(std::min<int64_t>(opts.calibrate_tokens, static_cast<int64_t>(tokens.size()))));
  return tokens;
}

// With --calibrate, GPTQ's Hessians gathered on the text (cli/gptq_calibration.h), and the
// calibration a quantizer reads them through; without, an empty calibration.
struct GptqRun {
  std::unique_ptr<GptqHessians> hessians;
  quant::GptqCalibration calibration;

  GptqRun(const QuantizeCliOptions& opts, const ModelSource& source) {
    if (opts.calibrate.empty()) return;
    if (opts.calibrate_memory_mib <= 0) fail<InvalidArgument>("--calibrate-memory {} MiB must be positive", opts.calibrate_memory_mib);
    hessians = std::make_unique<GptqHessians>(source, calibration_tokens(opts, source), 128, opts.threads,
                                              static_cast<uint64_t>(opts.calibrate_memory_mib) << 20);
    calibration = {[h = hessians.get()](const std::string& name) { return h->for_tensor(name); }, opts.threads};
  }
  void report(const QuantizeCliOptions& opts) const {
    if (hessians)
      std::fprintf(stderr, "GPTQ: %lld calibration tokens from %s, %d pass(es)\n", static_cast<long long>(hessians->tokens()),
                   opts.calibrate.c_str(), hessians->passes());
  }
};

// GPTQ / AWQ / FP8: an HF directory (config.json quantization_config + model.safetensors) from an HF
// directory, or (from a GGUF) a GGUF container keeping the source's metadata and tokenizer.
int quantize_to_hf_format(const QuantizeCliOptions& opts, const ModelSource& source, const quant::HfQuantConfig& config) {
  if (!opts.tensor_types.empty()) fail<InvalidArgument>("--tensor-type applies to GGUF types; use --keep with {}", opts.type);
  const auto tensors = source_tensors(opts, source);
  if (!opts.calibrate.empty() && config.method != quant::HfQuantMethod::kGptq) fail<InvalidArgument>(kCalibrateTypes, opts.type);
  if (opts.calibrate.empty() && config.method == quant::HfQuantMethod::kGptq)
    std::fprintf(stderr, "no --calibrate: GPTQ weights round to nearest (no error compensation)\n");
  const GptqRun gptq(opts, source);
  const bool to_gguf = opts.out.ends_with(".gguf");
  if (to_gguf != static_cast<bool>(source.gguf)) {
    fail<InvalidArgument>("--out {}: --type {} writes an HF directory from an HF directory, or a .gguf from a .gguf",
                          opts.out, opts.type);
  }
  uint64_t before = 0, after = 0;
  ProgressReporter progress("quantize", "tensors", 0, progress_options());
  const auto result = quant::pack_hf_checkpoint(tensors, config, opts.keep, [&](size_t i, size_t n, const quant::WeightTensorPlan& p) {
    before += p.bytes_before;
    after += p.bytes_after;
    print_tensor_line(progress, i, n, p.name, dtype_name(tensors[i].view.dtype), p.quantized ? config.to_string() : "kept",
                      p.bytes_before, p.bytes_after, p.reason);
  }, gptq.calibration);
  progress.finish();
  gptq.report(opts);
  std::string out_file = opts.out;
  if (to_gguf) {
    GgufWriter writer;
    for (const auto& [key, value] : source.gguf->metadata()) writer.set(value);
    writer.set_string(std::string(quant::kHfQuantConfigKey), quant::to_json(config).dump());
    for (const auto& t : result.tensors) {
      TensorView view = t.view;
      if (view.dtype == DType::kF8E4M3) view.dtype = DType::kI8;  // GGUF has no fp8 type: same bytes
      writer.add_tensor(t.name, view);
    }
    writer.write(out_file);
  } else {
    write_hf_directory_files(opts, config_with(source.hf_config_json, quant::to_json(config)));
    out_file = (fs::path(opts.out) / "model.safetensors").string();
    write_safetensors(out_file, result.tensors, {{"format", "pt"}});
  }
  print_size_summary(source, before, after, out_file);
  return 0;
}

int quantize_to_safetensors(const QuantizeCliOptions& opts, const ModelSource& source, quant::WeightQuantSpec spec) {
  if (opts.group_size >= 0) spec.group_size = opts.group_size;
  if (opts.asym) spec.symmetric = false;
  quant::validate(spec);
  if (!opts.tensor_types.empty()) fail<InvalidArgument>("--tensor-type applies to GGUF types; use --keep with {}", opts.type);
  auto tensors = source_tensors(opts, source);
  cli::SmoothedTensors smoothed;
  if (!opts.calibrate.empty() && spec.int8_activations) {
    const auto ranges = calibrate_norm_outputs(source, calibration_tokens(opts, source), 128, opts.threads);
    smoothed = smooth_tensors(source, tensors, ranges, opts.smooth_alpha);
    tensors = smoothed.tensors;
    std::fprintf(stderr, "SmoothQuant: %lld calibration tokens from %s, alpha %.2f, factors %.4g .. %.4g\n",
                 static_cast<long long>(ranges.tokens), opts.calibrate.c_str(), opts.smooth_alpha,
                 smoothed.factor_range[0], smoothed.factor_range[1]);
  }
  const bool to_gguf = opts.out.ends_with(".gguf");
  const bool to_file = to_gguf || opts.out.ends_with(".safetensors");
  if (to_gguf && !source.gguf) {
    fail<InvalidArgument>("--out {}: a .gguf output of {} needs a .gguf input; name a .safetensors file or a directory",
                          opts.out, spec.to_string());
  }
  if (!to_file && source.format != ModelFormat::kHfDirectory) {
    fail<InvalidArgument>(
        "--out {}: a directory output needs an HF directory input; name a .safetensors or .gguf file instead",
        opts.out);
  }
  // int8/int4 with --calibrate: GPTQ (W8A8's calibration is SmoothQuant's, above).
  const GptqRun gptq(spec.int8_activations ? QuantizeCliOptions{} : opts, source);
  uint64_t before = 0, after = 0;
  quant::WeightQuantizeOptions options{spec, opts.keep, opts.all_matrices};
  ProgressReporter progress("quantize", "tensors", 0, progress_options());
  const auto result = quant::quantize_weights(tensors, options, [&](size_t i, size_t n, const quant::WeightTensorPlan& p) {
    before += p.bytes_before;
    after += p.bytes_after;
    const auto from = dtype_name(tensors[i].view.dtype);
    print_tensor_line(progress, i, n, p.name, from, p.quantized ? spec.to_string() : "kept", p.bytes_before, p.bytes_after,
                      p.reason);
  }, gptq.calibration);
  progress.finish();
  gptq.report(opts);
  std::string out_file = opts.out;
  if (!to_file) {
    out_file = (fs::path(opts.out) / "model.safetensors").string();
    write_hf_directory_files(opts, quantized_config(source.hf_config_json, spec));
  }
  if (to_gguf) {
    quant::quantized_gguf(*source.gguf, result).write(out_file);
  } else {
    write_safetensors(out_file, result.tensors, result.metadata);
  }
  print_size_summary(source, before, after, out_file);
  return 0;
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto opts = std::make_shared<QuantizeCliOptions>();
  auto* sub = app.add_subcommand("quantize", "Quantize a model: GGUF Q8_0/Q4_0/IQ4_NL/IQ4_XS, or lemma int8/int4 safetensors");
  sub->add_option("--model,-m", opts->model, "HF directory or .gguf file")->required();
  sub->add_option("--out,-o", opts->out,
                  "Output .gguf, .safetensors, or HF directory (int/w8a8 types: .gguf only from a .gguf input)")
      ->required();
  sub->add_option("--type,-t", opts->type,
                  "q8_0 | q4_0 | iq4_nl | iq4_xs | f16 | bf16 (GGUF) | int8 | int4 [-g32|-g64|-g128|-channel][-sym|-asym] | w8a8 (lemma) | "
                  "gptq|gptq8 [-g32|-g64|-g128|-channel][-sym|-asym][-act] | awq [-g32|-g64|-g128] | fp8 | fp8-block128 "
                  "(HF checkpoints)")
      ->required();
  sub->add_option("--group-size", opts->group_size, "int8/int4 group: 32, 64, 128 or 0 (per channel)");
  sub->add_flag("--asym", opts->asym, "int8/int4 with a zero point per group");
  sub->add_flag("--all-matrices", opts->all_matrices, "int8/int4: quantize the embedding and output matrix too");
  sub->add_option("--calibrate", opts->calibrate,
                  "text FILE to calibrate on: w8a8 records activation ranges and folds SmoothQuant factors into the norms "
                  "and q/k/v/gate/up; int8/int4 and gptq types gather each layer input's Hessian and run GPTQ's error "
                  "compensation");
  sub->add_option("--smooth-alpha", opts->smooth_alpha, "SmoothQuant migration strength alpha in [0, 1] (default 0.5)");
  sub->add_option("--calibrate-tokens", opts->calibrate_tokens, "calibration tokens used, at most (default 4096)");
  sub->add_option("--calibrate-memory", opts->calibrate_memory_mib,
                  "GPTQ: MiB of Hessians held at once; layers beyond it take more calibration passes (default 4096)");
  sub->add_option("--threads", opts->threads, "threads for the calibration forwards and GPTQ (default 2)");
  sub->add_option("--tensor-type", opts->tensor_types, "REGEX=TYPE (q8_0, q4_0, iq4_nl, iq4_xs, f16, bf16, f32) for GGUF outputs; repeatable");
  sub->add_option("--keep", opts->keep, "REGEX: leave matching tensors unquantized (GGUF: f32); repeatable");
  bind(sub, [opts] {
    const auto source = open_model_source(opts->model);
    if (!source.has_weights()) fail<InvalidArgument>("{} has no weights to quantize", opts->model);
    if (opts->type == "q8_0") return quantize_to_gguf(*opts, source, DType::kQ8_0);
    if (opts->type == "q4_0") return quantize_to_gguf(*opts, source, DType::kQ4_0);
    if (opts->type == "iq4_nl") return quantize_to_gguf(*opts, source, DType::kIQ4_NL);
    if (opts->type == "f16") return quantize_to_gguf(*opts, source, DType::kF16);
    if (opts->type == "bf16") return quantize_to_gguf(*opts, source, DType::kBF16);
    if (opts->type == "iq4_xs") return quantize_to_gguf(*opts, source, DType::kIQ4_XS);
    if (const auto spec = quant::parse_weight_quant_spec(opts->type)) return quantize_to_safetensors(*opts, source, *spec);
    if (const auto hf = quant::parse_hf_quant_type(opts->type)) return quantize_to_hf_format(*opts, source, *hf);
    fail<InvalidArgument>("unknown --type '{}': expected q8_0, q4_0, iq4_nl, iq4_xs, f16, bf16, int8, int4 (e.g. int4-g64-asym), w8a8, gptq (e.g. "
                        "gptq-g32-asym-act, gptq8), awq (e.g. awq-g64), fp8 or fp8-block128",
                        opts->type);
  });
}

}  // namespace lemma::cli
