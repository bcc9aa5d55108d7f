#include "lab/tls_diagnosis.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "loadlab/shared/endpoint.hpp"

namespace loadlab::controller {

namespace {

using Clock = std::chrono::steady_clock;

struct Deleters {
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
  void operator()(SSL* p) const { SSL_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
template <class T>
using Owned = std::unique_ptr<T, Deleters>;

// A socket closed when it goes.
struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) close(fd);
  }
};

// SIGPIPE held off this thread while it writes to an agent that may have closed: a write to a
// closed socket then fails with EPIPE instead of ending the controller; a SIGPIPE raised meanwhile
// is taken before the old mask returns.
class NoSigpipe {
 public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() {
    const timespec none{0, 0};
    while (sigtimedwait(&pipe_, nullptr, &none) == SIGPIPE) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

 private:
  sigset_t pipe_{}, old_{};
};

int left_ms(Clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms > 0 ? static_cast<int>(ms) : 0;
}

bool wait_for(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  return poll(&p, 1, left_ms(deadline)) > 0;
}

// A connected non-blocking socket to `e`, or why not.
std::optional<std::string> connect_to(const Endpoint& e, Socket& s, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(e.host.c_str(), std::to_string(e.port).c_str(), &hints, &found) != 0 || !found)
    return "cannot resolve " + e.host;
  s.fd = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int r = s.fd < 0 ? -1 : connect(s.fd, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  int error = r == 0 ? 0 : errno;
  if (r != 0 && errno == EINPROGRESS) {
    socklen_t len = sizeof error;
    error = wait_for(s.fd, POLLOUT, deadline) ? (getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &len), error)
                                              : ETIMEDOUT;
  }
  if (error != 0) return "nothing answers at " + e.to_string() + " (" + std::strerror(error) + ")";
  return std::nullopt;
}

// The client context of the lab file's credentials; verification is checked by hand after the
// handshake, so that a failure can be named.
Owned<SSL_CTX> client_context(const AgentCredentials& c) {
  Owned<SSL_CTX> ctx(SSL_CTX_new(TLS_client_method()));
  Owned<BIO> ca(BIO_new_mem_buf(c.ca_pem.data(), static_cast<int>(c.ca_pem.size())));
  while (X509* x = PEM_read_bio_X509(ca.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), x);
    X509_free(x);
  }
  ERR_clear_error();  // the end of the PEM data
  if (!c.cert_pem.empty()) {
    Owned<BIO> cert(BIO_new_mem_buf(c.cert_pem.data(), static_cast<int>(c.cert_pem.size())));
    Owned<BIO> key(BIO_new_mem_buf(c.key_pem.data(), static_cast<int>(c.key_pem.size())));
    Owned<X509> x(PEM_read_bio_X509(cert.get(), nullptr, nullptr, nullptr));
    Owned<EVP_PKEY> k(PEM_read_bio_PrivateKey(key.get(), nullptr, nullptr, nullptr));
    if (x && k) {
      SSL_CTX_use_certificate(ctx.get(), x.get());
      SSL_CTX_use_PrivateKey(ctx.get(), k.get());
    }
  }
  static const unsigned char kH2[] = {2, 'h', '2'};  // gRPC's ALPN
  SSL_CTX_set_alpn_protos(ctx.get(), kH2, sizeof kH2);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  return ctx;
}

// The last OpenSSL error's reason ("wrong version number", "tlsv13 alert certificate required").
std::string openssl_reason() {
  const unsigned long e = ERR_peek_last_error();
  const char* reason = e ? ERR_reason_error_string(e) : nullptr;
  ERR_clear_error();
  return reason ? reason : "no reason given";
}

// Drives a non-blocking SSL call to its end; false on failure or timeout.
template <class Call>
bool drive(SSL* ssl, int fd, Clock::time_point deadline, Call call) {
  for (;;) {
    const int r = call();
    if (r > 0) return true;
    const int e = SSL_get_error(ssl, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return false;
    if (!wait_for(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline)) return false;
  }
}

// The names a certificate holds: "DNS:srv1, IP:10.0.0.5".
std::string names_of(X509* cert) {
  std::string out;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    std::string one;
    if (n->type == GEN_DNS)
      one = "DNS:" + std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(n->d.dNSName)));
    if (n->type == GEN_IPADD && n->d.iPAddress->length == 4) {
      char text[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, n->d.iPAddress->data, text, sizeof text);
      one = std::string("IP:") + text;
    }
    if (!one.empty()) out += (out.empty() ? "" : ", ") + one;
  }
  GENERAL_NAMES_free(names);
  return out.empty() ? "no subjectAltName" : out;
}

