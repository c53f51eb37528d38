"""Half-sent requests to `strata view`, from a process of their own (tests/view_live.rs).

Usage: half_open.py HOST PORT N RATE WAIT. Opens N connections at RATE a second, sends each
the head of a request less the blank line that ends it, and watches each until the server ends
it, or until WAIT seconds after the last was opened. Prints one line of JSON: how many were
opened, refused with a 503, closed with no answer, reset, answered otherwise or still open,
and the median and longest time from a head's sending to its connection's end, per kind.
Python's standard library only, so CI needs nothing but python3.
"""
import errno, json, selectors, socket, sys, time

host, port, n, rate, wait = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
# A request's head less the blank line that ends it: the server waits for the rest.
head = b"GET /api/watermark?stream=probe HTTP/1.1\r\nHost: x\r\n"
sel = selectors.DefaultSelector()
live = {}  # fd -> [socket, sent at (None while connecting), bytes answered]
seen = {"opened": 0, "connect_failed": 0, "refused_503": 0, "closed_silent": 0, "reset": 0, "other": 0}
closes = {"refused_503": [], "closed_silent": [], "reset": [], "other": []}
other = []

def end(fd, how):
    sock, sent, got = live.pop(fd)
    sel.unregister(sock)
    sock.close()
    if got.startswith(b"HTTP/1.1 503 "):
        how = "refused_503"
    elif got:
        how = "other"
        if len(other) < 3:
            other.append(got[:200].decode("latin-1"))
    seen[how] += 1
    closes[how].append(time.monotonic() - sent)

def step(timeout):
    for key, _ in sel.select(timeout):
        fd = key.fd
        entry = live[fd]
        sock = entry[0]
        if entry[1] is None:
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                live.pop(fd)
                sel.unregister(sock)
                sock.close()
                seen["connect_failed"] += 1
                continue
            entry[1] = time.monotonic()
            try:
                sock.send(head)
            except OSError:
                end(fd, "reset")
                continue
            sel.modify(sock, selectors.EVENT_READ)
            continue
        try:
            data = sock.recv(4096)
        except ConnectionResetError:
            end(fd, "reset")
            continue
        except BlockingIOError:
            continue
        if data:
            entry[2] += data[:1024]
        else:
            end(fd, "closed_silent")

start = time.monotonic()
for i in range(n):
    due = start + i / rate
    while (now := time.monotonic()) < due:
        step(due - now)
    step(0)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    err = sock.connect_ex((host, port))
    if err not in (0, errno.EINPROGRESS):
        sock.close()
        seen["connect_failed"] += 1
        continue
    live[sock.fileno()] = [sock, None, b""]
    sel.register(sock, selectors.EVENT_WRITE)
    seen["opened"] += 1
opened_s = time.monotonic() - start
until = time.monotonic() + wait
while live and (left := until - time.monotonic()) > 0:
    step(min(left, 0.1))
seen["still_open"] = len(live)
seen["opened_s"] = opened_s
seen["close_s_max"] = {k: max(v) for k, v in closes.items() if v}
seen["close_s"] = {k: sorted(v)[len(v) // 2] for k, v in closes.items() if v}
seen["other_answers"] = other
print(json.dumps(seen))
