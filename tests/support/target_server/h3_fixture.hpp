#pragma once
// The HTTP/3 target's tests (h3_test.cpp, h3_stall_test.cpp): the body the target serves unless
// told otherwise, and a one-thread server's options over TLS and QUIC.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "quic_tls.hpp"
#include "server.hpp"
#include "test_cert.hpp"
#include "tls_context.hpp"
#include "tls_quic_transport.hpp"

namespace loadlab::target::testing {

inline const std::string kBody = "Have Fun ~ Tester !";

// The options of a one-thread server over TLS and HTTP/3 (QUIC at the TCP port) with the test
// certificate.
inline ServerOptions h3_options() {
  ServerOptions options;
  options.threads = 1;
  auto tls = make_tls_context(test_cert().credentials);
  EXPECT_TRUE(tls.context) << tls.error;
  std::string error;
  auto quic = QuicTlsContext::make(test_cert().credentials, error);
  EXPECT_TRUE(quic) << error;
  options.secure = make_tls_quic_transport(tls.context, std::move(quic));
  return options;
}

}  // namespace loadlab::target::testing
