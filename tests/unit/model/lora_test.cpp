// LoRA adapters (G29): PEFT files read and refused with errors naming the problem; the segmented
// shrink/expand against plain loops (every ISA, thread counts, segments with gaps); a random model
// with an adapter on every projection (rsLoRA, odd rank) against the float64 reference forward of
// the merged weights W + scaling * B @ A.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/io/safetensors.h"
#include "lemma/model/lora/lora_adapter.h"
#include "lemma/model/lora/lora_delta.h"
#include "lemma/model/sequence_logits.h"
#include "random_model.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

namespace fs = std::filesystem;

struct AdapterTensor {
  std::string name;
  Shape shape;
  std::vector<float> values;
};

nlohmann::json peft_config(int64_t r, double alpha, std::vector<std::string> targets, bool rslora = false) {
  return {{"peft_type", "LORA"}, {"r", r},           {"lora_alpha", alpha}, {"target_modules", targets},
          {"use_rslora", rslora}, {"bias", "none"}, {"use_dora", false},   {"fan_in_fan_out", false},
          {"modules_to_save", nullptr}, {"alpha_pattern", nlohmann::json::object()},
          {"rank_pattern", nlohmann::json::object()}};
}

std::string module_path(int64_t layer, const std::string& module) {
  const bool mlp = module == "gate_proj" || module == "up_proj" || module == "down_proj";
  return "base_model.model.model.layers." + std::to_string(layer) + (mlp ? ".mlp." : ".self_attn.") + module;
}

std::vector<float> random_values(int64_t n, std::mt19937& rng, float scale = 0.3f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

// [out, in] of a projection of small_config().
std::pair<int64_t, int64_t> shape_of(const ModelConfig& c, const std::string& m) {
  if (m == "q_proj") return {c.q_dim(), c.hidden_size};
  if (m == "k_proj" || m == "v_proj") return {c.kv_dim(), c.hidden_size};
  if (m == "o_proj") return {c.hidden_size, c.q_dim()};
  if (m == "down_proj") return {c.hidden_size, c.intermediate_size};
  return {c.intermediate_size, c.hidden_size};
}

// A (lora_A, lora_B) pair of rank r for every layer and module, random.
std::vector<AdapterTensor> random_pairs(const ModelConfig& c, const std::vector<std::string>& modules, int64_t r,
                                        uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<AdapterTensor> t;
  for (int64_t l = 0; l < c.num_layers; ++l)
    for (const auto& m : modules) {
      const auto [out, in] = shape_of(c, m);
      t.push_back({module_path(l, m) + ".lora_A.weight", Shape{r, in}, random_values(r * in, rng)});
      t.push_back({module_path(l, m) + ".lora_B.weight", Shape{out, r}, random_values(out * r, rng)});
    }
  return t;
}

fs::path write_adapter(const std::string& name, const nlohmann::json& config, const std::vector<AdapterTensor>& tensors) {
  const fs::path dir = build_scratch("lora-unit") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "adapter_config.json") << config.dump(2);
  std::vector<SafetensorsTensor> st;
  for (const auto& t : tensors) st.push_back({t.name, TensorView{t.values.data(), DType::kF32, t.shape}});
  write_safetensors((dir / "adapter_model.safetensors").string(), st);
  return dir;
}

// Runs `fn`, expects an exception of type E whose message contains every one of `parts`.
template <typename E, typename Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no error";
  } catch (const E& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
  }
}

