#pragma once
// What the HTTP/2 load tests share, in either tier (process/load_generator/h2_load_test.cpp,
// timing/load_generator/h2_open_loop_test.cpp): the options of an h2 run.
#include <string>

#include "loadlab/load/load_options.hpp"

namespace loadlab::load::testing {

// --protocol h2 to `url`: `connections` connections of `streams` streams each.
inline LoadOptions h2_options(const std::string& url, int connections, int streams) {
  LoadOptions o;
  o.url = url;
  o.protocol = "h2";
  o.connections = connections;
  o.streams = streams;
  return o;
}

}  // namespace loadlab::load::testing
