// HTTP/1.1 over plain TCP (loadlab_load); over TLS in tls_connections.cpp.
#include "connection_impl.hpp"
#include "plain_transport.hpp"

namespace loadlab::load {

template class Connection<PlainTransport>;

}  // namespace loadlab::load
