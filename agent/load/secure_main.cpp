// loadlab-load-secure: loadlab-load with TLS (HTTPS, h2 by ALPN) and HTTP/3; run by loadlab-load
// when its command line asks for them, or directly.
#include "load_main.hpp"

int main(int argc, char** argv) {
  return loadlab::load::load_main(argc, argv, &loadlab::load::make_secure_clients);
}
