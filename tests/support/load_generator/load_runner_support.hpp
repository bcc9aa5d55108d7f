#pragma once
// What the LoadRunner tests against the in-test TestServer share, in either tier
// (process/load_generator/load_runner_test.cpp, timing/load_generator/load_runner_window_test.cpp):
// the options of a plain HTTP run against the server.
#include <string>

#include "loadlab/load/load_options.hpp"
#include "test_server.hpp"

namespace loadlab::load::testing {

// http://127.0.0.1:PORT`path` of `server`; every other option its default.
inline LoadOptions options_for(const TestServer& server, const std::string& path = "/") {
  LoadOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(server.port()) + path;
  return o;
}

}  // namespace loadlab::load::testing
