// JSON shapes of OpenAI completion and chat responses: whole bodies, streaming chunks, usage,
// and logprobs in each API's layout. Pure functions over plain values; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemma/server/engine_client.h"
#include "lemma/server/openai_request.h"
#include "lemma/server/tool_call_stream.h"
#include "lemma/server/tool_calls.h"
#include "lemma/tokenizer/tokenizer.h"

namespace lemma::server {

using ojson = nlohmann::ordered_json;

struct ResponseIds {
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  std::string model;
  int64_t created = 0;  // unix seconds
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

ojson usage_json(const Usage& usage);

// Logprob entries of tokens `ids` in the API's layout. `text_offset` is the choice's text length
// before the first token (completions only).
ojson logprobs_json(ApiKind kind, const Tokenizer& tok, const std::vector<int32_t>& ids,
                    const std::vector<SampleResult>& logprobs, int64_t text_offset);
// Appends `more` (a logprobs_json result of the same kind) into `into` (null: becomes `more`).
void append_logprobs(ApiKind kind, ojson& into, const ojson& more);

// One choice of a non-streaming body.
ojson choice_json(ApiKind kind, int index, const std::string& text, const ojson& logprobs,
                  const std::optional<std::string>& finish_reason);
ojson response_json(ApiKind kind, const ResponseIds& ids, ojson choices, const Usage& usage);

// Tool calls (tool_calls.h) into a chat choice's message: "tool_calls" with ids derived from the
// response id, "content" null when the message had no text besides the calls.
void add_tool_calls(ojson& choice, const ResponseIds& ids, const std::vector<ToolCall>& calls, ToolCallFormat format);
// A chat stream chunk with one tool-call delta of choice `index`, as OpenAI streams them: a call's
// first delta carries its index, id, type and function.name with `arguments: ""`, the next ones its
// index and a piece of function.arguments.
ojson tool_call_chunk_json(const ResponseIds& ids, int index, const ToolCallDelta& call, ToolCallFormat format);
// The id of a response's call k: `call_<response id>_<k>`, or for Mistral's format 9 alphanumerics
// derived from the same (Mistral Small 3.2's template refuses any other id when the call goes back).
std::string tool_call_id(const ResponseIds& ids, size_t k, ToolCallFormat format);

// One streaming chunk with one choice; `role` set only on a chat stream's first chunk.
ojson chunk_json(ApiKind kind, const ResponseIds& ids, int index, const std::string& text, const ojson& logprobs,
                 const std::optional<std::string>& finish_reason, bool with_role);
// The final usage chunk of stream_options.include_usage (empty choices).
ojson usage_chunk_json(ApiKind kind, const ResponseIds& ids, const Usage& usage);

// "data: <json>\n\n" (invalid UTF-8 replaced) and the terminator.
std::string sse_event(const ojson& payload);
std::string sse_event_raw(const std::string& json_text);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

std::string dump_json(const ojson& j);

}  // namespace lemma::server
