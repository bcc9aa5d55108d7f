#pragma once
// What a worker drives on each of its connections, whatever the protocol above the
// transport: HTTP/1.1 (connection.hpp) or an HTTP/2 session (h2_connection.hpp), chosen per
// connection by the worker. The calls come from the worker's sweep, its open-loop pacer and
// its start and stop, never per request or per byte, so a virtual call costs nothing that
// shows. Every method runs on the worker's thread. Internal to loadlab_load.
#include "run_plan.hpp"

namespace loadlab::load {

class ClientConnection {
 public:
  virtual ~ClientConnection() = default;

  virtual void start() = 0;
  // Discards the requests in flight and ends the loop (the worker's on_connection_done comes
  // once every pending operation has completed or at once).
  virtual void stop() = 0;
  // The worker's periodic sweep: fails what has passed its deadline (one sweep timer per
  // thread instead of re-arming a timer per request keeps timer-queue work off the request
  // path).
  virtual void check_deadline(Clock::time_point now) = 0;
  // Open loop: the slot this connection waited for is due (`now` or earlier).
  virtual void resume(Clock::time_point now) = 0;
};

}  // namespace loadlab::load
