// loadlab-target: HTTP/1.1 and h2c, mapping no TLS or QUIC library; --tls hands the process over
// to loadlab-target-secure and --h3 to loadlab-target-h3 (target_main.cpp).
#include "target_flags.hpp"

int main(int argc, char** argv) { return loadlab::target::target_main(argc, argv, {"loadlab-target"}); }
