// Writes the crafted GGUF and safetensors files (valid seeds and hostile cases) into
// <dir>/gguf/ and <dir>/safetensors/ as .bin files, the fuzzers' seed corpus.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hostile_cases.h"

namespace fs = std::filesystem;
using lemma::testing::CraftedFile;

static void write_all(const fs::path& dir, const std::vector<CraftedFile>& files, const char* prefix) {
  fs::create_directories(dir);
  for (const auto& f : files) {
    std::ofstream out(dir / (std::string(prefix) + f.name + ".bin"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(f.bytes.data()), static_cast<std::streamsize>(f.bytes.size()));
  }
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const fs::path root(argv[1]);
  write_all(root / "gguf", lemma::testing::valid_gguf_files(), "");
  write_all(root / "gguf", lemma::testing::hostile_gguf_files(), "hostile_");
  write_all(root / "safetensors", lemma::testing::valid_safetensors_files(), "");
  write_all(root / "safetensors", lemma::testing::hostile_safetensors_files(), "hostile_");
  return 0;
}
