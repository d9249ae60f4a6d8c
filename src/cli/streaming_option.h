// `--attention-sinks S --streaming-window W` (G10, kv/streaming_window.h): StreamingLLM's
// streaming KV for generate, chat, serve (the server's default), logits and perplexity.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>

#include "lemma/kv/streaming_window.h"

namespace lemma::cli {

struct StreamingFlags {
  std::optional<int64_t> sinks;
  std::optional<int64_t> window;

  void add_to(CLI::App* sub);
  // Off when neither flag is given; throws InvalidArgument naming the flag for --streaming-window < 1,
  // a negative --attention-sinks or --attention-sinks alone. The context is checked where the model is.
  StreamingWindow to_window() const;
};

}  // namespace lemma::cli
