#include "lemma/grammar/json_schema.h"

#include <map>
#include <set>

#include "lemma/base/error.h"
#include "lemma/grammar/byte_dfa.h"
#include "lemma/grammar/json_text.h"
#include "lemma/grammar/key_automaton.h"
#include "lemma/grammar/regex.h"

namespace lemma::grammar {

namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void unsupported(const std::string& what) { fail<Unsupported>("JSON Schema: {} is not supported", what); }

// Set by the compiler itself: a oneOf whose branches only require properties, kept beside the
// object's other keywords until compile_object turns it into slot guards.
constexpr const char* kOneOfRequired = "$lemma:oneOfRequired";

// Keywords that constrain instances but that this compiler does not implement: their presence is
// an error (ignoring one would let invalid output through). Unknown keywords are annotations.
const std::set<std::string> kUnsupported = {
    "not", "contains", "minContains", "maxContains", "dependentSchemas", "propertyNames", "if", "then", "else", "unevaluatedProperties", "unevaluatedItems", "multipleOf",
    "$dynamicRef", "$recursiveRef"};

const std::set<std::string> kValidation = {
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "pattern", "format", "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "required",
    "additionalProperties", "properties", "patternProperties", "minProperties", "maxProperties", "anyOf", "oneOf", "allOf",
    "$ref", "dependencies", "dependentRequired", kOneOfRequired};

bool has_validation(const json& schema) {
  if (!schema.is_object()) return true;
  for (const auto& [k, v] : schema.items()) {
    (void)v;
    if (kValidation.count(k)) return true;
  }
  return false;
}

// Inlining $refs (to merge them with siblings) could recurse forever on a recursive schema.
constexpr int kMaxInlineDepth = 64;
// Bounds on what the compiler unrolls: automaton states (keys of patternProperties, patterns cut
// to a length), members counted by minProperties/maxProperties.
constexpr size_t kMaxKeyStates = 20000;
constexpr int kMaxCountedMembers = 256;

// Formats the JSON Schema specifications define. A validator may check these, so one lemma cannot
// spell exactly is an error; any other name is an annotation (validators ignore unknown formats).
const std::set<std::string> kSpecFormats = {
    "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
    "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer",
    "relative-json-pointer", "regex"};

// The format that constrains a string schema, or "" when there is none (absent or unknown name).
std::string constraining_format(const json& s) {
  if (!s.contains("format") || !s["format"].is_string()) return "";
  const std::string f = s["format"].get<std::string>();
  return kSpecFormats.count(f) ? f : "";
}

const std::set<std::string> kTypes = {"null", "boolean", "object", "array", "string", "number", "integer"};

// A bound of minimum/maximum/exclusive* as an integer. Bounds beyond +-9e18 (past what int64 and
// the range expressions hold) are pulled in to +-9e18 on the strict side only: an upper bound
// lowered, a lower bound raised, so a few giant valid numbers may be refused but never an invalid
// one accepted; a bound that cannot be pulled in that way is Unsupported.
std::optional<int64_t> integer_bound(const json& v, const char* keyword) {
  constexpr int64_t kLimit = 9'000'000'000'000'000'000;
  const bool upper = std::string_view(keyword).find("aximum") != std::string_view::npos;
  auto pull_in = [&](bool too_high) -> int64_t {
    if (too_high && upper) return kLimit;
    if (!too_high && !upper) return -kLimit;
    unsupported(fmt::format("'{}' = {}", keyword, v.dump()));
  };
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u > static_cast<uint64_t>(kLimit) ? pull_in(true) : static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    return i < -kLimit ? pull_in(false) : i;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 9e18) return pull_in(true);
    if (d <= -9e18) return pull_in(false);
    if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  unsupported(fmt::format("'{}' = {}", keyword, v.dump()));
}

class SchemaCompiler {
 public:
  SchemaCompiler(const json& root, const JsonSchemaOptions& options)
      : root_(root), prefix_token_(options.prefix_token), prefix_(options.prefix), suffix_(options.suffix),
        order_(options.property_order), ref_ignores_siblings_(ref_ignores_siblings(root)) {
    if (options.compact) {
      ws_ = empty();
      comma_ = literal(options.item_separator);
      colon_ = literal(options.key_separator);
    } else if (options.max_whitespace == kUnbounded) {
      ws_ = star(bytes(whitespace_set()));
    } else {
      std::bitset<256> indent;
      indent.set(' ');
      indent.set('\t');
      ws_ = optional(alt({literal(" "), seq({literal("\n"), repeat(bytes(indent), 0, options.max_whitespace)})}));
    }
    if (!options.compact) {
      comma_ = seq({ws_, literal(","), ws_});
      colon_ = seq({ws_, literal(":"), ws_});
    }
  }

  Grammar build() {
    const int top = b_.declare("root");
    ExprPtr marker = prefix_token_.empty() ? empty() : token_named(prefix_token_);
    b_.define(top, seq({std::move(marker), literal(prefix_), ws_, compile(root_), ws_, literal(suffix_)}));
    return b_.build(top);
  }

 private:
  static std::bitset<256> whitespace_set() {
    std::bitset<256> s;
    for (char c : std::string(" \t\n\r")) s.set(static_cast<unsigned char>(c));
    return s;
  }

