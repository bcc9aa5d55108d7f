"""A catalog target for the integration tests, standard library only.

    python3 server.py HOST PORT DELAY_MS [CERT KEY]
    python3 server.py HOST PORT DELAY_MS --slots N

With CERT and KEY (PEM files) it serves HTTPS (TLS 1.2 and 1.3, ALPN http/1.1). With
--slots N at most N requests are served at once (the others wait for a slot, first come
first served): its capacity is N / DELAY_MS, and its latency is flat below it and grows
without bound above it (a cliff, for the capacity search's tests).

Answers every request 200 "Have Fun ~ Tester !" after DELAY_MS (a sleep in the request's
thread: ThreadingHTTPServer serves each connection on its own thread), keep-alive. Its
ground truth for the tests: GET /__count answers how many other requests it has served;
/__ paths are not counted (the agent's readiness probe uses one).
"""
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b"Have Fun ~ Tester !"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    wbufsize = -1  # a buffered writer: headers and body leave in one write (no Nagle stall)
    disable_nagle_algorithm = True
    delay_s = 0.0
    served = 0
    lock = threading.Lock()
    slots = None  # --slots N: a semaphore of N

    def do_GET(self):
        if self.path.startswith("/__"):
            with Handler.lock:
                served = Handler.served
            self.reply(str(served).encode() if self.path == "/__count" else b"ok")
            return
        if Handler.slots is not None:
            with Handler.slots:
                time.sleep(Handler.delay_s)
        elif Handler.delay_s > 0:
            time.sleep(Handler.delay_s)
        with Handler.lock:
            Handler.served += 1
        self.reply(BODY)

    def reply(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass  # a line per request would cost more than the request


class Server(ThreadingHTTPServer):
    # The listen backlog, which the constructor uses (setting it on the instance afterwards
    # does nothing): a search opens dozens of connections at once, and with socketserver's
    # default of 5 the SYNs beyond it are dropped and retried a second later.
    request_queue_size = 1024


def main():
    if len(sys.argv) not in (4, 6):
        sys.exit("usage: server.py HOST PORT DELAY_MS [CERT KEY | --slots N]")
    host, port, delay_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    Handler.delay_s = delay_ms / 1000.0
    slots = len(sys.argv) == 6 and sys.argv[4] == "--slots"
    if slots:
        Handler.slots = threading.Semaphore(int(sys.argv[5]))
    server = Server((host, port), Handler)
    if len(sys.argv) == 6 and not slots:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(sys.argv[4], sys.argv[5])
        tls.set_alpn_protocols(["http/1.1"])
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    print(f"python target listening on {host}:{port} (delay {delay_ms} ms)", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
