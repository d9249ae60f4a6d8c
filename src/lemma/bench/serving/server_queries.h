// Questions a serving benchmark asks the server before its run: the model name (the first id of
// GET /v1/models) and how many tokens the server's tokenizer makes of the workload's words
// (POST /tokenize, the shape lemma and vLLM share; llama.cpp's "content" field is sent as well), so
// prompt lengths can target tokens. Blocking; each runs `ioc` until its answer arrives.
#pragma once

#include <string>

#include <boost/asio/io_context.hpp>

#include "lemma/bench/serving/streamed_request.h"

namespace lemma::bench::serving {

// Throws InvalidArgument (saying to pass --model) when the list cannot be read.
std::string discover_model(boost::asio::io_context& ioc, const RequestContext& context);

// Tokens per word of seeded workload text (> 0). Throws InvalidArgument when /tokenize fails.
double measure_tokens_per_word(boost::asio::io_context& ioc, const RequestContext& context);

}  // namespace lemma::bench::serving
