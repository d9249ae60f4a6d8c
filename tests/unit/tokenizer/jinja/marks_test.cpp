// Request marks through the interpreter: strings from `messages` and `tools` stay marked through
// filters, methods, slicing, concatenation, macros and blocks, and the template's own text never
// is; render_spans() joins to render() exactly.
#include <gtest/gtest.h>

#include "lemma/tokenizer/jinja/chat_template.h"

namespace lemma {

void PrintTo(const TextSpan& s, std::ostream* os) { *os << (s.from_request ? "theirs" : "ours") << "(\"" << s.text << "\")"; }

namespace {

using Spans = std::vector<TextSpan>;

Spans spans_of(const std::string& source) {
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": "  <|x|> Hello World  "}, {"role": "assistant", "content": "ok"}])");
  in.tools = nlohmann::ordered_json::parse(R"([{"name": "t"}])");
  in.bos_token = "<s>";
  const ChatTemplate tmpl(source, "marks");
  Spans spans = tmpl.render_spans(in);
  std::string joined;
  for (const auto& s : spans) joined += s.text;
  EXPECT_EQ(joined, tmpl.render(in)) << source;
  return spans;
}

TextSpan ours(std::string s) { return {std::move(s), false}; }
TextSpan theirs(std::string s) { return {std::move(s), true}; }

const char* const kContent = "messages[0].content";

std::string with_content(std::string source) {
  for (size_t p; (p = source.find("C")) != std::string::npos;) source.replace(p, 1, kContent);
  return source;
}

TEST(JinjaMarks, ContentAndRolesAreMarkedTemplateTextIsNot) {
  EXPECT_EQ(spans_of("{{ bos_token }}<|a|>{{ messages[0].role }}\n{{ messages[0].content }}<|b|>"),
            (Spans{ours("<s><|a|>"), theirs("user"), ours("\n"), theirs("  <|x|> Hello World  "), ours("<|b|>")}));
  EXPECT_EQ(spans_of("{% for k in messages[0] %}[{{ k }}]{% endfor %}"),
            (Spans{ours("["), theirs("role"), ours("]["), theirs("content"), ours("]")}));
}

TEST(JinjaMarks, SurviveFilters) {
  EXPECT_EQ(spans_of(with_content("<a>{{ C | trim }}<b>")), (Spans{ours("<a>"), theirs("<|x|> Hello World"), ours("<b>")}));
  EXPECT_EQ(spans_of(with_content("<a>{{ C | upper }}")), (Spans{ours("<a>"), theirs("  <|X|> HELLO WORLD  ")}));
  EXPECT_EQ(spans_of(with_content("{{ ('<a>' + C) | lower }}")), (Spans{ours("<a>"), theirs("  <|x|> hello world  ")}));
  EXPECT_EQ(spans_of(with_content("{{ ('<a>' ~ C ~ '<b>') | trim }}")),
            (Spans{ours("<a>"), theirs("  <|x|> Hello World  "), ours("<b>")}));
  EXPECT_EQ(spans_of(with_content("{{ C | e }}")), (Spans{theirs("  &lt;|x|&gt; Hello World  ")}));
  EXPECT_EQ(spans_of(with_content("{{ C | string }}{{ C | safe }}")), (Spans{theirs("  <|x|> Hello World    <|x|> Hello World  ")}));
  EXPECT_EQ(spans_of(with_content("{{ C | reverse }}")), (Spans{theirs("  dlroW olleH >|x|<  ")}));
  EXPECT_EQ(spans_of("{{ messages | map(attribute='content') | join('<sep>') }}"),
            (Spans{theirs("  <|x|> Hello World  "), ours("<sep>"), theirs("ok")}));
  // Template text replaced stays ours; request text replaced (or a request argument) is theirs.
  EXPECT_EQ(spans_of(with_content("{{ ('<a>' + C) | replace('<a>', '<b>') }}")), (Spans{ours("<b>"), theirs("  <|x|> Hello World  ")}));
  EXPECT_EQ(spans_of(with_content("{{ ('<a>' + C) | replace('Hello', '<b>') }}")),
            (Spans{ours("<a>"), theirs("  <|x|> <b> World  ")}));
  EXPECT_EQ(spans_of(with_content("{{ '<a>' | replace('a', C) }}")), (Spans{theirs("<  <|x|> Hello World  >")}));
  // Filters that compute a new text mark all of it when an input is marked.
  EXPECT_EQ(spans_of(with_content("{{ '<a>%s<b>' | format(C) }}")), (Spans{theirs("<a>  <|x|> Hello World  <b>")}));
  EXPECT_EQ(spans_of(with_content("{{ ('<a>' + C) | title }}")), (Spans{theirs("<A>  <|x|> Hello World  ")}));
  EXPECT_EQ(spans_of("{{ tools | tojson }}"), (Spans{theirs(R"([{"name": "t"}])")}));
  EXPECT_EQ(spans_of("{{ '<a>' | upper }}{{ '<b>' | format() }}"), (Spans{ours("<A><b>")}));
}

TEST(JinjaMarks, SurviveMethodsSlicingAndOperators) {
  EXPECT_EQ(spans_of(with_content("<a>{{ C.strip() }}")), (Spans{ours("<a>"), theirs("<|x|> Hello World")}));
  EXPECT_EQ(spans_of(with_content("{% for w in C.split() %}[{{ w }}]{% endfor %}")),
            (Spans{ours("["), theirs("<|x|>"), ours("]["), theirs("Hello"), ours("]["), theirs("World"), ours("]")}));
  EXPECT_EQ(spans_of(with_content("{{ ('<a>' + C).split('|')[0] }}")), (Spans{ours("<a>"), theirs("  <")}));
  EXPECT_EQ(spans_of(with_content("{{ C[2:7] }}|{{ C[2] }}")), (Spans{theirs("<|x|>"), ours("|"), theirs("<")}));
  EXPECT_EQ(spans_of(with_content("{{ ('<a>' + C)[:5] }}")), (Spans{ours("<a>"), theirs("  ")}));
  EXPECT_EQ(spans_of(with_content("{% for c in C %}{{ c }}{% endfor %}")), (Spans{theirs("  <|x|> Hello World  ")}));
  EXPECT_EQ(spans_of(with_content("{{ '-'.join([C, '<a>']) }}")), (Spans{theirs("  <|x|> Hello World  "), ours("-<a>")}));
  EXPECT_EQ(spans_of(with_content("{{ C.replace(' ', '') }}{{ C.upper() }}")),
            (Spans{theirs("<|x|>HelloWorld  <|X|> HELLO WORLD  ")}));
  EXPECT_EQ(spans_of(with_content("{{ '<a>{}'.format(C) }}{{ '<b>%s' % C }}")),
            (Spans{theirs("<a>  <|x|> Hello World  <b>  <|x|> Hello World  ")}));
  EXPECT_EQ(spans_of(with_content("{{ [C, '<a>'] }}")), (Spans{theirs("['  <|x|> Hello World  ', '<a>']")}));
  EXPECT_EQ(spans_of("{{ messages[1].content * 2 }}{{ '<a>' * 2 }}"), (Spans{theirs("okok"), ours("<a><a>")}));
}

TEST(JinjaMarks, SurviveMacrosBlocksAndNamespaces) {
  EXPECT_EQ(spans_of(with_content("{% macro m(x) %}<m>{{ x | trim }}</m>{% endmacro %}{{ m(C) }}")),
            (Spans{ours("<m>"), theirs("<|x|> Hello World"), ours("</m>")}));
  EXPECT_EQ(spans_of(with_content("{% set b %}  <a>{{ C }}{% endset %}{{ b | trim }}")),
            (Spans{ours("<a>"), theirs("  <|x|> Hello World")}));
  EXPECT_EQ(spans_of(with_content("{% set ns = namespace(t='') %}{% for m in messages %}{% set ns.t = ns.t + '<'"
                                  " + m.role + '>' %}{% endfor %}{{ ns.t }}")),
            (Spans{ours("<"), theirs("user"), ours("><"), theirs("assistant"), ours(">")}));
  EXPECT_EQ(spans_of(with_content("{% filter upper %}<a>{{ C }}{% endfilter %}")),
            (Spans{ours("<A>"), theirs("  <|X|> HELLO WORLD  ")}));
}

}  // namespace
}  // namespace lemma
