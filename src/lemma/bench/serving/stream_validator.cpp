#include "lemma/bench/serving/stream_validator.h"

#include <nlohmann/json.hpp>

namespace lemma::bench::serving {

using nlohmann::json;

namespace {
// The content text a choice carries, or nullopt with `why` set when the choice is malformed.
std::optional<std::string> choice_text(const json& choice, Endpoint endpoint, std::string& why) {
  if (endpoint == Endpoint::kCompletions) {
    const auto it = choice.find("text");
    if (it == choice.end() || !it->is_string()) {
      why = "a completion choice without a string \"text\"";
      return std::nullopt;
    }
    return it->get<std::string>();
  }
  const auto delta = choice.find("delta");
  if (delta == choice.end() || !delta->is_object()) {
    why = "a chat choice without a \"delta\" object";
    return std::nullopt;
  }
  const auto content = delta->find("content");
  if (content == delta->end() || content->is_null()) return std::string();
  if (!content->is_string()) {
    why = "a chat delta whose \"content\" is not a string";
    return std::nullopt;
  }
  return content->get<std::string>();
}
}  // namespace

void StreamValidator::fail(std::string why) {
  if (!error_) error_ = std::move(why);
}

void StreamValidator::on_payload(const std::string& payload, double at_s) {
  if (error_) return;
  if (done_) return fail("data after [DONE]");
  if (payload == "[DONE]") {
    done_ = true;
    return;
  }
  ++chunks_;
  json chunk = json::parse(payload, nullptr, false);
  if (chunk.is_discarded() || !chunk.is_object()) return fail("a data payload that is not a JSON object");
  if (const auto err = chunk.find("error"); err != chunk.end()) {
    std::string message = err->is_object() && err->contains("message") && (*err)["message"].is_string()
                              ? (*err)["message"].get<std::string>()
                              : err->dump();
    return fail("error event in the stream: " + message);
  }
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array()) return fail("a chunk without a \"choices\" array");
  if (const auto usage = chunk.find("usage"); usage != chunk.end() && !usage->is_null()) {
    const auto p = usage->find("prompt_tokens"), c = usage->find("completion_tokens");
    if (!usage->is_object() || p == usage->end() || c == usage->end() || !p->is_number_integer() ||
        !c->is_number_integer() || p->get<int64_t>() < 0 || c->get<int64_t>() < 0) {
      return fail("a usage object without non-negative integer prompt_tokens and completion_tokens");
    }
    usage_prompt_ = p->get<int64_t>();
    usage_completion_ = c->get<int64_t>();
  }
  bool has_content = false;
  for (const json& choice : *choices) {
    if (!choice.is_object()) return fail("a choice that is not an object");
    std::string why;
    const auto text = choice_text(choice, endpoint_, why);
    if (!text) return fail(why);
    has_content = has_content || !text->empty();
    if (const auto fr = choice.find("finish_reason"); fr != choice.end() && !fr->is_null()) {
      if (!fr->is_string()) return fail("a finish_reason that is not a string");
      finished_ = true;
    }
  }
  if (!has_content) return;
  if (content_chunks_ == 0) {
    first_content_s_ = at_s;
  } else {
    itl_s_.push_back(at_s - last_content_s_);
  }
  last_content_s_ = at_s;
  ++content_chunks_;
}

void StreamValidator::finish(double end_s, const std::string& transport_error, RequestOutcome& out) const {
  out.e2e_s = end_s;
  out.ttft_s = first_content_s_;
  out.itl_s = itl_s_;
  out.usage_reported = usage_completion_.has_value();
  out.output_tokens = usage_completion_.value_or(content_chunks_);
  if (usage_prompt_) out.prompt_tokens = *usage_prompt_;
  std::string why;
  if (error_) {
    why = *error_;
  } else if (!transport_error.empty()) {
    why = transport_error;
  } else if (!done_) {
    why = "the stream ended without data: [DONE]";
  } else if (!finished_) {
    why = "no finish_reason in the stream";
  } else if (content_chunks_ == 0) {
    why = "no content in the stream";
  } else if (expect_usage_ && !usage_completion_) {
    why = "no usage although stream_options.include_usage was sent";
  }
  out.ok = why.empty();
  out.error = why;
}

}  // namespace lemma::bench::serving
