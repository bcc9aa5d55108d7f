#pragma once
// The rows of a --csv-requests file, read back for assertions (and a run that writes one),
// and temporary files of this test process (ctest runs each test in a process of its own,
// several at once), in a folder removed when it exits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "load_test_support.hpp"
#include "request_log.hpp"

namespace loadlab::load::testing {

// A folder of this test process's own, removed with everything in it when the process exits
// (the servers a test starts are stopped by then).
inline const std::string& process_temp_dir() {
  static const struct Dir {
    std::string path;
    Dir() {
      std::string t = ::testing::TempDir() + "/loadlab-load-test.XXXXXX";
      path = mkdtemp(t.data()) ? t : ::testing::TempDir();
    }
    ~Dir() {
      std::error_code ignored;
      if (path != ::testing::TempDir()) std::filesystem::remove_all(path, ignored);
    }
  } dir;
  return dir.path;
}

inline std::string unique_path(const std::string& name, const std::string& suffix) {
  return process_temp_dir() + "/" + name + "." + std::to_string(getpid()) + suffix;
}

struct Row {
  std::string protocol, tls_version;
  long long iteration, start, total, connect, tls, first_byte, bytes, status, reused, resumed;
};

inline std::vector<Row> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line + "\n", kRequestCsvHeader);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    Row r;
    std::replace(line.begin(), line.end(), ',', ' ');
    // An empty tls_version (http://) leaves two spaces: read it as empty.
    std::istringstream fields(line);
    fields >> r.protocol;
    if (line.size() > r.protocol.size() + 1 && line[r.protocol.size() + 1] != ' ') fields >> r.tls_version;
    fields >> r.iteration >> r.start >> r.total >> r.connect >> r.tls >> r.first_byte >> r.bytes >>
        r.status >> r.reused >> r.resumed;
    EXPECT_FALSE(fields.fail()) << line;
    rows.push_back(r);
  }
  return rows;
}

// Each row that went on a new connection (reused = 0) has the connect it paid (and, `tls`,
// the handshake); a reused row has neither. Returns how many rows paid for a connection.
inline int count_paid_rows(const std::vector<Row>& rows, bool tls) {
  int paid = 0;
  for (const Row& row : rows) {
    if (row.reused) {
      EXPECT_EQ(row.connect, 0);
      EXPECT_EQ(row.tls, 0);
    } else {
      ++paid;
      EXPECT_GT(row.connect, 0);
      if (tls)
        EXPECT_GT(row.tls, 0);
      else
        EXPECT_EQ(row.tls, 0);
    }
  }
  return paid;
}

// Runs `o` with --csv-requests to a file named for `name`; the result and the CSV's rows.
struct CsvRun {
  LoadResult result;
  std::vector<Row> rows;
};
inline CsvRun run_with_csv(LoadOptions o, const std::string& name) {
  o.csv_requests = unique_path(name, ".csv");
  CsvRun run;
  run.result = run_bounded(o);
  run.rows = read_csv(o.csv_requests);
  return run;
}

}  // namespace loadlab::load::testing
