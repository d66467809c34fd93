"""The wire part (issue 19): tcp;ofi_rxm against every peer a user would pick instead, on
loopback with every same-host shortcut off, everything busy-polling.

Peers, run alternately within each repetition at each size:
  ours / system  fabtests binaries over tcp;ofi_rxm with our library and the system's
  net            the system library's single-layer tcp RDM provider (`-p net`)
  ucx            UCX's ucx_perftest tag_lat / tag_bw with UCX_TLS=tcp (apt: ucx-utils)
  raw TCP        fabtests/bench/tcp_baseline ... spin (non-blocking recv/send, spinning)
and, through a real client, fabtests/bench/mpi-bench.sh: the same MPI ping-pong over the
ofi MTL with ours and with the system library, over Open MPI's tcp BTL and over pml ucx.
"""

import os
import re
import shutil
import subprocess
import sys

from . import fabric
from .runner import Ports, median, run_tool_pair

LAT_SIZES = [1, 64, 1024, 4096, 8192, 32768]
RATE_SIZES = [8, 64, 1024]                 # fi_tagged_bw / tag_bw message rate, 64 in flight
BW_SIZES = [4096, 8192, 16384, 32768]      # fi_bw vs the raw TCP stream
LIBS = ("ours", "system", "net")


def wire_env(env):
    """Every same-host shortcut off: this part measures the network path."""
    env = dict(env)
    env["FI_OFI_RXM_USE_CMA"] = "0"
    env["FI_OFI_RXM_USE_SHM"] = "0"
    return env


