#pragma once
// The TLS and QUIC families of the load generator as the plain engine (loadlab_load) sees them:
// what makes an https:// or h3 run's connections. loadlab_load_secure implements it over OpenSSL
// for HTTPS and h2 (make_tls_clients), loadlab_load_h3 over ngtcp2 + nghttp3 + GnuTLS for HTTP/3
// (make_quic_clients), so a plain worker maps none of those libraries and an HTTPS one no QUIC
// library (issue 26). Each program hands a command line of another family over to its program
// (load_main.cpp). The calls come at the start of a run and once per connection, never per
// request. Internal.
#include <memory>
#include <string>
#include <string_view>

#include "loadlab/load/load_options.hpp"

namespace loadlab::load {

class ClientConnection;
class Worker;
struct RunPlan;

class SecureClients {
 public:
  virtual ~SecureClients() = default;
  // Connection `index` of `worker`: HTTP/1.1 or h2 over TLS, or HTTP/3 over QUIC, as the plan says.
  virtual std::unique_ptr<ClientConnection> make_connection(Worker& worker, int index) = 0;
  // The TLS version the run's connections use ("1.2" or "1.3").
  virtual std::string_view tls_version() const = 0;
};

// Makes a run's TLS or QUIC client for `options` (validated) and `url` (https://), sets the
// plan's pointers to it, and returns what makes its connections; nullptr with `error` set (naming
// the flag) when it cannot be made.
using MakeSecureClients = std::unique_ptr<SecureClients> (*)(const LoadOptions& options, const Url& url,
                                                             RunPlan& plan, std::string& error);

// loadlab_load_secure's: HTTP/1.1 and h2 over TLS (an https:// URL without --protocol h3).
std::unique_ptr<SecureClients> make_tls_clients(const LoadOptions& options, const Url& url, RunPlan& plan,
                                                std::string& error);
// loadlab_load_h3's: HTTP/3 over QUIC (--protocol h3).
std::unique_ptr<SecureClients> make_quic_clients(const LoadOptions& options, const Url& url, RunPlan& plan,
                                                 std::string& error);

}  // namespace loadlab::load
