// Multi-LoRA serving (G29) through the real `lemma serve` on the tiny preset: start-time modules
// and run-time loads listed in /v1/models; each adapter's greedy completion is the golden
// continuation (merged-weights reference) also while requests on every adapter and the base model
// run concurrently and another thread loads and unloads an adapter again and again (each request
// then either gets its golden answer or a clean 404, never another adapter's tokens); bad loads
// answer 400 naming the problem; `lemma generate --lora-modules --lora` gives the same tokens.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <nlohmann/json.hpp>

#include "lora_golden_files.h"
#include "run_command.h"
#include "serve_process.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

using json = nlohmann::json;

class LoraServe : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* a : {"lora-a", "lora-b", "lora-c"}) LEMMA_REQUIRE_SHARED(shared_data(std::string("golden/lora/tiny-") + a + ".json"));
    std::string why;
    files_ = ensure_lora_adapters("tiny", why);
    if (!files_) {
      if (running_in_ci()) FAIL() << why;
      GTEST_SKIP() << why;
    }
  }
  std::string adapter(const char* name) const { return (files_->adapters / name).string(); }
  static std::vector<int32_t> golden_tokens(const std::string& model) {
    const auto& g = model == "base" ? golden_json("models/tiny.json") : lora_golden("tiny", model);
    return g["greedy"]["tokens"].get<std::vector<int32_t>>();
  }
  static std::vector<int32_t> prompt() { return lora_golden("tiny", "lora-a")["greedy"]["prompt"].get<std::vector<int32_t>>(); }
  static json request(const std::string& model) {
    return {{"model", model}, {"prompt", prompt()}, {"max_tokens", 32}, {"temperature", 0}, {"ignore_eos", true}};
  }
  // The golden continuation as the server writes it (special tokens skipped): the text of `lemma
  // generate --json`, whose ids are checked against the golden tokens first.
  std::string expected_text(const std::string& model) const {
    std::string ids;
    for (int32_t t : prompt()) ids += (ids.empty() ? "" : ",") + std::to_string(t);
    std::string cmd = std::string(LEMMA_BINARY) + " generate --model " + shell_quote(files_->base.hf_dir.string()) +
                      " --prompt-ids " + ids + " --max-tokens 32 --temperature 0 --ignore-eos --json";
    if (model != "base") cmd += " --lora-modules " + model + "=" + shell_quote(adapter(model.c_str())) + " --lora " + model;
    const auto r = run_command(cmd);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const json out = json::parse(r.out);
    EXPECT_EQ(out["ids"].get<std::vector<int32_t>>(), golden_tokens(model)) << model;
    return out["text"];
  }
  std::optional<LoraFiles> files_;
};