TEST(LoraAdapter, LoadsAndScales) {
  const ModelConfig c = small_config();
  const auto tensors = random_pairs(c, {"q_proj", "down_proj"}, 4, 1);
  const auto dir = write_adapter("valid", peft_config(4, 8, {"q_proj", "down_proj"}), tensors);
  const LoraAdapter a = load_lora_adapter(dir, c);
  EXPECT_EQ(a.rank, 4);
  EXPECT_DOUBLE_EQ(a.scaling(4), 2.0);
  ASSERT_NE(a.find(1, LoraTarget::kDown), nullptr);
  EXPECT_EQ(a.find(1, LoraTarget::kK), nullptr);
  // B is stored transposed, times the scaling (alpha / r = 2); A as given.
  const LoraMatrices& q0 = *a.find(0, LoraTarget::kQ);
  const int64_t out = c.q_dim();
  ASSERT_EQ(q0.bt.shape, (Shape{4, out}));
  for (int64_t i = 0; i < out; ++i)
    for (int64_t r = 0; r < 4; ++r)
      EXPECT_EQ(q0.bt.as<float>()[r * out + i], 2.0f * tensors[1].values[static_cast<size_t>(i * 4 + r)]);
  for (int64_t i = 0; i < q0.a.elements(); ++i) EXPECT_EQ(q0.a.as<float>()[i], tensors[0].values[static_cast<size_t>(i)]);

  const LoraAdapter rs = load_lora_adapter(write_adapter("rslora", peft_config(4, 8, {"q_proj", "down_proj"}, true), tensors), c);
  EXPECT_DOUBLE_EQ(rs.scaling(4), 4.0);  // 8 / sqrt(4)
  EXPECT_EQ(rs.find(0, LoraTarget::kQ)->bt.as<float>()[0], 4.0f * tensors[1].values[0]);
}

TEST(LoraAdapter, BadFilesNameTheProblem) {
  const ModelConfig c = small_config();
  const auto good = random_pairs(c, {"q_proj", "v_proj"}, 4, 2);
  const auto config = peft_config(4, 8, {"q_proj", "v_proj"});

  expect_error<IoError>([&] { load_lora_adapter(build_scratch("lora-unit") / "no-such-dir", c); },
                        {"no-such-dir", "adapter_config.json"});
  const auto no_weights = write_adapter("no-weights", config, good);
  fs::remove(no_weights / "adapter_model.safetensors");
  expect_error<IoError>([&] { load_lora_adapter(no_weights, c); }, {"adapter_model.safetensors", "missing"});

  auto wrong_a = good;
  wrong_a[0].shape = Shape{4, 31};
  wrong_a[0].values.resize(4 * 31);
  expect_error<FormatError>([&] { load_lora_adapter(write_adapter("wrong-a", config, wrong_a), c); },
                            {"layers.0.self_attn.q_proj.lora_A.weight", "[4, 31]", "expected [r, 32]"});
  auto wrong_b = good;
  wrong_b[3].shape = Shape{16, 3};
  wrong_b[3].values.resize(16 * 3);
  expect_error<FormatError>([&] { load_lora_adapter(write_adapter("wrong-b", config, wrong_b), c); },
                            {"v_proj.lora_B.weight", "[16, 3]", "expected [16, 4]"});
  auto missing_b = good;
  missing_b.erase(missing_b.begin() + 1);
  expect_error<FormatError>([&] { load_lora_adapter(write_adapter("missing-b", config, missing_b), c); },
                            {"layer 0 q_proj", "lora_B is missing"});

  expect_error<Unsupported>(
      [&] { load_lora_adapter(write_adapter("embed-target", peft_config(4, 8, {"q_proj", "embed_tokens"}), good), c); },
      {"target module 'embed_tokens' is not supported"});
  auto lm_head = good;
  lm_head.push_back({"base_model.model.lm_head.lora_A.weight", Shape{4, 32}, std::vector<float>(128)});
  expect_error<Unsupported>([&] { load_lora_adapter(write_adapter("lm-head", config, lm_head), c); },
                            {"lm_head.lora_A.weight", "LoRA on 'lm_head' is not supported"});
  auto unknown = good;
  unknown.push_back({"base_model.model.model.layers.0.self_attn.rotary.lora_A.weight", Shape{4, 32}, std::vector<float>(128)});
  expect_error<FormatError>([&] { load_lora_adapter(write_adapter("unknown", config, unknown), c); },
                            {"rotary.lora_A.weight", "not a LoRA matrix"});
  auto past_layers = random_pairs(c, {"q_proj"}, 4, 3);
  past_layers[0].name = module_path(7, "q_proj") + ".lora_A.weight";
  expect_error<FormatError>([&] { load_lora_adapter(write_adapter("layer-7", peft_config(4, 8, {"q_proj"}), past_layers), c); },
                            {"layer 7 outside the model's 2 layers"});
  auto dora = config;
  dora["use_dora"] = true;
  expect_error<Unsupported>([&] { load_lora_adapter(write_adapter("dora", dora, good), c); }, {"use_dora"});
  expect_error<InvalidArgument>([&] { load_lora_adapter(write_adapter("rank", config, good), c, {.max_rank = 2}); },
                                {"rank 4", "limit of 2"});
  const auto bad_json = write_adapter("bad-json", config, good);
  std::ofstream(bad_json / "adapter_config.json") << "{\"r\": 4,";
  expect_error<FormatError>([&] { load_lora_adapter(bad_json, c); }, {"adapter_config.json", "not valid JSON"});
}

