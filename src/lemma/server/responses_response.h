// OpenAI Responses API output: the response object (status completed, or incomplete with reason
// max_output_tokens), its one assistant message item, usage, and the streaming events with their
// sequence numbers (response.created, response.in_progress, response.output_item.added,
// response.content_part.added, response.output_text.delta..., response.output_text.done,
// response.content_part.done, response.output_item.done, response.completed / response.incomplete,
// or response.failed). A finished response is kept in the ResponseStore unless `store: false`.
// One encoder per call, strand only; the store is thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "lemma/server/call_encoder.h"
#include "lemma/server/response_store.h"
#include "lemma/server/responses_request.h"

namespace lemma::server {

// What every response object of one call repeats.
struct ResponseEcho {
  std::string id = {};       // resp_...
  std::string item_id = {};  // msg_... (the output message)
  std::string model = {};
  int64_t created_at = 0;    // unix seconds
  std::optional<std::string> instructions = {}, previous_response_id = {}, user = {};
  std::optional<int64_t> max_output_tokens = {};
  float temperature = 1.0f, top_p = 1.0f;
  bool store = true;
  ojson metadata = ojson::object();
};

ResponseEcho response_echo(const ParsedResponseRequest& request, std::string id, std::string model, int64_t created_at);

// The response object; `output_text` set: one finished message with it ("completed" or
// "incomplete" by `ending`), else an in-progress response without output.
ojson response_object(const ResponseEcho& echo, const std::optional<std::string>& output_text, const CallEnding* ending);

class ResponsesEncoder final : public CallEncoder {
 public:
  // `store` null: nothing is kept. `conversation`: the chat messages the output is appended to.
  ResponsesEncoder(ResponseEcho echo, std::shared_ptr<ResponseStore> store, ojson conversation)
      : echo_(std::move(echo)), store_(std::move(store)), conversation_(std::move(conversation)) {}
  std::string stream_start(const Usage& usage) override;
  std::string stream_text(const std::string& text) override;
  std::string stream_finish(const std::string& text, const CallEnding& ending) override;
  std::string stream_error(int status, const std::string& message, const std::string& code) override;
  std::string body(const std::string& text, const CallEnding& ending) override;

 private:
  std::string event(const std::string& type, ojson fields);
  void keep(const std::string& text);
  ResponseEcho echo_;
  std::shared_ptr<ResponseStore> store_;
  ojson conversation_;
  int64_t sequence_ = 0;
};

}  // namespace lemma::server
