#include "run/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include "core/status_line.hpp"
#include "loadlab/shared/format.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::controller {

namespace {
std::string clock_text(double s) {
  if (s < 0) return "--:--";
  int t = static_cast<int>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}
}  // namespace

bool ProgressReporter::stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

ProgressReporter::ProgressReporter(size_t total_cells, bool tty, bool quiet)
    : total_(total_cells), tty_(tty && !quiet) {
  if (!tty_) return;
  // While the bar is up, every log record is printed above it by the bar's own writer.
  line_ = std::make_shared<StatusLine>(stderr);
  set_log_sink(std::make_shared<StatusLineSink>(line_));
}

ProgressReporter::~ProgressReporter() { finish(); }

void ProgressReporter::finish() {
  if (line_) {
    set_log_sink(nullptr);  // first, so that no record redraws the bar after it is cleared
    line_->clear();
    line_.reset();
  }
  tty_ = false;
  finished_ = true;
}

void ProgressReporter::cell_started(size_t done, const std::string& key, uint32_t rep, uint32_t reps) {
  done_ = done;
  current_ = reps > 1 ? key + " rep " + std::to_string(rep + 1) + "/" + std::to_string(reps) : key;
  live_ = {};
  if (metrics_) metrics_->cell_started(key, rep, reps);
  if (tty_) draw();
}

void ProgressReporter::live(const LiveProgress& p) {
  live_ = p;
  if (metrics_) metrics_->live(p);
  auto now = std::chrono::steady_clock::now();
  if (tty_ && now - last_draw_ > std::chrono::milliseconds(200)) draw();
}

void ProgressReporter::cell_finished(size_t done, const std::string& key, const std::string& summary) {
  done_ = done;
  if (finished_) return;
  std::string line = "[" + std::to_string(done) + "/" + std::to_string(total_) + "] " + key + ": " + summary;
  if (tty_)
    note(line);
  else
    component_logger("controller")->info("{}", line);
}

void ProgressReporter::note(const std::string& line) {
  if (finished_) return;
  if (!tty_) {
    component_logger("controller")->warn("{}", line);
    return;
  }
  line_->print_above(line + "\n");
}

void ProgressReporter::info(const std::string& line) {
  if (finished_) return;
  if (!tty_) {
    component_logger("controller")->info("{}", line);
    return;
  }
  line_->print_above(line + "\n");
}

void ProgressReporter::draw() {
  last_draw_ = std::chrono::steady_clock::now();
  const int width = 24;
  int filled = total_ ? static_cast<int>(width * done_ / total_) : width;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '-');
  double elapsed = std::chrono::duration<double>(last_draw_ - start_).count();
  double eta = done_ > 0 ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : -1;
  std::string qps;
  if (live_.elapsed_s > 0) qps = std::string("  ") + (live_.warmup ? "warm-up " : "") + rate_text(live_.qps);
  line_->draw(fmt::format("[{}] {}/{}  {}{}  elapsed {}  ETA {}", bar, done_, total_, current_, qps,
                          clock_text(elapsed), clock_text(eta)));
}

}  // namespace loadlab::controller
