// loadlab-load: HTTP/1.1 and h2c, mapping no TLS or QUIC library; an https:// URL hands the
// process over to loadlab-load-secure and --protocol h3 to loadlab-load-h3 (load_main.cpp).
#include "load_main.hpp"

int main(int argc, char** argv) { return loadlab::load::load_main(argc, argv, {"loadlab-load"}); }
