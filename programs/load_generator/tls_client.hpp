#pragma once
// The TLS side of an https:// run: one client context (OpenSSL SSL_CTX) built once before
// the worker threads start and shared by all of them (an SSL_CTX is safe to share once set
// up: SSL_new only reads it), and what each new TLS connection needs from it: SNI, host
// verification. Internal to loadlab_load.
#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "loadlab/load/load_options.hpp"

namespace loadlab::load {

class TlsClient {
 public:
  // The context for `options` (validated, https://): the forced version, ALPN, and
  // verification against --ca, the system store, or none (--insecure). Nullptr with
  // `error` naming the flag when the CA file holds no usable certificate.
  [[nodiscard]] static std::unique_ptr<TlsClient> create(const LoadOptions& options, const Url& url,
                                                         std::string& error);

  boost::asio::ssl::context& context() { return context_; }
  // Worker thread: SNI and the name or address the certificate must match, on the SSL
  // object of one new connection. False when OpenSSL refused them (out of memory).
  bool prepare(SSL* ssl) const;
  bool resume() const { return resume_; }
  std::string_view version() const { return version_; }  // "1.2" or "1.3"

  // Why a handshake failed, for people: OpenSSL's reason and, for a certificate, the
  // verifier's ("certificate verify failed (self-signed certificate)").
  static std::string failure(SSL* ssl, const boost::system::error_code& ec);
  // The protocol the server selected in ALPN; empty when it selected none.
  static std::string_view selected_protocol(SSL* ssl);

 private:
  TlsClient();

  boost::asio::ssl::context context_;
  std::string host_;
  bool host_is_ip_ = false;
  bool verify_ = true;
  bool resume_ = false;
  std::string version_;
};

// The protocols a connection offers in ALPN, in OpenSSL's wire form (length-prefixed).
std::string alpn_wire(std::initializer_list<std::string_view> protocols);

}  // namespace loadlab::load
