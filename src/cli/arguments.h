// Small parsers for command-line values shared by several subcommands.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace lemma::cli {

// "1,2, 3" -> {1,2,3}; also accepts a JSON array "[1,2,3]". Throws InvalidArgument naming the
// offending item.
std::vector<int32_t> parse_id_list(const std::string& text, const std::string& option_name);

// "2025-01-15T12:00:00" (or with a space instead of T) -> time_t of that local time.
std::time_t parse_local_datetime(const std::string& text, const std::string& option_name);

// All of standard input, byte for byte.
std::string read_all_stdin();

}  // namespace lemma::cli
