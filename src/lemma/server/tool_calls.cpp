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

// The end of the JSON string starting at s[at] ('"'): one past its closing quote; nullopt when open.
std::optional<size_t> string_end(std::string_view s, size_t at) {
  for (size_t i = at + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::nullopt;
}

// The end of the JSON value starting at s[at]; nullopt while it may still go on.
std::optional<size_t> value_end(std::string_view s, size_t at) {
  if (at >= s.size()) return std::nullopt;
  if (s[at] == '{' || s[at] == '[') return json_end(s, at);
  if (s[at] == '"') return string_end(s, at);
  for (size_t i = at; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ',' || c == '}' || c == ']' || is_space(c)) return i;
  }
  return std::nullopt;
}

// One member of a JSON object as written: its key and where its value's text lies.
struct Member {
  std::string key;
  size_t value_begin = 0;
  std::optional<size_t> value_end;  // nullopt: the value is still open
};

// The members of the object starting at s[at] ('{') as far as they are written, and one past its
// closing brace once it has one. Stops at the first member that is not complete (or not JSON).
struct ObjectScan {
  std::vector<Member> members;
  std::optional<size_t> end;
};

ObjectScan scan_object(std::string_view s, size_t at) {
  ObjectScan out;
  size_t i = skip_space(s, at + 1);
  while (i < s.size()) {
    if (s[i] == '}') {
      out.end = i + 1;
      return out;
    }
    if (s[i] != '"') return out;
    const auto key_end = string_end(s, i);
    if (!key_end) return out;
    const json key = json::parse(s.substr(i, *key_end - i), nullptr, false);
    if (!key.is_string()) return out;
    i = skip_space(s, *key_end);
    if (i >= s.size() || s[i] != ':') return out;
    Member m{key.get<std::string>(), skip_space(s, i + 1), std::nullopt};
    m.value_end = value_end(s, m.value_begin);
    out.members.push_back(m);
    if (!m.value_end) return out;
    i = skip_space(s, *m.value_end);
    if (i < s.size() && s[i] == ',') i = skip_space(s, i + 1);
  }
  return out;
}

bool is_arguments_key(const std::string& key) { return key == "arguments" || key == "parameters"; }

