// loadlab-target-secure: loadlab-target with TLS (HTTPS, h2 by ALPN; OpenSSL), mapping no QUIC
// library; run by loadlab-target when its command line asks for TLS, or directly.
#include "target_flags.hpp"

int main(int argc, char** argv) {
  return loadlab::target::target_main(argc, argv,
                                      {"loadlab-target-secure", &loadlab::target::add_tls_options});
}
