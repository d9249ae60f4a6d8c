#include "cli/arguments.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>

#include "lemma/base/error.h"

namespace lemma::cli {

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& option_name) {
  std::string body = text;
  // Accept a JSON array as well as a bare comma list.
  const auto first = body.find_first_not_of(" \t\n");
  const auto last = body.find_last_not_of(" \t\n");
  if (first != std::string::npos && body[first] == '[' && body[last] == ']')
    body = body.substr(first + 1, last - first - 1);
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= body.size()) {
    size_t comma = body.find(',', pos);
    if (comma == std::string::npos) comma = body.size();
    std::string item = body.substr(pos, comma - pos);
    const auto b = item.find_first_not_of(" \t\n");
    const auto e = item.find_last_not_of(" \t\n");
    item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    if (item.empty()) {
      if (comma == body.size() && ids.empty() && pos == 0) break;  // empty list
      fail<InvalidArgument>("{}: empty item in id list '{}'", option_name, text);
    }
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE || v < 0 || v > INT32_MAX)
      fail<InvalidArgument>("{}: '{}' is not a token id (expected a non-negative integer)", option_name, item);
    ids.push_back(static_cast<int32_t>(v));
    pos = comma + 1;
  }
  return ids;
}

std::time_t parse_local_datetime(const std::string& text, const std::string& option_name) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char sep = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%d%c%d:%d:%d", &year, &month, &day, &sep, &hour, &minute, &second) != 7 ||
      (sep != 'T' && sep != ' ') || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 ||
      minute > 59 || second > 60)
    fail<InvalidArgument>("{}: '{}' is not a date-time like 2025-01-15T12:00:00", option_name, text);
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

std::string read_all_stdin() {
  std::ios::sync_with_stdio(false);
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

}  // namespace lemma::cli
