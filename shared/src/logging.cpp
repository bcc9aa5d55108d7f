#include "loadlab/shared/logging.hpp"

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace loadlab {

namespace {
constexpr const char* kPattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v";

std::mutex g_mutex;
spdlog::level::level_enum g_level = spdlog::level::info;

// Every component logger writes through this one switch, so that a terminal status line
// can take all their records at once and hand them back (set_log_sink).
std::shared_ptr<spdlog::sinks::dist_sink_mt> shared_sink() {
  static auto sink = [] {
    auto dist = std::make_shared<spdlog::sinks::dist_sink_mt>();
    dist->add_sink(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    dist->set_pattern(kPattern);
    return dist;
  }();
  return sink;
}
}  // namespace

bool init_logging(const std::string& level) {
  std::lock_guard lock(g_mutex);
  auto parsed = spdlog::level::from_str(level);
  bool ok = !(parsed == spdlog::level::off && level != "off");
  g_level = ok ? parsed : spdlog::level::info;
  spdlog::set_level(g_level);
  spdlog::set_pattern(kPattern);
  return ok;
}

std::shared_ptr<spdlog::logger> component_logger(const std::string& name) {
  std::lock_guard lock(g_mutex);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = std::make_shared<spdlog::logger>(name, shared_sink());
  logger->set_level(g_level);
  spdlog::register_logger(logger);
  return logger;
}

void set_log_sink(std::shared_ptr<spdlog::sinks::sink> sink) {
  if (!sink) sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  sink->set_pattern(kPattern);
  shared_sink()->set_sinks({std::move(sink)});
}

}  // namespace loadlab
