// One parameter of the golden tests that run every preset from its HF directory and its GGUF file,
// printed and named for gtest ("tiny-qwen3 (gguf)", "tiny_qwen3_gguf").
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>

namespace lemma::testing {

struct PresetCase {
  std::string preset;
  bool gguf = false;
};

inline void PrintTo(const PresetCase& c, std::ostream* os) { *os << c.preset << (c.gguf ? " (gguf)" : " (hf)"); }

inline std::string preset_case_name(const ::testing::TestParamInfo<PresetCase>& info) {
  std::string name = info.param.preset + (info.param.gguf ? "_gguf" : "_hf");
  for (char& ch : name)
    if (ch == '-') ch = '_';
  return name;
}

}  // namespace lemma::testing
