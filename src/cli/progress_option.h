// How long commands (model loading, quantize, perplexity, bench) show progress: a line redrawn in
// place when stderr is a terminal, plain occasional lines when it is a file or a pipe. The one
// place that asks isatty; the libraries get the choice as ProgressOptions.
#pragma once

#include "lemma/base/progress.h"

namespace lemma::cli {

ProgressOptions progress_options();

}  // namespace lemma::cli