  ExprPtr rule_of(const std::string& name, const std::function<ExprPtr()>& body) {
    auto it = named_.find(name);
    if (it != named_.end()) return rule_ref(it->second);
    const int r = b_.declare(name);
    named_[name] = r;
    b_.define(r, body());
    return rule_ref(r);
  }

  // Shares an expression used in several places (a member, an array item): inlined, each use
  // would copy it, and nesting would multiply the copies.
  ExprPtr shared(const char* name, ExprPtr e) {
    if (e->kind == Expr::Kind::kRule || e->kind == Expr::Kind::kBytes) return e;
    const int r = b_.declare(name);
    b_.define(r, std::move(e));
    return rule_ref(r);
  }

  ExprPtr json_char() { return rule_of("json_char", [] { return json_any_char_expr(); }); }
  ExprPtr any_string() { return seq({literal("\""), star(json_char()), literal("\"")}); }

  ExprPtr any_value() {
    auto it = named_.find("any_value");
    if (it != named_.end()) return rule_ref(it->second);
    const int r = b_.declare("any_value");
    named_["any_value"] = r;
    const ExprPtr value = rule_ref(r);
    const ExprPtr member = seq({any_string(), colon_, value});
    const ExprPtr object = seq({literal("{"), ws_, optional(seq({member, star(seq({comma_, member}))})), ws_, literal("}")});
    const ExprPtr array = seq({literal("["), ws_, optional(seq({value, star(seq({comma_, value}))})), ws_, literal("]")});
    b_.define(r, alt({object, array, any_string(), number_expr(false), literal("true"), literal("false"), literal("null")}));
    return value;
  }

  const json& resolve(const std::string& ref) {
    if (ref.empty() || ref[0] != '#') unsupported(fmt::format("$ref '{}' (only '#...' pointers into this schema)", ref));
    if (ref.size() > 1 && ref[1] != '/') unsupported(fmt::format("$ref '{}' (anchors)", ref));
    const json* at = &root_;
    size_t pos = 1;
    while (pos < ref.size()) {
      const size_t next = ref.find('/', pos + 1);
      std::string part = ref.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
      std::string decoded;
      for (size_t i = 0; i < part.size(); ++i) {
        if (part[i] == '~' && i + 1 < part.size()) {
          decoded += part[i + 1] == '1' ? '/' : '~';
          ++i;
        } else if (part[i] == '%' && i + 2 < part.size()) {
          decoded += static_cast<char>(std::stoi(part.substr(i + 1, 2), nullptr, 16));
          i += 2;
        } else {
          decoded += part[i];
        }
      }
      if (at->is_object() && at->contains(decoded)) {
        at = &(*at)[decoded];
      } else if (at->is_array() && !decoded.empty() && decoded.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(decoded) < at->size()) {
        at = &(*at)[std::stoul(decoded)];
      } else {
        fail<InvalidArgument>("JSON Schema: $ref '{}' points at nothing", ref);
      }
      pos = next == std::string::npos ? ref.size() : next;
    }
    return *at;
  }

  ExprPtr compile_ref(const std::string& ref) {
    auto it = named_.find("ref:" + ref);
    if (it != named_.end()) return rule_ref(it->second);
    const int r = b_.declare("ref:" + ref);
    named_["ref:" + ref] = r;
    const json target = resolve(ref);  // copied: compile() may not hold references into root_ across merges
    b_.define(r, compile(target));
    return rule_ref(r);
  }

  // allOf of simple parts: keywords are merged (properties per name, required united, types
  // intersected); the same keyword with different values elsewhere is an error.
  json merge(const json& a, const json& b) {
    if (a.is_boolean() || b.is_boolean()) {
      if (a == true) return b;
      if (b == true) return a;
      return json(false);  // nothing satisfies both
    }
    json out = a;
    const bool objects = a.contains("properties") || b.contains("properties") || a.contains("additionalProperties") ||
                         b.contains("additionalProperties");
    if (objects) merge_members(a, b, out);
    for (const auto& [k, v] : b.items()) {
      if (objects && (k == "properties" || k == "additionalProperties")) continue;
      if (!out.contains(k)) {
        out[k] = v;
      } else if (out[k] == v) {
        continue;
      } else if (k == "required") {
        for (const auto& name : v) {
          if (std::find(out[k].begin(), out[k].end(), name) == out[k].end()) out[k].push_back(name);
        }
      } else if (k == "type") {
        auto as_set = [](const json& t) {
          std::set<std::string> s;
          if (t.is_string()) s.insert(t.get<std::string>());
          else for (const auto& x : t) s.insert(x.get<std::string>());
          if (s.count("number")) s.insert("integer");
          return s;
        };
        const auto sa = as_set(out[k]), sb = as_set(v);
        json both = json::array();
        for (const auto& t : sa) {
          if (sb.count(t) && !(t == "number" && (!sb.count("number") || !sa.count("number")))) both.push_back(t);
        }
        if (both.empty()) return json(false);  // no instance has both types
        out[k] = both;
      } else if (!kValidation.count(k)) {
        continue;  // annotations and unknown keywords constrain nothing
      } else {
        unsupported(fmt::format("allOf with two different '{}'", k));
      }
    }
    return out;
  }

