#include "loadlab/quic/packets.hpp"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <algorithm>
#include <iterator>

namespace loadlab::quic {

ngtcp2_tstamp timestamp(Clock::time_point t) {
  return static_cast<ngtcp2_tstamp>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

Clock::time_point time_point(ngtcp2_tstamp ts) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ts)));
}

void random_bytes(void* dest, std::size_t size) { gnutls_rnd(GNUTLS_RND_RANDOM, dest, size); }

namespace {
void rand(std::uint8_t* dest, std::size_t size, const ngtcp2_rand_ctx*) { random_bytes(dest, size); }
}  // namespace

ngtcp2_callbacks crypto_callbacks(Role role) {
  ngtcp2_callbacks cb{};
  if (role == Role::client) {
    cb.client_initial = ngtcp2_crypto_client_initial_cb;
    cb.recv_retry = ngtcp2_crypto_recv_retry_cb;
  } else {
    cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
  }
  cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cb.encrypt = ngtcp2_crypto_encrypt_cb;
  cb.decrypt = ngtcp2_crypto_decrypt_cb;
  cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb.update_key = ngtcp2_crypto_update_key_cb;
  cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  cb.rand = rand;
  return cb;
}

int random_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, std::uint8_t* token, std::size_t size, void*) {
  random_bytes(cid->data, size);
  cid->datalen = size;
  random_bytes(token, NGTCP2_STATELESS_RESET_TOKENLEN);
  return 0;
}

namespace {
// Stream data went into the packet: nghttp3 learns how much, then the sink. False: stop
// (`result` says why).
bool stream_data_written(nghttp3_conn* http, PacketSink& sink, std::int64_t stream_id, ngtcp2_ssize accepted,
                         bool fin_sent, WriteResult& result) {
  if (int rv = nghttp3_conn_add_write_offset(http, stream_id, static_cast<std::size_t>(accepted)); rv != 0) {
    result.end = WriteResult::End::http_failed;
    result.error = rv;
    return false;
  }
  if (sink.stream_written(stream_id, fin_sent)) return true;
  result.end = WriteResult::End::stopped;
  return false;
}
}  // namespace

WriteResult write_packets(ngtcp2_conn* conn, nghttp3_conn* http, std::span<std::uint8_t> packet,
                          ngtcp2_path* path, ngtcp2_tstamp ts, int max_packets, PacketSink& sink) {
  const auto max_size = std::min(ngtcp2_conn_get_path_max_tx_udp_payload_size(conn), packet.size());
  WriteResult result;
  for (;;) {
    if (result.packets == max_packets) {
      result.end = WriteResult::End::more;
      break;
    }
    std::int64_t stream_id = -1;
    int fin = 0;
    nghttp3_vec vec[16];
    nghttp3_ssize count = 0;
    if (http != nullptr && ngtcp2_conn_get_max_data_left(conn) > 0) {
      count = nghttp3_conn_writev_stream(http, &stream_id, &fin, vec, std::size(vec));
      if (count < 0) return {WriteResult::End::http_failed, static_cast<int>(count), result.packets};
    }
    std::size_t vec_bytes = 0;
    for (nghttp3_ssize i = 0; i < count; ++i) vec_bytes += vec[i].len;
    ngtcp2_ssize accepted = -1;
    ngtcp2_pkt_info info{};
    const std::uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin != 0 ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
    const auto n = ngtcp2_conn_writev_stream(conn, path, &info, packet.data(), max_size, &accepted, flags,
                                             stream_id, reinterpret_cast<const ngtcp2_vec*>(vec),
                                             static_cast<std::size_t>(count), ts);
    const bool fin_sent = fin != 0 && accepted >= 0 && static_cast<std::size_t>(accepted) == vec_bytes;
    if (n < 0) {
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {  // flow control: nghttp3 waits for extend_max_stream_data
        nghttp3_conn_block_stream(http, stream_id);
        continue;
      }
      if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
        nghttp3_conn_shutdown_stream_write(http, stream_id);
        continue;
      }
      if (n == NGTCP2_ERR_WRITE_MORE) {  // room left in the packet for more streams' data
        if (!stream_data_written(http, sink, stream_id, accepted, fin_sent, result)) return result;
        continue;
      }
      return {WriteResult::End::quic_failed, static_cast<int>(n), result.packets};
    }
    if (accepted >= 0 && !stream_data_written(http, sink, stream_id, accepted, fin_sent, result))
      return result;
    if (n == 0) break;  // nothing more, or the congestion window is full
    ++result.packets;
    if (!sink.send(path != nullptr ? *path : *ngtcp2_conn_get_path(conn), packet.data(),
                   static_cast<std::size_t>(n))) {
      result.end = WriteResult::End::stopped;
      break;
    }
  }
  ngtcp2_conn_update_pkt_tx_time(conn, ts);
  return result;
}

}  // namespace loadlab::quic
