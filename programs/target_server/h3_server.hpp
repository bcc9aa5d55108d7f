#pragma once
// The UDP side of the target: HTTP/3 on one UDP socket at the TCP listener's address and port.
// It reads datagrams, routes each by its destination connection id to an H3Connection (a map
// of every id a connection issued: the one chosen at accept, the client's original one, and
// those of NEW_CONNECTION_ID), makes a connection for a client's Initial packet, answers an
// unknown QUIC version with Version Negotiation, a packet for a connection id it forgot with a
// Stateless Reset, and sends what connections write.
//
// Against a flood of Initials (H3Limits): a client is asked to prove its address by a Retry
// (stateless: the token carries what the server needs) when more than `retry_above`
// handshakes are open, or always; past `max_handshakes` open or `max_connections` live, an
// Initial gets CONNECTION_CLOSE (CONNECTION_REFUSED) and no state. The id map's hash is keyed
// per server (ids are the client's choice), and a connection's ids are removed in O(its ids).
//
// One socket on one io thread (the server's first): the TCP side spreads connections over the
// io threads, UDP does not yet. One SO_REUSEPORT socket per thread (the kernel spreading by
// 4-tuple) could come later; connection ids would then need to name their thread.
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/beast/core/error.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "h3_limits.hpp"
#include "io_worker.hpp"
#include "quic_tls.hpp"
#include "secure_transport.hpp"
#include "session_env.hpp"

struct ngtcp2_cid;
struct ngtcp2_version_cid;
struct ngtcp2_pkt_hd;

namespace loadlab::target {

class H3Connection;

// A connection id as a map key: its bytes in place, so a lookup per datagram allocates nothing.
struct CidKey {
  std::array<std::uint8_t, 20> bytes{};  // NGTCP2_MAX_CIDLEN
  std::uint8_t size = 0;
  bool operator==(const CidKey& other) const { return size == other.size && bytes == other.bytes; }
};

// SipHash-1-3 under a key drawn at random per server: the ids of a client's packets are the
// client's choice, and an unkeyed hash lets it choose ids that all land in one bucket (each
// lookup then scans them all). Written here (some 20 lines) since neither Boost nor the
// standard library offers a keyed hash, and OpenSSL's EVP_MAC costs an allocation per call.
struct CidKeyHash {
  std::uint64_t k0 = 0, k1 = 0;
  std::size_t operator()(const CidKey& key) const;
};

class H3Server final : public DatagramServer {
 public:
  using udp = boost::asio::ip::udp;
  // The length of the connection ids this server chooses (short headers carry no length).
  static constexpr std::size_t kCidLength = 18;

  // `worker` runs the socket and every connection; `tls` outlives the server.
  H3Server(IoWorker& worker, const SessionEnv& env, std::shared_ptr<const QuicTlsContext> tls,
           H3Limits limits = {});
  ~H3Server() override;
  H3Server(const H3Server&) = delete;
  H3Server& operator=(const H3Server&) = delete;

  // Opens and binds. Called once, before run(), by the owning thread.
  boost::beast::error_code listen(const udp::endpoint& endpoint) override;
  udp::endpoint local_endpoint() const;

  // On the worker's thread.
  void run() override;
  // On the worker's thread: no new connections; the open ones say GOAWAY and close once their
  // streams are answered.
  void initiate_shutdown() override;
  // QUIC connections neither closed nor closing. Any thread (the server's drain waits for zero).
  std::int64_t live_connections() const override { return live_.load(std::memory_order_relaxed); }

  // For connections, on the worker's thread.
  void send(const udp::endpoint& to, const std::uint8_t* data, std::size_t size);
  void associate(const ngtcp2_cid& cid, const std::shared_ptr<H3Connection>& connection);
  // With `validated`, the client proved its address by a Retry token (the odcid it carried).
  void dissociate(const ngtcp2_cid& cid);
  // The connection is closing or draining (it answers nothing more): once per connection.
  void retire();
  void remove(const H3Connection& connection);  // every id of it (O(its ids)); the connection is closed
  void handshake_done(const H3Connection& connection);  // no longer counts as a handshake in progress
  // What the server turned away, for tests and the log.
  std::uint64_t retries_sent() const { return retries_sent_; }
  std::uint64_t refused() const { return refused_; }
  std::size_t handshakes_in_progress() const { return handshaking_.size(); }
  bool stopping() const { return stopping_; }
  const std::array<std::uint8_t, 32>& static_secret() const { return static_secret_; }

 private:
  void do_receive();
  void on_receive(boost::beast::error_code ec, std::size_t bytes);
  void on_datagram(const std::uint8_t* data, std::size_t size);
  void accept(const std::uint8_t* data, std::size_t size);
  void send_version_negotiation(const ngtcp2_version_cid& vc);
  void send_stateless_reset(const ngtcp2_version_cid& vc, std::size_t received);
  void send_retry(const ngtcp2_pkt_hd& hd);
  void send_close(const ngtcp2_pkt_hd& hd, std::uint64_t error);
  bool wants_retry() const;

  IoWorker& worker_;
  const SessionEnv& env_;
  std::shared_ptr<const QuicTlsContext> tls_;
  udp::socket socket_;
  udp::endpoint local_;
  udp::endpoint sender_;
  std::array<std::uint8_t, 64 * 1024> buffer_;
  std::array<std::uint8_t, 32> static_secret_{};  // stateless reset tokens
  H3Limits limits_;
  std::array<std::uint8_t, 32> token_secret_{};  // Retry tokens
  std::unordered_map<CidKey, std::shared_ptr<H3Connection>, CidKeyHash> connections_;
  std::unordered_map<const H3Connection*, std::vector<CidKey>> ids_of_;  // for remove()
  std::unordered_set<const H3Connection*> handshaking_;
  std::uint64_t retries_sent_ = 0, refused_ = 0;
  std::vector<std::shared_ptr<H3Connection>> touched_;  // read in this batch: to flush
  std::atomic<std::int64_t> live_{0};
  bool stopping_ = false;
  bool closed_ = false;
};

}  // namespace loadlab::target
