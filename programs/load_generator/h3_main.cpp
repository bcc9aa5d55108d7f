// loadlab-load-h3: loadlab-load with HTTP/3 (QUIC: ngtcp2, nghttp3, GnuTLS), mapping no OpenSSL;
// run by loadlab-load when its command line asks for --protocol h3, or directly.
#include "load_main.hpp"

int main(int argc, char** argv) {
  return loadlab::load::load_main(argc, argv, {"loadlab-load-h3", &loadlab::load::make_quic_clients});
}
