#!/usr/bin/env python3
"""Writes the seeds of the h2 and h3 fuzz targets (tests/fuzz/corpus/h2/, h3/).
h2: what a client sends after the connection preface, frame by frame; HPACK literals without
Huffman, plus a few indexed fields.
h3: records of stream events (see tests/fuzz/h3_fuzz.cpp) carrying the client's unidirectional
streams and HTTP/3 frames with QPACK field sections.
Run from anywhere; the seeds are committed, this script says how they were made."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

DATA, HEADERS, PRIORITY, RST, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 2, 3, 4, 6, 7, 8, 9
END_STREAM, END_HEADERS, ACK, PADDED, PRIO = 0x1, 0x4, 0x1, 0x8, 0x20


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def integer(value, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def literal(name, value, indexed=False):
    """A literal field with a new name, without indexing (or with incremental indexing)."""
    name, value = name.encode(), value.encode()
    head = b"\x40" if indexed else b"\x00"
    return head + integer(len(name), 7) + name + integer(len(value), 7) + value


def request(method="GET", path="/", extra=()):
    block = literal(":method", method) + literal(":scheme", "http") + literal(":authority", "fuzz")
    block += literal(":path", path)
    for name, value in extra:
        block += literal(name, value)
    return block


def settings(*pairs):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def get(stream, path="/", extra=(), method="GET"):
    return frame(HEADERS, END_HEADERS | END_STREAM, stream, request(method, path, extra))


seeds = {
    "get": settings() + get(1),
    "head": settings() + get(1, method="HEAD"),
    "stats": settings() + get(1, "/__loadlab/stats"),
    "knobs": settings() + get(1, extra=[("x-loadlab-status", "503"), ("x-loadlab-body-size", "5000"),
                                         ("x-loadlab-delay-ms", "uniform:1-20"), ("x-loadlab-work-us", "100")]),
    "bad-knob": settings() + get(1, extra=[("x-loadlab-delay-ms", "abc")]),
    "post-body": settings() + frame(HEADERS, END_HEADERS, 1, request("POST", "/up"))
    + frame(DATA, 0, 1, b"a" * 100) + frame(DATA, END_STREAM, 1, b"b" * 100),
    "post-413": settings() + frame(HEADERS, END_HEADERS, 1, request("POST", "/up"))
    + frame(DATA, 0, 1, b"a" * 800) + frame(DATA, END_STREAM, 1, b"b" * 800),
    "headers-431": settings() + get(1, extra=[("x-big", "v" * 1100)]),
    # One indexed entry repeated: a header list far over the limit from a small block.
    "header-flood": settings() + frame(HEADERS, END_HEADERS | END_STREAM, 1,
                                       request() + literal("x-flood", "f" * 100, indexed=True) + b"\xbe" * 60),
    "continuation": settings() + frame(HEADERS, END_STREAM, 1, request()[:10])
    + frame(CONTINUATION, 0, 1, request()[10:20]) + frame(CONTINUATION, 0, 1, request()[20:30])
    + frame(CONTINUATION, END_HEADERS, 1, request()[30:]),
    "many-delayed": settings() + b"".join(get(i, extra=[("x-loadlab-delay-ms", "exp:5")]) for i in range(1, 42, 2)),
    "rst-mid-delay": settings() + get(1, extra=[("x-loadlab-delay-ms", "50")]) + get(3, extra=[("x-loadlab-delay-ms", "10")])
    + frame(RST, 0, 1, struct.pack(">I", 8)) + get(5) + get(7, extra=[("x-loadlab-delay-ms", "5")]),
    "flow-blocked": settings((4, 10)) + get(1, extra=[("x-loadlab-body-size", "1000")])
    + frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 100)) + frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 100)),
    "ping-priority-goaway": settings() + frame(PING, 0, 0, b"12345678") + frame(PRIORITY, 0, 3, struct.pack(">IB", 1, 16))
    + get(1) + frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)),
    "trailers": settings() + frame(HEADERS, END_HEADERS, 1, request("POST", "/t")) + frame(DATA, 0, 1, b"x" * 10)
    + frame(HEADERS, END_HEADERS | END_STREAM, 1, literal("x-trailer", "t")),
    "indexed": settings() + frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\x82\x86\x84\x41\x04fuzz")
    + frame(HEADERS, END_HEADERS | END_STREAM, 3, b"\x82\x86\x84\xbe"),
    "padded-priority": settings() + frame(HEADERS, END_HEADERS | END_STREAM | PADDED | PRIO, 1,
                                          b"\x03" + struct.pack(">IB", 0, 200) + request() + b"\x00" * 3),
    "incomplete": settings() + frame(HEADERS, END_HEADERS, 1, request("POST", "/slow")),
    "settings-ack": settings((1, 0), (3, 5), (5, 16384)) + frame(SETTINGS, ACK, 0) + get(1) + get(3),
}


# --- HTTP/3 ----------------------------------------------------------------------------------


def varint(v):
    if v < 64:
        return bytes([v])
    if v < 16384:
        return struct.pack(">H", 0x4000 | v)
    return struct.pack(">I", 0x80000000 | v)


def h3_frame(kind, payload):
    return varint(kind) + varint(len(payload)) + payload


def qstring(text, prefix_bits=7, first=0):
    text = text.encode() if isinstance(text, str) else text
    return integer(len(text), prefix_bits, first) + text


def qliteral(name, value):
    """A field line with a literal name (001NHxxx), no Huffman."""
    return qstring(name, 3, 0x20) + qstring(value)


def qrequest(method=0xD1, path="/", extra=(), prefix=b"\x00\x00"):
    """A field section: static :method (0xd1 GET, 0xd2 HEAD, 0xd4 POST), :scheme https,
    :authority by static name reference, :path literal (or static "/")."""
    block = prefix + bytes([method, 0xD7]) + b"\x50" + qstring("fuzz")
    block += b"\xc1" if path == "/" else b"\x51" + qstring(path)
    for name, value in extra:
        block += qliteral(name, value)
    return block


STREAM, FIN, RESET, STOP = 0, 1, 2, 3
UNI, FLUSH = 4, 8
CONTROL, ENCODER, DECODER = 0, 1, 2  # sel of the client's uni streams 2, 6, 10


def record(op, sel, body=b"", code=None):
    if op & 3 in (STREAM, FIN):
        return bytes([op, sel]) + struct.pack("<H", len(body)) + body
    return bytes([op, sel, code or 0])


def h3_open(settings=((0x01, 4096), (0x07, 100))):
    """The client's control stream with its SETTINGS, and its QPACK streams."""
    payload = b"".join(varint(k) + varint(v) for k, v in settings)
    return (record(STREAM | UNI, CONTROL, b"\x00" + h3_frame(0x04, payload)) + record(STREAM | UNI, ENCODER, b"\x02")
            + record(STREAM | UNI, DECODER, b"\x03"))


