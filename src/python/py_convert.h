// Conversions between the Python layer's plain values and the C++ structs: the dicts the `lemma`
// package builds from LLM(...) keywords and SamplingParams (names and types already checked in
// Python; out-of-range values are refused in C++), and OutputSnapshot -> tuples the package wraps
// into RequestOutput / CompletionOutput. Call with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include "llm_options.h"
#include "offline_engine.h"
#include "output_snapshot.h"

namespace lemma::python {

LlmOptions llm_options_from(const std::string& model, const pybind11::dict& options);
OfflineRequestParams request_params_from(const pybind11::dict& params);
// (prompt_token_ids, [(index, text, token_ids, logprobs | None, cumulative_logprob | None,
//  finish_reason | None, stop_reason: str | int | None, error)], finished); logprobs: one {token_id: (logprob, rank | None,
// decoded_token)} dict per token, the sampled token and the top entries.
pybind11::tuple to_python(const OutputSnapshot& snapshot, const Tokenizer& tokenizer);

}  // namespace lemma::python
