// ServerContext: what every connection shares — configuration, the engine, tokenizer, chat
// template, metrics and the draining flag. Immutable after start except the thread-safe members
// (metrics, connections, draining, active_requests); the engine is thread-safe by contract.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <cstdint>

#include "lemma/server/connection_table.h"
#include "lemma/server/engine_client.h"
#include "lemma/server/metrics.h"
#include "lemma/server/response_store.h"
#include "lemma/server/server_config.h"
#include "lemma/server/tool_call_grammar.h"
#include "lemma/server/tool_calls.h"
#include "lemma/grammar/tokenizer_vocabulary.h"
#include "lemma/tokenizer/jinja/chat_template.h"
#include "lemma/tokenizer/tokenizer.h"

namespace lemma::server {

struct ServerContext {
  ServerContext(ServerConfig c, EngineClient& e, Tokenizer t, ChatTemplate tpl)
      : config(std::move(c)), engine(e), tokenizer(std::move(t)), chat_template(std::move(tpl)),
        tool_format(detect_tool_call_format(chat_template.source())),
        tool_syntax{tool_format, detect_mistral_call_form(chat_template.source())},
        connections(resolve_max_connections(config.max_connections)) {}

  const ServerConfig config;
  EngineClient& engine;
  const Tokenizer tokenizer;
  const ChatTemplate chat_template;
  const ToolCallFormat tool_format;  // how the template's model writes tool calls (tool_calls.h)
  const ToolCallSyntax tool_syntax;  // the same with the form of Mistral's calls (tool_call_grammar.h)
  Metrics metrics;
  // /v1/responses kept for previous_response_id (ServerConfig::response_store_entries).
  const std::shared_ptr<ResponseStore> responses = std::make_shared<ResponseStore>(config.response_store_entries);
  ConnectionTable connections;
  std::atomic<bool> draining{false};        // SIGTERM: refuse new generation requests (503)
  std::atomic<bool> abort_all{false};       // grace period over: end in-flight requests now
  std::atomic<int64_t> active_requests{0};  // generation requests in flight
  int64_t started_unix = 0;

  // The tokenizer's vocabulary for grammar masks, built on the first structured-output request.
  std::shared_ptr<const grammar::VocabularyIndex> grammar_vocabulary() {
    std::call_once(grammar_vocabulary_once_, [this] { grammar_vocabulary_ = grammar::vocabulary_index(tokenizer); });
    return grammar_vocabulary_;
  }

 private:
  std::once_flag grammar_vocabulary_once_;
  std::shared_ptr<const grammar::VocabularyIndex> grammar_vocabulary_;
};

}  // namespace lemma::server
