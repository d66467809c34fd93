"""Tables and target rows of the same-host part (issue 20): see samehost.py for what was run."""

from .tables import fmt, markdown, med, msg_rate, ratio, size_name
from . import samehost
from .wire_report import _peer, _verdict, _worst

RXM = samehost.RXM
LIB_HEADS = {"ours": "ours", "ours_net": "ours, shm off", "ours_shm": "ours shm;ofi_rxm",
             "system": "system shm"}


def _lat(fab, bench, size, lib):
    return med(fab, RXM, bench, size, lib, "usec_xfer")


def _sizes(fab, bench):
    return sorted({size for (prov, b, size) in fab if prov == RXM and b == bench})


def latency_table(s):
    fab, ucx = s["fabric"], s["ucx"]
    head = (["size"] + [f"msg {LIB_HEADS[lib]}" for lib in samehost.LIBS] +
            ["tagged ours", "UCX sm tag_lat", "ours/UCX"])
    rows = []
    for size in _sizes(fab, "fi_msg_pingpong"):
        msg = [_lat(fab, "fi_msg_pingpong", size, lib) for lib in samehost.LIBS]
        tagged = _lat(fab, "fi_tagged_pingpong", size, "ours")
        u = _peer(ucx, ("tag_lat", size), "usec_xfer")
        rows.append([size_name(size)] + [fmt(v) for v in msg] +
                    [fmt(tagged), fmt(u), fmt(ratio(tagged, u))])
    return markdown(head, rows)


def rate_table(s):
    fab, ucx = s["fabric"], s["ucx"]
    head = (["size"] + [f"kmsg/s {LIB_HEADS[lib]}" for lib in samehost.LIBS] +
            ["UCX sm tag_bw", "ours/UCX"])
    rows = []
    for size in _sizes(fab, "fi_tagged_bw"):
        rates = [msg_rate(med(fab, RXM, "fi_tagged_bw", size, lib, "usec_xfer"))
                 for lib in samehost.LIBS]
        u = _peer(ucx, ("tag_bw", size), "kmsg_sec")
        rows.append([size_name(size)] + [fmt(v, 1) for v in rates] +
                    [fmt(u, 1), fmt(ratio(rates[0], u))])
    return markdown(head, rows)


def sread_table(s):
    head = ["size"] + [f"sread {LIB_HEADS[lib]}" for lib in samehost.LIBS]
    rows = [[size_name(samehost.SREAD_SIZE)] +
            [fmt(_lat(s["sread"], "fi_msg_pingpong", samehost.SREAD_SIZE, lib))
             for lib in samehost.LIBS]]
    return markdown(head, rows)


def mpi_table(mpi):
    if not isinstance(mpi, dict):
        return [f"({mpi})"]
    names = [t for t in samehost.MPI_TRANSPORTS if t in mpi]
    head = (["size"] + [f"{t} us" for t in names] + ["ourslocal/ucxsm"] +
            [f"{t} M msg/s" for t in names])
    rows = []
    for size in sorted({s for t in names for s in mpi[t]}):
        lat = [mpi[t].get(size, (None, None))[0] for t in names]
        rate = [mpi[t].get(size, (None, None))[1] for t in names]
        ucx = mpi.get("ucxsm", {}).get(size, (None,))[0]
        rows.append([size_name(size) if size else "0 B"] + [fmt(v) for v in lat] +
                    [fmt(ratio(mpi.get("ourslocal", {}).get(size, (None,))[0], ucx))] +
                    [fmt(v, 3) for v in rate])
    return markdown(head, rows)