TEST_F(LoraServe, AdaptersByNameConcurrentLoadUnload) {
  ServeProcess server("--model " + shell_quote(files_->base.hf_dir.string()) + " --served-model-name base --port 0 --threads 2 --max-num-seqs 16 " +
                      "--lora-modules lora-a=" + shell_quote(adapter("lora-a")) + " lora-b=" + shell_quote(adapter("lora-b")) +
                      " --max-loras 4 --max-lora-rank 16");
  ASSERT_TRUE(server.started()) << server.log();
  const auto load = [&](const std::string& name, const std::string& path) {
    return post_json(server.port(), "/v1/load_lora_adapter", {{"lora_name", name}, {"lora_path", path}});
  };
  ASSERT_EQ(load("lora-c", adapter("lora-c")).status, 200);
  const std::string models = raw_http(server.port(), "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const json list = json::parse(models.substr(models.find("\r\n\r\n") + 4));
  std::vector<std::string> ids;
  for (const auto& m : list["data"]) ids.push_back(m["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"base", "lora-a", "lora-b", "lora-c"}));
  EXPECT_EQ(list["data"][3]["parent"], "base");

  std::map<std::string, std::string> want;
  for (const std::string m : {"base", "lora-a", "lora-b", "lora-c"}) {
    want[m] = expected_text(m);
    const JsonReply r = post_json(server.port(), "/v1/completions", request(m));
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.body["choices"][0]["text"], want[m]) << m;
    EXPECT_EQ(r.body["model"], m);
  }
  EXPECT_NE(want["lora-a"], want["lora-b"]);

  // Concurrent requests on every model while lora-c is unloaded and loaded again, over and over.
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, not_found{0};
  std::vector<std::string> problems;
  std::mutex problems_mutex;
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t)
    clients.emplace_back([&, t] {
      const std::string names[] = {"base", "lora-a", "lora-b", "lora-c"};
      for (int i = 0; i < 6; ++i) {
        const std::string m = names[(t + i) % 4];
        const JsonReply r = post_json(server.port(), "/v1/completions", request(m));
        if (r.status == 200 && r.body["choices"][0]["text"] == want[m]) {
          ++ok;
        } else if (r.status == 404 && m == "lora-c") {
          ++not_found;
        } else {
          std::lock_guard lock(problems_mutex);
          problems.push_back(m + ": " + std::to_string(r.status) + " " + r.body.dump());
        }
      }
    });
  std::thread admin([&] {
    while (!stop) {
      const int u = post_json(server.port(), "/v1/unload_lora_adapter", {{"lora_name", "lora-c"}}).status;
      const int l = load("lora-c", adapter("lora-c")).status;
      if (u != 200 || l != 200) {
        std::lock_guard lock(problems_mutex);
        problems.push_back("unload " + std::to_string(u) + " load " + std::to_string(l));
      }
    }
  });
  for (auto& c : clients) c.join();
  stop = true;
  admin.join();
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_GE(ok, 18);

  // Bad loads name the problem.
  EXPECT_EQ(load("b-again", adapter("lora-b")).status, 200);  // rank 16 is within --max-lora-rank 16
  const JsonReply missing = load("missing", "/nonexistent/adapter");
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.dump().find("/nonexistent/adapter/adapter_config.json"), std::string::npos) << missing.body.dump();
  const JsonReply dup = load("lora-a", adapter("lora-a"));
  EXPECT_EQ(dup.status, 400);
  EXPECT_NE(dup.body.dump().find("already loaded"), std::string::npos);
  EXPECT_EQ(post_json(server.port(), "/v1/unload_lora_adapter", {{"lora_name", "nope"}}).status, 404);
  EXPECT_EQ(post_json(server.port(), "/v1/completions", request("nope")).status, 404);
  EXPECT_EQ(post_json(server.port(), "/v1/load_lora_adapter", {{"lora_name", "x"}}).status, 400);
}

TEST_F(LoraServe, RankAboveTheLimitIs400) {
  ServeProcess server("--model " + shell_quote(files_->base.hf_dir.string()) + " --port 0 --threads 1 --enable-lora --max-lora-rank 8");
  ASSERT_TRUE(server.started()) << server.log();
  const JsonReply r = post_json(server.port(), "/v1/load_lora_adapter", {{"lora_name", "b"}, {"lora_path", adapter("lora-b")}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.dump().find("rank 16, above the limit of 8"), std::string::npos) << r.body.dump();
  EXPECT_EQ(post_json(server.port(), "/v1/load_lora_adapter", {{"lora_name", "a"}, {"lora_path", adapter("lora-a")}}).status, 200);
}

TEST_F(LoraServe, GenerateWithLoraFlag) {
  std::string prompt_ids;
  for (int32_t t : prompt()) prompt_ids += (prompt_ids.empty() ? "" : ",") + std::to_string(t);
  const auto r = run_command(std::string(LEMMA_BINARY) + " generate --model " + shell_quote(files_->base.hf_dir.string()) +
                             " --prompt-ids " + prompt_ids + " --max-tokens 32 --temperature 0 --ignore-eos --json" +
                             " --lora-modules x=" + shell_quote(adapter("lora-a")) + " y=" + shell_quote(adapter("lora-c")) +
                             " --lora y");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["ids"].get<std::vector<int32_t>>(), golden_tokens("lora-c"));
  const auto bad = run_command(std::string(LEMMA_BINARY) + " generate --model " + shell_quote(files_->base.hf_dir.string()) +
                               " --prompt-ids 1,2 --lora-modules x=" + shell_quote(adapter("lora-a")) + " --lora z");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--lora z"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace lemma::testing
