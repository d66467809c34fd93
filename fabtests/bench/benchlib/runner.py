"""Running benchmark processes: which library a process loads, client/server pairs, timeouts.

Shared by the host part and the part that runs inside the Soft-RoCE VM.
"""

import os
import re
import statistics
import subprocess
import sys
import time

SYSTEM_LIB = "/usr/lib/x86_64-linux-gnu/libfabric.so.1"
RUN_TIMEOUT = 60          # seconds one client/server pair may take on the host


class Ports:
    """Hands out fresh port triples so no run waits for a TIME_WAIT of the previous one."""

    def __init__(self, base, span=1000):
        self.base, self.next, self.limit = base, base, base + span

    def take(self):
        if self.next + 3 > self.limit:
            self.next = self.base
        p = self.next
        self.next += 3
        return p


def lib_env(which, build, against=None):
    """Environment loading our library (build/.libs first) or the system's (no path).
    against: another build tree of ours that stands in for the system library (bench
    --against: an A/B of two of our builds, e.g. before/after a change)."""
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env.pop("FI_PROVIDER", None)
    # rxm's same-host switch to shm (on by default) stays off outside the same-host part
    # (samehost.py turns it on): the loopback tables, the scale test's memory per peer and
    # the VM keep measuring the core path they are about, comparable with earlier runs.
    env["FI_OFI_RXM_USE_SHM"] = "0"
    if which == "ours":
        env["LD_LIBRARY_PATH"] = os.path.join(build, ".libs")
    elif against:
        env["LD_LIBRARY_PATH"] = os.path.join(against, ".libs")
    return env


def real_binary(build, rel):
    """The ELF binary, not libtool's wrapper script (which would force our library)."""
    d, name = os.path.split(os.path.join(build, rel))
    for cand in (os.path.join(d, ".libs", name), os.path.join(d, ".libs", "lt-" + name),
                 os.path.join(d, name)):
        if os.path.isfile(cand):
            with open(cand, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    return cand
    return None


def resolved_libfabric(binary, env):
    out = subprocess.run(["ldd", binary], env=env, capture_output=True, text=True).stdout
    m = re.search(r"libfabric\.so\.1 => (\S+)", out)
    return os.path.realpath(m.group(1)) if m else "?"


def check_libraries(binary, envs, build, against=None):
    """Honesty check: each side must really load the library it claims to measure.
    Returns {lib: resolved path} or exits."""
    resolved = {lib: resolved_libfabric(binary, env) for lib, env in envs.items()}
    if against:
        if not resolved["system"].startswith(os.path.realpath(against)):
            sys.exit(f"bench: with --against's .libs first the binaries load "
                     f"{resolved['system']}")
    elif resolved["system"] != os.path.realpath(SYSTEM_LIB):
        sys.exit(f"bench: without LD_LIBRARY_PATH the binaries load {resolved['system']}, "
                 f"not the system's {SYSTEM_LIB} (is an rpath set?)")
    if not resolved["ours"].startswith(build):
        sys.exit(f"bench: with our .libs first the binaries load {resolved['ours']}")
    return resolved


def parse_perf(text):
    """The last record of a fabtests -m output: dict of MB_sec, usec_xfer, Mxfers_sec."""
    rec = {}
    for key in ("MB_sec", "usec_xfer", "Mxfers_sec"):
        found = re.findall(rf"{key}: ([0-9.]+)", text)
        if not found:
            return None
        rec[key] = float(found[-1])
    return rec


def run_pair(binary, args, env, ports, log, server_addr="127.0.0.1", timeout=RUN_TIMEOUT,
             server_args=()):
    """One fabtests server/client pair; returns the client's figures or None.
    The client retries the control connection itself, so both start at once."""
    port = ports.take()
    common = list(args) + ["-m", f"-E={port + 2}", "-T", str(max(20, timeout // 3))]
    server_cmd = [binary] + common + ["-B", str(port)] + list(server_args)
    if server_addr != "127.0.0.1":
        server_cmd += ["-s", server_addr]
    client_cmd = [binary] + common + ["-P", str(port), server_addr]
    server = subprocess.Popen(server_cmd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        client = subprocess.run(client_cmd, env=env, capture_output=True, text=True,
                                timeout=timeout)
        sout, _ = server.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()
        log.write(f"TIMEOUT: {' '.join(client_cmd)}\n")
        return None
    rec = parse_perf(client.stdout) if client.returncode == 0 else None
    if rec is None or server.returncode != 0:
        log.write(f"FAILED ({client.returncode}/{server.returncode}): {' '.join(client_cmd)}\n"
                  f"{client.stdout}{client.stderr}--- server:\n{sout}\n")
        return None
    return rec


def listening(port):
    """True when some socket listens on TCP port `port` (IPv4 or IPv6)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def run_tool_pair(server_cmd, client_cmd, port, log, timeout, env=None, partial=False):
    """A server/client pair of a tool whose client does not retry its connection
    (ibv_rc_pingpong, perftest): the client starts once the server listens on `port`.
    Returns the client's stdout or None; with partial=True, what the client printed before
    it failed or timed out (a size sweep keeps the sizes it finished)."""
    server = subprocess.Popen(server_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=env)
    deadline = time.time() + timeout
    while not listening(port) and server.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    try:
        client = subprocess.run(client_cmd, capture_output=True, text=True, env=env,
                                timeout=max(1, deadline - time.time()))
        sout, _ = server.communicate(timeout=max(1, deadline - time.time()))
    except subprocess.TimeoutExpired as e:
        server.kill()
        server.communicate()
        log.write(f"TIMEOUT: {' '.join(client_cmd)}\n")
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
        return out if partial else None
    if client.returncode or server.returncode:
        log.write(f"FAILED ({client.returncode}/{server.returncode}): {' '.join(client_cmd)}\n"
                  f"{client.stdout}{client.stderr}--- server:\n{sout}\n")
        return client.stdout if partial else None
    return client.stdout


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