def section(s):
    md = ["## Same-host peers (issue 20)", "",
          "Two processes of one host, fabtests with `-c spin`, run alternately at each size: "
          "ours over tcp;ofi_rxm with `FI_OFI_RXM_USE_SHM=1` (a proven same-host peer moves to shm; "
          "CMA for large messages), the same with `FI_OFI_RXM_USE_SHM=0` (loopback TCP), "
          "our shm;ofi_rxm, and the system library's `shm` RDM provider (same binaries); "
          "beside them UCX `ucx_perftest` with `UCX_TLS=sm`. Latency in usec (half round "
          "trip), medians.", ""]
    md += latency_table(s) + ["", "Message rate, 64 in flight:", ""]
    md += rate_table(s) + ["", "Blocking (`-c sread`):", ""]
    md += sread_table(s) + [""]
    md += ["MPI (fabtests/bench/mpi-bench.sh): ours over the ofi MTL on tcp;ofi_rxm with its "
           "same-host paths on (ourslocal), Open MPI's shared-memory BTL (vader), pml ucx "
           "with `UCX_TLS=sm,self` (ucxsm):", ""]
    md += mpi_table(s["mpi"]) + [""]
    if s.get("memory"):
        md += ["Resident memory per same-host peer (fabtests/bench/scale -m: N endpoints of "
               "one process connect to a hub process and send twice, the second time after "
               "300 ms of progress so the peers have moved; anonymous plus shared resident "
               "memory, KiB per peer, median):", ""]
        md += memory_table(s["memory"]) + [""]
    return md


def memory_table(memory):
    head = ["peers"] + [f"{LIB_HEADS[lib]}: {side} KiB/peer" for lib in samehost.MEMORY_LIBS
                        for side in ("hub", "client")]
    rows = []
    for n in samehost.MEMORY_PEERS:
        cells = []
        for lib in samehost.MEMORY_LIBS:
            rec = memory.get(lib, {}).get(n)
            cells += ([fmt(rec[1], 1), fmt(rec[2], 1)] if isinstance(rec, tuple)
                      else [str(rec), str(rec)])
        rows.append([str(n)] + cells)
    return markdown(head, rows)


def rows(s):
    """Issue 20's targets, each with the worst size of its band."""
    if not s:
        return [("issue 20 same-host targets (same-host part not run)", None, "not measured")]
    fab, ucx, mpi = s["fabric"], s["ucx"], s["mpi"]
    lat64 = _lat(fab, "fi_msg_pingpong", 64, "ours")
    vs_ucx = _worst([ratio(_lat(fab, "fi_tagged_pingpong", size, "ours"),
                           _peer(ucx, ("tag_lat", size), "usec_xfer"))
                     for size in _sizes(fab, "fi_tagged_pingpong")], max)
    rate8 = msg_rate(med(fab, RXM, "fi_tagged_bw", 8, "ours", "usec_xfer"))
    rate_ucx = ratio(rate8, _peer(ucx, ("tag_bw", 8), "kmsg_sec"))
    sread64 = _lat(s["sread"], "fi_msg_pingpong", samehost.SREAD_SIZE, "ours")
    mpi0 = mpi_ucx = None
    if isinstance(mpi, dict) and "ourslocal" in mpi:
        mpi0 = mpi["ourslocal"].get(0, (None,))[0]
        if "ucxsm" in mpi:
            mpi_ucx = _worst([ratio(mpi["ourslocal"][size][0],
                                    mpi["ucxsm"].get(size, (None,))[0])
                              for size in mpi["ourslocal"]], max)
    return [
        ("same host: tcp;ofi_rxm 64 B latency <= 0.5 us (usec)", lat64,
         _verdict(lat64, lambda v: v <= 0.5)),
        ("same host: tcp;ofi_rxm tagged latency <= 1.0x UCX sm, 1 B-1 MiB (worst size)",
         vs_ucx, _verdict(vs_ucx, lambda v: v <= 1.0)),
        ("same host: tcp;ofi_rxm 8 B message rate >= 1.2x UCX sm", rate_ucx,
         _verdict(rate_ucx, lambda v: v >= 1.2)),
        ("same host: tcp;ofi_rxm -c sread 64 B <= 3 us (usec)", sread64,
         _verdict(sread64, lambda v: v <= 3)),
        ("same host: MPI over mtl ofi 0 B <= 0.5 us (usec)", mpi0,
         _verdict(mpi0, lambda v: v <= 0.5)),
        ("same host: MPI over mtl ofi <= 1.0x pml ucx sm (worst size)", mpi_ucx,
         _verdict(mpi_ucx, lambda v: v <= 1.0)),
    ]