// What is wrong with the certificate the agent showed, checked against `expected` (the name the
// controller asks for); nullopt when nothing is.
std::optional<std::string> check_certificate(SSL* ssl, const std::string& expected) {
  Owned<X509> cert(SSL_get1_peer_certificate(ssl));
  if (!cert) return "the agent showed no certificate";
  if (const long v = SSL_get_verify_result(ssl); v != X509_V_OK)
    return std::string("the agent's certificate is not signed by the lab file's tls.ca (") +
           X509_verify_cert_error_string(v) + "): give tls.ca the CA that signed the agent's --tls-cert";
  in6_addr ip{};
  const bool is_ip =
      inet_pton(AF_INET, expected.c_str(), &ip) == 1 || inet_pton(AF_INET6, expected.c_str(), &ip) == 1;
  const bool match = is_ip ? X509_check_ip_asc(cert.get(), expected.c_str(), 0) == 1
                           : X509_check_host(cert.get(), expected.c_str(), expected.size(), 0, nullptr) == 1;
  if (match) return std::nullopt;
  return "the agent's certificate is for " + names_of(cert.get()) + ", not " + expected +
         ": set this agent's tls.server_name in the lab file to one of those names, or make its "
         "certificate for " +
         expected;
}

// After the handshake: the agent's first bytes (its HTTP/2 settings), or the alert with which it
// refused the controller's certificate.
std::optional<std::string> check_first_bytes(SSL* ssl, int fd, bool has_cert, Clock::time_point deadline) {
  static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
  drive(ssl, fd, deadline, [&] { return SSL_write(ssl, kPreface, sizeof kPreface - 1); });
  char buf[64];
  if (drive(ssl, fd, deadline, [&] { return SSL_read(ssl, buf, sizeof buf); })) return std::nullopt;
  // gRPC's server closes a connection whose client certificate it refuses without an alert: an
  // end of the stream right after the handshake, where an agent that accepts the caller sends its
  // settings. A timeout is not that.
  const std::string reason = openssl_reason();
  if (reason.find("alert") == std::string::npos && reason.find("eof") == std::string::npos)
    return std::nullopt;
  return "the agent refused the controller's client certificate (" + reason + "): " +
         (has_cert ? "give tls.cert and tls.key a certificate signed by the CA of the agent's --tls-client-ca"
                   : "the agent asks for one: give tls.cert and tls.key in the lab file");
}

}  // namespace

std::optional<std::string> diagnose_tls(const AgentDef& def, int timeout_ms) {
  const auto& c = def.credentials;
  const auto at = parse_endpoint(def.address);
  if (c.ca_pem.empty() || !at) return std::nullopt;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  NoSigpipe no_sigpipe;
  Socket s;
  if (auto why = connect_to(*at, s, deadline)) return why;
  auto ctx = client_context(c);
  Owned<SSL> ssl(SSL_new(ctx.get()));
  SSL_set_fd(ssl.get(), s.fd);
  const std::string expected = c.server_name.empty() ? at->host : c.server_name;
  in6_addr ip{};
  if (inet_pton(AF_INET, expected.c_str(), &ip) != 1 && inet_pton(AF_INET6, expected.c_str(), &ip) != 1)
    SSL_set_tlsext_host_name(ssl.get(), expected.c_str());
  if (!drive(ssl.get(), s.fd, deadline, [&] { return SSL_connect(ssl.get()); })) {
    const std::string reason = openssl_reason();
    if (reason.find("wrong version number") != std::string::npos)
      return "the agent does not speak TLS at " + def.address +
             " (start it with --tls-cert and --tls-key, or give this agent no tls in the lab file)";
    return "the TLS handshake with the agent failed (" + reason + ")";
  }
  if (auto why = check_certificate(ssl.get(), expected)) return why;
  return check_first_bytes(ssl.get(), s.fd, !c.cert_pem.empty(), deadline);
}

}  // namespace loadlab::controller
