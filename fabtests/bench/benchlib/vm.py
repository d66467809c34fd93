"""The Soft-RoCE part: verbs and verbs;ofi_rxm, ours vs system, inside the rxe VM.

The host side boots fabtests/scripts/rxe-vm with this same bench script in guest mode; the
guest measures and writes its figures as JSON into a file under /tmp (the VM shares the
host's filesystem), which the host side reads back. Only ratios measured in the same VM mean
anything: the VM runs under TCG emulation, many times slower than the host.

Method (why it is not Debian's fi_pingpong any more): under TCG every busy-polling run was
bimodal, 35-100 us or 3.6-10 ms per message depending on whether rxe's deferred work got a
vCPU before the next timer tick, for both libraries and for ibv_rc_pingpong, so per-size
ratios counted mode flips. Here both sides wait for completions by sleeping: our fabtests
benchmarks with `-c sread` (fi_cq_sread), the same binary with our library and with the
system's (over verbs;ofi_rxm the CQ is rxm's, which takes FI_CQ_FORMAT_TAGGED; the plain
verbs msg runs use `-F context`, the format the system's verbs CQ accepts), and the limit
tools with their event mode (`ibv_rc_pingpong -e`, perftest `-e`). Starting a process pair
costs 10-30 s under emulation, so one pair sweeps every size (`-S a,b,c`), with `-M`
bounding the bytes a size moves (large sizes run fewer iterations, the same for both
libraries). The library that goes first alternates between repetitions.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

from .runner import check_libraries, lib_env, median, run_tool_pair

# One vCPU: all processes and rxe's deferred work share it, so a completion wakes its
# sleeping reader by a context switch inside one qemu thread. With 2 vCPUs, sleeping
# readers still measured 4-11 ms per 64 B message (one way; ibv_rc_pingpong -e: 6.4 ms):
# each wake-up is an interrupt to a halted vCPU whose qemu thread the host must first
# schedule. With 1 vCPU: 0.2-0.9 ms at a host load of 14 (spinning: 6-15 ms, never fast).
VM_SMP = 1
# When we may, qemu runs at this nice value: under TCG the VM's time is the host's CPU
# time, and other work on a shared host otherwise delays every wake-up in the guest (at a
# host load of 16 the spread of repetitions of one cell was 90-160 %). Bounded by the budget.
VM_NICE = -15
VM_ADDR = "192.0.2.1"        # rxe0's netdev inside the VM (see rxe-vm)
RXE_DEV = "rxe0"
GID_INDEX = "1"              # the IPv4-mapped GID of rxe0 (index 0 is the IPv6 link-local)
VM_PAIR_TIMEOUT = 90         # seconds one limit tool pair may take under emulation
VM_SWEEP_TIMEOUT = 240       # seconds one benchmark sweep pair may take
COMPLETION_TIMEOUT = 30      # fabtests -T: a lost completion ends the pair, not the budget
TOOL_PACKAGES = {"ib_send_lat": "perftest", "ib_send_bw": "perftest",
                 "ibv_rc_pingpong": "ibverbs-utils"}
MIB_PER_MB = 1048576 / 1e6   # perftest prints MiB/s; fabtests prints 10^6 bytes/s

# 1 B-4 MiB: powers of two and their 1.5x (3 << n), as the issue asks.
SWEEP_SIZES = sorted({1 << n for n in range(23)} | {3 << n for n in range(21)})
# The message rate of tagged streams: the 8 B and 64 B.
RATE_SIZES = [8, 64]
# The limit tools run one pair per size (perftest's -a would run 2 B-8 MiB at one count).
LIMIT_RUNS = [("ibv_rc_pingpong", 1), ("ibv_rc_pingpong", 64), ("ib_send_lat", 64),
              ("ib_send_bw", 65536), ("ib_send_bw", 1 << 20)]
# The system's rxm sizes its core CQs tx+rx size times FI_UNIVERSE_SIZE (default 256):
# 65536 entries, more than rxe allows, so its fi_enable fails ("Unable to create verbs CQ").
# Both libraries get the same smaller universe.
VM_ENV = {"FI_UNIVERSE_SIZE": "64"}
# (provider, endpoint type, benchmark, extra options)
SWEEPS = [("verbs;ofi_rxm", "rdm", "fi_msg_pingpong", []),
          ("verbs;ofi_rxm", "rdm", "fi_tagged_pingpong", []),
          ("verbs;ofi_rxm", "rdm", "fi_bw", []),
          ("verbs;ofi_rxm", "rdm", "fi_tagged_bw", []),
          ("verbs", "msg", "fi_msg_pingpong", ["-F", "context"]),
          ("verbs", "msg", "fi_bw", ["-F", "context"])]
BW_BENCHES = ("fi_bw", "fi_tagged_bw")


def sweep_options(bench, quick):
    """Iterations, warm-up and the byte bound per size: the same for both libraries.
    Ping-pong: 20 round trips (10 warm-up: with 2, the first size of a sweep, right after
    the connection came up, ran ~1.9x the second under TCG for every library), at most
    2 MiB moved per size. Streams: 128 messages in windows of 64 (one window of warm-up),
    at most 4 MiB per size."""
    if bench in BW_BENCHES:
        return ["-I", "64" if quick else "128", "-w", "64", "-M", str(4 << 20)]
    return ["-I", "10" if quick else "20", "-w", "10", "-M", str(2 << 20)]


def limit_iterations(tool, size, quick):
    """For ibv_rc_pingpong / perftest: bounded in bytes, like the library runs."""
    if tool == "ib_send_bw":
        return max(16, min(256, (32 << 20) // size))
    return max(10, min(50 if quick else 100, (4 << 20) // size))


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
    nice = ["nice", "-n", str(VM_NICE)] if os.geteuid() == 0 else []
    cmd = nice + [os.path.join(srcdir, "fabtests", "scripts", "rxe-vm"),
                  "--timeout", str(timeout_s), "--smp", str(VM_SMP),
           "--", "python3", os.path.join(srcdir, "fabtests", "scripts", "bench"),
           "--vm-guest", out, "--build", cfg.build, "--reps", str(cfg.reps)]
    if cfg.against:
        cmd += ["--against", cfg.against]
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
            # -m rounds MB_sec to 2 decimals (0.00 at small sizes under emulation); the
            # same figure from usec per transfer: bytes per usec = 10^6 bytes/s.
            rec["MB_sec"] = size / rec["usec_xfer"]
        results.setdefault((prov, bench, size), {}).setdefault(lib, []).append(rec)
    limits = {(tool, size): vals for tool, size, vals in data.get("limits", [])}
    return results, {k: median(v) for k, v in limits.items()}


def limit_runs(data):
    """{(tool, size): [value per repetition]}: the raw limit figures, for their spread."""
    return {(tool, size): vals for tool, size, vals in data.get("limits", [])}


# ------------------------------------------------------------------ guest side

def timed(log, what, fn, *args):
    t0 = time.time()
    v = fn(*args)
    log.write(f"{time.time() - t0:6.1f}s {what}: {v}\n")
    return v


def rc_pingpong(size, count, port, log):
    """ibv_rc_pingpong -e (sleeps on completion events): usec/iter is a round trip;
    returns one-way usec."""
    args = ["-d", RXE_DEV, "-g", GID_INDEX, "-s", str(size), "-n", str(count), "-p", str(port),
            "-e"]
    out = run_tool_pair(["ibv_rc_pingpong"] + args, ["ibv_rc_pingpong"] + args + ["127.0.0.1"],
                        port, log, VM_PAIR_TIMEOUT)
    m = re.search(r"= ([0-9.]+) usec/iter", out or "")
    return float(m.group(1)) / 2 if m else None


def perftest(tool, size, count, port, log):
    """ib_send_lat -e: t_avg (one way, usec); ib_send_bw -e: BW average in 10^6 bytes/s."""
    args = ["-d", RXE_DEV, "-x", GID_INDEX, "-F", "-e", "-s", str(size), "-n", str(count),
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


def parse_records(text):
    """The -m records of a fabtests sweep: {size: {"MB_sec", "usec_xfer"}}."""
    out = {}
    for block in text.split("---"):
        m = re.search(r"bytes: (\d+)", block)
        u = re.search(r"usec_xfer: ([0-9.]+)", block)
        b = re.search(r"MB_sec: ([0-9.]+)", block)
        if m and u and b:
            out[int(m.group(1))] = {"MB_sec": float(b.group(1)), "usec_xfer": float(u.group(1))}
    return out


def run_sweep(binary, args, env, port, log):
    """One fabtests server/client pair over rxe0; the client's -m output, partial when it
    failed or hit the timeout (the sizes it finished count, the others are None)."""
    common = list(args) + ["-m", f"-E={port + 2}", "-T", str(COMPLETION_TIMEOUT)]
    server_cmd = [binary] + common + ["-B", str(port), "-s", VM_ADDR]
    client_cmd = [binary] + common + ["-P", str(port), VM_ADDR]
    server = subprocess.Popen(server_cmd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        client = subprocess.run(client_cmd, env=env, capture_output=True, text=True,
                                timeout=VM_SWEEP_TIMEOUT)
        sout, _ = server.communicate(timeout=30)
    except subprocess.TimeoutExpired as e:
        server.kill()
        sout, _ = server.communicate()
        log.write(f"TIMEOUT: {' '.join(client_cmd)}\n--- server:\n{sout[-2000:]}\n")
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
        return out or ""
    if client.returncode or server.returncode:
        log.write(f"FAILED ({client.returncode}/{server.returncode}): {' '.join(client_cmd)}\n"
                  f"{client.stdout[-2000:]}{client.stderr[-2000:]}--- server:\n{sout[-2000:]}\n")
    return client.stdout


def measure_sweeps(rep, quick, bins, envs, log, results):
    """One repetition: per benchmark, one sweep pair per library, the library going first
    alternating between repetitions; results[(prov, bench, size)][lib] gets one figure per
    size (None for sizes a failed sweep did not reach)."""
    order = ("ours", "system") if rep % 2 == 0 else ("system", "ours")
    port = 21000 + rep * 100
    for prov, ep, bench, extra in SWEEPS:
        if bench not in bins:
            continue
        sizes = RATE_SIZES if bench == "fi_tagged_bw" else SWEEP_SIZES
        for lib in order:
            port += 3
            args = ["-p", prov, "-e", ep, "-c", "sread", "-S", ",".join(map(str, sizes))]
            args += sweep_options(bench, quick) + extra
            t0 = time.time()
            sweep = parse_records(run_sweep(bins[bench], args, envs[lib], port, log))
            log.write(f"{time.time() - t0:6.1f}s {lib:6} {prov} {bench}: {len(sweep)} sizes\n")
            for size in sizes:
                results.setdefault((prov, bench, size), {}).setdefault(lib, []).append(
                    sweep.get(size))


def measure_limits(rep, quick, log, limits):
    port = 19000 + rep * 50
    for tool, size in LIMIT_RUNS:
        port += 1
        count = limit_iterations(tool, size, quick)
        if tool == "ibv_rc_pingpong":
            v = timed(log, f"{tool} -e {size}", rc_pingpong, size, count, port, log)
        else:
            v = timed(log, f"{tool} -e {size}", perftest, tool, size, count, port, log)
        limits.setdefault((tool, size), []).append(v)


def guest_main(cfg, out_path, bins):
    """Runs inside the VM. What is measured goes to out_path as JSON after every
    repetition, so a VM stopped by its time budget still hands back whole repetitions."""
    start = time.time()
    load_start = os.getloadavg()
    data = {"sizes": SWEEP_SIZES, "reps": 0, "method": "sread",
            "options": {b: sweep_options(b, cfg.quick) for _, _, b, _ in SWEEPS}}
    if not os.path.exists(f"/sys/class/infiniband/{RXE_DEV}"):
        data["skipped"] = f"no {RXE_DEV} in the VM"
        json.dump(data, open(out_path, "w"))
        return 1
    envs = {lib: dict(lib_env(lib, cfg.build, cfg.against), **VM_ENV)
            for lib in ("ours", "system")}
    data["env"] = VM_ENV
    data["resolved"] = check_libraries(bins["fi_msg_pingpong"], envs, cfg.build, cfg.against)
    log_path = out_path + ".log"
    results, limits = {}, {}
    with open(log_path, "w", buffering=1) as log:   # line-buffered: readable while it runs
        for rep in range(cfg.reps):
            measure_sweeps(rep, cfg.quick, bins, envs, log, results)
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
