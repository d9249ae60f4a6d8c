// Whole-file writes for the format writers.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace lemma {

// Writes `bytes` to `path` through a temporary file of this process and call (`<path>.tmp.<pid>.<n>`)
// and a rename, so readers never see half a file and concurrent writers of one path never collide.
// Throws IoError naming the path.
void write_file_atomically(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace lemma
