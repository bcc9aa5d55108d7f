// The progress bar's line and log records sharing a terminal: each record is written whole
// above the bar and the bar redrawn below it, also when threads log while the bar redraws.
#include "core/status_line.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <cstdio>
#include <sstream>
#include <thread>
#include <vector>

#include "loadlab/shared/logging.hpp"

namespace loadlab::controller {
namespace {

// Everything written to a FILE*, read back as a string.
class Captured {
 public:
  Captured() : file_(open_memstream(&data_, &size_)) {}
  ~Captured() {
    std::fclose(file_);
    std::free(data_);
  }
  std::FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
};

std::shared_ptr<spdlog::logger> logger_on(std::shared_ptr<StatusLine> line, bool colour = false) {
  auto sink = std::make_shared<StatusLineSink>(std::move(line), colour);
  auto log = std::make_shared<spdlog::logger>("agent", sink);
  log->set_pattern("%^%l%$ [%n] %v");
  return log;
}

TEST(StatusLine, ARecordIsWrittenAboveTheBarWhichIsRedrawnBelowIt) {
  Captured out;
  auto line = std::make_shared<StatusLine>(out.file());
  auto log = logger_on(line);
  line->draw("[####----] 1/4 ETA 0:05");
  log->info("target hello pid {} started", 42);
  line->clear();
  EXPECT_EQ(out.text(),
            "\r\033[2K[####----] 1/4 ETA 0:05"
            "\r\033[2Kinfo [agent] target hello pid 42 started\n[####----] 1/4 ETA 0:05"
            "\r\033[2K");
}

TEST(StatusLine, WithNoBarDrawnARecordIsPlain) {
  Captured out;
  auto line = std::make_shared<StatusLine>(out.file());
  logger_on(line)->warn("w");
  line->print_above("note\n");
  EXPECT_EQ(out.text(), "warning [agent] w\nnote\n");
}

TEST(StatusLine, TheLevelIsColouredAsOnATerminal) {
  Captured out;
  auto line = std::make_shared<StatusLine>(out.file());
  logger_on(line, true)->info("x");
  EXPECT_EQ(out.text(), "\033[32minfo\033[m [agent] x\n");
}

// Four threads log while the bar is redrawn: cut at every \r and \n, each piece is a bar,
// a whole record or empty, never a mixture.
TEST(StatusLine, RecordsFromOtherThreadsNeverLandOnTheBar) {
  Captured out;
  auto line = std::make_shared<StatusLine>(out.file());
  auto log = logger_on(line);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) log->info("record {} of thread {} ends here", i, t);
    });
  for (int i = 0; i < 1000; ++i) line->draw("[##------] " + std::to_string(i) + "/1000 ETA 0:01");
  for (auto& t : threads) t.join();
  line->clear();
  std::string piece;
  size_t records = 0, bars = 0;
  for (char c : out.text()) {
    if (c != '\r' && c != '\n') {
      piece += c;
      continue;
    }
    if (piece.rfind("\033[2K", 0) == 0) piece.erase(0, 4);
    bool bar = piece.rfind("[##------] ", 0) == 0 && piece.find("ETA 0:01") == piece.size() - 8;
    bool record =
        piece.rfind("info [agent] record ", 0) == 0 && piece.find(" ends here") == piece.size() - 10;
    EXPECT_TRUE(piece.empty() || bar || record) << "mixed piece: " << piece;
    bars += bar;
    records += record && c == '\n';
    piece.clear();
  }
  EXPECT_EQ(records, 4u * 300u);
  EXPECT_GE(bars, 1000u);
}

TEST(StatusLine, ComponentLoggersFollowTheInstalledSinkAndComeBack) {
  std::ostringstream taken;
  auto log = component_logger("status-line-test");
  set_log_sink(std::make_shared<spdlog::sinks::ostream_sink_mt>(taken));
  log->warn("to the installed sink");
  component_logger("status-line-test-2")->warn("a logger made later too");
  set_log_sink(nullptr);
  log->warn("back on stderr");
  EXPECT_NE(taken.str().find("warning [status-line-test] to the installed sink"), std::string::npos)
      << taken.str();
  EXPECT_NE(taken.str().find("a logger made later too"), std::string::npos) << taken.str();
  EXPECT_EQ(taken.str().find("back on stderr"), std::string::npos);
}

}  // namespace
}  // namespace loadlab::controller
