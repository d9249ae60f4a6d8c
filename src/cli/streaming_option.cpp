#include "cli/streaming_option.h"

#include "lemma/base/error.h"

namespace lemma::cli {

void StreamingFlags::add_to(CLI::App* sub) {
  sub->add_option("--attention-sinks", sinks,
                  "Attention sinks (StreamingLLM): always attend to the first S tokens; needs --streaming-window");
  sub->add_option("--streaming-window", window,
                  "Streaming KV: attend to the last W tokens (plus the sinks) and free the rest's KV blocks; "
                  "not equal to full attention once S + W tokens are passed");
}

StreamingWindow StreamingFlags::to_window() const {
  if (!sinks && !window) return {};
  if (!window) fail<InvalidArgument>("--attention-sinks needs --streaming-window W (W >= 1)");
  if (*window < 1) fail<InvalidArgument>("--streaming-window must be >= 1, got {}", *window);
  if (sinks && *sinks < 0) fail<InvalidArgument>("--attention-sinks must be >= 0, got {}", *sinks);
  return {sinks.value_or(0), *window};
}

}  // namespace lemma::cli
