#include "core/status_line.hpp"

namespace loadlab::controller {

namespace {
// Carriage return, then erase the whole line: the cursor stays on it, at its start.
constexpr std::string_view kClear = "\r\033[2K";

// spdlog's terminal colours, so that the records look as they do without a bar.
std::string_view level_colour(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return "\033[37m";
    case spdlog::level::debug:
      return "\033[36m";
    case spdlog::level::info:
      return "\033[32m";
    case spdlog::level::warn:
      return "\033[33m\033[1m";
    case spdlog::level::err:
      return "\033[31m\033[1m";
    case spdlog::level::critical:
      return "\033[1m\033[41m";
    default:
      return "";
  }
}
}  // namespace

StatusLine::StatusLine(std::FILE* out) : out_(out) {}

void StatusLine::draw(const std::string& text) {
  std::lock_guard lock(mutex_);
  text_ = text;
  std::string buf(kClear);
  buf += text_;
  std::fwrite(buf.data(), 1, buf.size(), out_);  // one write: the terminal never shows half
  std::fflush(out_);
}

void StatusLine::print_above(std::string_view lines) {
  std::lock_guard lock(mutex_);
  std::string buf;
  if (!text_.empty()) buf += kClear;
  buf += lines;
  buf += text_;
  std::fwrite(buf.data(), 1, buf.size(), out_);
  std::fflush(out_);
}

void StatusLine::clear() {
  std::lock_guard lock(mutex_);
  if (text_.empty()) return;
  std::fwrite(kClear.data(), 1, kClear.size(), out_);
  std::fflush(out_);
  text_.clear();
}

StatusLineSink::StatusLineSink(std::shared_ptr<StatusLine> line, bool colour)
    : line_(std::move(line)), colour_(colour) {}

void StatusLineSink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t formatted;
  formatter_->format(msg, formatted);  // ends in '\n'
  std::string_view text(formatted.data(), formatted.size());
  if (!colour_ || msg.color_range_end <= msg.color_range_start) {
    line_->print_above(text);
    return;
  }
  std::string coloured(text.substr(0, msg.color_range_start));
  coloured += level_colour(msg.level);
  coloured += text.substr(msg.color_range_start, msg.color_range_end - msg.color_range_start);
  coloured += "\033[m";
  coloured += text.substr(msg.color_range_end);
  line_->print_above(coloured);
}

}  // namespace loadlab::controller
