#include "lemma/server/tool_calls.h"

#include <optional>

#include <nlohmann/json.hpp>

namespace lemma::server {

namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]", kMistralArgs = "[ARGS]", kMistralCallId = "[CALL_ID]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t skip_space(std::string_view s, size_t at) {
  while (at < s.size() && is_space(s[at])) ++at;
  return at;
}

std::string trim_right(std::string_view s) {
  size_t end = s.size();
  while (end > 0 && is_space(s[end - 1])) --end;
  return std::string(s.substr(0, end));
}

// The end of the JSON object or array starting at s[at] ('{' or '['): one past its closing
// bracket, strings and escapes respected; nullopt when it does not close.
std::optional<size_t> json_end(std::string_view s, size_t at) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = at; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::nullopt;
}

// The JSON value at s[at] (an object or array) and the position after it.
std::optional<std::pair<json, size_t>> json_at(std::string_view s, size_t at) {
  if (at >= s.size() || (s[at] != '{' && s[at] != '[')) return std::nullopt;
  const auto end = json_end(s, at);
  if (!end) return std::nullopt;
  json value = json::parse(s.substr(at, *end - at), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return std::make_pair(std::move(value), *end);
}

// {"name": ..., "arguments" | "parameters": {...} or a JSON string} -> a call.
std::optional<ToolCall> call_of(const json& j) {
  if (!j.is_object() || !j.contains("name") || !j.at("name").is_string()) return std::nullopt;
  ToolCall call{j.at("name").get<std::string>(), "{}"};
  for (const char* key : {"arguments", "parameters"}) {
    if (!j.contains(key)) continue;
    const json& args = j.at(key);
    if (args.is_object()) {
      call.arguments = args.dump();
    } else if (args.is_string()) {
      const json parsed = json::parse(args.get<std::string>(), nullptr, false);
      if (!parsed.is_object()) return std::nullopt;
      call.arguments = parsed.dump();
    } else {
      return std::nullopt;
    }
  }
  return call;
}

// Every `<tool_call>{..}</tool_call>` (the last closing tag may be cut by the end of the message).
std::optional<std::vector<ToolCall>> hermes_calls(std::string_view s, size_t at) {
  std::vector<ToolCall> calls;
  while (true) {
    at = skip_space(s, at);
    if (at == s.size()) return calls;
    if (s.compare(at, kHermesOpen.size(), kHermesOpen) != 0) return std::nullopt;
    auto value = json_at(s, skip_space(s, at + kHermesOpen.size()));
    if (!value) return std::nullopt;
    auto call = call_of(value->first);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    at = skip_space(s, value->second);
    if (s.compare(at, kHermesClose.size(), kHermesClose) == 0) {
      at += kHermesClose.size();
    } else if (at != s.size()) {
      return std::nullopt;
    }
  }
}

// `{..}` objects separated by `;` or white space, the whole message.
std::optional<std::vector<ToolCall>> llama3_calls(std::string_view s) {
  size_t at = skip_space(s, 0);
  if (s.compare(at, kPythonTag.size(), kPythonTag) == 0) at = skip_space(s, at + kPythonTag.size());
  std::vector<ToolCall> calls;
  while (at < s.size()) {
    auto value = json_at(s, at);
    if (!value) return std::nullopt;
    auto call = call_of(value->first);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    at = skip_space(s, value->second);
    if (at < s.size() && s[at] == ';') at = skip_space(s, at + 1);
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

// After `[TOOL_CALLS]`: a JSON array of calls, or `name[CALL_ID]id[ARGS]{..}` / `name[ARGS]{..}`,
// each call after its own `[TOOL_CALLS]`.
std::optional<std::vector<ToolCall>> mistral_calls(std::string_view s, size_t at) {
  std::vector<ToolCall> calls;
  while (at < s.size()) {
    at = skip_space(s, at);
    if (s.compare(at, kMistralCalls.size(), kMistralCalls) != 0) return at == s.size() ? std::optional(calls) : std::nullopt;
    at = skip_space(s, at + kMistralCalls.size());
    if (at < s.size() && s[at] == '[') {
      auto value = json_at(s, at);
      if (!value || !value->first.is_array()) return std::nullopt;
      for (const json& item : value->first) {
        auto call = call_of(item);
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
      }
      at = value->second;
      continue;
    }
    const size_t args = s.find(kMistralArgs, at);
    if (args == std::string_view::npos) return std::nullopt;
    std::string_view name = s.substr(at, args - at);
    if (const size_t id = name.find(kMistralCallId); id != std::string_view::npos) name = name.substr(0, id);
    auto value = json_at(s, skip_space(s, args + kMistralArgs.size()));
    if (name.empty() || !value || !value->first.is_object()) return std::nullopt;
    calls.push_back({std::string(name), value->first.dump()});
    at = value->second;
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

// Where `marker` begins in `s`, or the start of a trailing prefix of it, or s.size().
size_t marker_start(std::string_view s, std::string_view marker) {
  if (const size_t at = s.find(marker); at != std::string_view::npos) return at;
  for (size_t len = std::min(marker.size() - 1, s.size()); len > 0; --len) {
    if (s.substr(s.size() - len) == marker.substr(0, len)) return s.size() - len;
  }
  return s.size();
}

}  // namespace

ToolCallFormat detect_tool_call_format(std::string_view source) {
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::kHermes;
  if (source.find(kMistralCalls) != std::string_view::npos) return ToolCallFormat::kMistral;
  if (source.find(kPythonTag) != std::string_view::npos ||
      (source.find("ipython") != std::string_view::npos && source.find("parameters") != std::string_view::npos)) {
    return ToolCallFormat::kLlama3Json;
  }
  return ToolCallFormat::kNone;
}

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone: return "none";
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3Json: return "llama3_json";
    case ToolCallFormat::kMistral: return "mistral";
  }
  return "none";
}

AssistantOutput parse_tool_calls(ToolCallFormat format, std::string_view text) {
  const auto as_content = [&] { return AssistantOutput{std::string(text), {}}; };
  std::optional<std::vector<ToolCall>> calls;
  size_t start = text.size();
  switch (format) {
    case ToolCallFormat::kNone: return as_content();
    case ToolCallFormat::kHermes:
      start = text.find(kHermesOpen);
      if (start != std::string_view::npos) calls = hermes_calls(text, start);
      break;
    case ToolCallFormat::kLlama3Json:
      start = 0;
      calls = llama3_calls(text);
      break;
    case ToolCallFormat::kMistral:
      start = text.find(kMistralCalls);
      if (start != std::string_view::npos) calls = mistral_calls(text, start);
      break;
  }
  if (!calls || calls->empty()) return as_content();
  return {trim_right(text.substr(0, start)), std::move(*calls)};
}

size_t tool_call_start(ToolCallFormat format, std::string_view text) {
  switch (format) {
    case ToolCallFormat::kNone: return text.size();
    case ToolCallFormat::kHermes: return marker_start(text, kHermesOpen);
    case ToolCallFormat::kMistral: return marker_start(text, kMistralCalls);
    case ToolCallFormat::kLlama3Json: {
      // Calls are the whole message: hold everything while it may still be one.
      const size_t at = skip_space(text, 0);
      if (at == text.size() || text[at] == '{') return 0;
      const std::string_view rest = text.substr(at);
      const size_t n = std::min(rest.size(), kPythonTag.size());
      return rest.substr(0, n) == kPythonTag.substr(0, n) ? 0 : text.size();
    }
  }
  return text.size();
}

}  // namespace lemma::server
