#include "support/vocab_vectors.h"

#include <sstream>

#include "support/shared_data.h"

namespace lemma::testing {

namespace {
// Each input is followed by the separator, so the file ends with one.
std::vector<std::string> split_inputs(const std::string& text) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t next = text.find(sep, pos);
    if (next == std::string::npos) {
      out.push_back(text.substr(pos));
      break;
    }
    out.push_back(text.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return out;
}

std::vector<std::vector<int32_t>> parse_outputs(const std::string& text) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream nums(line);
    std::vector<int32_t> ids;
    for (int32_t id; nums >> id;) ids.push_back(id);
    out.push_back(std::move(ids));
  }
  return out;
}
}  // namespace

VocabVectors read_vocab_vectors(const std::filesystem::path& gguf_path) {
  VocabVectors v;
  v.inputs = split_inputs(read_file(gguf_path.string() + ".inp"));
  v.expected = parse_outputs(read_file(gguf_path.string() + ".out"));
  return v;
}

}  // namespace lemma::testing
