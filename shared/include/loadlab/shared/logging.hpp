#pragma once
// spdlog set-up shared by the binaries: logs go to stderr, user output to stdout.
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace loadlab {

// Installs a stderr logger as default; `level` is one of trace, debug, info, warn, error,
// off. Returns false (and keeps "info") for an unknown level name.
bool init_logging(const std::string& level = "info");

// A logger named after a component ("agent", "controller", ...), writing to the same sink.
std::shared_ptr<spdlog::logger> component_logger(const std::string& name);

// Sends the records of every component logger, present and future, to `sink` instead of
// stderr; nullptr restores stderr. For a terminal line redrawn in place (the controller's
// progress bar) that must keep the records off itself. Any thread.
void set_log_sink(std::shared_ptr<spdlog::sinks::sink> sink);

}  // namespace loadlab
