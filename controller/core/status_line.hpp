#pragma once
// A line at the bottom of a terminal redrawn in place (the progress bar), and log records
// printed above it, whole, with the line redrawn below them, as cargo and indicatif do.
// Both go through one mutex, so a record never lands in the middle of the line.
#include <spdlog/sinks/base_sink.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace loadlab::controller {

// Any thread.
class StatusLine {
 public:
  explicit StatusLine(std::FILE* out);
  // Replaces the line's text and redraws it.
  void draw(const std::string& text);
  // Clears the line, writes `lines` (each ending in '\n'), then redraws the line.
  void print_above(std::string_view lines);
  // Clears the line; nothing is redrawn until the next draw().
  void clear();

 private:
  std::mutex mutex_;
  std::FILE* out_;
  std::string text_;  // what is drawn; "" = nothing
};

// Log records above a StatusLine, the level coloured as spdlog's terminal sink does.
// Called by spdlog on the logging thread.
class StatusLineSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit StatusLineSink(std::shared_ptr<StatusLine> line, bool colour = true);

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  std::shared_ptr<StatusLine> line_;
  bool colour_;
};

}  // namespace loadlab::controller
