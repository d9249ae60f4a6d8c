// Crafted model files for the hostile-input tests and the fuzz seed corpus: each broken case says
// which words the FormatError must contain. io_tests checks every case; io_make_fuzz_corpus writes
// them (with the valid seeds) to fuzz/corpus/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lemma::testing {

struct CraftedFile {
  std::string name;                   // also the file name in the corpus and in error messages
  std::vector<uint8_t> bytes;
  std::vector<std::string> expected;  // substrings of the error message (empty for valid files)
};

std::vector<CraftedFile> valid_gguf_files();
std::vector<CraftedFile> hostile_gguf_files();
std::vector<CraftedFile> valid_safetensors_files();
std::vector<CraftedFile> hostile_safetensors_files();

}  // namespace lemma::testing
