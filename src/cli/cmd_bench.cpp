// `lemma bench roofline|model|capacity|serve`: the machine's roofline (read bandwidth, peak FLOP/s),
// llama-bench-style model throughput (pp/tg tokens/s with its fraction of the roofline), the
// memory capacity model (G5, G17) and the serving load generator for any OpenAI-compatible server.
// Printing only; the measuring lives in lemma/bench/.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "cli/runtime_flags.h"
#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/kv_cache_option.h"
#include "cli/machine_info.h"
#include "cli/progress_option.h"
#include "lemma/model/lora/lora_adapter.h"
#include "lemma/base/error.h"
#include "lemma/bench/capacity.h"
#include "lemma/bench/cost.h"
#include "lemma/bench/decode_roofline.h"
#include "lemma/bench/memory_bandwidth.h"
#include "lemma/bench/model_bench.h"
#include "lemma/bench/peak_flops.h"
#include "lemma/bench/serving/arrival.h"
#include "lemma/bench/serving/load_runner.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/registry.h"
#include "lemma/model/model.h"
#include "lemma/tensor/dtype.h"

namespace lemma::cli {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct MachineFlags {
  int threads = 0;
  int64_t buffer_mib = 1024;
  bool json = false;
};

struct ModelFlags {
  std::string model, load = "lazy", kv_cache_dtype = "auto";
  int threads = 0;
  int64_t pp = 512, tg = 128, batch = 1, depth = 0, step_tokens = 1;
  std::vector<std::string> lora_dirs;  // G29: sequence b decodes on adapter b mod count
  int reps = 3;
  double bandwidth_gbps = 0.0, peak_gflops = 0.0;  // 0 = measure
  int64_t buffer_mib = 1024;
  bool json = false;
};

struct CapacityFlags {
  std::string model;
  double memory_gb = 0.0;  // 0 = this machine's MemTotal
  int64_t ctx = 4096, block_size = 16;
  std::string kv_cache_dtype = "auto";
};

struct ServeFlags {
  bench::serving::ServingBenchOptions options;
  std::string endpoint = "completions";
  std::string request_rate = "inf";
  bool burst = false;
  bool json = false;
};

double mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0.0;
  while (in >> key >> kib) {
    if (key == "MemTotal:") return kib * 1024.0;
    in.ignore(256, '\n');
  }
  return 0.0;
}

std::string feature_list() {
  const auto& f = kernels::cpu_features();
  std::string s;
  auto add = [&](const char* name, bool on) { s += std::string(s.empty() ? "" : " ") + name + (on ? "" : "(no)"); };
  add("avx2", f.avx2);
  add("avx512", f.avx512);
  add("avx512_bf16", f.avx512_bf16);
  add("avx512_vnni", f.avx512_vnni);
  add("amx", f.amx);
  return s;
}

bench::BandwidthResult measure_bandwidth(int threads, int64_t buffer_mib) {
  if (buffer_mib < 1) throw InvalidArgument("--buffer-mib must be >= 1");
  return bench::measure_read_bandwidth({threads, static_cast<uint64_t>(buffer_mib) << 20, 5});
}

void print_machine(int threads) {
  std::printf("machine: %s, %s\n", cpu_model_name().c_str(), feature_list().c_str());
  std::printf("isa: %s, threads: %d\n", std::string(kernels::isa_name(runtime_options().isa)).c_str(), threads);
}

