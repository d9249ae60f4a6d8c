// Server: the OpenAI-compatible HTTP front end (Boost.Beast/Asio, a few I/O threads, one
// coroutine per connection) over an EngineClient. start()/stop() may be called from any one
// thread; everything else happens on the I/O threads. run_server() is the blocking entry point.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "lemma/server/engine_client.h"
#include "lemma/server/server_config.h"
#include "lemma/tokenizer/jinja/chat_template.h"
#include "lemma/tokenizer/tokenizer.h"

namespace lemma::server {

struct ServerContext;

class Server {
 public:
  // `chat_template` nullopt: lemma's default ChatML (tokenizer/jinja/default_chat_template.h).
  Server(ServerConfig config, EngineClient& engine, Tokenizer tokenizer, std::optional<ChatTemplate> chat_template);
  ~Server();  // stop(0) if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port and starts the I/O threads. Throws IoError when binding fails.
  void start();
  // The bound port (useful with port 0).
  uint16_t port() const;
  // Stops accepting (new generation requests get 503, /health says draining), gives in-flight
  // generation requests `grace` to finish, cancels the rest, then joins the I/O threads.
  void stop(std::chrono::milliseconds grace);
  ServerContext& context();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Starts a Server, blocks until SIGINT or SIGTERM, drains for config.shutdown_grace, returns 0.
int run_server(const ServerConfig& config, EngineClient& engine, const Tokenizer& tokenizer,
               std::optional<ChatTemplate> chat_template);

}  // namespace lemma::server
