#include "loadlab/shared/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace loadlab {

namespace {
std::mutex g_mutex;
spdlog::level::level_enum g_level = spdlog::level::info;
}  // namespace

bool init_logging(const std::string& level) {
  std::lock_guard lock(g_mutex);
  auto parsed = spdlog::level::from_str(level);
  bool ok = !(parsed == spdlog::level::off && level != "off");
  g_level = ok ? parsed : spdlog::level::info;
  spdlog::set_level(g_level);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
  return ok;
}

std::shared_ptr<spdlog::logger> component_logger(const std::string& name) {
  std::lock_guard lock(g_mutex);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = spdlog::stderr_color_mt(name);
  logger->set_level(g_level);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
  return logger;
}

}  // namespace loadlab
