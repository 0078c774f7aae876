#!/usr/bin/env python3
"""A small TCP proxy in front of LocalStack that the console tests can pause and resume.

Why: the Metrics tab must show a gap where the gateway could not take a sample. The sqs-backend
gateway talks to LocalStack through this proxy (its `endpoint_url`); pausing closes the listening
socket and every forwarded connection, so the gateway's backend calls fail (connection refused)
until it resumes on the same port.

    proxy.py --listen PORT --target HOST:PORT --control PORT [--log FILE]

The control port takes one line per connection, `pause`, `resume` or `status`, and answers `ok
<state>` once done.
"""
import argparse
import socket
import sys
import threading
import time


class Proxy:
    def __init__(self, port, target):
        self.port = port
        self.target = target
        self.lock = threading.Lock()
        self.listener = None
        self.pairs = set()
        self.paused = False

    # --- listening

    def listen(self):
        for _ in range(50):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", self.port))
            except OSError:
                sock.close()
                time.sleep(0.1)
                continue
            sock.listen(128)
            sock.settimeout(0.2)
            self.listener = sock
            threading.Thread(target=self.accept_loop, args=(sock,), daemon=True).start()
            return
        raise OSError(f"cannot listen on 127.0.0.1:{self.port} again")

    def accept_loop(self, sock):
        while True:
            with self.lock:
                if self.listener is not sock:
                    break
            try:
                client, _ = sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            threading.Thread(target=self.connect, args=(client,), daemon=True).start()

    def connect(self, client):
        try:
            upstream = socket.create_connection(self.target, timeout=5)
            upstream.settimeout(None)
        except OSError:
            client.close()
            return
        # Forward each write at once: without this, Nagle's algorithm and delayed ACKs add about
        # 40 ms to every request and answer split in two writes.
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = (client, upstream)
        with self.lock:
            if self.paused:
                client.close()
                upstream.close()
                return
            self.pairs.add(pair)
        threading.Thread(target=self.pump, args=(client, upstream, pair), daemon=True).start()
        threading.Thread(target=self.pump, args=(upstream, client, pair), daemon=True).start()

    def pump(self, source, sink, pair):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in pair:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            with self.lock:
                self.pairs.discard(pair)

    # --- control

    def pause(self):
        with self.lock:
            self.paused = True
            listener, self.listener = self.listener, None
            pairs, self.pairs = list(self.pairs), set()
        if listener is not None:
            listener.close()
        for pair in pairs:
            for sock in pair:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def resume(self):
        with self.lock:
            if not self.paused:
                return
            self.paused = False
        self.listen()


def serve_control(proxy, port, log):
    control = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    control.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    control.bind(("127.0.0.1", port))
    control.listen(8)
    while True:
        conn, _ = control.accept()
        with conn:
            line = conn.makefile("r").readline().strip()
            if line == "pause":
                proxy.pause()
            elif line == "resume":
                proxy.resume()
            elif line != "status":
                conn.sendall(b"error unknown command\n")
                continue
            now = "paused" if proxy.paused else "forwarding"
            print(f"{time.strftime('%H:%M:%S')} {line}: {now}", file=log, flush=True)
            conn.sendall(f"ok {now}\n".encode())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--control", type=int, required=True)
    parser.add_argument("--log")
    args = parser.parse_args()
    host, _, port = args.target.rpartition(":")
    proxy = Proxy(args.listen, (host, int(port)))
    proxy.listen()
    log = open(args.log, "a") if args.log else sys.stdout
    print(f"proxy 127.0.0.1:{args.listen} -> {args.target}, control on {args.control}", file=log, flush=True)
    serve_control(proxy, args.control, log)


if __name__ == "__main__":
    main()
