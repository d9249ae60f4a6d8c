#include "lemma/tokenizer/jinja/marks.h"

namespace lemma::jinja {
namespace {

// Deeper values are treated as marked (conservative); real templates nest a few levels.
constexpr int kMaxMarkDepth = 64;

bool contains_marks_at(const Value& v, int depth) {
  if (depth > kMaxMarkDepth) return true;
  switch (v.kind()) {
    case Value::Kind::kString: return v.has_marks();
    case Value::Kind::kList:
    case Value::Kind::kGenerator:
      for (const auto& item : v.items()) {
        if (contains_marks_at(item, depth + 1)) return true;
      }
      return false;
    case Value::Kind::kDict:
    case Value::Kind::kNamespace:
      for (const auto& [k, x] : v.dict_items().items) {
        if (contains_marks_at(k, depth + 1) || contains_marks_at(x, depth + 1)) return true;
      }
      return false;
    default: return false;
  }
}

Value mark_all_at(const Value& v, int depth) {
  if (depth > kMaxMarkDepth) raise("RecursionError: value nested too deeply");
  switch (v.kind()) {
    case Value::Kind::kString: {
      MarkedText t(v.str(), true);
      return v.is_safe() ? Value(std::move(t)).as_markup() : Value(std::move(t));
    }
    case Value::Kind::kList:
    case Value::Kind::kGenerator: {
      ValueList items;
      items.reserve(v.items().size());
      for (const auto& item : v.items()) items.push_back(mark_all_at(item, depth + 1));
      if (v.is_generator()) return Value::generator(std::move(items));
      return v.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    case Value::Kind::kDict: {
      Dict d;
      for (const auto& [k, x] : v.dict_items().items) d.items.emplace_back(mark_all_at(k, depth + 1), mark_all_at(x, depth + 1));
      return Value::dict(std::move(d));
    }
    default: return v;  // namespaces stay shared objects; numbers and callables hold no text
  }
}

bool holds_text(const Value& v) {
  return v.is_string() || v.is_list() || v.is_generator() || v.is_dict();
}

bool is_continuation(unsigned char c) { return (c & 0xc0) == 0x80; }

}  // namespace

bool contains_marks(const Value& v) { return contains_marks_at(v, 0); }

bool contains_marks(const CallArgs& args) {
  for (const auto& v : args.positional) {
    if (contains_marks(v)) return true;
  }
  for (const auto& [k, v] : args.keyword) {
    if (contains_marks(v)) return true;
  }
  return false;
}

Value mark_all(const Value& v) { return mark_all_at(v, 0); }

void append_value(MarkedText& out, const Value& v) {
  if (v.is_string()) {
    out.append(v.str(), v.marks());
  } else if (!v.is_undefined()) {
    out.append(v.repr(), contains_marks(v));
  }
}

Value to_text(const Value& v) {
  if (v.is_string()) return v;
  MarkedText out;
  append_value(out, v);
  return Value(std::move(out));
}

Value apply_mark_policy(MarkPolicy policy, Value result, const Value& subject, const CallArgs& args) {
  if (policy == MarkPolicy::kHandled || !holds_text(result)) return result;
  const bool marked_inputs = contains_marks(args) || (policy == MarkPolicy::kDerived && contains_marks(subject));
  return marked_inputs ? mark_all(result) : result;
}

CodePoints::CodePoints(const std::string& s) {
  cps = utf8_decode(s);
  offsets.reserve(cps.size() + 1);
  size_t at = 0;
  for (char32_t c : cps) {
    offsets.push_back(at);
    // utf8_decode turns each invalid byte into one code point, and re-encoding a code point
    // read from an overlong or malformed sequence gives other bytes: then slices of code
    // points are not slices of bytes.
    const size_t n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    const auto lead = static_cast<unsigned char>(s[at]);
    const size_t lead_n = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
    bool ok = exact && lead_n == n && at + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = is_continuation(static_cast<unsigned char>(s[at + k]));
    exact = ok;
    if (!exact) break;
    at += n;
  }
  if (!exact) {
    offsets.clear();
    return;
  }
  offsets.push_back(s.size());
  if (at != s.size()) exact = false;
}

Value code_point_slice(const Value& s, const CodePoints& cp, size_t i, size_t j) {
  if (!s.has_marks()) return Value(utf8_encode(cp.cps.substr(i, j - i)));
  if (!cp.exact) return Value(MarkedText(utf8_encode(cp.cps.substr(i, j - i)), true));
  return byte_slice(s, cp.offsets[i], cp.offsets[j]);
}

Value byte_slice(const Value& s, size_t begin, size_t end) {
  if (!s.has_marks()) return Value(s.str().substr(begin, end - begin));
  MarkedText out;
  out.append_slice(s.str(), s.marks(), begin, end);
  return Value(std::move(out));
}

Value map_runs(const Value& s, const std::function<std::string(const std::string&)>& f) {
  const std::string& text = s.str();
  if (!s.has_marks()) return Value(f(text));
  MarkedText whole;
  whole.append(text, s.marks());
  MarkedText out;
  for (const auto& span : whole.spans()) {
    if (!span.text.empty() && is_continuation(static_cast<unsigned char>(span.text[0]))) {
      return Value(MarkedText(f(text), true));  // a run boundary inside a code point
    }
    out.append(f(span.text), span.from_request);
  }
  return Value(std::move(out));
}

}  // namespace lemma::jinja
