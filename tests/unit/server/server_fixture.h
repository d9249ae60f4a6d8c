// Test fixture: a Server on 127.0.0.1:<ephemeral> over a FakeEngine with the GPT-2 tokenizer from
// ../shared, access-log lines captured in memory. Each test may adjust the config first.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fake_engine.h"
#include "http_client.h"
#include "lemma/server/server.h"
#include "support/shared_data.h"

namespace lemma::server::testing {

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = lemma::testing::shared_data("hf/gpt2");
    LEMMA_REQUIRE_SHARED(dir);
    tokenizer_.emplace(Tokenizer::from_hf_dir(dir.string()));
    engine_.script = tokenizer_->encode(kScriptText, false, false);
    config_.port = 0;
    config_.served_model_name = "test-model";
    config_.max_request_bytes = 64 * 1024;
    config_.access_log = [this](const std::string& line) {
      std::lock_guard lock(log_mu_);
      log_lines_.push_back(line);
    };
  }
  void TearDown() override {
    if (server_) server_->stop(std::chrono::milliseconds(0));
    server_.reset();
    engine_.join_all();
  }
  void start(std::optional<ChatTemplate> chat_template = std::nullopt) {
    server_.emplace(config_, engine_, *tokenizer_, std::move(chat_template));
    server_->start();
    port_ = server_->port();
  }
  std::vector<std::string> log_lines() {
    std::lock_guard lock(log_mu_);
    return log_lines_;
  }
  std::string decode_script(size_t n) {
    std::vector<int32_t> ids(engine_.script.begin(), engine_.script.begin() + std::ptrdiff_t(n));
    return tokenizer_->decode(ids);
  }

  static constexpr const char* kScriptText = " Hello world! The quick brown fox jumps over the lazy dog. Caf\xC3\xA9 \xE2\x9C\x93 done.";
  FakeEngine engine_;
  ServerConfig config_;
  std::optional<Tokenizer> tokenizer_;
  std::optional<Server> server_;
  uint16_t port_ = 0;
  std::mutex log_mu_;
  std::vector<std::string> log_lines_;
};

// Polls `pred` for up to `ms` milliseconds.
template <typename Pred>
bool eventually(Pred pred, int ms = 3000) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

}  // namespace lemma::server::testing
