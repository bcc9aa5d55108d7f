#pragma once
// The connect and, for https://, the TLS handshake of one client connection, whatever the
// protocol above it: timed against --timeout (by the worker's sweep), recorded in the
// worker's connect and handshake figures, the reasons of the first failures kept for the
// run's message, and what they cost kept for the requests that waited for them. Lives on
// its worker's thread; every method runs there. Internal to loadlab_load.
#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>
#include <optional>
#include <utility>

#include "load_result.hpp"
#include "worker.hpp"

namespace loadlab::load {

// `Transport`: PlainTransport or TlsTransport (plain_transport.hpp).
template <class Transport>
class Dialer {
 public:
  Dialer(Worker& worker, Transport& transport) : worker_(worker), transport_(transport) {}

  // Connects (and handshakes over TLS), then calls `done(failure)`: nullopt when the
  // connection is ready, else ErrorKind::kConnect or kTls (the socket is left to close).
  // `done` is kept in the operation's handler: no allocation, no type erasure.
  template <class Done>
  void dial(Done done) {
    timed_out_ = false;
    started_ = Clock::now();
    deadline_ = started_ + worker_.plan().timeout;
    cost_ = {};
    boost::asio::async_connect(transport_.socket(), worker_.plan().endpoints,
                               [this, done = std::move(done)](const boost::system::error_code& ec,
                                                              const boost::asio::ip::tcp::endpoint&) mutable {
                                 on_connect(ec, std::move(done));
                               });
  }

  // The worker's sweep: closes the socket when the connect or handshake under way has
  // passed its deadline (its handler then fails it).
  void check_deadline(Clock::time_point now) {
    if (now > deadline_ && !timed_out_) {
      timed_out_ = true;
      transport_.close();
    }
  }

  // What the last connect (and handshake) cost, for the requests that waited for it.
  const RequestCost& cost() const { return cost_; }

 private:
  template <class Done>
  void on_connect(const boost::system::error_code& ec, Done done) {
    deadline_ = Clock::time_point::max();
    if (ec) {
      if (first_connect_ && !worker_.stopping()) {
        first_connect_ = false;
        worker_.note_first_connect_failure(timed_out_ ? "connect timed out" : ec.message());
      }
      return done(std::optional<ErrorKind>(ErrorKind::kConnect));
    }
    auto now = Clock::now();
    worker_.record_connect(started_, now);
    cost_.connect = now - started_;
    first_connect_ = false;
    boost::system::error_code ignored;
    transport_.socket().set_option(boost::asio::ip::tcp::no_delay(true), ignored);
    worker_.note_connected();
    if constexpr (Transport::kSecure)
      handshake(std::move(done));
    else
      done(std::optional<ErrorKind>());
  }

  template <class Done>
  void handshake(Done done) {
    timed_out_ = false;
    started_ = Clock::now();
    deadline_ = started_ + worker_.plan().timeout;
    if (!transport_.new_session()) return on_handshake(boost::asio::error::no_memory, std::move(done));
    transport_.async_handshake([this, done = std::move(done)](const boost::system::error_code& ec) mutable {
      on_handshake(ec, std::move(done));
    });
  }

  template <class Done>
  void on_handshake(const boost::system::error_code& ec, Done done) {
    deadline_ = Clock::time_point::max();
    auto now = Clock::now();
    cost_.tls = now - started_;
    if (ec) {
      if (!worker_.stopping())
        worker_.note_tls_failure(timed_out_ ? "TLS handshake timed out" : transport_.failure(ec));
      return done(std::optional<ErrorKind>(ErrorKind::kTls));
    }
    cost_.resumed = transport_.resumed();
    worker_.record_handshake(started_, now, cost_.resumed);
    done(std::optional<ErrorKind>());
  }

  Worker& worker_;
  Transport& transport_;
  Clock::time_point started_{};  // of the connect, then of the handshake
  Clock::time_point deadline_ = Clock::time_point::max();
  RequestCost cost_;
  bool first_connect_ = true;
  bool timed_out_ = false;
};

}  // namespace loadlab::load
