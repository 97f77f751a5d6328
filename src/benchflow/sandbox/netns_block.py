"""The cloud-metadata block of one network namespace, put in place with netlink (standard library only).

Whoever runs it needs ``CAP_NET_ADMIN`` over the namespace, and the sandbox's processes must not
have it, so that they cannot undo it. Two callers: the local sandbox's namespace holder, in the
sandbox's network namespace before ``slirp4netns`` attaches (:mod:`.local.holder`), and a
short-lived helper container that joins a docker sandbox's network (:mod:`.docker.metadata`),
where this file runs as ``python3 -c`` on the task image's interpreter (so it is written for any
python 3, without f-strings or annotations). It puts in place

- ``unreachable`` routes in the main table: ``169.254.0.0/16``, each link-local endpoint as a
  ``/32`` too (a network whose own subnet is link-local would otherwise win by a longer prefix),
  ``100.100.100.200/32`` and ``fd00:ec2::254/128``, at metric 1, ahead of any route added later
  at the default metric;
- with ``pin``: on every interface that is up, a permanent neighbour entry for each IPv4 endpoint
  that points at a MAC address no host has. A socket bound to an interface
  (``SO_BINDTODEVICE``, which needs no privilege) makes the kernel treat an address whose route is
  unreachable as on the link, and send there once ARP finds it; a bridge's host that holds the
  address itself would answer. That holds only on Ethernet interfaces with ARP that are no tap
  device, so any other interface fails the block: a user-mode stack behind a tap (``pasta``,
  ``slirp4netns``) takes every frame whatever its destination MAC. The local sandbox needs no pin:
  its ``slirp4netns`` answers ARP only for its own ``10.0.2.0/24`` addresses.

It then looks each endpoint up as ``ip route get`` does and fails unless each is unreachable.
As a program it prints one line, ``block <what>`` or ``error <why>``.
"""

import errno
import os
import socket
import struct
import sys

ENDPOINTS = ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
"""AWS/GCP/Azure/OCI/OpenStack instance metadata, ECS task metadata, Alibaba Cloud, AWS over IPv6."""
ROUTES = ("169.254.0.0/16", "169.254.169.254/32", "169.254.170.2/32", "100.100.100.200/32", "fd00:ec2::254/128")
NOBODY_MAC = b"\x02\x62\x66\x00\x00\x00"
"""A locally administered address nobody is given (the neighbour entries' target)."""

RTM_NEWROUTE, RTM_GETROUTE, RTM_NEWNEIGH = 24, 26, 28
NLM_F_REQUEST, NLM_F_ACK, NLM_F_REPLACE, NLM_F_CREATE = 1, 4, 0x100, 0x400
NLMSG_ERROR = 2
RTN_UNICAST, RTN_LOCAL, RTN_BLACKHOLE, RTN_UNREACHABLE, RTN_PROHIBIT = 1, 2, 6, 7, 8
RT_TABLE_MAIN, RTPROT_STATIC = 254, 4
RTA_DST, RTA_PRIORITY = 1, 6
NDA_DST, NDA_LLADDR = 1, 2
NUD_PERMANENT = 0x80
BLOCKED_TYPES = (RTN_BLACKHOLE, RTN_UNREACHABLE, RTN_PROHIBIT)
BLOCKED_ERRORS = (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EACCES, errno.EINVAL)


class BlockError(Exception):
    """The block could not be put in place (or does not hold afterwards). Not a BenchError: caught beside
    OSError in this module and reported as the refusal."""


def _attr(kind, data):
    size = 4 + len(data)
    return struct.pack("=HH", size, kind) + data + b"\0" * (-size % 4)


def _address(text):
    family = socket.AF_INET6 if ":" in text else socket.AF_INET
    return family, socket.inet_pton(family, text)


