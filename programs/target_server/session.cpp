// Session over a plain TCP socket; the TLS instantiation is loadlab_target_secure's
// (tls_sessions.cpp).
#include "session_impl.hpp"

namespace loadlab::target {

template class Session<PlainStream>;

}  // namespace loadlab::target
