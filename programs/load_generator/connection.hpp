#pragma once
// One HTTP/1.1 client connection: connect (and, for https://, the TLS handshake), write the
// request, read the response, record, repeat. The bytes go through its Transport
// (PlainTransport, or TlsTransport in loadlab_load_secure: plain_transport.hpp); HTTP/2 streams
// on one connection are H2Connection, of the same shape over the same transports. The
// definitions are in connection_impl.hpp, instantiated once per transport (connection.cpp,
// tls_connections.cpp). Closed loop: the next request goes out as soon as the response is in. Open loop
// (--rate): each request has an intended send time from the worker's schedule; the
// connection waits for it when early and sends at once when late (never two requests in
// flight). Lives on its worker's thread; every method runs there. Internal to loadlab_load.
#include <boost/beast/core/flat_buffer.hpp>
#include <optional>
#include <utility>

#include "client_connection.hpp"
#include "dialer.hpp"
#include "load_result.hpp"
#include "response_parser.hpp"
#include "run_plan.hpp"
#include "worker.hpp"

namespace loadlab::load {

template <class Transport>
class Connection final : public ClientConnection {
 public:
  // `index`: this connection's place among its worker's connections (its waiter's index).
  Connection(Worker& worker, int index);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start() override;
  // Closes the socket; the pending operation completes with an error and the loop ends.
  void stop() override;
  // Closes the socket if the current operation has passed its deadline.
  void check_deadline(Clock::time_point now) override;
  void resume(Clock::time_point now) override;

 private:
  void next();
  void begin(Clock::time_point origin, Clock::time_point now);
  void do_connect();
  void on_connect(std::optional<ErrorKind> failure);
  void ready();  // connected (and the handshake done): the first request may go
  void do_write();
  void on_write(const boost::system::error_code& ec);
  void do_read();
  void new_parser();  // for the next response (or the final one after an interim 1xx)
  void read_some();
  void on_read_some(const boost::system::error_code& ec, std::size_t bytes);
  void parse();
  void on_read(const boost::system::error_code& ec, std::size_t bytes);
  void fail(ErrorKind kind, const boost::system::error_code& ec);
  void close();
  void end();
  // What the request being recorded paid; the next one on this connection is a reuse.
  RequestCost take_cost() { return std::exchange(cost_, RequestCost{{}, {}, true, false}); }

  Worker& worker_;
  int index_;
  Transport transport_;
  Dialer<Transport> dialer_;
  std::size_t response_bytes_ = 0;  // of the response being parsed
  boost::beast::flat_buffer buffer_;
  std::optional<ResponseParser> parser_;  // Beast's, for a response complete_response() left
  int status_ = 0;                        // of the response read last
  bool keep_alive_ = true;
  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::time_point origin_{};      // latency counts from here: intended send time, or the write
  Clock::time_point sent_{};        // when the request was written
  Clock::time_point first_byte_{};  // of the response being read; {} until it comes
  RequestCost cost_;
  std::optional<Clock::time_point> slot_;  // open loop: the slot taken and not yet begun
  bool waiting_ = false;                   // open loop: idle in the worker's waiters until its slot
  bool preconnect_ = false;                // open loop: the connect before the first slot
  bool connected_ = false;
  bool measured_ = false;
  bool timed_out_ = false;
  bool stopped_ = false;
  bool ended_ = false;
};

}  // namespace loadlab::load
