// loadlab-target-secure: loadlab-target with TLS (HTTPS, h2 by ALPN) and HTTP/3; run by
// loadlab-target when its command line asks for them, or directly.
#include "target_flags.hpp"

int main(int argc, char** argv) {
  return loadlab::target::target_main(argc, argv, &loadlab::target::add_secure_options);
}
