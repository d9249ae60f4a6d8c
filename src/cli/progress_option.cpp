#include "cli/progress_option.h"

#include <unistd.h>

namespace lemma::cli {

ProgressOptions progress_options() {
  ProgressOptions o;
  o.style = ::isatty(STDERR_FILENO) == 1 ? ProgressStyle::kTerminal : ProgressStyle::kLines;
  return o;
}

}  // namespace lemma::cli