  // Both parts' views of every key, exactly: a key one part names takes that part's property
  // schema, any other key that part's additionalProperties (true when absent); the merged schema
  // of a key is both views together, and additionalProperties (for keys neither names) both parts'.
  void merge_members(const json& a, const json& b, json& out) {
    if ((a.contains("patternProperties") || b.contains("patternProperties")) &&
        a.value("patternProperties", json::object()) != b.value("patternProperties", json::object())) {
      unsupported("allOf merging patternProperties with properties or additionalProperties");
    }
    auto extra_of = [](const json& part) { return part.contains("additionalProperties") ? part["additionalProperties"] : json(true); };
    auto view = [&](const json& part, const std::string& name) -> json {
      if (part.contains("properties") && part["properties"].contains(name)) return part["properties"][name];
      return extra_of(part);
    };
    json props = json::object();
    for (const json* part : {&a, &b}) {
      if (!part->contains("properties")) continue;
      for (const auto& [name, unused] : (*part)["properties"].items()) {
        (void)unused;
        if (!props.contains(name)) props[name] = both(view(a, name), view(b, name));
      }
    }
    if (!props.empty()) out["properties"] = props;
    if (a.contains("additionalProperties") || b.contains("additionalProperties")) {
      out["additionalProperties"] = both(extra_of(a), extra_of(b));
    }
  }

  // Two schemas an instance must both satisfy, simplified where one says nothing.
  static json both(const json& x, const json& y) {
    auto trivial = [](const json& s) { return s == json(true) || s == json::object(); };
    if (trivial(x)) return y;
    if (trivial(y)) return x;
    if (x == json(false) || y == json(false)) return json(false);
    if (x == y) return x;
    return json{{"allOf", json::array({x, y})}};
  }

  ExprPtr compile(const json& schema) {
    if (depth_ > kMaxInlineDepth) unsupported("a $ref that recurses inside allOf/anyOf/oneOf siblings");
    ++depth_;
    ExprPtr e = compile_schema(schema);
    --depth_;
    return e;
  }

