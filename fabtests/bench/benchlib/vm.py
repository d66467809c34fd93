"""The Soft-RoCE part: verbs and verbs;ofi_rxm, ours vs system, inside the rxe VM.

The host side boots fabtests/scripts/rxe-vm with this same bench script in guest mode; the
guest measures and writes its figures as JSON into a file under /tmp (the VM shares the
host's filesystem), which the host side reads back. Only ratios measured in the same VM mean
anything: the VM runs under TCG emulation, many times slower than the host.

Latency comes from Debian's own /usr/bin/fi_pingpong (libfabric-bin), the same binary for
both libraries: our fabtests binaries cannot run on the system library's verbs provider (its
CQs refuse FI_CQ_FORMAT_TAGGED: fi_cq_open -FI_ENOSYS; its rxm endpoint refuses fi_enable
with -FI_EINVAL), and one fi_pingpong process pair sweeps all its sizes (`-S all`: powers of
two and 1.5x, reported from 1 B to 4 MiB), which keeps the run affordable under emulation
where starting a pair costs 10-30 s. The library that goes first alternates between
repetitions (not between sizes: a sweep is one process pair).

Beside the libraries, the limit of the emulated wire: ibv_rc_pingpong (ibverbs-utils) and
perftest's ib_send_lat / ib_send_bw on rxe0 at LIMIT_SIZES, once per repetition (one process
pair per size and tool).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

from .runner import check_libraries, lib_env, median, run_tool_pair

VM_ADDR = "192.0.2.1"        # rxe0's netdev inside the VM (see rxe-vm)
RXE_DEV = "rxe0"
GID_INDEX = "1"              # the IPv4-mapped GID of rxe0 (index 0 is the IPv6 link-local)
VM_PAIR_TIMEOUT = 90         # seconds one limit tool pair may take under emulation
VM_SWEEP_TIMEOUT = 300       # seconds one fi_pingpong -S all pair may take (system: ~80 s)
TOOL_PACKAGES = {"ib_send_lat": "perftest", "ib_send_bw": "perftest",
                 "ibv_rc_pingpong": "ibverbs-utils", "fi_pingpong": "libfabric-bin"}
MIB_PER_MB = 1048576 / 1e6   # perftest prints MiB/s; fabtests prints 10^6 bytes/s


# The sizes of fi_pingpong -S all (powers of two and 1.5x) that the tables report: 1 B-4 MiB
# (it also runs 0 B and 6 MiB). The first sizes of a sweep carry its warm-up.
SWEEP_SIZES = sorted({1 << n for n in range(23)} | {3 << n for n in range(21)})
# The physical-limit tools run one pair per size: a few sizes around the rxm protocols.
LIMIT_SIZES = [1, 64, 65536, 1 << 20]
# The system's rxm sizes its core CQs tx+rx size times FI_UNIVERSE_SIZE (default 256):
# 65536 entries, more than rxe allows, so its fi_enable fails ("Unable to create verbs CQ").
# Both libraries get the same smaller universe.
VM_ENV = {"FI_UNIVERSE_SIZE": "64"}
# (provider, endpoint type, fi_pingpong -m mode, the bench name the report files it under)
PINGPONGS = [("verbs;ofi_rxm", "rdm", "msg", "fi_msg_pingpong"),
             ("verbs;ofi_rxm", "rdm", "tagged", "fi_tagged_pingpong"),
             ("verbs", "msg", "msg", "fi_msg_pingpong")]
FI_PINGPONG = "/usr/bin/fi_pingpong"


def sweep_iterations(quick):
    return 5 if quick else 10


def limit_iterations(kind, size, quick):
    """For ibv_rc_pingpong / perftest: bounded in bytes, like the library runs."""
    if kind == "bw":
        return max(16, min(256, (32 << 20) // size))
    return max(10, min(100 if not quick else 50, (4 << 20) // size))


# ------------------------------------------------------------------ host side

def ensure_tools():
    """perftest and ibverbs-utils on the host (the guest runs the host's user space).
    Returns a reason string when they cannot be had."""
    missing = sorted({pkg for tool, pkg in TOOL_PACKAGES.items() if not shutil.which(tool)})
    if not missing:
        return None
    if os.geteuid() != 0:
        return f"missing {' '.join(missing)} and not root to install them"
    p = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends"] + missing,
                       capture_output=True, text=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if p.returncode:
        return f"apt-get install {' '.join(missing)} failed: {p.stderr.strip()[-200:]}"
    return None


def run_from_host(cfg, srcdir, timeout_s):
    """Boots the VM, measures there; returns the guest's JSON dict, or {"skipped": reason}."""
    reason = ensure_tools()
    if reason:
        return {"skipped": reason}
    out = f"/tmp/bench-vm-{os.getpid()}.json"
    if os.path.exists(out):
        os.unlink(out)
    cmd = [os.path.join(srcdir, "fabtests", "scripts", "rxe-vm"), "--timeout", str(timeout_s),
           "--", "python3", os.path.join(srcdir, "fabtests", "scripts", "bench"),
           "--vm-guest", out, "--build", cfg.build, "--reps", str(cfg.reps)]
    if cfg.quick:
        cmd.append("--quick")
    print(f"Soft-RoCE VM part (budget {timeout_s // 60} min)...", file=sys.stderr, flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stderr.write(p.stdout[-4000:])
    if p.returncode == 77:
        return {"skipped": "the VM cannot run here: " + p.stdout.strip()[-300:]}
    data = load_results(out, p.returncode)
    if os.path.exists(out):
        os.unlink(out)
    return data


def load_results(path, status=0):
    """The guest's JSON, or {"skipped": reason}."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {"skipped": f"the VM part ended with status {status} and no results"}
    if not data.get("reps") and "skipped" not in data:
        return {"skipped": f"the VM part ended with status {status} before one "
                           "repetition was complete"}
    data["status"] = status
    return data


def decode(data):
    """JSON lists back into the dict shapes the report uses."""
    results = {}
    for prov, bench, size, lib, rec in data.get("results", []):
        if rec and rec.get("usec_xfer"):
            # fi_pingpong rounds MB/sec to 2 decimals (0.00 at 64 B under emulation); the
            # same figure from its latency: bytes per usec = 10^6 bytes/s.
            rec["MB_sec"] = size / rec["usec_xfer"]
        results.setdefault((prov, bench, size), {}).setdefault(lib, []).append(rec)
    limits = {(tool, size): vals for tool, size, vals in data.get("limits", [])}
    return results, {k: median(v) for k, v in limits.items()}


# ------------------------------------------------------------------ guest side

def timed(log, what, fn, *args):
    t0 = time.time()
    v = fn(*args)
    log.write(f"{time.time() - t0:6.1f}s {what}: {v}\n")
    return v


def rc_pingpong(size, count, port, log):
    """ibv_rc_pingpong: usec/iter is a round trip; returns one-way usec."""
    args = ["-d", RXE_DEV, "-g", GID_INDEX, "-s", str(size), "-n", str(count), "-p", str(port)]
    out = run_tool_pair(["ibv_rc_pingpong"] + args, ["ibv_rc_pingpong"] + args + ["127.0.0.1"],
                        port, log, VM_PAIR_TIMEOUT)
    m = re.search(r"= ([0-9.]+) usec/iter", out or "")
    return float(m.group(1)) / 2 if m else None


def perftest(tool, size, count, port, log):
    """ib_send_lat: t_avg (one way, usec); ib_send_bw: BW average in 10^6 bytes/s."""
    args = ["-d", RXE_DEV, "-x", GID_INDEX, "-F", "-s", str(size), "-n", str(count),
            "-p", str(port)]
    out = run_tool_pair([tool] + args, [tool] + args + ["127.0.0.1"], port, log,
                        VM_PAIR_TIMEOUT)
    if not out:
        return None
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 5 and cols[0] == str(size) and cols[1].isdigit():
            try:
                # send_lat: bytes iters t_min t_max t_typical t_avg ...;
                # send_bw: bytes iters BW_peak BW_average MsgRate
                return float(cols[5]) if tool == "ib_send_lat" else float(cols[3]) * MIB_PER_MB
            except (IndexError, ValueError):
                break
    log.write(f"{tool} {size}: no result line in:\n{out}\n")
    return None


def parse_size(token):
    """fi_pingpong's size column: 64, 1.5k, 4k, 1m."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    try:
        if token[-1:] in units:
            return int(float(token[:-1]) * units[token[-1]])
        return int(token)
    except ValueError:
        return None


def parse_sweep(text):
    """fi_pingpong's table: {size: {"MB_sec", "usec_xfer"}}."""
    out = {}
    for line in text.splitlines():
        cols = line.split()
        size = parse_size(cols[0]) if len(cols) >= 7 else None
        if size:
            try:
                out[size] = {"MB_sec": float(cols[5]), "usec_xfer": float(cols[6])}
            except ValueError:
                pass
    return out


def measure_sweeps(rep, quick, envs, log, results):
    """One repetition: per benchmark, one `-S all` process pair per library, the library
    going first alternating between repetitions; results[(prov, bench, size)][lib] gets one
    figure per size (None for sizes a failed sweep did not reach)."""
    order = ("ours", "system") if rep % 2 == 0 else ("system", "ours")
    port = 21000 + rep * 100
    for prov, ep, mode, bench in PINGPONGS:
        for lib in order:
            port += 1
            args = [FI_PINGPONG, "-p", prov, "-e", ep, "-m", mode, "-S", "all",
                    "-I", str(sweep_iterations(quick))]
            t0 = time.time()
            out = run_tool_pair(args + ["-B", str(port)], args + ["-P", str(port), VM_ADDR],
                                port, log, VM_SWEEP_TIMEOUT, env=envs[lib], partial=True)
            sweep = parse_sweep(out or "")
            log.write(f"{time.time() - t0:6.1f}s {lib:6} {prov} {mode}: {len(sweep)} sizes\n")
            for size in SWEEP_SIZES:
                results.setdefault((prov, bench, size), {}).setdefault(lib, []).append(
                    sweep.get(size))


def measure_limits(rep, quick, log, limits):
    port = 19000 + rep * 50
    for size in LIMIT_SIZES:
        port += 1
        limits.setdefault(("ibv_rc_pingpong", size), []).append(
            timed(log, f"ibv_rc_pingpong {size}", rc_pingpong, size,
                  limit_iterations("pp", size, quick), port, log))
        for tool, kind in (("ib_send_lat", "pp"), ("ib_send_bw", "bw")):
            port += 1
            limits.setdefault((tool, size), []).append(
                timed(log, f"{tool} {size}", perftest, tool, size,
                      limit_iterations(kind, size, quick), port, log))


def guest_main(cfg, out_path):
    """Runs inside the VM. What is measured goes to out_path as JSON after every
    repetition, so a VM stopped by its time budget still hands back whole repetitions."""
    start = time.time()
    load_start = os.getloadavg()
    data = {"sizes": SWEEP_SIZES, "reps": 0, "iterations": sweep_iterations(cfg.quick)}
    if not os.path.exists(f"/sys/class/infiniband/{RXE_DEV}"):
        data["skipped"] = f"no {RXE_DEV} in the VM"
        json.dump(data, open(out_path, "w"))
        return 1
    envs = {lib: dict(lib_env(lib, cfg.build), **VM_ENV) for lib in ("ours", "system")}
    data["env"] = VM_ENV
    data["resolved"] = check_libraries(FI_PINGPONG, envs, cfg.build)
    log_path = out_path + ".log"
    results, limits = {}, {}
    with open(log_path, "w", buffering=1) as log:   # line-buffered: readable while it runs
        for rep in range(cfg.reps):
            measure_sweeps(rep, cfg.quick, envs, log, results)
            measure_limits(rep, cfg.quick, log, limits)
            data["results"] = [[prov, bench, size, lib, rec]
                               for (prov, bench, size), libs in results.items()
                               for lib, recs in libs.items() for rec in recs]
            data["limits"] = [[tool, size, vals] for (tool, size), vals in limits.items()]
            data["reps"] = rep + 1
            data["load"] = [load_start, os.getloadavg()]
            data["elapsed"] = time.time() - start
            data["failures"] = sum(1 for line in open(log_path)
                                   if line.startswith(("FAILED", "TIMEOUT")))
            data["log"] = log_path
            with open(out_path + ".new", "w") as f:
                json.dump(data, f)
            os.replace(out_path + ".new", out_path)
            print(f"  vm repetition {rep + 1}/{cfg.reps} done ({data['elapsed']:.0f}s)",
                  file=sys.stderr, flush=True)
    return 0
