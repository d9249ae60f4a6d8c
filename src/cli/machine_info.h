// What benchmark reports say about the machine they ran on.
#pragma once

#include <string>

namespace lemma::cli {

// /proc/cpuinfo's first "model name", or "unknown CPU".
std::string cpu_model_name();

}  // namespace lemma::cli
