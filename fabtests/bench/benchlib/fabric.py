"""The ours-vs-system loop over fabtests benchmark binaries, used on the host and in the VM.

Every (provider, benchmark, size) point runs once with each library per repetition; the
order of the pair alternates between repetitions so neither side always runs second on warm
caches; the same binary, options and iteration count serve both.
"""

import sys
import time

from .runner import run_pair

# Benchmarks whose figure is a bandwidth (windows of 64 sends) rather than a ping-pong.
BW_BENCHES = ("fi_bw", "fi_tagged_bw")
# Tagged streams are measured only at the sizes the issue asks a message rate for.
RATE_SIZES = (8, 64)


def plan_points(providers, sizes):
    """[(prov, ep, bench, size)] in the order they run within one repetition."""
    plan = []
    for prov, ep, benches in providers:
        for bench in benches:
            for size in (RATE_SIZES if bench == "fi_tagged_bw" else sizes):
                plan.append((prov, ep, bench, size))
    return plan


def warmup_for(bench):
    # fi_bw times whole windows of 64 only: a warm-up of exactly one window keeps the timed
    # part equal to the iteration count it divides by.
    return "64" if bench in BW_BENCHES else "10"


def measure(plan, reps, bins, envs, ports, log, iterations, comp, server_addr="127.0.0.1",
            timeout=60, beside=None, label="", libs=("ours", "system"), prov_of=None,
            server_args=None):
    """results[(prov, bench, size)][lib] = [figures or None per repetition].
    beside(prov, bench, size) runs after each pair (e.g. the raw TCP limit of that size, so
    it sees the same machine load as the libraries). libs run in turn, the order rotating
    between repetitions; prov_of(lib, prov) may name another provider for a lib (the
    system's `net` beside tcp;ofi_rxm) and server_args(lib) extra server options."""
    results = {}
    total, done, start = len(plan) * reps, 0, time.time()
    for rep in range(reps):
        shift = rep % len(libs)   # each lib goes first in turn (2 libs: alternate)
        order = libs[shift:] + libs[:shift]
        for prov, ep, bench, size in plan:
            kind = "bw" if bench in BW_BENCHES else "pp"
            for lib in order:
                run_prov = prov_of(lib, prov) if prov_of else prov
                args = ["-p", run_prov, "-e", ep, "-S", str(size),
                        "-I", str(iterations(kind, size)), "-w", warmup_for(bench), "-c", comp]
                t0 = time.time()
                rec = run_pair(bins[bench], args, envs[lib], ports, log, server_addr, timeout,
                               server_args(lib) if server_args else ())
                log.write(f"{time.time() - t0:6.1f}s {lib:6} {prov} {bench} {size}: {rec}\n")
                results.setdefault((prov, bench, size), {}).setdefault(lib, []).append(rec)
            if beside:
                beside(prov, bench, size)
            done += 1
            if done % 20 == 0 or done == total:
                print(f"  {label}{done}/{total} size points ({time.time() - start:.0f}s)",
                      file=sys.stderr, flush=True)
    return results