int run_roofline(const MachineFlags& flags) {
  const int threads = resolve_threads(flags.threads);
  const auto bw = measure_bandwidth(threads, flags.buffer_mib);
  if (flags.json) {
    nlohmann::json j = {{"test", "roofline"}, {"threads", threads}, {"cpu", cpu_model_name()},
                        {"bandwidth_gbps", bw.best_gbps}, {"pass_gbps", bw.pass_gbps},
                        {"buffer_bytes", bw.bytes_per_pass}, {"peak_gflops", nlohmann::json::object()}};
    for (const auto& p : bench::measure_peak_flops({threads})) j["peak_gflops"][p.name] = p.gflops;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  print_machine(threads);
  std::printf("bandwidth (read, best of %zu passes over %.2f GiB, %s loop): %.1f GB/s  [passes:",
              bw.pass_gbps.size(), static_cast<double>(bw.bytes_per_pass) / kGiB, bw.loop, bw.best_gbps);
  for (double g : bw.pass_gbps) std::printf(" %.1f", g);
  std::printf("]\n");
  for (const auto& p : bench::measure_peak_flops({threads})) {
    std::printf("peak %-20s %9.1f GFLOP/s   ridge %6.1f FLOP/byte\n", (p.name + ":").c_str(), p.gflops,
                p.gflops / bw.best_gbps);
  }
  return 0;
}

// The probe whose peak is the compute ceiling of the model's matmuls: AMX's TDPBF16PS where bf16
// weights run with bf16 activations under Isa::kAmx, the AVX512_BF16 dot where they run on vectors
// (kernels/kernel_policy.h), the VNNI int8 dot where int8 activations
// run on AVX512_VNNI, else the active ISA's f32 FMA (the f32 and dequantising kernels use it; the
// AVX2 int8 kernels' fraction is of it too).
std::string matmul_peak_probe(kernels::MatrixFormat weights) {
  const auto isa = runtime_options().isa;
  const auto policy = runtime_options().activations;
  if (kernels::default_matmul_precision(weights, isa, policy) == kernels::MatmulPrecision::kBf16Activations)
    return isa == kernels::Isa::kAmx && weights == kernels::interleaved(DType::kBF16) ? "bf16_tile_amx" : "bf16_dot_avx512bf16";  // amx_bf16x16
  if (kernels::default_matmul_precision(weights, isa, policy) == kernels::MatmulPrecision::kInt8Activations &&
      isa >= kernels::Isa::kAvx512 && kernels::cpu_features().avx512_vnni)
    return "int8_dot_avx512vnni";  // the int8 kernels' vpdpbusd
  return isa >= kernels::Isa::kAvx512 ? "f32_fma_avx512" : "f32_fma_avx2";
}

double matmul_peak_gflops(int threads, const std::string& wanted) {
  const auto probes = bench::measure_peak_flops({threads});
  for (const auto& p : probes) {
    if (p.name == wanted) return p.gflops;
  }
  return probes.empty() ? 0.0 : probes.front().gflops;
}

// "tg64: bandwidth read around the reps: 36.7 37.5 36.9 GB/s; fraction per rep: 93.2% 90.1%".
void print_rep_fractions(const bench::PhaseResult& r, const bench::DecodeRoofline& roofline, bool measured) {
  std::printf("  %s: ", r.test.c_str());
  if (measured) {
    std::printf("bandwidth read before the reps and after each:");
    for (double g : r.bandwidth_gbps) std::printf(" %.1f", g);
    std::printf(" GB/s; ");
  }
  std::printf("fraction per rep%s:", measured ? " (against the higher reading beside it)" : "");
  for (const auto& rep : roofline.reps) std::printf(" %.1f%%", 100.0 * rep.fraction);
  std::printf("; median %.1f%%\n", 100.0 * roofline.fraction);
}

int run_model(const ModelFlags& flags) {
  const int threads = resolve_threads(flags.threads);
  const Model model = Model::open(flags.model, parse_load_mode(flags.load), runtime_options());
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  const RuntimeOptions& rt = runtime_options();
  const kernels::MatrixFormat q_format = kernels::format_of(w.attention_matrix());
  const std::string kernel(kernels::kernel_name_for(q_format, c.hidden_size, rt.isa,
                                                    kernels::default_matmul_precision(q_format, rt.isa, rt.activations)));
  const auto weight_bytes = bench::weight_bytes(c, w);
  const KvDtype kv_dtype = parse_kv_cache_dtype(flags.kv_cache_dtype, w.attention_matrix().dtype);
  const uint64_t kv_per_token = bench::kv_bytes_per_token(c, kv_dtype);
  const bool measured = flags.bandwidth_gbps <= 0;
  const double bandwidth_before = measured ? measure_bandwidth(threads, flags.buffer_mib).best_gbps : flags.bandwidth_gbps;
  const std::string peak_probe = matmul_peak_probe(kernels::format_of(w.attention_matrix()));
  const double peak = flags.peak_gflops > 0 ? flags.peak_gflops : matmul_peak_gflops(threads, peak_probe);
  if (!flags.json) {
    print_machine(threads);
    std::printf("model: %s (%s)\n", flags.model.c_str(), c.summary().c_str());
    std::printf("weights: %s, %.1f MiB resident, %.1f MiB read per decode step; kv: %llu bytes/token (%s)\n",
                std::string(dtype_name(w.attention_matrix().dtype)).c_str(), static_cast<double>(weight_bytes.resident) / (1 << 20),
                static_cast<double>(weight_bytes.read_per_token) / (1 << 20), static_cast<unsigned long long>(kv_per_token),
                kernels::kv_dtype_name(kv_dtype));
    std::printf("matmul kernel: %s\n", kernel.c_str());
    std::printf("roofline: %.1f GB/s read%s, %.1f GFLOP/s %s peak%s\n", bandwidth_before, measured ? "" : " (given)",
                peak, peak_probe.c_str(), flags.peak_gflops > 0 ? " (given)" : "");
    const std::string pp = flags.pp > 0 ? "pp" + std::to_string(flags.pp) : "no prefill test";
    const std::string tg = flags.tg > 0 ? "tg" + std::to_string(flags.tg) + ", batch " + std::to_string(flags.batch)
                                        : "no decode test";
    const std::string depth = flags.depth > 0 ? ", after " + std::to_string(flags.depth) + " cached tokens" : "";
    std::printf("workload: %s, %s%s, %d reps after a warm-up, outputs checked first\n", pp.c_str(), tg.c_str(),
                depth.c_str(), flags.reps);
  }
  bench::ModelBenchOptions options{flags.pp, flags.tg, flags.reps, threads, flags.batch, 42};
  options.kv_dtype = kv_dtype;
  options.depth = flags.depth;
  options.step_tokens = flags.step_tokens;
  std::vector<LoraAdapter> loras;
  loras.reserve(flags.lora_dirs.size());
  for (const std::string& dir : flags.lora_dirs) {
    loras.push_back(load_lora_adapter(dir, c));
    options.loras.push_back(&loras.back());
    if (!flags.json)
      std::printf("lora: %s, rank %lld, %.1f MiB, loaded in %.1f ms\n", dir.c_str(), static_cast<long long>(loras.back().rank),
                  static_cast<double>(loras.back().bytes()) / (1 << 20), loras.back().load_seconds * 1e3);
  }
  // Decode is held against bandwidth read around each of its repetitions (decode_roofline.h).
  if (measured) options.read_bandwidth = [&] { return measure_bandwidth(threads, flags.buffer_mib).best_gbps; };
  ProgressReporter progress("bench", "runs", bench::model_bench_steps(options), progress_options());
  int64_t started = 0;  // each note starts a run: the one before it is done
  const auto note = [&](const std::string& what) { progress.update(started++, what); };
  const auto results = bench::run_model_bench(model, options, note);
  progress.update(started);
  progress.finish();
  if (!flags.json) std::printf("%-12s %6s %7s %14s %10s %14s %9s\n", "test", "batch", "threads", "tok/s", "stddev", "roofline tok/s", "fraction");
  for (const auto& r : results) {
    const bool decode = r.test[0] == 't';
    double roofline_tps = 0.0, bytes_per_token = 0.0, gflops = 0.0, fraction = 0.0;
    bench::DecodeRoofline roofline;
    if (decode) {
      // Weights are read once per step for every token of it (step_tokens per sequence).
      // MoE (G27): the routed-bytes roofline, counting the experts the steps really ran.
      const uint64_t read_per_step =
          r.moe_active_experts > 0 ? weight_bytes.read_per_step(r.moe_active_experts) : weight_bytes.read_per_token;
      bytes_per_token = bench::decode_bytes_per_token(read_per_step, kv_per_token,
                                                      bench::mean_decode_context(flags.tg * flags.step_tokens, flags.depth),
                                                      r.batch * flags.step_tokens);
      std::vector<double> rates;
      for (double s : r.seconds) rates.push_back(static_cast<double>(r.tokens_per_rep) / s);
      const std::vector<double> given = {bandwidth_before};
      roofline = bench::decode_roofline(rates, measured ? std::span<const double>(r.bandwidth_gbps) : given, bytes_per_token);
      roofline_tps = roofline.roofline_tokens_per_s;
      fraction = roofline.fraction;
    } else {
      gflops = bench::prefill_flops(c, w, flags.pp, flags.depth) / 1e9;
      roofline_tps = peak * static_cast<double>(flags.pp) / gflops;  // compute-bound ceiling
      fraction = r.tokens_per_s.mean / roofline_tps;
    }
    if (flags.json) {
      nlohmann::json j = {{"test", r.test}, {"threads", threads}, {"batch", r.batch}, {"depth", flags.depth},
                          {"tokens_per_s", r.tokens_per_s.mean}, {"stddev", r.tokens_per_s.stddev},
                          {"reps", r.tokens_per_s.count}, {"isa", kernels::isa_name(runtime_options().isa)},
                          {"kernel", kernel}, {"roofline_tokens_per_s", roofline_tps}, {"roofline_fraction", fraction}};
      if (!loras.empty()) j["lora_adapters"] = loras.size();
      if (decode) {
        j["bytes_per_token"] = bytes_per_token;
        if (r.moe_active_experts > 0) j["moe_active_experts_per_step"] = r.moe_active_experts;
        j["bandwidth_gbps"] = roofline.bandwidth_gbps;
        if (measured) j["bandwidth_readings_gbps"] = r.bandwidth_gbps;
        std::vector<double> rep_fractions;
        for (const auto& rep : roofline.reps) rep_fractions.push_back(rep.fraction);
        j["roofline_fraction_per_rep"] = rep_fractions;
      } else {
        j["gflop_per_run"] = gflops;
        j["peak_gflops"] = peak;
        j["peak_probe"] = peak_probe;
      }
      if (decode) {
        j["step_ms"] = r.overhead.step_ms;
        j["framework_overhead_fraction"] = r.overhead.overhead_fraction();
      }
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%-12s %6lld %7d %14.2f %10.2f %14.2f %8.1f%%\n", r.test.c_str(), static_cast<long long>(r.batch), threads,
                  r.tokens_per_s.mean, r.tokens_per_s.stddev, roofline_tps, 100.0 * fraction);
      if (decode) {
        std::printf("  %s: %.1f MiB read per token (weights / batch + kv at mean context %.1f), %.1f GB/s achieved\n",
                    r.test.c_str(), bytes_per_token / (1 << 20), bench::mean_decode_context(flags.tg * flags.step_tokens, flags.depth),
                    bytes_per_token * r.tokens_per_s.mean / 1e9);
        if (r.moe_active_experts > 0)
          std::printf("  %s: MoE: %.1f experts run per step over the MoE layers (of %lld; top-%lld per token): the "
                      "roofline counts their bytes only\n",
                      r.test.c_str(), r.moe_active_experts, static_cast<long long>(weight_bytes.routed_experts),
                      static_cast<long long>(c.moe.routing.top_k));
        print_rep_fractions(r, roofline, measured);
        std::printf("  %s: framework overhead %.2f%% of step time (step %.3f ms, %.3f ms outside kernel ranges; "
                    "traced run, batch %lld)\n",
                    r.test.c_str(), 100.0 * r.overhead.overhead_fraction(), r.overhead.step_ms, r.overhead.overhead_ms,
                    static_cast<long long>(r.batch));
      } else {
        std::printf("  %s: %.1f GFLOP per run, %.1f GFLOP/s achieved (ceiling: the %s peak)\n",
                    r.test.c_str(), gflops, gflops * r.tokens_per_s.mean / static_cast<double>(flags.pp),
                    peak_probe.c_str());
      }
    }
  }
  return 0;
}

