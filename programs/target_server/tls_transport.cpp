#include "tls_transport.hpp"

#include "loadlab/tls_stream/fd_tls_stream.hpp"
#include "session.hpp"

namespace loadlab::target {

extern template class Session<TlsStream>;  // tls_sessions.cpp

void TlsTransport::start_session(boost::asio::ip::tcp::socket socket, const SessionEnv& env,
                                 IoWorker& worker) const {
  std::make_shared<Session<TlsStream>>(std::move(socket), env, worker)->run();
}

}  // namespace loadlab::target
