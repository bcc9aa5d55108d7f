// HTTP/2 over plain TCP, h2c with prior knowledge (loadlab_load); over TLS in
// tls_connections.cpp.
#include "h2_connection_impl.hpp"
#include "plain_transport.hpp"

namespace loadlab::load {

template class H2Connection<PlainTransport>;

}  // namespace loadlab::load
