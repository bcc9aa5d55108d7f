// loadlab-target-h3: loadlab-target with HTTPS and HTTP/3 on the same port (OpenSSL, and ngtcp2 +
// nghttp3 + GnuTLS); run by loadlab-target when its command line asks for --h3, or directly.
#include "target_flags.hpp"

int main(int argc, char** argv) {
  return loadlab::target::target_main(argc, argv, {"loadlab-target-h3", &loadlab::target::add_h3_options});
}
