#pragma once
// One self-signed pair for the whole test program (what --tls without files makes).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "loadlab/shared/self_signed_cert.hpp"

namespace loadlab::target::testing {

inline const SelfSignedCert& test_cert() {
  static const SelfSignedCert cert = [] {
    std::string error;
    auto made = make_self_signed_cert(std::chrono::system_clock::now(), error);
    EXPECT_TRUE(made) << error;
    return made.value_or(SelfSignedCert{});
  }();
  return cert;
}

}  // namespace loadlab::target::testing
