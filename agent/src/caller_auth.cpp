#include "loadlab/agent/caller_auth.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "loadlab/agent/load_destinations.hpp"
#include "loadlab/shared/credential_files.hpp"
#include "loadlab/shared/endpoint.hpp"
#include "loadlab/shared/input_error.hpp"
#include "loadlab/shared/logging.hpp"

namespace loadlab::agent {

namespace {

std::string read_file(const std::string& path, const std::string& flag) {
  auto text = read_credential_file(path);
  if (!text)
    throw InputError(flag, "cannot read \"" + path + "\" (a regular file of at most " +
                               std::to_string(limits::kMaxCredentialFileBytes) + " bytes)");
  return *text;
}

std::string sha256(std::string_view text) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), d);
  return std::string(reinterpret_cast<const char*>(d), sizeof d);
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> server_credentials(const TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions opts(tls.client_ca.empty()
                                             ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                             : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  opts.pem_key_cert_pairs.push_back({read_file(tls.key, "--tls-key"), read_file(tls.cert, "--tls-cert")});
  if (!tls.client_ca.empty()) opts.pem_root_certs = read_file(tls.client_ca, "--tls-client-ca");
  return grpc::SslServerCredentials(opts);
}

std::string read_token_file(const std::string& path, const std::string& flag) {
  auto token = token_of(read_file(path, flag));
  if (!token) throw InputError(flag, "\"" + path + "\" must hold one token: one line without spaces");
  if (token->size() < static_cast<size_t>(limits::kMinTokenBytes))
    throw InputError(flag, "\"" + path + "\" holds a token of " + std::to_string(token->size()) +
                               " characters; at least " + std::to_string(limits::kMinTokenBytes) +
                               " are needed (openssl rand -hex 32)");
  return *token;
}

void check_secret_file(const std::string& path, const std::string& flag, bool allow_readable) {
  auto why = readable_by_others(path);
  if (!why) return;
  if (!allow_readable)
    throw InputError(flag, "\"" + path + "\" " + *why +
                               " (or give --allow-readable-credentials to use it anyway, warned)");
  component_logger("agent")->warn("{}: \"{}\" {}; used because of --allow-readable-credentials", flag, path,
                                  *why);
}

CallerCheck::CallerCheck(std::string token) : token_digest_(token.empty() ? "" : sha256(token)) {}

bool CallerCheck::carries_token(std::string_view authorization) const {
  if (token_digest_.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  // Digests of equal length compared in constant time: neither the token's bytes nor its
  // length leak through the time a refusal takes.
  return authorization.substr(0, kBearer.size()) == kBearer &&
         CRYPTO_memcmp(sha256(authorization.substr(kBearer.size())).data(), token_digest_.data(),
                       token_digest_.size()) == 0;
}

grpc::Status CallerCheck::check(const grpc::ServerContext& ctx, const char* method) const {
  if (token_digest_.empty()) return grpc::Status::OK;
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  const char* why = "no authorization metadata";
  if (it != md.end()) {
    if (carries_token(std::string_view(it->second.data(), it->second.size()))) return grpc::Status::OK;
    why = "a wrong token";
  }
  ++refusals_;
  component_logger("agent")->warn("refused {} from {}: {}", method, describe_caller(ctx), why);
  return grpc::Status(
      grpc::StatusCode::UNAUTHENTICATED,
      std::string("this agent requires its token (authorization: Bearer …); the call had ") + why);
}

std::string describe_caller(const grpc::ServerContext& ctx) {
  std::string out = ctx.peer();
  if (auto auth = ctx.auth_context(); auth && auth->IsPeerAuthenticated())
    for (const auto& id : auth->GetPeerIdentity()) out += " (" + std::string(id.data(), id.size()) + ")";
  return out;
}

}  // namespace loadlab::agent
