// loadlab-load: HTTP/1.1 and h2c, mapping no TLS or QUIC library; an https:// URL or --protocol
// h3 hands the process over to loadlab-load-secure (load_main.cpp).
#include "load_main.hpp"

int main(int argc, char** argv) { return loadlab::load::load_main(argc, argv, nullptr); }
