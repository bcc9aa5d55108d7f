#include "loadlab/agent/caller_auth.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <vector>

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

namespace {

// The bytes of a token file, in a buffer that is wiped when it goes: the token itself is not
// kept, only its digest (CallerCheck).
class WipedBuffer {
 public:
  explicit WipedBuffer(size_t size) : bytes_(size) {}
  ~WipedBuffer() { explicit_bzero(bytes_.data(), bytes_.size()); }
  WipedBuffer(const WipedBuffer&) = delete;
  WipedBuffer& operator=(const WipedBuffer&) = delete;
  char* data() { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<char> bytes_;
};

// Reads at most buffer.size() bytes of `path` (a regular file) into `buffer`; their count, or
// nullopt when it cannot be read or holds more.
std::optional<size_t> read_into(const std::string& path, WipedBuffer& buffer) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  size_t used = 0;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  while (ok && used < buffer.size()) {
    const ssize_t n = read(fd, buffer.data() + used, buffer.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    used += static_cast<size_t>(n);
  }
  close(fd);
  if (!ok || used == buffer.size()) return std::nullopt;  // an error, or more than the limit
  return used;
}

}  // namespace

std::string read_token_digest(const std::string& path, const std::string& flag) {
  WipedBuffer buffer(static_cast<size_t>(limits::kMaxCredentialFileBytes) + 1);
  const auto size = read_into(path, buffer);
  if (!size)
    throw InputError(flag, "cannot read \"" + path + "\" (a regular file of at most " +
                               std::to_string(limits::kMaxCredentialFileBytes) + " bytes)");
  constexpr std::string_view kSpace = " \t\r\n";
  std::string_view text(buffer.data(), *size);
  const auto first = text.find_first_not_of(kSpace);
  text = first == std::string_view::npos ? std::string_view()
                                         : text.substr(first, text.find_last_not_of(kSpace) - first + 1);
  if (text.empty() || text.find_first_of(kSpace) != std::string_view::npos)
    throw InputError(flag, "\"" + path + "\" must hold one token: one line without spaces");
  if (text.size() < static_cast<size_t>(limits::kMinTokenBytes))
    throw InputError(flag, "\"" + path + "\" holds a token of " + std::to_string(text.size()) +
                               " characters; at least " + std::to_string(limits::kMinTokenBytes) +
                               " are needed (openssl rand -hex 32)");
  return sha256(text);
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

CallerCheck::CallerCheck(std::string token_digest) : token_digest_(std::move(token_digest)) {}

std::string token_digest(std::string_view token) { return sha256(token); }

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
