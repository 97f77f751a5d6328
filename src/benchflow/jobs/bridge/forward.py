"""Inside the sandbox: listen on 127.0.0.1 (a free port) and carry every connection to the gateway.

Stdlib only (Python 3.6+). Run as ``python3 -c SOURCE MODE TARGET``; prints ``ready PORT`` once
listening, then:

- ``unix SOCKET``: each connection is relayed to the gateway's unix socket (a read-only mount).
- ``stdio -``: connections are multiplexed over stdin/stdout to the host, which connects each one
  to the gateway (see ``benchflow.jobs.bridge.mux``). A frame is a 9-byte header — kind (1 OPEN,
  2 DATA, 3 CLOSE), connection id, payload length, big-endian ``!BII`` — then the payload.
  CLOSE means "this side is done with the connection"; a frame for an unknown id is dropped.
"""
import asyncio
import os
import socket
import struct
import sys
import threading

MODE, TARGET = sys.argv[1], sys.argv[2]
OPEN, DATA, CLOSE = 1, 2, 3
HEADER = struct.Struct("!BII")


def listen():
    # IPPROTO_TCP, so asyncio turns Nagle off on the accepted sockets (it skips proto 0)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    sys.stdout.write("ready %d\n" % listener.getsockname()[1])
    sys.stdout.flush()
    return listener


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except Exception:  # noqa: BLE001 - a side hung up or reset mid-copy: this connection ends, others go on
        pass
    finally:
        try:
            writer.close()
        except Exception:  # noqa: BLE001 - the transport is already gone: nothing left to close
            pass


async def relay(client_reader, client_writer):
    try:
        up_reader, up_writer = await asyncio.open_unix_connection(TARGET)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, up_writer), pipe(up_reader, client_writer))


def serve_unix(listener):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(asyncio.start_server(relay, sock=listener))
    loop.run_forever()


def serve_stdio(listener):
    out, inp = sys.stdout.buffer, sys.stdin.buffer
    lock = threading.Lock()
    conns = {}

    def send(kind, cid, data=b""):
        with lock:
            out.write(HEADER.pack(kind, cid, len(data)) + data)
            out.flush()

    def client_to_host(cid, sock):
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                send(DATA, cid, data)
        except OSError:
            pass
        conns.pop(cid, None)
        send(CLOSE, cid)
        sock.close()

    def host_to_clients():
        while True:
            head = inp.read(HEADER.size)
            if len(head) < HEADER.size:
                break
            kind, cid, size = HEADER.unpack(head)
            data = inp.read(size) if size else b""
            if len(data) < size:
                break
            sock = conns.get(cid)
            if sock is None:
                continue
            try:
                if kind == DATA:
                    sock.sendall(data)
                elif kind == CLOSE:
                    conns.pop(cid, None)
                    sock.shutdown(socket.SHUT_RDWR)  # wakes its reader, which closes it
            except OSError:
                pass
        os._exit(0)  # the host is gone: so is the bridge

    threading.Thread(target=host_to_clients, daemon=True).start()
    cid = 0
    while True:
        sock, _ = listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        cid += 1
        conns[cid] = sock
        send(OPEN, cid)
        threading.Thread(target=client_to_host, args=(cid, sock), daemon=True).start()


(serve_stdio if MODE == "stdio" else serve_unix)(listen())
