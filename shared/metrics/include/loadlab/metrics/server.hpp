#pragma once
// An HTTP endpoint serving GET /metrics (exposition.hpp) on its own thread: over TLS when given
// a certificate (asking callers for a client certificate signed by `client_ca` when given),
// with a bearer token when asked. Bounded: limits::kMetricsMaxConnections at once, of which at
// most kMetricsMaxUnprovenConnections have not yet had a scrape answered (a new connection is
// accepted, and the oldest unproven one closed: server.cpp, "Admission"), a header of
// kMetricsMaxHeaderBytes, kMetricsFirstRequestTimeoutS for an unproven connection's request and
// kMetricsIdleTimeoutS between a proven one's; a request with a body is refused, a 401 closes.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loadlab/metrics/exposition.hpp"

namespace loadlab::metrics {

struct ServerTls {
  std::string cert, key;  // PEM certificate chain and private key
  std::string client_ca;  // "" = no client certificate asked; else it must be signed by it
  bool enabled() const { return !cert.empty(); }
};

// The listen rule of the agent's own port, for a metrics port given by `flag`: an address
// other machines can reach needs TLS whose callers prove themselves (a client certificate or
// the token), or `insecure`. `tls_flags` names the flags that give them, for the error.
// Throws InputError naming `flag`. Returns whether the endpoint serves a network without
// proving its callers.
bool check_listen(const std::string& listen, const ServerTls& tls, bool token, bool insecure,
                  const std::string& flag, const std::string& tls_flags);

// What to warn of when check_listen lets `listen` (given by `flag`) serve a network without
// proving its callers because `insecure_flag` was given: said at start, as the agent's --listen.
std::string insecure_warning(const std::string& flag, const std::string& listen, const ServerTls& tls,
                             bool token, const std::string& insecure_flag);

class Server {
 public:
  using Collect = std::function<std::vector<Family>()>;
  // Whether a request's Authorization header is accepted (the agent's token); none: all are.
  using Authorize = std::function<bool(std::string_view authorization)>;
  // `collect` runs on the server's thread, once a scrape. A request `authorize` refuses is
  // answered 401, and `on_refused` is called.
  explicit Server(Collect collect, Authorize authorize = {}, std::function<void()> on_refused = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Binds HOST:PORT (port 0: any free port) and serves; returns the bound address. Throws
  // InputError naming `flag` when the address or a TLS file cannot be used, EnvironmentError
  // when it cannot listen.
  std::string start(const std::string& listen, const ServerTls& tls, const std::string& flag);
  // Closes the port and every connection, and joins the thread. Also on destruction.
  void stop();

  struct Impl;  // server.cpp's: its connections use it too

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace loadlab::metrics