  ExprPtr compile_schema(const json& schema) {
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return any_value();
      unsupported("the false schema");
    }
    if (!schema.is_object()) fail<InvalidArgument>("JSON Schema: a schema must be an object or a boolean, got {}", schema.dump());
    for (const auto& [k, v] : schema.items()) {
      if (kUnsupported.count(k)) unsupported(fmt::format("keyword '{}'", k));
      if (k == "uniqueItems" && v == true) {
        if (!(schema.contains("maxItems") && schema["maxItems"].is_number() && schema["maxItems"].get<double>() <= 1)) unsupported("keyword 'uniqueItems'");
      }
    }
    if (schema.contains("$ref")) {
      json rest = schema;
      rest.erase("$ref");
      for (const char* a : {"description", "title", "$comment", "examples", "default", "$schema", "$id", "definitions", "$defs"}) rest.erase(a);
      if (rest.empty() || ref_ignores_siblings_) return compile_ref(schema["$ref"].get<std::string>());
      json target = resolve(schema["$ref"].get<std::string>());
      if (target.is_object() && target.contains("$ref")) unsupported("$ref with sibling keywords pointing at another $ref");
      return compile(merge(target, rest));
    }
    if (schema.contains("allOf")) {
      json merged = schema;
      merged.erase("allOf");
      for (const auto& part : schema["allOf"]) {
        json p = part;
        while (p.is_object() && p.contains("$ref") && p.size() == 1) p = resolve(p["$ref"].get<std::string>());
        merged = merge(merged, p);
      }
      return compile(merged);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!schema.contains(key)) continue;
      json rest = schema;
      rest.erase(key);
      if (std::string(key) == "oneOf" && only_requires(schema[key])) return compile(one_of_required(schema[key], rest));
      if (std::string(key) == "oneOf") require_exclusive(schema[key], rest);
      std::vector<ExprPtr> branches;
      for (const auto& branch : schema[key]) {
        if (!has_validation(rest)) {
          branches.push_back(compile(branch));  // a $ref stays a rule: recursion is fine
          continue;
        }
        json b = branch;
        while (b.is_object() && b.contains("$ref") && b.size() == 1) b = resolve(b["$ref"].get<std::string>());
        const json merged = merge(rest, b);
        if (merged != json(false)) branches.push_back(compile(merged));
      }
      return alt(std::move(branches));
    }
    std::set<std::string> types;
    if (schema.contains("type")) {
      const json& t = schema["type"];
      if (t.is_string()) types.insert(t.get<std::string>());
      else for (const auto& x : t) types.insert(x.get<std::string>());
      for (const auto& x : types) {
        if (!kTypes.count(x)) fail<InvalidArgument>("JSON Schema: unknown type '{}'", x);
      }
    } else {
      types = kTypes;
      types.erase("integer");  // number covers it
    }
    if (schema.contains("const") || schema.contains("enum")) return compile_enum(schema, types);
    std::vector<ExprPtr> branches;
    for (const auto& t : types) {
      if (t == "null") branches.push_back(literal("null"));
      else if (t == "boolean") branches.push_back(alt({literal("true"), literal("false")}));
      else if (t == "integer") { if (!types.count("number")) branches.push_back(compile_integer(schema)); }
      else if (t == "number") branches.push_back(compile_number(schema, types.count("integer") > 0));
      else if (t == "string") branches.push_back(compile_string(schema));
      else if (t == "array") branches.push_back(compile_array(schema));
      else if (t == "object") branches.push_back(compile_object(schema));
    }
    return alt(std::move(branches));
  }

  // The JSON types a schema's instances may have (integer folded into number), or none = unknown.
  std::set<std::string> possible_types(const json& s) {
    std::set<std::string> out;
    if (s.is_object() && s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) out.insert(t.get<std::string>());
      else for (const auto& x : t) out.insert(x.get<std::string>());
    } else if (s.is_object() && (s.contains("const") || s.contains("enum"))) {
      for (const auto& v : s.contains("const") ? json::array({s["const"]}) : s["enum"]) {
        out.insert(v.is_null() ? "null" : v.is_boolean() ? "boolean" : v.is_number() ? "number" : v.is_string() ? "string"
                   : v.is_array() ? "array" : "object");
      }
    }
    if (out.erase("integer")) out.insert("number");
    return out;
  }

  // The literal values a schema allows, when it is a const or an enum.
  static std::optional<std::vector<json>> literal_values(const json& s) {
    if (!s.is_object()) return std::nullopt;
    if (s.contains("const")) return std::vector<json>{s["const"]};
    if (s.contains("enum")) return std::vector<json>(s["enum"].begin(), s["enum"].end());
    return std::nullopt;
  }

  json resolved(json s) {
    for (int i = 0; i < kMaxInlineDepth && s.is_object() && s.contains("$ref") && !has_validation_besides_ref(s); ++i) {
      s = resolve(s["$ref"].get<std::string>());
    }
    return s;
  }
  static bool has_validation_besides_ref(const json& s) {
    json rest = s;
    rest.erase("$ref");
    return has_validation(rest);
  }

  // Two branches are exclusive when their types cannot meet, when both are disjoint literal sets,
  // or when both require a property whose literal values are disjoint (a discriminator).
  bool exclusive(const json& a, const json& b) {
    const auto ta = possible_types(a), tb = possible_types(b);
    if (!ta.empty() && !tb.empty()) {
      bool meet = false;
      for (const auto& t : ta) meet = meet || tb.count(t);
      if (!meet) return true;
    }
    auto disjoint = [](const std::vector<json>& x, const std::vector<json>& y) {
      for (const auto& v : x) {
        if (std::find(y.begin(), y.end(), v) != y.end()) return false;
      }
      return true;
    };
    const auto la = literal_values(a), lb = literal_values(b);
    if (la && lb) return disjoint(*la, *lb);
    if (!a.is_object() || !b.is_object() || !a.contains("properties") || !b.contains("properties")) return false;
    auto required = [](const json& s, const std::string& name) {
      if (!s.contains("required")) return false;
      for (const auto& r : s["required"]) {
        if (r == name) return true;
      }
      return false;
    };
    for (const auto& [name, pa] : a["properties"].items()) {
      if (!b["properties"].contains(name) || !required(a, name) || !required(b, name)) continue;
      const auto va = literal_values(resolved(pa)), vb = literal_values(resolved(b["properties"][name]));
      if (va && vb && disjoint(*va, *vb)) return true;
    }
    return false;
  }

  // Branches that only require properties (and annotate): exactly one of the sets is complete.
  static bool only_requires(const json& branches) {
    for (const auto& b : branches) {
      if (!b.is_object() || !b.contains("required")) return false;
      for (const auto& [k, v] : b.items()) {
        (void)v;
        if (k != "required" && kValidation.count(k)) return false;
      }
    }
    return branches.size() >= 2;
  }
  json one_of_required(const json& branches, json rest) {
    if (rest.contains(kOneOfRequired)) unsupported("oneOf of required properties inside another");
    // A non-object satisfies every branch (required constrains objects only): two or more match.
    if (rest.contains("type")) {
      const json& t = rest["type"];
      const bool object = t == "object" || (t.is_array() && std::find(t.begin(), t.end(), "object") != t.end());
      if (!object) unsupported("oneOf of required properties on a schema that is not an object");
    }
    rest["type"] = "object";
    json sets = json::array();
    for (const auto& b : branches) sets.push_back(b["required"]);
    rest[kOneOfRequired] = sets;
    return rest;
  }

  // oneOf is compiled as anyOf, which is exact only when no instance can match two branches.
  void require_exclusive(const json& branches, const json& rest) {
    std::vector<json> parts;
    for (const auto& b : branches) {
      json r = resolved(b);
      parts.push_back(has_validation(rest) && r.is_object() ? merge(rest, r) : r);
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      for (size_t j = i + 1; j < parts.size(); ++j) {
        if (!exclusive(parts[i], parts[j])) unsupported(fmt::format("oneOf whose branches {} and {} may overlap", i, j));
      }
    }
  }

  ExprPtr compile_enum(const json& schema, const std::set<std::string>& types) {
    for (const auto& [k, v] : schema.items()) {
      (void)v;
      if (kValidation.count(k) && k != "enum" && k != "const" && k != "type" && k != "format") {
        unsupported(fmt::format("'{}' next to enum/const", k));
      }
    }
    json values = schema.contains("const") ? json::array({schema["const"]}) : schema["enum"];
    std::vector<ExprPtr> branches;
    for (const auto& v : values) {
      std::string t = v.is_null() ? "null" : v.is_boolean() ? "boolean" : v.is_number_integer() ? "integer"
                      : v.is_number() ? "number" : v.is_string() ? "string" : v.is_array() ? "array" : "object";
      const bool fits = types.count(t) || (t == "integer" && types.count("number")) ||
                        (t == "number" && types.count("integer") && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())));
      if (schema.contains("type") && !fits) continue;
      if (t == "number" && schema.contains("type") && !types.count("number")) {
        branches.push_back(literal(std::to_string(static_cast<int64_t>(v.get<double>()))));  // 2.0 under type integer: "2" only
        continue;
      }
      branches.push_back(json_value_literal(v, {ws_, comma_, colon_}));
    }
    if (schema.contains("const") && schema.contains("enum")) unsupported("const together with enum");
    return alt(std::move(branches));
  }

  ExprPtr compile_integer(const json& s) {
    std::optional<int64_t> lo, hi;
    if (s.contains("minimum")) lo = integer_bound(s["minimum"], "minimum");
    if (s.contains("maximum")) hi = integer_bound(s["maximum"], "maximum");
    if (s.contains("exclusiveMinimum")) {
      const json& v = s["exclusiveMinimum"];
      if (v.is_boolean()) { if (v.get<bool>() && lo) *lo += 1; }
      else { const int64_t x = integer_bound(v, "exclusiveMinimum").value() + 1; lo = lo ? std::max(*lo, x) : x; }
    }
    if (s.contains("exclusiveMaximum")) {
      const json& v = s["exclusiveMaximum"];
      if (v.is_boolean()) { if (v.get<bool>() && hi) *hi -= 1; }
      else { const int64_t x = integer_bound(v, "exclusiveMaximum").value() - 1; hi = hi ? std::min(*hi, x) : x; }
    }
    return integer_range_expr(lo, hi);
  }

  ExprPtr compile_number(const json& s, bool) {
    const bool has_bounds = s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum");
    if (!has_bounds) return number_expr(false);
    // Integer-valued bounds only (a decimal bound is an error, from integer_bound).
    std::optional<NumberBound> lo, hi;
    if (s.contains("minimum")) lo = NumberBound{*integer_bound(s["minimum"], "minimum"), false};
    if (s.contains("maximum")) hi = NumberBound{*integer_bound(s["maximum"], "maximum"), false};
    if (s.contains("exclusiveMinimum")) {
      const json& v = s["exclusiveMinimum"];
      if (v.is_boolean()) {
        if (v.get<bool>() && lo) lo->exclusive = true;
      } else {
        const int64_t x = *integer_bound(v, "exclusiveMinimum");
        if (!lo || x >= lo->value) lo = NumberBound{x, true};
      }
    }
    if (s.contains("exclusiveMaximum")) {
      const json& v = s["exclusiveMaximum"];
      if (v.is_boolean()) {
        if (v.get<bool>() && hi) hi->exclusive = true;
      } else {
        const int64_t x = *integer_bound(v, "exclusiveMaximum");
        if (!hi || x <= hi->value) hi = NumberBound{x, true};
      }
    }
    return bounded_number_expr(lo, hi);
  }

  ExprPtr compile_string(const json& s) {
    const int min = s.contains("minLength") ? s["minLength"].get<int>() : 0;
    const int max = s.contains("maxLength") ? s["maxLength"].get<int>() : kUnbounded;
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern")) {
      if (!constraining_format(s).empty()) unsupported("pattern together with format");
      const CharExpr chars = [](const CharClass& c) { return json_char_expr(c); };
      const std::string pattern = s["pattern"].get<std::string>();
      if (!lengths) return seq({literal("\""), regex_to_expr(pattern, chars, /*search=*/true), literal("\"")});
      return rule_of(fmt::format("pattern{{{},{}}}:{}", min, max, pattern), [&] {
        const ByteDfa text = ByteDfa::from_expr(regex_to_expr(pattern, chars, /*search=*/true), kMaxKeyStates);
        const ByteDfa any_chars = ByteDfa::from_expr(star(json_any_char_expr()), kMaxKeyStates);
        return seq({literal("\""), length_bounded_expr(text, any_chars, min, max, kMaxKeyStates), literal("\"")});
      });
    }
    if (const std::string format = constraining_format(s); !format.empty()) {
      if (lengths) unsupported("format together with minLength/maxLength");
      return seq({literal("\""), string_format_expr(format), literal("\"")});
    }
    if (max != kUnbounded && max > 10000) unsupported("maxLength over 10000");
    // One rule per length range: a bounded string unrolls max copies of its character.
    return rule_of(fmt::format("string{{{},{}}}", min, max),
                   [&] { return seq({literal("\""), repeat(json_char(), min, max), literal("\"")}); });
  }

  ExprPtr comma() { return comma_; }

  ExprPtr compile_array(const json& s) {
    const int min = s.contains("minItems") ? s["minItems"].get<int>() : 0;
    int max = s.contains("maxItems") ? s["maxItems"].get<int>() : kUnbounded;
    std::vector<json> prefix;
    json tail = true;
    if (s.contains("prefixItems")) {
      for (const auto& x : s["prefixItems"]) prefix.push_back(x);
      if (s.contains("items")) tail = s["items"];
    } else if (s.contains("items") && s["items"].is_array()) {
      for (const auto& x : s["items"]) prefix.push_back(x);
      if (s.contains("additionalItems")) tail = s["additionalItems"];
    } else if (s.contains("items")) {
      tail = s["items"];
    }
    const bool tail_allowed = !(tail.is_boolean() && !tail.get<bool>());
    const int k = static_cast<int>(prefix.size());
    if (!tail_allowed) max = max == kUnbounded ? k : std::min(max, k);
    if (max != kUnbounded && max < min) unsupported("an array schema no array satisfies");
    std::vector<ExprPtr> prefix_items;
    for (const auto& p : prefix) prefix_items.push_back(shared("item", compile(p)));
    const ExprPtr tail_item = tail_allowed ? shared("item", compile(tail)) : nothing();
    auto element = [&](int i) { return i < k ? prefix_items[static_cast<size_t>(i)] : tail_item; };
    auto with_sep = [&](int i, ExprPtr e) { return i == 0 ? e : seq({comma(), e}); };
    // Positions past max(k, min) all take the tail schema: a bounded or unbounded repetition.
    const int explicit_count = std::max(k, min);
    ExprPtr rest;
    if (max == kUnbounded) {
      rest = explicit_count == 0 ? optional(seq({tail_item, star(seq({comma(), tail_item}))})) : star(seq({comma(), tail_item}));
    } else if (max > explicit_count) {
      rest = explicit_count == 0 ? optional(seq({tail_item, repeat(seq({comma(), tail_item}), 0, max - 1)}))
                                 : repeat(seq({comma(), tail_item}), 0, max - explicit_count);
    } else {
      rest = empty();
    }
    // Built from the back: positions below min are mandatory, the others nest as optionals.
    const int last = max == kUnbounded ? explicit_count : std::min(explicit_count, max);
    ExprPtr body = rest;
    for (int i = last - 1; i >= 0; --i) {
      ExprPtr here = seq({with_sep(i, element(i)), body});
      body = i < min ? here : optional(here);
    }
    return seq({literal("["), ws_, body, ws_, literal("]")});
  }

  // A key regex of patternProperties with its value schema, and its automaton over the key's text.
  struct KeyPattern {
    json schema;
    ByteDfa dfa;
  };

  std::vector<KeyPattern> key_patterns(const json& s) {
    std::vector<KeyPattern> out;
    if (!s.contains("patternProperties")) return out;
    const CharExpr chars = [](const CharClass& c) { return utf8_expr(c); };
    for (const auto& [regex, schema] : s["patternProperties"].items()) {
      out.push_back({schema, ByteDfa::from_expr(regex_to_expr(regex, chars, /*search=*/true), kMaxKeyStates)});
    }
    return out;
  }

  // A named property's value: its own schema and every pattern's that matches its name.
  json property_schema(const std::string& name, json own, const std::vector<KeyPattern>& patterns) {
    for (const auto& p : patterns) {
      if (p.dfa.matches(name) && p.schema != json(true) && p.schema != json::object()) own = merge(own, p.schema);
    }
    return own;
  }

  ExprPtr compile_object(const json& s) {
    std::vector<std::pair<std::string, ExprPtr>> props;
    std::set<std::string> required;
    if (s.contains("required")) for (const auto& r : s["required"]) required.insert(r.get<std::string>());
    std::set<std::string> names;
    json extra = s.contains("additionalProperties") ? s["additionalProperties"] : json(true);
    const bool extra_allowed = !(extra.is_boolean() && !extra.get<bool>());
    const std::vector<KeyPattern> patterns = key_patterns(s);
    if (s.contains("properties")) {
      for (const auto& [name, own] : s["properties"].items()) {
        names.insert(name);
        const json sub = property_schema(name, own, patterns);
        if (sub.is_boolean() && !sub.get<bool>()) {
          if (required.count(name)) unsupported(fmt::format("required property '{}' with the false schema", name));
          continue;  // may not appear; and extra keys exclude it below
        }
        props.push_back({name, compile(sub)});
      }
    }
    for (const auto& r : required) {
      if (names.count(r)) continue;
      bool matched = false;
      for (const auto& p : patterns) matched = matched || p.dfa.matches(r);
      if (!matched && !extra_allowed) unsupported(fmt::format("required property '{}' that additionalProperties forbids", r));
      names.insert(r);
      props.push_back({r, compile(matched ? property_schema(r, json(true), patterns) : extra)});
    }
    // Names that dependencies and oneOf-required guards test get slots too (as optional members
    // with the schema an extra key of that name would have); names no key can take never appear.
    std::set<std::string> never;
    for (const auto& name : guarded_names(s)) {
      if (names.count(name)) continue;
      bool matched = false;
      for (const auto& p : patterns) matched = matched || p.dfa.matches(name);
      if (!matched && !extra_allowed) {
        never.insert(name);
        continue;
      }
      names.insert(name);
      props.push_back({name, compile(matched ? property_schema(name, json(true), patterns) : extra)});
    }
    const ExprPtr guard = slot_guards(s, props, never);
    auto member = [&](const std::string& name, const ExprPtr& value) {
      return seq({literal(json_quote(name)), colon_, value});
    };
    ExprPtr extra_member = nothing();
    if (!patterns.empty()) extra_member = shared("extra_member", pattern_members(names, patterns, extra));
    else if (extra_allowed) extra_member = shared("extra_member", seq({key_not_in(names), colon_, compile(extra)}));
    const int min_members = s.contains("minProperties") ? s["minProperties"].get<int>() : 0;
    const int max_members = s.contains("maxProperties") ? s["maxProperties"].get<int>() : kUnbounded;
    const bool counted = min_members > 0 || max_members != kUnbounded || guard != nullptr;
    if ((order_ == PropertyOrder::kAny || counted) && props.size() <= static_cast<size_t>(kMaxSlots)) {
      return any_order_object(props, required, extra_member, min_members, max_members, guard ? guard : empty());
    }
    if (counted) {
      unsupported(fmt::format("minProperties/maxProperties/dependencies/oneOf of required with more than {} properties", kMaxSlots));
    }
    // after[i]: the rest from property i on once something was written (so a comma comes first);
    // first[i]: the rest when nothing was written yet.
    const size_t n = props.size();
    std::vector<ExprPtr> after(n + 1), first(n + 1);
    after[n] = star(seq({comma(), extra_member}));
    first[n] = optional(seq({extra_member, after[n]}));
    for (size_t i = n; i-- > 0;) {
      const ExprPtr m = shared("member", member(props[i].first, props[i].second));
      const bool req = required.count(props[i].first) > 0;
      const int after_rule = b_.declare("after");
      b_.define(after_rule, req ? seq({comma(), m, after[i + 1]}) : alt({seq({comma(), m, after[i + 1]}), after[i + 1]}));
      after[i] = rule_ref(after_rule);
      const int first_rule = b_.declare("first");
      b_.define(first_rule, req ? seq({m, after[i + 1]}) : alt({seq({m, after[i + 1]}), first[i + 1]}));
      first[i] = rule_ref(first_rule);
    }
    return seq({literal("{"), ws_, first[0], ws_, literal("}")});
  }

  // Members in any order: one rule whose loop picks any member each time; member i is a call with
  // slot i (taken once per object), and the closing brace is guarded by the required members'
  // slots. Its own rule, so that each object (a nested one too) has its own marks.
  // The property names dependencies (array form) and oneOf-required test.
  static std::set<std::string> guarded_names(const json& s) {
    std::set<std::string> out;
    for (const char* k : {"dependencies", "dependentRequired"}) {
      if (!s.contains(k)) continue;
      for (const auto& [name, v] : s[k].items()) {
        if (!v.is_array()) unsupported(fmt::format("'{}' with a schema", k));
        out.insert(name);
        for (const auto& d : v) out.insert(d.get<std::string>());
      }
    }
    if (s.contains(kOneOfRequired)) {
      for (const auto& set : s[kOneOfRequired]) for (const auto& n : set) out.insert(n.get<std::string>());
    }
    return out;
  }

  // What must hold of the members present when the object closes, as slot guards: each dependency
  // "a needs b, c" is "a absent, or b and c present"; oneOf-required is "one set complete and every
  // other set missing a member". nullptr when the schema has neither.
  static ExprPtr slot_guards(const json& s, const std::vector<std::pair<std::string, ExprPtr>>& props,
                             const std::set<std::string>& never) {
    std::map<std::string, uint64_t> bit;
    for (size_t i = 0; i < props.size() && i < static_cast<size_t>(kMaxSlots); ++i) bit[props[i].first] = uint64_t{1} << i;
    auto bit_of = [&](const std::string& n) { return bit.count(n) ? bit[n] : 0; };
    std::vector<ExprPtr> guards;
    for (const char* k : {"dependencies", "dependentRequired"}) {
      if (!s.contains(k)) continue;
      for (const auto& [name, needs] : s[k].items()) {
        if (never.count(name)) continue;  // its key never appears: nothing to check
        uint64_t need = 0;
        bool impossible = false;
        for (const auto& d : needs) {
          if (never.count(d.get<std::string>())) impossible = true;
          need |= bit_of(d.get<std::string>());
        }
        guards.push_back(impossible ? slot_guard(0, bit_of(name)) : alt({slot_guard(0, bit_of(name)), slot_guard(need, 0)}));
      }
    }
    if (s.contains(kOneOfRequired)) {
      const json& sets = s[kOneOfRequired];
      auto can_complete = [&](const json& set) {
        for (const auto& n : set) if (never.count(n.get<std::string>())) return false;
        return true;
      };
      std::vector<ExprPtr> options;
      for (size_t i = 0; i < sets.size(); ++i) {
        if (!can_complete(sets[i])) continue;
        uint64_t all = 0;
        for (const auto& n : sets[i]) all |= bit_of(n.get<std::string>());
        std::vector<ExprPtr> parts = {slot_guard(all, 0)};
        for (size_t j = 0; j < sets.size(); ++j) {
          if (j == i || !can_complete(sets[j])) continue;  // a set that cannot complete is always missing one
          std::vector<ExprPtr> missing;
          for (const auto& n : sets[j]) missing.push_back(slot_guard(0, bit_of(n.get<std::string>())));
          parts.push_back(alt(std::move(missing)));  // an empty set is always complete: no option
        }
        options.push_back(seq(std::move(parts)));
      }
      guards.push_back(alt(std::move(options)));
    }
    return guards.empty() ? nullptr : seq(std::move(guards));
  }

  // minProperties/maxProperties count members: unrolled copies of the member choice (slots keep
  // each named one unique).
  ExprPtr any_order_object(const std::vector<std::pair<std::string, ExprPtr>>& props, const std::set<std::string>& required,
                           const ExprPtr& extra_member, int min_members, int max_members, const ExprPtr& guard) {
    std::vector<ExprPtr> choices;
    uint64_t required_slots = 0;
    for (size_t i = 0; i < props.size(); ++i) {
      const int r = b_.declare("member");
      b_.define(r, seq({literal(json_quote(props[i].first)), colon_, props[i].second}));
      choices.push_back(rule_ref_once(r, static_cast<int>(i)));
      if (required.count(props[i].first)) required_slots |= uint64_t{1} << i;
    }
    choices.push_back(extra_member);  // nothing() when extra keys are not allowed
    const ExprPtr one = alt(std::move(choices));
    // Without extra keys there are no more than props.size() members: a larger bound says nothing.
    if (is_nothing(extra_member) && max_members != kUnbounded && max_members >= static_cast<int>(props.size())) {
      max_members = kUnbounded;
    }
    if (max_members != kUnbounded && max_members > kMaxCountedMembers) {
      unsupported(fmt::format("maxProperties over {}", kMaxCountedMembers));
    }
    if (min_members > kMaxCountedMembers) unsupported(fmt::format("minProperties over {}", kMaxCountedMembers));
    ExprPtr members;
    if (max_members == 0) {
      members = empty();
    } else {
      members = seq({one, repeat(seq({comma_, one}), std::max(min_members - 1, 0),
                                 max_members == kUnbounded ? kUnbounded : max_members - 1)});
      if (min_members == 0) members = optional(members);
    }
    const int object = b_.declare("object_any_order");
    b_.define(object, seq({literal("{"), ws_, members, require_slots(required_slots), guard, ws_, literal("}")}));
    return rule_ref(object);
  }

  // The members whose keys are not `names`, for an object with patternProperties: a key matching
  // some patterns takes all their schemas, a key matching none takes additionalProperties. Keys are
  // told apart by running the patterns' automata side by side (with the names' and that of keys
  // written without escapes); each combination of matching patterns is one kind of member.
  ExprPtr pattern_members(const std::set<std::string>& names, const std::vector<KeyPattern>& patterns, const json& extra) {
    if (patterns.size() > 60) unsupported("more than 60 patternProperties");
    const ByteDfa plain_keys = ByteDfa::from_expr(star(utf8_expr(plain_key_char())), kMaxKeyStates);
    std::vector<ExprPtr> name_literals;
    for (const auto& n : names) name_literals.push_back(literal(n));
    const ByteDfa named = ByteDfa::from_expr(alt(std::move(name_literals)), kMaxKeyStates);
    std::vector<const ByteDfa*> parts = {&plain_keys, &named};
    for (const auto& p : patterns) parts.push_back(&p.dfa);
    const DfaProduct keys = dfa_product(parts, kMaxKeyStates);
    // Member kinds by value schema: combinations with the same schema share one key automaton.
    std::vector<std::pair<json, std::set<uint64_t>>> kinds;
    for (uint64_t sig : std::set<uint64_t>(keys.signature.begin(), keys.signature.end())) {
      if (!(sig & 1) || (sig & 2)) continue;  // not a plain key, or a named one
      json value = extra;
      bool matched = false;
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (!(sig >> (i + 2) & 1)) continue;
        value = matched ? merge(value, patterns[i].schema) : patterns[i].schema;
        matched = true;
      }
      if (value.is_boolean() && !value.get<bool>()) continue;
      auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == value; });
      if (it == kinds.end()) kinds.push_back({value, {sig}});
      else it->second.insert(sig);
    }
    std::vector<ExprPtr> members;
    for (const auto& [value, sigs] : kinds) {
      const ExprPtr key = product_expr(keys, [&](uint64_t sig) { return sigs.count(sig) > 0; });
      members.push_back(seq({literal("\""), key, literal("\""), colon_, compile(value)}));
    }
    return alt(std::move(members));
  }

  static CharClass plain_key_char() {
    return CharClass::range(0x20, kMaxCodePoint).minus(CharClass::single('"')).minus(CharClass::single('\\'));
  }

  // A quoted key whose (escape-free) text is none of `names` (key_automaton.h).
  ExprPtr key_not_in(const std::set<std::string>& names) {
    if (names.empty()) return any_string();
    return seq({literal("\""), automaton(plain_key_not_in(names)), literal("\"")});
  }

  // Drafts 3 to 7: "All other properties in a $ref object MUST be ignored". From 2019-09 on (and
  // without a $schema, which validators read as the latest draft) they apply beside the $ref.
  static bool ref_ignores_siblings(const json& root) {
    if (!root.is_object() || !root.contains("$schema") || !root["$schema"].is_string()) return false;
    const std::string draft = root["$schema"].get<std::string>();
    for (const char* old : {"draft-03", "draft-04", "draft-05", "draft-06", "draft-07"}) {
      if (draft.find(old) != std::string::npos) return true;
    }
    return false;
  }

  json root_;
  ExprPtr ws_, comma_, colon_;
  std::string prefix_token_, prefix_, suffix_;
  PropertyOrder order_;
  bool ref_ignores_siblings_ = false;
  GrammarBuilder b_;
  std::map<std::string, int> named_;
  int depth_ = 0;
};

}  // namespace

Grammar json_schema_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options) {
  return SchemaCompiler(schema, options).build();
}

}  // namespace lemma::grammar
