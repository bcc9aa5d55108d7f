// Fuzz target: loadlab-target's HTTP/2 server (H2Session over a plain stream, h2c), fed the bytes
// a client sends after the connection preface (an input that starts with the preface has it taken
// off, so captured client streams are seeds as they are). The session runs in-process on a
// socketpair: every handler is production's, run by io_context::poll(), and time passes by moving
// the session's stored time points back (H2FuzzPeer), so a knob's 60 s delay and every timeout
// cost nothing. Checks: the stream slots add up after every turn, nothing is in flight once the
// connection is gone, the session is freed, no turn loops for ever.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "h2_session.hpp"
#include "target_env.hpp"

namespace loadlab::target {

struct H2FuzzPeer {
  using S = H2Session<PlainStream>;
  using Clock = S::Clock;

  static void seed(S& s, std::uint64_t seed) { s.random_ = Random(seed); }

  // How far time must move for the last pending delay to be due.
  static Clock::duration until_last_wake(const S& s) {
    return StreamResponderPeer::until_last_wake(s.responder_);
  }

  // `d` passes with nothing said: every stored time point moves back by d, then the timer (at its
  // earliest wake) and the watchdog (now) are armed again; their handlers, production's, decide.
  static void jump(S& s, Clock::duration d) {
    if (s.closed_ || s.session_ == nullptr) return;
    for (auto* t : {&s.started_, &s.read_at_, &s.idle_since_, &s.written_at_}) *t -= d;
    StreamResponderPeer::jump(s.responder_, d);
    s.arm_watchdog(Clock::now());
  }

  // Each open stream is in exactly one state; every slot is open or free.
  static void check(const S& s) {
    if (!s.responder_.consistent()) std::abort();
  }
};

}  // namespace loadlab::target

namespace {

using namespace loadlab;
using Session = target::H2Session<target::PlainStream>;
using Peer = target::H2FuzzPeer;

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::size_t kMaxOutput = 1 << 20;  // the client reads this much, then stops reading
constexpr int kMaxRounds = 10000;

struct Client {
  int fd;
  std::size_t read = 0;
  std::size_t send(std::string_view& bytes) const {
    const auto n = ::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) return 0;  // full, or the server closed: the rest is never read
    bytes.remove_prefix(static_cast<std::size_t>(n));
    return static_cast<std::size_t>(n);
  }
  std::size_t drain() {
    static char buf[64 * 1024];
    std::size_t got = 0;
    while (read < kMaxOutput) {
      const auto n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) break;
      read += static_cast<std::size_t>(n);
      got += static_cast<std::size_t>(n);
    }
    return got;
  }
};

// The session and the client take turns until neither moves.
void settle(fuzz::TargetEnv& t, Client& client, const std::weak_ptr<Session>& alive,
            std::string_view bytes = {}) {
  for (int round = 0; round < kMaxRounds; ++round) {
    std::size_t moved = bytes.empty() ? 0 : client.send(bytes);
    moved += t.run_ready();
    moved += client.drain();
    if (auto s = alive.lock()) Peer::check(*s);
    if (moved == 0) return;
  }
  std::abort();  // still moving after kMaxRounds: a loop that never settles
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto& t = fuzz::target_env();
  t.begin();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input.starts_with(kPreface)) input.remove_prefix(kPreface.size());

  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  target::PlainStream socket(t.worker.ioc);
  socket.assign(boost::asio::ip::tcp::v4(), fds[0]);  // asio does not look at the socket's family
  Client client{fds[1]};

  // The hand-over: the preface and what came with it in the same read (Session::hand_over_to_h2).
  std::string first(kPreface);
  const auto with_preface = std::min(input.size(), size % 32);
  first.append(input.substr(0, with_preface));
  input.remove_prefix(with_preface);

  std::weak_ptr<Session> alive;
  {
    auto session = std::make_shared<Session>(std::move(socket), t.env, t.worker);
    alive = session;
    Peer::seed(*session, 0x5eed);
    session->start(boost::asio::buffer(first));
  }  // from here on the session lives on its own handlers, as in production

  // The rest in a few reads of a size the input decides, then the remainder.
  const std::size_t piece = 1 + size % 251;
  for (int i = 0; i < 4 && !input.empty(); ++i) {
    const auto part = input.substr(0, piece);
    input.remove_prefix(part.size());
    settle(t, client, alive, part);
  }
  settle(t, client, alive, input);

  if (auto s = alive.lock()) Peer::jump(*s, Peer::until_last_wake(*s));  // every delay ends
  settle(t, client, alive);
  // Then, in an order the input decides: every timeout passes, and the client leaves (its EOF
  // reaches the session, or the session has closed already).
  const auto timeouts_pass = [&] {
    if (auto s = alive.lock()) {
      const auto& e = t.env;
      Peer::jump(*s, std::max({e.read_timeout, e.idle_timeout, e.write_timeout, e.linger_timeout}) +
                         std::chrono::seconds(1));
    }
    settle(t, client, alive);
  };
  const bool leaves_first = (size & 1) != 0;
  if (!leaves_first) timeouts_pass();
  ::shutdown(client.fd, SHUT_WR);
  settle(t, client, alive);
  if (leaves_first) timeouts_pass();
  ::close(client.fd);
  settle(t, client, alive);

  if (!alive.expired()) std::abort();  // the session outlived its connection
  t.end();                             // nothing in flight
  if (std::getenv("LOADLAB_FUZZ_VERBOSE") != nullptr)
    std::fprintf(stderr, "h2: %zu bytes answered, %llu streams answered\n", client.read,
                 static_cast<unsigned long long>(t.worker.h2_streams.load()));
  return 0;
}