int run_capacity(const CapacityFlags& flags) {
  const Model model = Model::open(flags.model, LoadMode::kLazyMmap, runtime_options());
  const ModelConfig& c = model.config();
  const auto weights = bench::weight_bytes(c, model.weights());
  const double memory = flags.memory_gb > 0 ? flags.memory_gb * 1e9 : mem_total_bytes();
  if (memory <= 0) throw InvalidArgument("--memory-gb is needed (cannot read MemTotal)");
  const KvDtype kv_dtype = parse_kv_cache_dtype(flags.kv_cache_dtype, model.weights().attention_matrix().dtype);
  const auto plan =
      bench::plan_capacity(c, weights.resident, static_cast<uint64_t>(memory), flags.ctx, flags.block_size, kv_dtype);
  std::printf("model: %s (%s)\n", flags.model.c_str(), c.summary().c_str());
  std::printf("kv bytes per token: %llu (2 x %lld layers x %lld kv heads x (%lld head dim x %lld bytes%s), %s)\n",
              static_cast<unsigned long long>(plan.kv_bytes_per_token), static_cast<long long>(c.num_layers),
              static_cast<long long>(c.num_kv_heads), static_cast<long long>(c.head_dim),
              static_cast<long long>(kernels::kv_element_bytes(kv_dtype)),
              kernels::kv_dtype_has_scales(kv_dtype) ? " + 4-byte scale" : "", kernels::kv_dtype_name(kv_dtype));
  std::printf("weight bytes: %llu (%.2f GiB)\n", static_cast<unsigned long long>(plan.weight_bytes),
              static_cast<double>(plan.weight_bytes) / kGiB);
  std::printf("memory budget: %.2f GB%s\n", memory / 1e9, flags.memory_gb > 0 ? "" : " (MemTotal)");
  std::printf("context: %lld tokens, block size %lld: %llu kv bytes per sequence\n", static_cast<long long>(plan.context),
              static_cast<long long>(plan.block_size), static_cast<unsigned long long>(plan.kv_bytes_per_sequence));
  std::printf("kv blocks that fit: %lld\n", static_cast<long long>(plan.max_blocks));
  std::printf("max concurrent sequences: %lld\n", static_cast<long long>(plan.max_sequences));
  return 0;
}
int run_serve(ServeFlags flags) {
  auto& o = flags.options;
  if (flags.endpoint != "completions" && flags.endpoint != "chat") {
    throw InvalidArgument("--endpoint must be completions or chat, got \"" + flags.endpoint + "\"");
  }
  o.endpoint = flags.endpoint == "chat" ? bench::serving::Endpoint::kChat : bench::serving::Endpoint::kCompletions;
  o.request_rate = flags.burst ? std::numeric_limits<double>::infinity() : bench::serving::parse_request_rate(flags.request_rate);
  ProgressReporter progress("bench serve", "requests", 0, progress_options());
  const auto on_progress = [&progress](const bench::serving::Progress& p) {
    progress.set_total(p.total);
    progress.update(p.completed + p.failed, fmt::format("{} failed, {} in flight", p.failed, p.in_flight));
  };
  const auto run = bench::serving::run_serving_benchmark(o, on_progress);
  progress.finish();
  if (flags.json) {
    std::printf("%s\n", bench::serving::serving_report_json(run.report, run.label).dump().c_str());
  } else {
    std::fputs(bench::serving::format_serving_table(run.report, run.label).c_str(), stdout);
  }
  if (run.report.completed == 0) {
    std::fprintf(stderr, "error: no request completed (the failures are listed in the report)\n");
    return 1;
  }
  return 0;
}
// The model test's options, on `bench` itself and on `bench model`; returns the --model option.
CLI::Option* add_model_options(CLI::App* app, ModelFlags& flags) {
  CLI::Option* model = app->add_option("--model,-m", flags.model, "HF directory or .gguf file");
  app->add_option("--threads,-t", flags.threads, "Threads per forward (default: one per core)");
  app->add_option("--pp,-p", flags.pp, "Prompt tokens of the prefill test (0 = skip)")->capture_default_str();
  app->add_option("--tg,-n", flags.tg, "Decode steps of the generation test (0 = skip)")->capture_default_str();
  app->add_option("--reps,-r", flags.reps, "Timed repetitions")->capture_default_str();
  app->add_option("--batch,-b", flags.batch, "Sequences decoded together in tg")->capture_default_str();
  app->add_option("--step-tokens", flags.step_tokens,
                  "Tokens per sequence per tg step, logits for each (1 + speculative drafts: the verification cost)")
      ->capture_default_str();
  app->add_option("--depth,-d", flags.depth, "Tokens already cached in each sequence before pp and tg (llama-bench -d)")
      ->capture_default_str();
  app->add_option("--bandwidth", flags.bandwidth_gbps, "Read bandwidth in GB/s (default: measure it)");
  app->add_option("--peak-gflops", flags.peak_gflops, "Peak GFLOP/s (default: measure it)");
  app->add_option("--buffer-mib", flags.buffer_mib, "Bandwidth buffer size when measuring")->capture_default_str();
  app->add_option("--load", flags.load, "lazy | prefault | copy")->capture_default_str();
  app->add_option("--lora", flags.lora_dirs, "LoRA adapter directories: sequence b runs on adapter b mod their count");
  app->add_flag("--json", flags.json, "One JSON object per test and line");
  add_kv_cache_dtype_option(app, flags.kv_cache_dtype);
  return model;
}

}  // namespace

