// H2Session over a plain TCP socket; the TLS instantiation is loadlab_target_secure's
// (tls_sessions.cpp).
#include "h2_session_impl.hpp"

namespace loadlab::target {

template class H2Session<PlainStream>;

}  // namespace loadlab::target
