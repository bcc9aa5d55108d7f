#include "h3_server.hpp"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "h3_connection.hpp"
#include "io_failure.hpp"

namespace loadlab::target {

namespace net = boost::asio;
namespace beast = boost::beast;

namespace {

// Datagrams read in one go before the connections they reached write their answers: a flight
// of packets is answered with one flush per connection, not one per packet.
constexpr int kMaxBatch = 64;

// Longer ids (only in packets of versions we do not speak) are cut: they match nothing anyway.
CidKey cid_key(const std::uint8_t* data, std::size_t size) {
  CidKey key;
  key.size = static_cast<std::uint8_t>(std::min(size, key.bytes.size()));
  std::copy_n(data, key.size, key.bytes.begin());
  return key;
}

ngtcp2_tstamp now_ns() {
  return static_cast<ngtcp2_tstamp>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

constexpr ngtcp2_duration kRetryTokenLifetime = 10ull * NGTCP2_SECONDS;

std::uint64_t rotl(std::uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

}  // namespace

std::size_t CidKeyHash::operator()(const CidKey& key) const {
  std::uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
  std::uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
  auto round = [&] {
    v0 += v1, v1 = rotl(v1, 13), v1 ^= v0, v0 = rotl(v0, 32);
    v2 += v3, v3 = rotl(v3, 16), v3 ^= v2;
    v0 += v3, v3 = rotl(v3, 21), v3 ^= v0;
    v2 += v1, v1 = rotl(v1, 17), v1 ^= v2, v2 = rotl(v2, 32);
  };
  std::uint64_t b = static_cast<std::uint64_t>(key.size) << 56;
  std::size_t i = 0;
  for (; i + 8 <= key.size; i += 8) {
    std::uint64_t m = 0;
    for (int j = 7; j >= 0; --j) m = (m << 8) | key.bytes[i + j];
    v3 ^= m, round(), v0 ^= m;
  }
  for (std::size_t j = 0; i + j < key.size; ++j) b |= static_cast<std::uint64_t>(key.bytes[i + j]) << (8 * j);
  v3 ^= b, round(), v0 ^= b;
  v2 ^= 0xff;
  round(), round(), round();
  return static_cast<std::size_t>(v0 ^ v1 ^ v2 ^ v3);
}

H3Server::H3Server(IoWorker& worker, const SessionEnv& env, std::shared_ptr<const QuicTlsContext> tls,
                   H3Limits limits)
    : worker_(worker), env_(env), tls_(std::move(tls)), socket_(worker.ioc), limits_(limits) {
  gnutls_rnd(GNUTLS_RND_RANDOM, static_secret_.data(), static_secret_.size());
  gnutls_rnd(GNUTLS_RND_RANDOM, token_secret_.data(), token_secret_.size());
  CidKeyHash hash;
  gnutls_rnd(GNUTLS_RND_RANDOM, &hash.k0, sizeof hash.k0);
  gnutls_rnd(GNUTLS_RND_RANDOM, &hash.k1, sizeof hash.k1);
  connections_ = decltype(connections_)(64, hash);
}

// run() has returned: the connections left (also held by pending handlers, destroyed with the
// io_context) never call back into this server.
H3Server::~H3Server() = default;

beast::error_code H3Server::listen(const udp::endpoint& endpoint) {
  beast::error_code ec;
  socket_.open(endpoint.protocol(), ec);
  if (ec) return ec;
  socket_.bind(endpoint, ec);
  if (ec) return ec;
  local_ = socket_.local_endpoint(ec);
  return ec;
}

H3Server::udp::endpoint H3Server::local_endpoint() const { return local_; }

void H3Server::run() { do_receive(); }

void H3Server::initiate_shutdown() {
  if (stopping_) return;
  stopping_ = true;
  std::vector<std::shared_ptr<H3Connection>> all;
  for (auto& [key, connection] : connections_) {
    if (std::find(all.begin(), all.end(), connection) == all.end()) all.push_back(connection);
  }
  for (auto& connection : all) connection->initiate_shutdown();
  if (live_.load(std::memory_order_relaxed) == 0) {
    closed_ = true;
    beast::error_code ignored;
    socket_.close(ignored);
  }
}

void H3Server::do_receive() {
  if (closed_) return;
  socket_.async_receive_from(net::buffer(buffer_), sender_,
                             [this](beast::error_code ec, std::size_t bytes) { on_receive(ec, bytes); });
}

void H3Server::on_receive(beast::error_code ec, std::size_t bytes) {
  if (closed_) return;
  if (ec) {
    if (ec == net::error::operation_aborted) return;
    // ICMP errors surface here (connection_refused from a client gone): not the socket's fault.
    log_io_failure(*env_.log, ec, "h3 receive");
    return do_receive();
  }
  on_datagram(buffer_.data(), bytes);
  // More datagrams already queued are read now, without a wait each, until a read finds none
  // (MSG_DONTWAIT for this read only: the socket's sends still wait for room).
  for (int i = 1; i < kMaxBatch; ++i) {
    socklen_t length = static_cast<socklen_t>(sender_.capacity());
    const ssize_t n = ::recvfrom(socket_.native_handle(), buffer_.data(), buffer_.size(), MSG_DONTWAIT,
                                 sender_.data(), &length);
    if (n < 0) break;  // none queued (or an error, which the next wait reports)
    sender_.resize(length);
    on_datagram(buffer_.data(), static_cast<std::size_t>(n));
  }
  auto touched = std::move(touched_);
  touched_.clear();
  for (auto& connection : touched) connection->flush();
  touched.clear();
  touched_.swap(touched);  // keep the capacity
  do_receive();
}

void H3Server::on_datagram(const std::uint8_t* data, std::size_t size) {
  ngtcp2_version_cid vc;
  const int rv = ngtcp2_pkt_decode_version_cid(&vc, data, size, kCidLength);
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) return send_version_negotiation(vc);
  if (rv != 0) return;  // not QUIC
  auto it = connections_.find(cid_key(vc.dcid, vc.dcidlen));
  if (it != connections_.end()) {
    auto connection = it->second;  // the read may remove it from the map
    connection->on_datagram(sender_, data, size);
    if (std::find(touched_.begin(), touched_.end(), connection) == touched_.end())
      touched_.push_back(std::move(connection));
    return;
  }
  if ((data[0] & 0x80) == 0) return send_stateless_reset(vc, size);  // a connection we forgot
  if (stopping_) return;                                             // no new connections
  accept(data, size);
}

// A short-header packet for a connection id we no longer know (the connection timed out, or the
// server restarted): a Stateless Reset (RFC 9000 §10.3) tells the client at once instead of
// leaving it to its own idle timeout. Its token is the one we issued with that id (the same
// secret), and it is smaller than the packet that caused it, so two endpoints cannot loop.
void H3Server::send_stateless_reset(const ngtcp2_version_cid& vc, std::size_t received) {
  constexpr std::size_t kMinimum = NGTCP2_STATELESS_RESET_TOKENLEN + NGTCP2_MIN_STATELESS_RESET_RANDLEN + 1;
  if (received <= kMinimum || vc.dcidlen != kCidLength) return;
  ngtcp2_cid cid;
  ngtcp2_cid_init(&cid, vc.dcid, vc.dcidlen);
  std::uint8_t token[NGTCP2_STATELESS_RESET_TOKENLEN];
  if (ngtcp2_crypto_generate_stateless_reset_token(token, static_secret_.data(), static_secret_.size(),
                                                   &cid) != 0)
    return;
  std::array<std::uint8_t, NGTCP2_MAX_CIDLEN + 22> random;
  const auto random_size = std::min(random.size() - NGTCP2_STATELESS_RESET_TOKENLEN, received - kMinimum) +
                           NGTCP2_MIN_STATELESS_RESET_RANDLEN - 1;
  gnutls_rnd(GNUTLS_RND_NONCE, random.data(), random_size);
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> packet;
  const auto n =
      ngtcp2_pkt_write_stateless_reset(packet.data(), packet.size(), token, random.data(), random_size);
  if (n > 0) send(sender_, packet.data(), static_cast<std::size_t>(n));
}

bool H3Server::wants_retry() const {
  switch (limits_.retry) {
    case H3Retry::never:
      return false;
    case H3Retry::always:
      return true;
    case H3Retry::auto_:
      break;
  }
  return handshaking_.size() >= limits_.retry_above;
}

void H3Server::accept(const std::uint8_t* data, std::size_t size) {
  ngtcp2_pkt_hd hd;
  // Not a client's first Initial (a late packet of a connection gone, a 0-RTT packet before
  // its Initial): dropped.
  if (ngtcp2_accept(&hd, data, size) != 0) return;
  // Address validation: a client that came back with our Retry token proved it receives at its
  // address; one without is asked to, when the server is set to or many handshakes are open
  // (no state is kept for it: the token carries what the server needs).
  std::optional<ngtcp2_cid> odcid;
  if (hd.token.len > 0 && hd.token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) {
    ngtcp2_cid original;
    if (ngtcp2_crypto_verify_retry_token(&original, hd.token.base, hd.token.len, token_secret_.data(),
                                         token_secret_.size(), hd.version, sender_.data(),
                                         static_cast<ngtcp2_socklen>(sender_.size()), &hd.dcid,
                                         kRetryTokenLifetime, now_ns()) != 0)
      return send_close(hd, NGTCP2_INVALID_TOKEN);
    odcid = original;
  } else if (wants_retry()) {
    return send_retry(hd);
  }
  if (handshaking_.size() >= limits_.max_handshakes ||
      static_cast<std::size_t>(live_.load(std::memory_order_relaxed)) >= limits_.max_connections) {
    ++refused_;
    return send_close(hd, NGTCP2_CONNECTION_REFUSED);
  }
  ngtcp2_cid scid;
  scid.datalen = kCidLength;
  gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
  auto connection = std::make_shared<H3Connection>(*this, env_, worker_);
  // Mapped before the first read: the read's callbacks may already issue more ids.
  associate(scid, connection);
  associate(hd.dcid, connection);  // the client's packets until it learns ours
  live_.fetch_add(1, std::memory_order_relaxed);
  handshaking_.insert(connection.get());
  if (!connection->start(hd, scid, *tls_, local_, sender_, data, size, odcid ? &*odcid : nullptr)) return;
  touched_.push_back(std::move(connection));
}

void H3Server::send_retry(const ngtcp2_pkt_hd& hd) {
  ngtcp2_cid retry_scid;
  retry_scid.datalen = kCidLength;
  gnutls_rnd(GNUTLS_RND_NONCE, retry_scid.data, retry_scid.datalen);
  std::array<std::uint8_t, NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN> token;
  const auto token_len = ngtcp2_crypto_generate_retry_token(
      token.data(), token_secret_.data(), token_secret_.size(), hd.version, sender_.data(),
      static_cast<ngtcp2_socklen>(sender_.size()), &retry_scid, &hd.dcid, now_ns());
  if (token_len < 0) return;
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> packet;
  const auto n = ngtcp2_crypto_write_retry(packet.data(), packet.size(), hd.version, &hd.scid, &retry_scid,
                                           &hd.dcid, token.data(), static_cast<std::size_t>(token_len));
  if (n <= 0) return;
  ++retries_sent_;
  send(sender_, packet.data(), static_cast<std::size_t>(n));
}

// An Initial answered with CONNECTION_CLOSE without keeping any state (a bad token, or the caps).
void H3Server::send_close(const ngtcp2_pkt_hd& hd, std::uint64_t error) {
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> packet;
  const auto n = ngtcp2_crypto_write_connection_close(packet.data(), packet.size(), hd.version, &hd.scid,
                                                      &hd.dcid, error, nullptr, 0);
  if (n > 0) send(sender_, packet.data(), static_cast<std::size_t>(n));
}

void H3Server::send_version_negotiation(const ngtcp2_version_cid& vc) {
  std::array<std::uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> packet;
  const std::uint32_t versions[] = {NGTCP2_PROTO_VER_V1, NGTCP2_PROTO_VER_V2_DRAFT};
  std::uint8_t unused = 0;
  gnutls_rnd(GNUTLS_RND_NONCE, &unused, 1);
  // Our ids are the client's reversed (RFC 9000 §17.2.1).
  const auto n =
      ngtcp2_pkt_write_version_negotiation(packet.data(), packet.size(), unused, vc.scid, vc.scidlen, vc.dcid,
                                           vc.dcidlen, versions, std::size(versions));
  if (n > 0) send(sender_, packet.data(), static_cast<std::size_t>(n));
}

void H3Server::send(const udp::endpoint& to, const std::uint8_t* data, std::size_t size) {
  beast::error_code ec;
  socket_.send_to(net::buffer(data, size), to, 0, ec);
  // A datagram not sent is a datagram lost: QUIC's loss recovery resends what mattered.
  if (ec) env_.log->debug("h3 send: {}", ec.message());
}

void H3Server::associate(const ngtcp2_cid& cid, const std::shared_ptr<H3Connection>& connection) {
  const auto key = cid_key(cid.data, cid.datalen);
  auto [it, fresh] = connections_.try_emplace(key, connection);
  if (!fresh) {
    if (it->second == connection) return;
    auto& theirs = ids_of_[it->second.get()];
    std::erase(theirs, key);
    it->second = connection;
  }
  ids_of_[connection.get()].push_back(key);
}

void H3Server::dissociate(const ngtcp2_cid& cid) {
  const auto key = cid_key(cid.data, cid.datalen);
  auto it = connections_.find(key);
  if (it == connections_.end()) return;
  if (auto ids = ids_of_.find(it->second.get()); ids != ids_of_.end()) std::erase(ids->second, key);
  connections_.erase(it);
}

void H3Server::remove(const H3Connection& connection) {
  handshaking_.erase(&connection);
  auto ids = ids_of_.find(&connection);
  if (ids == ids_of_.end()) return;
  const auto keys = std::move(ids->second);
  ids_of_.erase(ids);
  // Last: erasing the map's entries may drop the connection's last reference.
  for (const auto& key : keys) connections_.erase(key);
}

void H3Server::handshake_done(const H3Connection& connection) { handshaking_.erase(&connection); }

void H3Server::retire() {
  const auto left = live_.fetch_sub(1, std::memory_order_relaxed) - 1;
  if (stopping_ && left == 0 && !closed_) {
    closed_ = true;
    beast::error_code ignored;
    socket_.close(ignored);
  }
}

}  // namespace loadlab::target
