"""The host part: tcp;ofi_rxm and tcp on loopback, the raw TCP limit, and connect scale."""

import re
import subprocess
import sys
import time

from . import fabric
from .runner import Ports, RUN_TIMEOUT, median

SCALE_MEMORY_BUDGET_KB = 3 * 1024 * 1024   # do not push the shared machine into OOM
SCALE_TIME_BUDGET_S = 20                   # stop growing N for a library past this


def sizes(quick):
    """1 B .. 4 MiB: powers of four, plus powers of two and 1.5x sizes around the rxm
    crossovers (16 KiB eager/SAR, 128 KiB SAR/rendezvous) and in the >= 1 MiB band. Every
    power of two and its 1.5x would take ~40 minutes on the loaded 2-core machine."""
    if quick:
        return [1, 64, 1024, 16384, 65536, 262144, 1 << 20, 4 << 20]
    return [1, 8, 64, 256, 1024, 4096, 12 << 10, 16 << 10, 24 << 10, 64 << 10, 96 << 10,
            128 << 10, 192 << 10, 256 << 10, 1 << 20, 3 << 19, 2 << 20, 4 << 20]


def iterations(quick, comp="sread"):
    """Same for both libraries; enough bytes to get past start-up noise, bounded in time.
    Busy-polling (comp spin) round trips take ~10 us, so small sizes get enough of them
    (20000 at <= 4 KiB, ~0.2 s) that a difference of a tenth of a microsecond is resolved."""
    scale = 2 if quick else 1
    spin = comp == "spin"

    def count(kind, size):
        if kind == "bw":   # whole windows of 64
            windows = 200 if spin and size <= 4096 else 10
            return 64 * max(1, min(windows // scale, (64 << 20) // scale // size // 64))
        if spin and size <= 4096:
            return 20000 // scale
        return max(10, min(200 // scale, (16 << 20) // scale // size))
    return count


def providers(bins):
    rdm = ["fi_msg_pingpong", "fi_tagged_pingpong", "fi_bw"]
    if "fi_tagged_bw" in bins:
        rdm.append("fi_tagged_bw")
    return [("tcp;ofi_rxm", "rdm", rdm), ("tcp", "msg", ["fi_msg_pingpong", "fi_bw"])]


def run_baseline_once(baseline_bin, kind, size, count, log, comp="sread"):
    """One raw TCP run with the iteration count (and the waiting: busy-polling for -c spin)
    the fabric runs of that size use."""
    mode = "pingpong" if kind == "pp" else "stream"
    p = subprocess.run([baseline_bin, mode, str(size), str(count)] +
                       (["spin"] if comp == "spin" else []),
                       capture_output=True, text=True, timeout=RUN_TIMEOUT)
    m = re.search(r"usec_xfer ([0-9.]+) MB_sec ([0-9.]+)", p.stdout)
    if p.returncode or not m:
        log.write(f"tcp_baseline {mode} {size} failed: {p.stderr}\n")
        return None
    return (float(m.group(1)), float(m.group(2)))


def run(cfg, bins, baseline_bin, log):
    """results as fabric.measure; base[(kind, size)] = (usec_xfer, MB_sec) medians of the
    raw TCP runs made right beside the tcp;ofi_rxm pairs of the same size."""
    count = iterations(cfg.quick, cfg.comp)
    raw = {}

    def beside(prov, bench, size):
        if prov == "tcp;ofi_rxm" and bench in ("fi_msg_pingpong", "fi_bw"):
            kind = "pp" if bench == "fi_msg_pingpong" else "bw"
            raw.setdefault((kind, size), []).append(
                run_baseline_once(baseline_bin, kind, size, count(kind, size), log,
                                  cfg.comp))

    plan = fabric.plan_points(cfg.providers, cfg.sizes)
    results = fabric.measure(plan, cfg.reps, bins, cfg.env, Ports(cfg.port_base), log, count,
                             cfg.comp, beside=beside, label="host ")
    base = {k: (median([v[0] for v in vals if v]), median([v[1] for v in vals if v]))
            for k, vals in raw.items()}
    return results, base


def run_scale_once(scale_bin, n, env, log, lib, options=()):
    """(connect_ms, hub_kb_per_peer, client_kb_per_peer, seconds) or a reason."""
    t0 = time.time()
    try:
        p = subprocess.run([scale_bin, "-p", "tcp;ofi_rxm", *options, str(n)], env=env,
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "timeout"
    m = re.search(r"connect_ms ([0-9.]+) hub_kb_per_peer ([-0-9.]+) "
                  r"client_kb_per_peer ([-0-9.]+)", p.stdout)
    if p.returncode or not m:
        log.write(f"scale {lib} {n} failed: {p.stdout}{p.stderr}\n")
        return "failed"
    return tuple(float(x) for x in m.groups()) + (time.time() - t0,)


def run_scale(cfg, scale_bin, log):
    """scale[lib][n] = (connect_ms, hub_kb_per_peer, client_kb_per_peer) or a reason.

    Each figure is the median over cfg.reps runs, the library going first alternating
    between repetitions: how many connect-time allocations are alive at once varies, and
    one run's heap can be 1.3x another's."""
    counts = [2, 8, 32] if cfg.quick else [2, 4, 8, 16, 32, 64, 128, 256]
    out = {"ours": {}, "system": {}}
    stopped = {}
    for i, n in enumerate(counts):
        next_n = counts[i + 1] if i + 1 < len(counts) else n
        runs = {"ours": [], "system": []}
        for rep in range(cfg.reps):
            order = ("ours", "system") if rep % 2 == 0 else ("system", "ours")
            for lib in order:
                if lib in stopped:
                    continue
                rec = run_scale_once(scale_bin, n, cfg.env[lib], log, lib)
                if isinstance(rec, str):
                    stopped[lib] = rec
                    continue
                runs[lib].append(rec)
        for lib in ("ours", "system"):
            recs = runs[lib]
            if lib in stopped:  # a failure here or a budget stop at a smaller N
                out[lib][n] = stopped[lib]
                continue
            out[lib][n] = tuple(median([r[k] for r in recs]) for k in range(3))
            # The next N must fit the shared machine's memory and time.
            if out[lib][n][2] * next_n > SCALE_MEMORY_BUDGET_KB:
                stopped[lib] = f"skipped: ~{out[lib][n][2] * next_n / 1024 / 1024:.1f} GiB"
            elif max(r[3] for r in recs) > SCALE_TIME_BUDGET_S:
                stopped[lib] = "skipped: too slow"
    print(f"  scale done", file=sys.stderr, flush=True)
    return out


AV_CHURN_CYCLES = 2_000_000   # issue 17 item 2: RSS after 2 M insert+remove pairs


def run_av_churn(cfg, churn_bin, log):
    """av[lib][prov] = (us_per_pair, rss_kb_before, rss_kb_after) or a reason.

    fabtests/bench/av_churn: one address inserted and removed 2 M times, each time a new
    one (a server whose clients come and go); median over cfg.reps runs, libraries
    alternating."""
    out = {"ours": {}, "system": {}}
    pattern = re.compile(r"us_per_pair ([0-9.]+) rss_kb_before ([-0-9]+) rss_kb_after ([-0-9]+)")
    for prov in ("tcp;ofi_rxm", "tcp"):
        runs = {"ours": [], "system": []}
        for rep in range(cfg.reps):
            for lib in (("ours", "system") if rep % 2 == 0 else ("system", "ours")):
                try:
                    p = subprocess.run([churn_bin, "-p", prov, "-n", str(AV_CHURN_CYCLES)],
                                       env=cfg.env[lib], capture_output=True, text=True,
                                       timeout=120)
                except subprocess.TimeoutExpired:
                    log.write(f"TIMEOUT av_churn {lib} {prov}\n")
                    continue
                m = pattern.search(p.stdout)
                if p.returncode or not m:
                    log.write(f"FAILED av_churn {lib} {prov}: {p.stdout}{p.stderr}\n")
                    continue
                runs[lib].append(tuple(float(x) for x in m.groups()))
        for lib, recs in runs.items():
            out[lib][prov] = (tuple(median([r[k] for r in recs]) for k in range(3))
                              if recs else "failed")
    print("  av churn done", file=sys.stderr, flush=True)
    return out
