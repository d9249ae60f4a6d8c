// Process-wide logger (spdlog) writing to stderr. Thread-safe.
// LEMMA_LOG_LEVEL=trace|debug|info|warn|error|off sets the level (default: warn for the CLI).
#pragma once

#include <spdlog/spdlog.h>

namespace lemma {

// Returns the shared logger; created on first use.
spdlog::logger& log();

// Applies LEMMA_LOG_LEVEL, or `fallback` when it is unset.
void configure_logging(spdlog::level::level_enum fallback);

}  // namespace lemma
