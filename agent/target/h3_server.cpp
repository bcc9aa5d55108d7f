#include "h3_server.hpp"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <algorithm>

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

}  // namespace

H3Server::H3Server(IoWorker& worker, const SessionEnv& env, std::shared_ptr<const QuicTlsContext> tls)
    : worker_(worker), env_(env), tls_(std::move(tls)), socket_(worker.ioc) {
  gnutls_rnd(GNUTLS_RND_RANDOM, static_secret_.data(), static_secret_.size());
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
  // More datagrams already queued are read now, without a wait each.
  for (int i = 1; i < kMaxBatch; ++i) {
    beast::error_code more;
    if (socket_.available(more) == 0 || more) break;
    const auto n = socket_.receive_from(net::buffer(buffer_), sender_, 0, more);
    if (more) break;
    on_datagram(buffer_.data(), n);
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

void H3Server::accept(const std::uint8_t* data, std::size_t size) {
  ngtcp2_pkt_hd hd;
  // Not a client's first Initial (a late packet of a connection gone, a 0-RTT packet before
  // its Initial): dropped. No Retry: address validation is not worth a round trip here.
  if (ngtcp2_accept(&hd, data, size) != 0) return;
  ngtcp2_cid scid;
  scid.datalen = kCidLength;
  gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
  auto connection = std::make_shared<H3Connection>(*this, env_, worker_);
  // Mapped before the first read: the read's callbacks may already issue more ids.
  associate(scid, connection);
  associate(hd.dcid, connection);  // the client's packets until it learns ours
  live_.fetch_add(1, std::memory_order_relaxed);
  if (!connection->start(hd, scid, *tls_, local_, sender_, data, size)) return;
  touched_.push_back(std::move(connection));
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
  connections_[cid_key(cid.data, cid.datalen)] = connection;
}

void H3Server::dissociate(const ngtcp2_cid& cid) { connections_.erase(cid_key(cid.data, cid.datalen)); }

void H3Server::remove(const H3Connection& connection) {
  std::erase_if(connections_, [&](const auto& entry) { return entry.second.get() == &connection; });
}

void H3Server::retire() {
  const auto left = live_.fetch_sub(1, std::memory_order_relaxed) - 1;
  if (stopping_ && left == 0 && !closed_) {
    closed_ = true;
    beast::error_code ignored;
    socket_.close(ignored);
  }
}

}  // namespace loadlab::target