class Netlink(object):
    """One rtnetlink socket: a request, then its answer (an errno, or the kernel's reply)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        self.sock.bind((0, 0))
        self.seq = 0

    def close(self):
        self.sock.close()

    def request(self, kind, flags, body):
        """(0, reply) or (errno, None) for one request."""
        self.seq += 1
        self.sock.send(struct.pack("=LHHLL", 16 + len(body), kind, flags | NLM_F_REQUEST, self.seq, 0) + body)
        while True:
            data = self.sock.recv(65536)
            offset = 0
            while offset + 16 <= len(data):
                size, mtype, _, seq, _ = struct.unpack_from("=LHHLL", data, offset)
                if seq == self.seq:
                    if mtype == NLMSG_ERROR:
                        return -struct.unpack_from("=i", data, offset + 16)[0], None
                    return 0, data[offset:offset + size]
                offset += max(16, (size + 3) & ~3)

    def add_unreachable(self, route):
        text, length = route.split("/")
        family, raw = _address(text)
        body = struct.pack("=BBBBBBBBL", family, int(length), 0, 0, RT_TABLE_MAIN, RTPROT_STATIC, 0,
                           RTN_UNREACHABLE, 0) + _attr(RTA_DST, raw) + _attr(RTA_PRIORITY, struct.pack("=L", 1))
        code, _ = self.request(RTM_NEWROUTE, NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE, body)
        return code

    def pin(self, address, ifindex):
        family, raw = _address(address)
        body = struct.pack("=BBHiHBB", family, 0, 0, ifindex, NUD_PERMANENT, 0, 0) + \
            _attr(NDA_DST, raw) + _attr(NDA_LLADDR, NOBODY_MAC)
        code, _ = self.request(RTM_NEWNEIGH, NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE, body)
        return code

    def lookup(self, address):
        """The route type ``address`` resolves to (``RTN_*``), or -errno when there is none."""
        family, raw = _address(address)
        body = struct.pack("=BBBBBBBBL", family, len(raw) * 8, 0, 0, 0, 0, 0, 0, 0) + _attr(RTA_DST, raw)
        code, reply = self.request(RTM_GETROUTE, 0, body)
        if code:
            return -code
        return struct.unpack_from("=B", reply, 16 + 7)[0]


def interfaces():
    """(name, index, why not) of every interface of this namespace that is up, loopback aside; ``why not``
    is None for an Ethernet interface with ARP that is no tun/tap device (``/sys/class/net``)."""
    found = []
    for index, name in socket.if_nameindex():
        folder = "/sys/class/net/%s/" % name
        try:
            with open(folder + "type") as handle:
                kind = int(handle.read().strip())
            with open(folder + "flags") as handle:
                flags = int(handle.read().strip(), 16)
        except (OSError, ValueError):
            found.append((name, index, "no /sys/class/net entry to say what it is"))
            continue
        if kind == 772 or not flags & 0x1:  # ARPHRD_LOOPBACK; down, and only NET_ADMIN brings it up
            continue
        why = None
        if kind != 1:
            why = "not an Ethernet interface (type %d)" % kind
        elif flags & 0x80:
            why = "an interface without ARP"  # IFF_NOARP (ipvlan l3): pinned entries would not be used
        elif os.path.exists(folder + "tun_flags"):
            why = "a tap device of a user-mode network stack, which takes every frame whatever its MAC"
        found.append((name, index, why))
    return found


def holds(link=None):
    """Endpoints that do not resolve to a blocked route (empty when the block holds)."""
    link = link or Netlink()
    open_ = []
    for address in ENDPOINTS:
        kind = link.lookup(address)
        if not (kind in BLOCKED_TYPES or (kind < 0 and -kind in BLOCKED_ERRORS)):
            open_.append("%s (route type %d)" % (address, kind) if kind >= 0 else
                         "%s (%s)" % (address, os.strerror(-kind)))
    return open_


def install(pin=False):
    """Put the block in place in this process's network namespace; returns what it did.

    Raises:
        BlockError: a route could not be added, an entry not pinned, or an endpoint stays reachable.
    """
    link = Netlink()
    try:
        routes = []
        for route in ROUTES:
            code = link.add_unreachable(route)
            if code and ":" in route and code in (errno.EAFNOSUPPORT, errno.EACCES, errno.EOPNOTSUPP):
                continue  # no IPv6 in this namespace: the lookup below shows nothing routes there
            if code:
                raise BlockError("unreachable route %s: %s" % (route, os.strerror(code)))
            routes.append(route)
        pinned = []
        for name, index, why in interfaces() if pin else ():
            if why is not None:
                raise BlockError("%s is %s: the endpoints' neighbour entries cannot be pinned" % (name, why))
            for address in ENDPOINTS:
                if ":" in address:
                    continue  # no IPv6 on the bridges this is for; its route is unreachable all the same
                code = link.pin(address, index)
                if code:
                    raise BlockError("neighbour entry %s on %s: %s" % (address, name, os.strerror(code)))
            pinned.append(name)
        open_ = holds(link)
        if open_:
            raise BlockError("still routed after the block: " + ", ".join(open_))
    finally:
        link.close()
    done = "unreachable routes " + " ".join(routes)
    return done + ("; neighbour entries pinned on " + " ".join(pinned) if pinned else "")


def main(argv):
    try:
        print("block " + install(pin="--pin" in argv))
    except (BlockError, OSError) as exc:
        print("error " + str(exc).splitlines()[0] if str(exc) else "error " + type(exc).__name__)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
