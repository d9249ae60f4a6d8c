// End-to-end tests of the `lemma` command's text subcommands: tokenize, detokenize, template, inspect.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_command.h"
#include "support/shared_data.h"
#include "support/vocab_vectors.h"

namespace lemma::testing {
namespace {

const std::string kLemma = LEMMA_BINARY;

CommandResult lemma(const std::string& args, const std::string* stdin_text = nullptr) {
  return run_command(shell_quote(kLemma) + " " + args, stdin_text);
}

std::string q(const std::filesystem::path& p) { return shell_quote(p.string()); }

class VocabFile : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabFile, TokenizeMatchesReferenceVectorsThroughStdin) {
  const auto base = shared_data("tokenizers/ggml-vocab-" + GetParam() + ".gguf");
  LEMMA_REQUIRE_SHARED(base);
  const auto [inputs, expected] = read_vocab_vectors(base);
  ASSERT_EQ(expected.size(), inputs.size());
  // A handful of cases per vocabulary (the tokenizer unit tests cover every case in-process).
  for (size_t i : {size_t{0}, size_t{2}, size_t{5}, inputs.size() - 1}) {
    const auto r = lemma("tokenize --model " + q(base), &inputs[i]);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out).get<std::vector<int32_t>>(), expected[i])
        << GetParam() << " case " << i << ": '" << inputs[i] << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Cli, VocabFile,
                         ::testing::Values("gpt-2", "llama-spm", "phi-3", "mpt", "starcoder", "deepseek-llm"));

TEST(CliTokenize, SpecialTokenFlags) {
  const auto dir = shared_data("hf/llama2-spm");
  LEMMA_REQUIRE_SHARED(dir);
  const auto plain = lemma("tokenize --model " + q(dir) + " --text 'Hello <s>'");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto plain_ids = nlohmann::json::parse(plain.out).get<std::vector<int>>();
  EXPECT_NE(plain_ids.front(), 1) << "no BOS without --add-special";
  EXPECT_EQ(std::count(plain_ids.begin(), plain_ids.end(), 1), 0) << "<s> text is not special by default";

  const auto special = lemma("tokenize --model " + q(dir) + " --text 'Hello <s>' --add-special --parse-special");
  ASSERT_EQ(special.exit_code, 0) << special.err;
  const auto ids = nlohmann::json::parse(special.out).get<std::vector<int>>();
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 1) << "BOS added";
  EXPECT_EQ(ids.back(), 1) << "<s> parsed as the BOS token";
}

TEST(CliDetokenize, RoundTripsText) {
  const auto dir = shared_data("hf/gpt2");
  LEMMA_REQUIRE_SHARED(dir);
  const std::string text = "Hello, world! Ünïcödé 🙂";
  const auto t = lemma("tokenize --model " + q(dir) + " --text " + shell_quote(text));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto ids = nlohmann::json::parse(t.out).get<std::vector<int>>();
  std::string list;
  for (int id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  const auto d = lemma("detokenize --model " + q(dir) + " --ids " + list);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, text);
}

TEST(CliDetokenize, RejectsBadIds) {
  const auto dir = shared_data("hf/gpt2");
  LEMMA_REQUIRE_SHARED(dir);
  const auto bad = lemma("detokenize --model " + q(dir) + " --ids 1,x,3");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("'x'"), std::string::npos) << bad.err;
  const auto out_of_range = lemma("detokenize --model " + q(dir) + " --ids 99999999");
  EXPECT_EQ(out_of_range.exit_code, 1);
  EXPECT_NE(out_of_range.err.find("99999999"), std::string::npos) << out_of_range.err;
}

