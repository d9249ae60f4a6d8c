#include "lemma/base/logging.h"

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace lemma {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("lemma");
    l->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    l->set_level(spdlog::level::warn);
    return l;
  }();
  return *logger;
}

void configure_logging(spdlog::level::level_enum fallback) {
  const char* env = std::getenv("LEMMA_LOG_LEVEL");
  log().set_level(env ? spdlog::level::from_str(env) : fallback);
}

}  // namespace lemma
