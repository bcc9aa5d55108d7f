#pragma once
// Who may call this agent. Transport security (TLS, and with a client CA mutual TLS) is
// gRPC's and refuses a bad client before any RPC runs; on top of it a shared token, sent by
// the controller as `authorization: Bearer TOKEN`, is checked at the start of every RPC,
// before anything is spawned or a job slot is taken.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

namespace loadlab::agent {

struct TlsFiles {
  std::string cert, key;  // the agent's certificate chain and private key (PEM)
  std::string client_ca;  // "" = no client certificate asked; else it must be signed by it
  bool enabled() const { return !cert.empty(); }
};

// Reads the PEM files; throws InputError naming the flag of a file that cannot be read.
std::shared_ptr<grpc::ServerCredentials> server_credentials(const TlsFiles& tls);

// Reads a token file (one line; surrounding white space dropped) and returns the SHA-256 of
// the token (32 bytes); the bytes read are wiped, so no copy of the token stays in memory.
// Throws InputError naming `flag` when the file cannot be read, holds no token, or one shorter
// than limits::kMinTokenBytes.
[[nodiscard]] std::string read_token_digest(const std::string& path, const std::string& flag);
// The SHA-256 of `token` (for tests and callers that hold the token already).
[[nodiscard]] std::string token_digest(std::string_view token);

// A token or private key other users of the machine could read (readable_by_others) throws
// InputError naming `flag`, or with `allow_readable` is logged as a warning.
void check_secret_file(const std::string& path, const std::string& flag, bool allow_readable);

class CallerCheck {
 public:
  // The SHA-256 of the token every call must carry (read_token_digest); "" = none required.
  explicit CallerCheck(std::string token_digest = "");
  // OK, or UNAUTHENTICATED (logged with the caller's address and certificate name) when a
  // token is required and the call's `authorization` metadata does not carry it.
  grpc::Status check(const grpc::ServerContext& ctx, const char* method) const;
  // Calls refused since the agent started.
  uint64_t refusals() const { return refusals_.load(); }
  // Whether `authorization` ("Bearer TOKEN") carries the token; true when none is required.
  bool carries_token(std::string_view authorization) const;

 private:
  std::string token_digest_;  // SHA-256 of the token: compared in constant time
  mutable std::atomic<uint64_t> refusals_{0};
};

// "ipv4:10.0.0.5:51234 (CN=controller)" for logs: the peer and its certificate's name.
std::string describe_caller(const grpc::ServerContext& ctx);

}  // namespace loadlab::agent
