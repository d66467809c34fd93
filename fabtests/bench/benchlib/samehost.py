"""The same-host part (issue 20): two processes of one host, ours with and without shared
memory beside what a user would pick instead, everything busy-polling.

Libraries, run alternately within each repetition at each size (same fabtests binaries):
  ours       tcp;ofi_rxm with its defaults (FI_OFI_RXM_USE_SHM=1, said explicitly because
             the other parts pin 0): rxm moves a proven same-host peer onto shm, and pulls
             large messages by process_vm_readv (CMA)
  ours_net   tcp;ofi_rxm with FI_OFI_RXM_USE_SHM=0: loopback TCP, CMA rendezvous still on
  ours_shm   shm;ofi_rxm: our shm provider named by the application
  system     the system library's `shm` provider (FI_EP_RDM), what a 1.17 user picks today
Beside each size: UCX's ucx_perftest tag_lat / tag_bw with UCX_TLS=sm. Then a blocking
point (`-c sread`, 64 B) and, through a real client, mpi-bench.sh over the ofi MTL with
ours (same-host paths on), Open MPI's vader BTL and pml ucx with UCX_TLS=sm,self.
"""

import sys

from . import fabric, host, wire
from .runner import Ports, median

LAT_SIZES = [1, 64, 1024, 8192, 65536, 1048576]
RATE_SIZES = [8, 1024]
SREAD_SIZE = 64
LIBS = ("ours", "ours_net", "ours_shm", "system")
MPI_TRANSPORTS = ("ourslocal", "vader", "ucxsm")
RXM = "tcp;ofi_rxm"
MEMORY_PEERS = (8, 32)
MEMORY_LIBS = ("ours", "ours_net")


def envs(cfg):
    ours = dict(cfg.env["ours"])
    ours.pop("FI_OFI_RXM_USE_CMA", None)   # its default (on over tcp) is what is measured
    ours.pop("FI_OFI_RXM_USE_SHM", None)   # lib_env pins it to 0 for the other parts
    return {"ours": dict(ours, FI_OFI_RXM_USE_SHM="1"),
            "ours_net": dict(ours, FI_OFI_RXM_USE_SHM="0"),
            "ours_shm": ours, "system": dict(cfg.env["system"])}


def prov_of(lib, prov):
    return {"ours_shm": "shm;ofi_rxm", "system": "shm"}.get(lib, prov)


def plan(quick):
    lat = LAT_SIZES if not quick else [1, 64, 1024, 65536, 1048576]
    points = [(RXM, "rdm", bench, size)
              for bench in ("fi_msg_pingpong", "fi_tagged_pingpong") for size in lat]
    points += [(RXM, "rdm", "fi_tagged_bw", size) for size in RATE_SIZES]
    return points


def run(cfg, bins, log):
    """samehost = {"fabric": results as fabric.measure (libs above, -c spin), "sread":
    the same at 64 B with -c sread, "ucx": {(test, size): rec} or a reason, "mpi":
    mpi-bench.sh figures of MPI_TRANSPORTS or a reason}."""
    count = wire.iterations(cfg.quick)
    lib_envs = envs(cfg)
    ucx = wire.ensure_ucx(log)
    ucx_runs = {}
    ports = Ports(cfg.port_base + 300, 100)

    def beside(prov, bench, size):
        if ucx and bench in ("fi_tagged_pingpong", "fi_tagged_bw"):
            kind = "bw" if bench in fabric.BW_BENCHES else "pp"
            test = "tag_lat" if kind == "pp" else "tag_bw"
            ucx_runs.setdefault((test, size), []).append(
                wire.run_ucx(test, size, count(kind, size), ports, log, tls="sm"))

    points = [p for p in plan(cfg.quick) if p[2] in bins]
    common = dict(libs=LIBS, prov_of=prov_of)
    fab_ports = Ports(cfg.port_base + 400, 100)
    results = fabric.measure(points, cfg.reps, bins, lib_envs, fab_ports,
                             log, count, "spin", beside=beside, label="same host ", **common)
    sread = fabric.measure([(RXM, "rdm", "fi_msg_pingpong", SREAD_SIZE)], cfg.reps, bins,
                           lib_envs, fab_ports, log, count, "sread",
                           label="same host sread ", **common)
    keys = ("usec_xfer", "MB_sec", "kmsg_sec")
    med = lambda recs: ({k: median([r.get(k) for r in recs if r]) for k in keys}
                        if any(recs) else None)
    out = {"fabric": results, "sread": sread,
           "ucx": {k: med(v) for k, v in ucx_runs.items()} if ucx else "not installed"}
    print("  same host: MPI (mpi-bench.sh: ourslocal, vader, ucxsm)...", file=sys.stderr,
          flush=True)
    out["mpi"] = wire.run_mpi(cfg, log, MPI_TRANSPORTS)
    return out


def run_memory(cfg, scale_bin, log):
    """Resident memory per same-host peer: fabtests/bench/scale -m (a second message per
    endpoint after the peers had time to move), anonymous plus shared resident memory, ours
    with the switch (ours) and without (ours_net), alternating, median of cfg.reps.
    memory[lib][n] = (connect_ms, hub_kb_per_peer, client_kb_per_peer) or a reason."""
    lib_envs = envs(cfg)
    out = {lib: {} for lib in MEMORY_LIBS}
    for n in MEMORY_PEERS:
        runs = {lib: [] for lib in MEMORY_LIBS}
        for rep in range(cfg.reps):
            order = MEMORY_LIBS if rep % 2 == 0 else tuple(reversed(MEMORY_LIBS))
            for lib in order:
                rec = host.run_scale_once(scale_bin, n, lib_envs[lib], log, lib, ("-m",))
                if not isinstance(rec, str):
                    runs[lib].append(rec)
        for lib in MEMORY_LIBS:
            recs = runs[lib]
            out[lib][n] = (tuple(median([r[k] for r in recs]) for k in range(3))
                           if recs else "failed")
    print("  same host: memory per peer done", file=sys.stderr, flush=True)
    return out
