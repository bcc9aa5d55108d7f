// loadlab-load-secure: loadlab-load with TLS (HTTPS, h2 by ALPN; OpenSSL), mapping no QUIC
// library; run by loadlab-load when its command line asks for TLS, or directly.
#include "load_main.hpp"

int main(int argc, char** argv) {
  return loadlab::load::load_main(argc, argv, {"loadlab-load-secure", &loadlab::load::make_tls_clients});
}