def iterations(quick):
    """Enough at small sizes that sub-microsecond steps and multi-M msgs/s resolve."""
    scale = 2 if quick else 1

    def count(kind, size):
        if kind == "bw":   # whole windows of 64
            return 64 * max(4, min(2000 // scale, (256 << 20) // scale // size // 64))
        return max(100, min(20000 // scale, (32 << 20) // scale // size))
    return count


def plan(quick):
    lat = LAT_SIZES if not quick else [1, 64, 1024, 8192, 32768]
    points = [("tcp;ofi_rxm", "rdm", bench, size)
              for bench in ("fi_msg_pingpong", "fi_tagged_pingpong") for size in lat]
    points += [("tcp;ofi_rxm", "rdm", "fi_tagged_bw", size) for size in RATE_SIZES]
    points += [("tcp;ofi_rxm", "rdm", "fi_bw", size) for size in BW_SIZES]
    return points


def run_raw(baseline_bin, kind, size, count, log):
    mode = "pingpong" if kind == "pp" else "stream"
    try:
        p = subprocess.run([baseline_bin, mode, str(size), str(count), "spin"],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        log.write(f"TIMEOUT tcp_baseline spin {mode} {size}\n")
        return None
    m = re.search(r"usec_xfer ([0-9.]+) MB_sec ([0-9.]+)", p.stdout)
    if p.returncode or not m:
        log.write(f"FAILED tcp_baseline spin {mode} {size}: {p.stderr}\n")
        return None
    return {"usec_xfer": float(m.group(1)), "MB_sec": float(m.group(2))}


def run_ucx(test, size, count, ports, log, tls="tcp"):
    """ucx_perftest over `tls` (tcp on lo, or sm): {usec_xfer, MB_sec, kmsg_sec} or None.
    tag_lat's overall latency is already half a round trip."""
    port = ports.take()
    env = dict(os.environ, UCX_TLS=tls)
    if tls == "tcp":
        env["UCX_NET_DEVICES"] = "lo"
    args = ["-t", test, "-s", str(size), "-n", str(count), "-p", str(port), "-f"]
    out = run_tool_pair(["ucx_perftest"] + args, ["ucx_perftest", "127.0.0.1"] + args,
                        port, log, 120, env=env)
    # -f: one line "iterations p50 avg overall bw_avg bw_overall rate_avg rate_overall"
    for line in (out or "").splitlines()[::-1]:
        cols = line.split()
        if len(cols) == 8 and cols[0].isdigit():
            return {"usec_xfer": float(cols[3]), "MB_sec": float(cols[5]),
                    "kmsg_sec": float(cols[7]) / 1000}
    if out is not None:
        log.write(f"FAILED ucx_perftest {test} {size}: no result line\n{out}\n")
    return None


def run_mpi(cfg, log, transports=None):
    """{transport: {size: (lat_us, rate_mps)}} from mpi-bench.sh (its default transports,
    or those named), or a reason."""
    script = os.path.join(cfg.srcdir, "fabtests", "bench", "mpi-bench.sh")
    env = dict(os.environ, top_builddir=cfg.build, top_srcdir=cfg.srcdir)
    if transports:
        env["MPI_BENCH_TRANSPORTS"] = " ".join(transports)
    try:
        p = subprocess.run(["sh", script, str(cfg.reps)], env=env, capture_output=True,
                           text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        log.write("TIMEOUT mpi-bench.sh\n")
        return "timeout"
    log.write(f"mpi-bench.sh ({p.returncode}):\n{p.stdout}{p.stderr}\n")
    if p.returncode == 77:
        return "skipped: Open MPI not installed"
    out = {}
    for line in p.stdout.splitlines():
        cols = line.split()
        if len(cols) == 4 and cols[1].isdigit():
            try:
                out.setdefault(cols[0], {})[int(cols[1])] = (float(cols[2]), float(cols[3]))
            except ValueError:
                pass
    return out or "failed"


def ensure_ucx(log):
    if shutil.which("ucx_perftest"):
        return True
    if os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-q", "ucx-utils"], capture_output=True)
    ok = shutil.which("ucx_perftest") is not None
    if not ok:
        log.write("ucx_perftest missing (apt-get install ucx-utils): UCX not measured\n")
    return ok


def run(cfg, bins, baseline_bin, log):
    """wire = {"fabric": results as fabric.measure (libs ours/system/net), "raw": {(kind,
    size): rec}, "ucx": {(test, size): rec}, "mpi": mpi-bench figures or a reason}."""
    count = iterations(cfg.quick)
    envs = {"ours": wire_env(cfg.env["ours"]), "system": wire_env(cfg.env["system"]),
            "net": wire_env(cfg.env["system"])}
    ucx = ensure_ucx(log)
    raw, ucx_runs = {}, {}
    ports = Ports(cfg.port_base + 500, 400)

    def beside(prov, bench, size):
        kind = "bw" if bench in fabric.BW_BENCHES else "pp"
        if bench in ("fi_msg_pingpong", "fi_bw"):
            raw.setdefault((kind, size), []).append(
                run_raw(baseline_bin, kind, size, count(kind, size), log))
        if ucx and bench in ("fi_tagged_pingpong", "fi_tagged_bw"):
            test = "tag_lat" if kind == "pp" else "tag_bw"
            ucx_runs.setdefault((test, size), []).append(
                run_ucx(test, size, count(kind, size), ports, log))

    points = [p for p in plan(cfg.quick) if p[2] in bins]
    results = fabric.measure(points, cfg.reps, bins, envs, Ports(cfg.port_base + 900, 100),
                             log, count, "spin", beside=beside, label="wire ", libs=LIBS,
                             prov_of=lambda lib, prov: "net" if lib == "net" else prov,
                             # net's server, bound to any address, cannot insert the
                             # client's address; bound to loopback it can
                             server_args=lambda lib: ["-s", "127.0.0.1"] if lib == "net" else [])
    keys = ("usec_xfer", "MB_sec", "kmsg_sec")
    med = lambda recs: ({k: median([r.get(k) for r in recs if r]) for k in keys}
                        if any(recs) else None)
    out = {"fabric": results,
           "raw": {k: med(v) for k, v in raw.items()},
           "ucx": {k: med(v) for k, v in ucx_runs.items()} if ucx else "not installed"}
    print("  wire: MPI (mpi-bench.sh)...", file=sys.stderr, flush=True)
    out["mpi"] = run_mpi(cfg, log)
    return out