def h3_get(sel, path="/", extra=(), method=0xD1, body=b"", fin=True):
    data = h3_frame(0x01, qrequest(method, path, extra)) + (h3_frame(0x00, body) if body else b"")
    return record((FIN if fin else STREAM) | FLUSH, sel, data)


def split_bytes(sel, data):
    return b"".join(record(STREAM, sel, data[i:i + 1]) for i in range(len(data))) + record(FIN | FLUSH, sel)


get_bytes = h3_frame(0x01, qrequest())
# The encoder stream: capacity 4096, then an entry "x-loadlab-status: 503" with a literal name.
encoder_insert = integer(4096, 5, 0x20) + qstring("x-loadlab-status", 5, 0x40) + qstring("503")
# A request using it: Required Insert Count 1 (encoded 2 with 128 entries), Base 1, dynamic index 0.
dynamic_request = h3_frame(0x01, qrequest(prefix=b"\x02\x00") + b"\x80")

h3_seeds = {
    "get": h3_open() + h3_get(0),
    "head": h3_open() + h3_get(0, method=0xD2),
    "stats": h3_open() + h3_get(0, "/__loadlab/stats"),
    "knobs": h3_open() + h3_get(0, extra=[("x-loadlab-status", "503"), ("x-loadlab-body-size", "5000"),
                                         ("x-loadlab-delay-ms", "uniform:1-20"), ("x-loadlab-work-us", "100")]),
    "bad-knob": h3_open() + h3_get(0, extra=[("x-loadlab-delay-ms", "abc")]),
    "post-body": h3_open() + h3_get(0, "/up", method=0xD4, body=b"a" * 200),
    "post-413": h3_open() + h3_get(0, "/up", method=0xD4, body=b"a" * 1500),
    "headers-431": h3_open() + h3_get(0, extra=[("x-big", "v" * 1100)]),
    "split-bytes": h3_open() + split_bytes(0, get_bytes),
    "many-delayed": h3_open() + b"".join(h3_get(i, extra=[("x-loadlab-delay-ms", "exp:5")]) for i in range(20)),
    "reset-mid-delay": h3_open() + h3_get(0, extra=[("x-loadlab-delay-ms", "50")]) + h3_get(1, extra=[("x-loadlab-delay-ms", "10")])
    + record(RESET, 0, code=0x0C) + record(STOP, 1, code=0x0C) + h3_get(2),
    # A response held at the client's stream credit (256 KiB), then STOP_SENDING on it.
    "stop-sending": h3_open() + h3_get(0, extra=[("x-loadlab-body-size", "600000")]) + record(STOP | FLUSH, 0, code=0x0C),
    "incomplete": h3_open() + h3_get(0, "/slow", method=0xD4, fin=False),
    "dynamic-table": h3_open() + record(STREAM | UNI | FLUSH, ENCODER, encoder_insert) + record(FIN | FLUSH, 0, dynamic_request),
    "dynamic-blocked": h3_open() + record(FIN | FLUSH, 0, dynamic_request) + record(STREAM | UNI | FLUSH, ENCODER, encoder_insert),
    "trailers": h3_open() + record(FIN | FLUSH, 0, h3_frame(0x01, qrequest(0xD4, "/t")) + h3_frame(0x00, b"x" * 10)
                                   + h3_frame(0x01, b"\x00\x00" + qliteral("x-trailer", "t"))),
    "goaway-from-client": h3_open() + h3_get(0) + record(STREAM | UNI | FLUSH, CONTROL, h3_frame(0x07, varint(0))),
    "unknown-frame-types": h3_open() + record(FIN | FLUSH, 0, h3_frame(0x21, b"xx") + get_bytes + h3_frame(0x2F, b"")),
    "control-without-settings": record(STREAM | UNI | FLUSH, CONTROL, b"\x00" + h3_frame(0x07, varint(0))) + h3_get(0),
    "large-body": h3_open() + h3_get(0, extra=[("x-loadlab-body-size", "600000")]),
}

for folder, corpus in (("h2", seeds), ("h3", h3_seeds)):
    out = os.path.join(HERE, "corpus", folder)
    os.makedirs(out, exist_ok=True)
    for name, data in corpus.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"{len(corpus)} seeds in {out}")