void register_bench_grammar(CLI::App* bench);  // cmd_bench_grammar.cpp
void register_bench_collectives(CLI::App* bench);  // cmd_bench_collectives.cpp

void register_bench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks: machine roofline, model throughput, memory capacity");
  bench->require_subcommand(0, 1);

  auto machine = std::make_shared<MachineFlags>();
  auto* roofline = bench->add_subcommand("roofline", "Read bandwidth (best of 5 passes) and peak FLOP/s per ISA");
  roofline->add_option("--threads,-t", machine->threads, "Threads (default: one per core)");
  roofline->add_option("--buffer-mib", machine->buffer_mib, "Bandwidth buffer size")->capture_default_str();
  roofline->add_flag("--json", machine->json, "One JSON object");
  bind(roofline, [machine] { return run_roofline(*machine); });

  // `lemma bench --model M ...` (issue 5's form, like llama-bench) and `lemma bench model -m M ...`.
  auto flags = std::make_shared<ModelFlags>();
  add_model_options(bench, *flags);
  bind(bench, [flags] {
    if (flags->model.empty())
      throw InvalidArgument("bench: give --model M (prefill/decode tokens/s) or one of roofline, model, capacity, serve");
    return run_model(*flags);
  });
  auto* model = bench->add_subcommand("model", "llama-bench-style prefill (pp) and decode (tg) tokens/s");
  add_model_options(model, *flags)->required();
  bind(model, [flags] { return run_model(*flags); });

  auto cap = std::make_shared<CapacityFlags>();
  auto* capacity = bench->add_subcommand("capacity", "KV bytes per token, weight bytes, max concurrent sequences");
  capacity->add_option("--model,-m", cap->model, "HF directory or .gguf file")->required();
  capacity->add_option("--memory-gb", cap->memory_gb, "Memory budget in GB (default: MemTotal)");
  capacity->add_option("--ctx,-c", cap->ctx, "Tokens per sequence")->capture_default_str();
  capacity->add_option("--block-size", cap->block_size, "KV block size")->capture_default_str();
  add_kv_cache_dtype_option(capacity, cap->kv_cache_dtype);
  bind(capacity, [cap] { return run_capacity(*cap); });

  auto sf = std::make_shared<ServeFlags>();
  auto& so = sf->options;
  auto* serve = bench->add_subcommand("serve", "Load an OpenAI-compatible server: throughput, TTFT/TPOT/ITL/E2E, goodput");
  serve->add_option("--url", so.url, "Server base URL (http only)")->capture_default_str();
  serve->add_option("--model", so.model, "Model name to send (default: the first of GET /v1/models)");
  serve->add_option("--endpoint", sf->endpoint, "completions | chat")->capture_default_str();
  serve->add_option("--num-prompts,-n", so.workload.num_prompts, "Requests to send")->capture_default_str();
  serve->add_option("--concurrency,-c", so.concurrency, "Max requests in flight (0 = no limit)")->capture_default_str();
  serve->add_option("--request-rate", sf->request_rate, "Poisson arrivals in requests/s, or inf")->capture_default_str();
  serve->add_flag("--burst", sf->burst, "Send every request at once (same as --request-rate inf)");
  serve->add_option("--input-len", so.workload.input_len, "Prompt words per request (tokens with --calibrate-tokens)")->capture_default_str();
  serve->add_flag("--calibrate-tokens", so.calibrate_tokens, "Measure tokens/word with POST /tokenize; lengths are then tokens");
  serve->add_option("--output-len", so.workload.output_len, "max_tokens per request")->capture_default_str();
  serve->add_option("--random-range-ratio", so.workload.range_ratio, "Lengths uniform in len*(1-r)..len*(1+r)")->capture_default_str();
  serve->add_option("--shared-prefix-len", so.workload.shared_prefix_len, "Words of a common prompt prefix (0 = none)")->capture_default_str();
  serve->add_option("--num-prefixes", so.workload.num_prefixes, "Distinct common prefixes")->capture_default_str();
  serve->add_option("--shared-prefix-fraction", so.workload.shared_prefix_fraction, "Share of requests with a prefix")->capture_default_str();
  serve->add_option("--seed", so.workload.seed, "Seed of prompts, lengths and arrivals")->capture_default_str();
  serve->add_option("--api-key", so.api_key, "Sent as Authorization: Bearer KEY");
  serve->add_option("--slo-ttft-ms", so.slo.ttft_ms, "Goodput SLO: max TTFT in ms");
  serve->add_option("--slo-tpot-ms", so.slo.tpot_ms, "Goodput SLO: max TPOT in ms");
  serve->add_option("--timeout-s", so.request_timeout_s, "Per-request timeout in seconds")->capture_default_str();
  serve->add_flag("--ignore-eos", so.ignore_eos, "Send ignore_eos: true (vLLM extension) so outputs reach max_tokens");
  serve->add_option("--extra-body", so.extra_body,
                    "JSON object merged into every request body, e.g. '{\"response_format\": {...}}'")
      ->check([](const std::string& text) -> std::string {
        const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
        return j.is_object() ? "" : "--extra-body must be a JSON object";
      });
  serve->add_flag("--json", sf->json, "One JSON object");
  bind(serve, [sf] { return run_serve(*sf); });

  register_bench_grammar(bench);
  register_bench_collectives(bench);
}

}  // namespace lemma::cli
