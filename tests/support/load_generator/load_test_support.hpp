#pragma once
// What the load worker's tests share: a LoadRunner run bounded in time, the check that a run's
// every request was answered 200, and the loadlab-load binary run with a shell command line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <string>

#include "input_error_of.hpp"
#include "load_runner.hpp"
#include "loadlab/load/load_options.hpp"
#include "secure_clients.hpp"

namespace loadlab::load::testing {

// The secure clients of either family, as the program that a run's command line needs would
// make them: HTTP/3 (loadlab-load-h3's) or TLS (loadlab-load-secure's).
inline std::unique_ptr<SecureClients> make_secure_clients(const LoadOptions& options, const Url& url,
                                                          RunPlan& plan, std::string& error) {
  return uses_h3(options) ? make_quic_clients(options, url, plan, error)
                          : make_tls_clients(options, url, plan, error);
}

// Runs to completion, failing (and stopping the run) if it takes longer than `limit`.
inline LoadResult run_bounded(LoadOptions o, std::chrono::seconds limit = std::chrono::seconds(20),
                              RunCallbacks callbacks = {}) {
  std::string error = loadlab::testing::input_error_of([&] { complete_and_validate(o); });
  EXPECT_EQ(error, "");
  LoadRunner runner(o, std::move(callbacks), &make_secure_clients);
  auto future = std::async(std::launch::async, [&] { return runner.run(); });
  if (future.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << "run did not end within " << limit.count() << " s";
    runner.initiate_shutdown();
  }
  return future.get();
}

// Every one of the `n` requests of `r` answered 200, without an error of the run or of TLS.
inline void expect_all_ok(const LoadResult& r, int64_t n) {
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.tls_error, "");
  EXPECT_EQ(r.requests, n);
  EXPECT_EQ(r.responses, n);
  EXPECT_EQ(r.errors, 0);
  ASSERT_EQ(r.status.count(200), 1u);
  EXPECT_EQ(r.status.at(200), n);
  EXPECT_EQ(r.histogram.count(), n);
}

struct Exec {
  int exit_code = -1;
  std::string out;
};

// Runs loadlab-load with `args` (stderr to /dev/null unless `args` redirects it).
inline Exec run_binary(const std::string& args) {
  std::string cmd = "timeout 20 " LOADLAB_BIN_DIR "/loadlab-load " + args;
  Exec e;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return e;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) e.out.append(buf.data(), n);
  int status = pclose(p);
  e.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return e;
}

}  // namespace loadlab::load::testing
