"""Inside the sandbox: listen on 127.0.0.1:PORT and forward every connection to the gateway's unix socket.

Stdlib only (Python 3.6+). Usage: python3 forward.py SOCKET PORT — prints "ready" once listening.
"""
import asyncio
import sys

SOCKET, PORT = sys.argv[1], int(sys.argv[2])


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except Exception:
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def handle(client_reader, client_writer):
    try:
        up_reader, up_writer = await asyncio.open_unix_connection(SOCKET)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, up_writer), pipe(up_reader, client_writer))


def main():
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", PORT))
    print("ready", flush=True)
    try:
        loop.run_forever()
    finally:
        server.close()


main()