// y += (x . A^T) . B^T over segments, by plain double loops.
TEST(LoraDelta, MatchesPlainLoopsOnEveryIsaAndThreadCount) {
  const ModelConfig c = small_config();
  const LoraAdapter a = load_lora_adapter(write_adapter("delta-a", peft_config(3, 6, {"q_proj", "k_proj"}), random_pairs(c, {"q_proj", "k_proj"}, 3, 4)), c);
  const LoraAdapter b = load_lora_adapter(write_adapter("delta-b", peft_config(16, 4, {"q_proj"}), random_pairs(c, {"q_proj"}, 16, 5)), c);
  const int64_t M = 23, K = c.hidden_size;
  std::mt19937 rng(9);
  const std::vector<float> x = random_values(M * K, rng, 1.0f);
  const std::vector<float> q0 = random_values(M * c.q_dim(), rng, 1.0f), k0 = random_values(M * c.kv_dim(), rng, 1.0f);
  // Rows 0-4 on a, 5-6 none, 7-19 on b, 20-22 on a again.
  const std::vector<LoraSegment> segments = {{0, 5, &a}, {7, 13, &b}, {20, 3, &a}};
  std::vector<double> want_q(q0.begin(), q0.end()), want_k(k0.begin(), k0.end());
  for (const auto& seg : segments)
    for (const auto& [target, want, n] : {std::tuple{LoraTarget::kQ, &want_q, c.q_dim()}, std::tuple{LoraTarget::kK, &want_k, c.kv_dim()}}) {
      const LoraMatrices* m = seg.adapter->find(1, target);
      if (!m) continue;
      for (int64_t row = seg.row0; row < seg.row0 + seg.rows; ++row) {
        std::vector<double> s(static_cast<size_t>(m->rank));
        for (int64_t r = 0; r < m->rank; ++r)
          for (int64_t k = 0; k < K; ++k) s[static_cast<size_t>(r)] += double(x[static_cast<size_t>(row * K + k)]) * m->a.as<float>()[r * K + k];
        for (int64_t j = 0; j < n; ++j)
          for (int64_t r = 0; r < m->rank; ++r) (*want)[static_cast<size_t>(row * n + j)] += s[static_cast<size_t>(r)] * m->bt.as<float>()[r * n + j];
      }
    }
  for (const kernels::Isa isa : kernels::available_isas()) {
    std::vector<float> first_q;
    for (const int threads : {1, 3}) {
      std::vector<float> q = q0, k = k0;
      ThreadTeam team(threads, false);
      LoraScratch scratch;
      const LoraOutput outputs[] = {{LoraTarget::kQ, q}, {LoraTarget::kK, k}};
      add_lora_deltas(1, x, K, segments, outputs, &team, isa, scratch);
      for (size_t i = 0; i < q.size(); ++i) ASSERT_NEAR(q[i], want_q[i], 1e-4) << "q " << i << " isa " << static_cast<int>(isa);
      for (size_t i = 0; i < k.size(); ++i) ASSERT_NEAR(k[i], want_k[i], 1e-4) << "k " << i;
      // Rows 5-6 (no adapter) untouched.
      for (int64_t i = 5 * c.q_dim(); i < 7 * c.q_dim(); ++i) ASSERT_EQ(q[static_cast<size_t>(i)], q0[static_cast<size_t>(i)]);
      if (first_q.empty()) first_q = q;
      EXPECT_EQ(q, first_q) << "the thread count changed the bits";
    }
  }
}

