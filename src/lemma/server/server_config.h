// ServerConfig: everything `lemma serve` decides about the HTTP layer. Plain value.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lemma/kv/streaming_window.h"
#include "lemma/sched/pooling.h"
namespace lemma {
class LoraPool;  // engine/lora_pool.h
}

namespace lemma::server {

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;                     // 0: an ephemeral port (see Server::port())
  std::string api_key;                      // empty: no authentication
  size_t max_request_bytes = 1 << 20;       // larger bodies get 413
  std::string served_model_name = "lemma";
  int io_threads = 2;
  int64_t max_model_len = 0;                // prompt + max_tokens limit; 0: unknown (not checked)
  int64_t default_max_tokens = 256;         // when a request gives none (completions: 16, as OpenAI)
  int64_t max_n = 16;                       // largest `n`
  int64_t max_beam_width = 16;              // largest beam width (`best_of` with use_beam_search)
  // Attention sinks (G10) for requests that give no "attention_sinks" / "streaming_window": off
  // unless `lemma serve --attention-sinks S --streaming-window W`.
  StreamingWindow default_streaming = {};
  // Read special-token text in chat content (and roles, tools) as control tokens, so that a
  // message can end its turn and forge another: the old behaviour, for clients that rely on it.
  bool allow_special_tokens_in_content = false;
  size_t stream_buffer_tokens = 4096;       // per-request OutputBuffer bound (slow readers)
  std::chrono::milliseconds request_timeout{600'000};  // per request, from arrival
  std::chrono::milliseconds shutdown_grace{10'000};    // SIGTERM: in-flight requests get this long
  std::chrono::milliseconds idle_timeout{60'000};      // keep-alive connections between requests
  // A new connection, or a keep-alive one after its first byte, must send a complete request
  // header within this (slowloris); the body then gets idle_timeout.
  std::chrono::milliseconds header_timeout{10'000};
  // A streamed response whose client stops reading for this long is cut (error event if it fits).
  std::chrono::milliseconds stalled_write_timeout{30'000};
  size_t max_connections = 0;               // 0: half the open-file limit (RLIMIT_NOFILE), 16..8192
  int retry_after_seconds = 1;              // Retry-After on 429
  // The LoRA adapters requests may name as `model` (G29), thread-safe and shared with whoever
  // registered the start-time modules; null: none, and the load/unload endpoints answer 404.
  std::shared_ptr<LoraPool> lora_pool;
  // CORS (cors.h): origins browsers may call from ("*": any); empty: CORS off.
  std::vector<std::string> allowed_origins;
  // /v1/responses kept for `previous_response_id` (response_store.h), least recently used dropped.
  size_t response_store_entries = 1024;
  // /v1/embeddings: how the final hidden states are pooled (`lemma serve --pooling last|mean`).
  Pooling pooling = Pooling::kLast;
  // One JSON line per request; default: the process logger at info level.
  std::function<void(const std::string&)> access_log;
};

}  // namespace lemma::server