// Renders `name`'s case `case_name` from chat_templates/ through the CLI and compares exactly.
void expect_template_case(const std::string& name, const std::string& case_name) {
  const auto templ = shared_data("chat_templates/" + name + ".jinja");
  const auto expected_all = nlohmann::ordered_json::parse(read_file(shared_data("chat_templates/" + name + ".expected.json")));
  const auto scratch = build_scratch("cli-template");
  for (const auto& c : expected_all) {
    if (c["case"] != case_name) continue;
    const auto messages = scratch / (name + "-" + case_name + ".messages.json");
    std::ofstream(messages) << c["conversation"].dump();
    std::string args = "template --template " + q(templ) + " --messages " + q(messages) + " --now 2025-01-15T12:00:00";
    if (!c["tools"].is_null()) {
      const auto tools = scratch / (name + "-" + case_name + ".tools.json");
      std::ofstream(tools) << c["tools"].dump();
      args += " --tools " + q(tools);
    }
    if (c["add_generation_prompt"].get<bool>()) args += " --add-generation-prompt";
    if (!c["bos_token"].is_null()) args += " --bos-token " + shell_quote(c["bos_token"].get<std::string>());
    if (!c["eos_token"].is_null()) args += " --eos-token " + shell_quote(c["eos_token"].get<std::string>());
    const auto r = lemma(args);
    if (c.contains("output")) {
      ASSERT_EQ(r.exit_code, 0) << name << "/" << case_name << ": " << r.err;
      EXPECT_EQ(r.out, c["output"].get<std::string>()) << name << "/" << case_name;
    } else {
      EXPECT_NE(r.exit_code, 0) << name << "/" << case_name << " should fail like Jinja2: " << c["error"];
      EXPECT_TRUE(r.out.empty());
      EXPECT_NE(r.err.find(":"), std::string::npos) << r.err;
    }
    return;
  }
  FAIL() << "no case " << case_name << " for " << name;
}

TEST(CliTemplate, RendersExactlyLikeJinja2) {
  LEMMA_REQUIRE_SHARED(shared_data("chat_templates"));
  expect_template_case("Qwen-Qwen2.5-7B-Instruct", "tools_roundtrip_genprompt");
  expect_template_case("meta-llama-Llama-3.1-8B-Instruct", "system_user_assistant_user_genprompt");
}

TEST(CliTemplate, FailsWhereJinja2Fails) {
  LEMMA_REQUIRE_SHARED(shared_data("chat_templates"));
  expect_template_case("google-gemma-2-2b-it", "system_user");
}

TEST(CliTemplate, UsesTheModelsTemplateAndTokens) {
  const auto dir = shared_data("hf/phi-3-mini");
  LEMMA_REQUIRE_SHARED(dir);
  const auto messages = build_scratch("cli-template") / "phi3.messages.json";
  std::ofstream(messages) << R"([{"role":"user","content":"Hi"}])";
  const auto r = lemma("template --model " + q(dir) + " --messages " + q(messages));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Without a generation prompt the phi-3 template ends with eos_token, taken from tokenizer_config.json.
  EXPECT_EQ(r.out, "<|user|>\nHi<|end|>\n<|endoftext|>");
}

TEST(CliTemplate, ErrorNamesTheLine) {
  const auto file = build_scratch("cli-template") / "broken.jinja";
  std::ofstream(file) << "line one\n{{ raise_exception('boom') }}\n";
  const auto messages = build_scratch("cli-template") / "empty.messages.json";
  std::ofstream(messages) << "[]";
  const auto r = lemma("template --template " + q(file) + " --messages " + q(messages));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("boom"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(":2"), std::string::npos) << "line number expected: " << r.err;
}

TEST(CliInspect, DescribesAGgufModel) {
  const auto model = shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(model);
  for (const char* mode : {"lazy", "prefault", "copy"}) {
    const auto r = lemma("inspect --model " + q(model) + " --load " + mode);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("format: GGUF v3"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("general.architecture = \"llama\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tensors: 48"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("token_embd.weight"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string("load: ") + mode), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tokenizer: "), std::string::npos) << r.out;
  }
}

TEST(CliInspect, DescribesAVocabOnlyGguf) {
  const auto model = shared_data("tokenizers/ggml-vocab-gpt-2.gguf");
  LEMMA_REQUIRE_SHARED(model);
  const auto r = lemma("inspect --model " + q(model));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vocab only"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("50257"), std::string::npos) << "vocab size in the tokenizer summary: " << r.out;
}

TEST(CliErrors, MissingAndCorruptModelsAreNamed) {
  const auto missing = lemma("tokenize --model /no/such/model.gguf --text hi");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/no/such/model.gguf"), std::string::npos) << missing.err;

  const auto model = shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(model);
  const std::string bytes = read_file(model);
  const auto truncated = build_scratch("cli-errors") / "truncated.gguf";
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  const auto r = lemma("inspect --model " + q(truncated));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("truncated.gguf"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lemma::testing
