#include "tls_client.hpp"

#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>

#include "loadlab/shared/credential_files.hpp"
#include "pem_certificates.hpp"

namespace loadlab::load {

namespace ssl = boost::asio::ssl;

std::string alpn_wire(std::initializer_list<std::string_view> protocols) {
  std::string wire;
  for (std::string_view p : protocols) {
    wire += static_cast<char>(p.size());
    wire += p;
  }
  return wire;
}

TlsClient::TlsClient() : context_(ssl::context::tls_client) {}

std::unique_ptr<TlsClient> TlsClient::create(const LoadOptions& o, const Url& url, std::string& error) {
  std::unique_ptr<TlsClient> tls(new TlsClient());
  SSL_CTX* ctx = tls->context_.native_handle();
  tls->version_ = std::string(tls_version_of(o));
  const int version = tls->version_ == "1.2" ? TLS1_2_VERSION : TLS1_3_VERSION;
  SSL_CTX_set_min_proto_version(ctx, version);
  SSL_CTX_set_max_proto_version(ctx, version);
  // Only the protocol the run measures: a server that cannot speak it fails the handshake
  // (or selects none), rather than a run that silently measures another protocol.
  const std::string alpn = uses_h2(o) ? alpn_wire({"h2"}) : alpn_wire({"http/1.1"});
  SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(alpn.data()),
                          static_cast<unsigned>(alpn.size()));
  tls->verify_ = !o.insecure;
  if (tls->verify_) {
    if (!o.ca_file.empty()) {
      auto pem = read_credential_file(o.ca_file);
      if (!pem || read_pem_certificates(*pem, SSL_CTX_get_cert_store(ctx)) == 0) {
        error = "--ca: no certificate could be read from " + o.ca_file;
        return nullptr;
      }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      error = "TLS: cannot load the system's certificate store";
      return nullptr;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  tls->resume_ = o.tls_resume;
  if (!tls->resume_) SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);  // no tickets to receive and drop
  tls->host_ = url.host;
  boost::system::error_code ec;
  boost::asio::ip::make_address(url.host, ec);
  tls->host_is_ip_ = !ec;
  return tls;
}

bool TlsClient::prepare(SSL* ssl) const {
  // SNI names a host, never an address (RFC 6066 §3).
  if (!host_is_ip_ && SSL_set_tlsext_host_name(ssl, host_.c_str()) != 1) return false;
  if (!verify_) return true;
  if (host_is_ip_) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host_.c_str()) == 1;
  return SSL_set1_host(ssl, host_.c_str()) == 1;
}

std::string TlsClient::failure(SSL* ssl, const boost::system::error_code& ec) {
  std::string reason = ec.message();
  if (ssl) {
    long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) reason += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
  }
  return reason;
}

std::string_view TlsClient::selected_protocol(SSL* ssl) {
  const unsigned char* data = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(ssl, &data, &length);
  return {reinterpret_cast<const char*>(data), length};
}

}  // namespace loadlab::load
