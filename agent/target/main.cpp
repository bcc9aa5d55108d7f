// loadlab-target: HTTP/1.1 and h2c, mapping no TLS or QUIC library; --tls and --h3 hand the
// process over to loadlab-target-secure (target_main.cpp).
#include "target_flags.hpp"

int main(int argc, char** argv) { return loadlab::target::target_main(argc, argv, nullptr); }
