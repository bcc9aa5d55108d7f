#pragma once
// A request parser that keeps only what the target answers from: version, HEAD, whether the
// target is the stats endpoint, and the `x-loadlab-*` knobs. Beast's basic_parser does the
// framing (Content-Length, chunked, keep-alive, limits); no field is stored and the body is
// discarded as it streams, so parsing a request allocates nothing.
#include "knobs.hpp"
#include "loadlab/shared/discarding_parser.hpp"

namespace loadlab::target {

inline constexpr std::string_view kStatsPath = "/__loadlab/stats";

class RequestParser : public loadlab::DiscardingParser<true> {
 public:
  int version() const { return version_; }
  bool head() const { return method_ == boost::beast::http::verb::head; }
  bool stats() const { return stats_; }
  const RequestKnobs& knobs() const { return knobs_; }

 private:
  void on_request_impl(boost::beast::http::verb method, string_view, string_view target, int version,
                       error_code&) override {
    method_ = method;
    version_ = version;
    stats_ = method == boost::beast::http::verb::get &&
             std::string_view(target.data(), target.size()) == kStatsPath;
  }
  void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                     error_code&) override {
    if (name == boost::beast::http::field::unknown) {
      knobs_.apply(std::string_view(name_string.data(), name_string.size()),
                   std::string_view(value.data(), value.size()));
    }
  }

  boost::beast::http::verb method_ = boost::beast::http::verb::unknown;
  int version_ = 11;
  bool stats_ = false;
  RequestKnobs knobs_;
};

}  // namespace loadlab::target
