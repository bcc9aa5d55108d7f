"""A catalog target for the integration tests, standard library only.

    python3 server.py HOST PORT DELAY_MS [CERT KEY]
    python3 server.py HOST PORT DELAY_MS --slots N [--service-log FILE]

With CERT and KEY (PEM files) it serves HTTPS (TLS 1.2 and 1.3, ALPN http/1.1). With
--slots N, N worker threads serve the requests, each holding its worker for DELAY_MS (a
sleep), and the others wait in one queue, first come first served: a queue of N servers
whose service is made by a timer, not by CPU. Its capacity is N / DELAY_MS; its latency is
flat below it and grows without bound above it (a cliff, for the capacity search's tests).
With --service-log FILE it appends a line per request to FILE: when its service began and
how long it held its worker, in ns of CLOCK_MONOTONIC (the agent's clock for a window's
opening and closing), the ground truth of a queueing model: a sleep ends late by the timer's
slack, a neighbour's time slice or the machine's CPUs stopping, and each shows there.

Answers every request 200 "Have Fun ~ Tester !" after DELAY_MS (a sleep in the request's
thread: ThreadingHTTPServer serves each connection on its own thread), keep-alive. Its
ground truth for the tests: GET /__count answers how many other requests it has served;
/__ paths are not counted (the agent's readiness probe uses one).
"""
import argparse
import queue
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
    slots = None  # --slots N: the Slots

    def do_GET(self):
        if self.path.startswith("/__"):
            with Handler.lock:
                served = Handler.served
            self.reply(str(served).encode() if self.path == "/__count" else b"ok")
            return
        if Handler.slots is not None:
            Handler.slots.serve()
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


class Slots:
    """N workers taking requests from one FIFO queue; each request holds a worker for the delay."""

    def __init__(self, n, delay_s, log_path):
        self.queue = queue.SimpleQueue()
        self.delay_s = delay_s
        self.log = open(log_path, "a", buffering=1) if log_path else None  # a line a write
        self.log_lock = threading.Lock()
        for _ in range(n):
            threading.Thread(target=self.work, daemon=True).start()

    def serve(self):
        done = threading.Event()
        self.queue.put(done)
        done.wait()

    def work(self):
        while True:
            done = self.queue.get()
            start = time.monotonic_ns()
            time.sleep(self.delay_s)
            done.set()
            held = time.monotonic_ns() - start
            if self.log:
                with self.log_lock:
                    self.log.write(f"{start} {held}\n")


class Server(ThreadingHTTPServer):
    # The listen backlog, which the constructor uses (setting it on the instance afterwards
    # does nothing): a search opens dozens of connections at once, and with socketserver's
    # default of 5 the SYNs beyond it are dropped and retried a second later.
    request_queue_size = 1024


def main():
    args = argparse.ArgumentParser(description="a catalog target for the integration tests")
    args.add_argument("host")
    args.add_argument("port", type=int)
    args.add_argument("delay_ms", type=int)
    args.add_argument("tls", nargs="*", metavar="CERT KEY", help="PEM files: serve HTTPS")
    args.add_argument("--slots", type=int, help="N workers, one FIFO queue")
    args.add_argument("--service-log", help="a line per request: its service's start and length, ns")
    a = args.parse_args()
    if len(a.tls) not in (0, 2) or (a.tls and a.slots):
        args.error("CERT KEY go together, and not with --slots")
    Handler.delay_s = a.delay_ms / 1000.0
    if a.slots:
        Handler.slots = Slots(a.slots, Handler.delay_s, a.service_log)
    server = Server((a.host, a.port), Handler)
    if a.tls:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(a.tls[0], a.tls[1])
        tls.set_alpn_protocols(["http/1.1"])
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    print(f"python target listening on {a.host}:{a.port} (delay {a.delay_ms} ms)", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
