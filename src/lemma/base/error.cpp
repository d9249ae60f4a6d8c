#include "lemma/base/error.h"

#include <cerrno>
#include <cstring>

namespace lemma {

void fail_errno(const std::string& what) {
  const int saved = errno;
  throw IoError(fmt::format("{}: {}", what, std::strerror(saved)));
}

}  // namespace lemma