TEST(LoraDelta, SegmentsJoinRunsOfOneAdapter) {
  LoraAdapter a, b;
  const std::vector<const LoraAdapter*> adapters = {&a, &a, nullptr, &b, &a, &a};
  const std::vector<int64_t> tokens = {3, 1, 4, 2, 0, 5};
  std::vector<LoraSegment> segs;
  lora_segments(adapters, tokens, segs);
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].row0, 0);
  EXPECT_EQ(segs[0].rows, 4);
  EXPECT_EQ(segs[1].row0, 8);
  EXPECT_EQ(segs[1].adapter, &b);
  EXPECT_EQ(segs[2].row0, 10);
  EXPECT_EQ(segs[2].rows, 5);
}

// A random model with rsLoRA rank 3 on all seven projections against the float64 reference
// forward of the merged weights.
TEST(LoraForward, MatchesMergedWeightsReference) {
  const ModelConfig c = small_config();
  RandomModel rm = make_random_model(c, 11);
  const std::vector<std::string> modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  const auto pairs = random_pairs(c, modules, 3, 12);
  const auto dir = write_adapter("merged", peft_config(3, 5, modules, true), pairs);
  const Model model = rm.build();
  const LoraAdapter adapter = load_lora_adapter(dir, c);
  const double scaling = 5.0 / std::sqrt(3.0);
  RandomModel merged = rm;
  merged.tensors = std::make_shared<std::map<std::string, std::vector<float>>>(*rm.tensors);
  for (size_t p = 0; p < pairs.size(); p += 2) {
    const std::string base = pairs[p].name.substr(std::string("base_model.model.").size());
    const std::string weight = base.substr(0, base.size() - std::string(".lora_A.weight").size()) + ".weight";
    auto& w = merged.tensors->at(weight);
    const int64_t out = pairs[p + 1].shape[0], in = pairs[p].shape[1];
    for (int64_t i = 0; i < out; ++i)
      for (int64_t j = 0; j < in; ++j) {
        double d = 0;
        for (int64_t r = 0; r < 3; ++r) d += double(pairs[p + 1].values[static_cast<size_t>(i * 3 + r)]) * pairs[p].values[static_cast<size_t>(r * in + j)];
        w[static_cast<size_t>(i * in + j)] += static_cast<float>(scaling * d);
      }
  }
  std::vector<int32_t> tokens;
  for (int i = 0; i < 11; ++i) tokens.push_back((i * 7 + 3) % static_cast<int32_t>(c.vocab_size));
  const auto got = sequence_logits(model, tokens, 2, KvDtype::kF32, &adapter);
  const auto want = reference_forward(merged, tokens);
  const auto base = reference_forward(rm, tokens);
  double max_want = 0, diff = 0, effect = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_want = std::max(max_want, std::abs(want[i]));
    diff = std::max(diff, std::abs(got[i] - want[i]));
    effect = std::max(effect, std::abs(base[i] - want[i]));
  }
  EXPECT_LE(diff, 1e-4 * max_want + 1e-5);
  EXPECT_GT(effect, 100 * (1e-4 * max_want + 1e-5)) << "the adapter must matter for this test to mean anything";
}

}  // namespace
}  // namespace lemma::testing