// {"name": ..., "arguments" | "parameters": {...} or a JSON string} -> a call; `j` is the object
// written at s[at]. The arguments are the object's text exactly as the model wrote it (so a stream
// of its pieces adds up to it), or the string's contents when they are a JSON object's text.
std::optional<ToolCall> call_of(const json& j, std::string_view s, size_t at) {
  if (!j.is_object() || !j.contains("name") || !j.at("name").is_string()) return std::nullopt;
  ToolCall call{j.at("name").get<std::string>(), "{}"};
  for (const Member& m : scan_object(s, at).members) {
    if (!is_arguments_key(m.key) || !m.value_end) continue;
    const json& args = j.at(m.key);
    if (args.is_object()) {
      call.arguments = std::string(s.substr(m.value_begin, *m.value_end - m.value_begin));
    } else if (args.is_string()) {
      const json parsed = json::parse(args.get<std::string>(), nullptr, false);
      if (!parsed.is_object()) return std::nullopt;
      call.arguments = args.get<std::string>();
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
    const size_t object = skip_space(s, at + kHermesOpen.size());
    auto value = json_at(s, object);
    if (!value) return std::nullopt;
    auto call = call_of(value->first, s, object);
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
    auto call = call_of(value->first, s, at);
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
      size_t item_at = skip_space(s, at + 1);
      for (const json& item : value->first) {
        auto call = call_of(item, s, item_at);
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
        item_at = skip_space(s, *json_end(s, item_at));
        if (s[item_at] == ',') item_at = skip_space(s, item_at + 1);
      }
      at = value->second;
      continue;
    }
    const size_t args = s.find(kMistralArgs, at);
    if (args == std::string_view::npos) return std::nullopt;
    std::string_view name = s.substr(at, args - at);
    if (const size_t id = name.find(kMistralCallId); id != std::string_view::npos) name = name.substr(0, id);
    const size_t object = skip_space(s, args + kMistralArgs.size());
    auto value = json_at(s, object);
    if (name.empty() || !value || !value->first.is_object()) return std::nullopt;
    calls.push_back({std::string(name), std::string(s.substr(object, value->second - object))});
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


// Progress of the calls in the object at s[at] (`{"name": .., "arguments": ..}`): appends the call
// once its name is written; the object's end when it closed.
std::optional<size_t> object_call_progress(std::string_view s, size_t at, std::vector<ToolCallProgress::Call>& calls) {
  const ObjectScan scan = scan_object(s, at);
  ToolCallProgress::Call call;
  bool named = false;
  for (const Member& m : scan.members) {
    if (m.key == "name" && m.value_end) {
      const json name = json::parse(s.substr(m.value_begin, *m.value_end - m.value_begin), nullptr, false);
      if (!name.is_string()) return std::nullopt;
      call.name = name.get<std::string>();
      named = true;
    } else if (is_arguments_key(m.key) && m.value_begin < s.size()) {
      call.args_begin = m.value_begin;
      call.args_end = m.value_end;
      call.args_are_text = s[m.value_begin] == '"';
    }
  }
  if (named) calls.push_back(std::move(call));
  return named ? scan.end : std::nullopt;
}

}  // namespace

ToolCallFormat detect_tool_call_format(std::string_view source) {
  // Qwen3-Coder / Qwen3.5 write XML inside <tool_call> (<function=name><parameter=..>): not JSON,
  // which lemma neither parses nor may force on them.
  if (source.find("<function=") != std::string_view::npos) return ToolCallFormat::kNone;
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

ToolCallProgress tool_call_progress(ToolCallFormat format, std::string_view s) {
  ToolCallProgress out;
  const auto starts = [&](size_t at, std::string_view marker) { return s.compare(at, marker.size(), marker) == 0; };
  switch (format) {
    case ToolCallFormat::kNone: break;
    case ToolCallFormat::kHermes: {
      size_t at = s.find(kHermesOpen);
      if (at == std::string_view::npos) break;
      out.calls_begin = at;
      while (starts(at, kHermesOpen)) {
        const size_t object = skip_space(s, at + kHermesOpen.size());
        if (object >= s.size() || s[object] != '{') break;
        const auto end = object_call_progress(s, object, out.calls);
        if (!end) break;
        at = skip_space(s, *end);
        if (!starts(at, kHermesClose)) break;
        at = skip_space(s, at + kHermesClose.size());
      }
      break;
    }
    case ToolCallFormat::kLlama3Json: {
      size_t at = skip_space(s, 0);
      if (starts(at, kPythonTag)) at = skip_space(s, at + kPythonTag.size());
      if (at >= s.size() || s[at] != '{') break;
      while (at < s.size() && s[at] == '{') {
        const size_t before = out.calls.size();
        const auto end = object_call_progress(s, at, out.calls);
        if (out.calls.size() > before) out.calls_begin = 0;
        if (!end) break;
        at = skip_space(s, *end);
        if (at >= s.size() || s[at] != ';') break;
        at = skip_space(s, at + 1);
      }
      break;
    }
    case ToolCallFormat::kMistral: {
      size_t at = s.find(kMistralCalls);
      if (at == std::string_view::npos) break;
      out.calls_begin = at;
      while (starts(at, kMistralCalls)) {
        at = skip_space(s, at + kMistralCalls.size());
        if (at < s.size() && s[at] == '[') {  // a JSON array of call objects
          at = skip_space(s, at + 1);
          while (at < s.size() && s[at] == '{') {
            const auto end = object_call_progress(s, at, out.calls);
            if (!end) return out;
            at = skip_space(s, *end);
            if (at < s.size() && s[at] == ',') at = skip_space(s, at + 1);
          }
          if (at >= s.size() || s[at] != ']') return out;
          at = skip_space(s, at + 1);
          continue;
        }
        const size_t args = s.find(kMistralArgs, at);
        if (args == std::string_view::npos) break;
        std::string_view name = s.substr(at, args - at);
        if (const size_t id = name.find(kMistralCallId); id != std::string_view::npos) name = name.substr(0, id);
        ToolCallProgress::Call call;
        call.name = std::string(name);
        const size_t object = skip_space(s, args + kMistralArgs.size());
        if (object < s.size()) {
          call.args_begin = object;
          call.args_end = json_end(s, object);
        }
        out.calls.push_back(std::move(call));
        if (!out.calls.back().args_end) break;
        at = skip_space(s, *out.calls.back().args_end);
      }
      break;
    }
  }
  return out;
}

}  // namespace lemma::server
