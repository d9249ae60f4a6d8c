#include "lemma/tokenizer/gguf_pre_tokenizers.h"

#include <unordered_map>

namespace lemma::tok {
namespace {

// Recurring patterns (from the models' tokenizer.json files).
const std::string kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const std::string kLlama3 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kBloom = R"( ?[^(\s|.,!?…。，、।۔،)]+)";
const std::string kCjk = R"([一-龥ࠀ-一가-퟿]+)";
// o200k-style (GPT-4o, Llama-4): case-aware letter runs with optional contractions.
const std::string kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Kimi-K2: as o200k but Han runs are split off first; "[X&&[^\p{Han}]]" written as a lookahead.
const std::string kKimiK2 =
    R"(\p{Han}+|)"
    R"([^\r\n\p{L}\p{N}]?(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])*(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"([^\r\n\p{L}\p{N}]?(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])+(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kDeepseekV3Main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct Entry {
  std::vector<std::string_view> names;
  GgufPreTokenizer pre;
};

std::vector<Entry> build_entries() {
  std::vector<Entry> e;
  e.push_back({{"default"},
               {"default", {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", R"([0-9][0-9][0-9])"}, false, false}});
  e.push_back({{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                "jina-v5-nano"},
               {"llama3", {kLlama3}, true, true}});
  e.push_back({{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {"dbrx", {kLlama3}, false, false}});
  // deepseek-llm's cased-letter class, as code points (a literal copy is fragile: NFC
  // normalisation of the source text would silently change singletons such as U+212A).
  e.push_back({{"deepseek-llm"},
               {"deepseek-llm",
                {R"([\r\n])",
                 R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)",
                 R"(\s?[!-/:-~！-／：-～‘-‟　-。]+)", R"(\s+$)", kCjk, R"(\p{N}+)"},
                false, false}});
  e.push_back({{"deepseek-coder"},
               {"deepseek-coder", {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}, false, false}});
  e.push_back({{"deepseek-v3", "hunyuan-dense", "joyai-llm"},
               {"deepseek-v3", {R"(\p{N}{1,3})", R"([一-龥぀-ゟ゠-ヿ]+)", kDeepseekV3Main}, false, false}});
  e.push_back({{"falcon"},
               {"falcon", {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"([0-9][0-9][0-9])"}, false, false}});
  e.push_back({{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
               {"starcoder", {R"(\p{N})", kGpt2}, false, false}});
  e.push_back({{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
                "mellum", "jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4", "mpt", "olmo", "jais",
                "trillion", "granite-docling", "modern-bert"},
               {"gpt-2", {kGpt2}, false, false}});
  e.push_back({{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "hunyuan", "megrez", "solar-open"},
               {"qwen2", {kQwen2}, false, false}});
  e.push_back({{"poro-chat", "bloom", "gpt3-finnish"}, {"bloom", {kBloom}, false, false}});
  e.push_back({{"viking"}, {"viking", {kBloom, R"(\p{N})"}, false, false}});
  e.push_back({{"tekken"}, {"tekken", {kTekken}, true, true}});
  e.push_back({{"chameleon"},
               {"chameleon",
                {R"(<sentinel:[0-9]+>)", R"((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)", R"(([\t\n]|    |  ))",
                 R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", kGpt2},
                false, true}});
  e.push_back({{"gpt-4o", "llama4", "minimax-m2", "kanana2", "talkie"}, {"gpt-4o", {kGpt4o}, false, false}});
  e.push_back({{"superbpe"}, {"superbpe", {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"}, false, false}});
  e.push_back({{"bailingmoe", "bailingmoe2", "llada-moe"},
               {"bailingmoe",
                {R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"},
                false, false}});
  e.push_back({{"seed-coder"},
               {"seed-coder",
                {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                false, false}});
  e.push_back({{"kimi-k2"}, {"kimi-k2", {kKimiK2}, false, false}});
  e.push_back({{"qwen35"},
               {"qwen35",
                {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                false, false}});
  e.push_back({{"jais-2"},
               {"jais-2",
                {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|)"
                 R"(\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})"},
                false, false}});
  e.push_back({{"minicpm5"},
               {"minicpm5",
                {R"(\p{N}{1,3})",
                 R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                true, false}});
  e.push_back({{"youtu"},
               {"youtu",
                {R"([\x{AC00}-\x{D7A3}\x{3131}-\x{318E}]+|[\x{FF01}\x{2026}\x{201C}\x{201D}\x{2018}\x{2019}\x{2014}\x{FF1A}\x{FF1B}\x{FF0C}\x{3001}-\x{303F}\x{FE30}-\x{FE4F}]+|[\x{3105}-\x{312F}]+|[\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
                 R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
                 R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
                 R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                true, false}});
  e.push_back({{"tiny_aya", "cohere2moe"}, {"tiny_aya", {R"(\d{1,3}(?=(?:\d{3})*\b))", kGpt4o}, false, false}});
  // granite-embed-multi-97m: the o200k pattern (combining marks already join their letters).
  e.push_back({{"granite-embed-multi-97m"}, {"granite-embed-multi-97m", {kGpt4o}, true, false}});
  e.push_back({{"laguna"}, {"laguna", {R"([^\n]+|[\n]+)", kQwen2}, false, false}});
  e.push_back({{"exaone-moe"},
               {"exaone-moe",
                {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)"},
                false, false}});
  e.push_back({{"grok-2"}, {"grok-2", {kQwen2}, false, false}});
  return e;
}

struct Table {
  std::vector<Entry> entries = build_entries();
  std::unordered_map<std::string_view, const GgufPreTokenizer*> by_name;
  Table() {
    for (const auto& e : entries) {
      for (auto n : e.names) by_name.emplace(n, &e.pre);
    }
  }
};

const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

const GgufPreTokenizer* find_gguf_pre_tokenizer(std::string_view name) {
  const auto& t = table();
  auto it = t.by_name.find(name);
  return it == t.by_name.end() ? nullptr : it->second;
}

const GgufPreTokenizer& default_gguf_pre_tokenizer() { return *find_gguf_pre_tokenizer("default"); }

}  // namespace lemma::tok
