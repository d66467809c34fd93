"""Tables and target rows of the wire part (issue 19): see wire.py for what was run."""

from .tables import fmt, markdown, med, msg_rate, ratio, size_name
from . import wire

RXM = "tcp;ofi_rxm"


def _lat(fab, bench, size, lib):
    return med(fab, RXM, bench, size, lib, "usec_xfer")


def _rate(fab, size, lib):
    return msg_rate(med(fab, RXM, "fi_tagged_bw", size, lib, "usec_xfer"))


def _peer(table, key, field):
    rec = table.get(key) if isinstance(table, dict) else None
    return rec.get(field) if rec else None


def _sizes(fab, bench):
    return sorted({size for (prov, b, size) in fab if prov == RXM and b == bench})


def latency_table(w):
    fab, raw, ucx = w["fabric"], w["raw"], w["ucx"]
    head = ["size", "msg ours", "system", "net", "raw TCP", "ours/raw", "ours/net",
            "tagged ours", "system", "UCX tag_lat", "ours/UCX"]
    rows = []
    for size in _sizes(fab, "fi_msg_pingpong"):
        o, s, n = (_lat(fab, "fi_msg_pingpong", size, lib) for lib in wire.LIBS)
        r = _peer(raw, ("pp", size), "usec_xfer")
        to, ts = (_lat(fab, "fi_tagged_pingpong", size, lib) for lib in ("ours", "system"))
        u = _peer(ucx, ("tag_lat", size), "usec_xfer")
        rows.append([size_name(size), fmt(o), fmt(s), fmt(n), fmt(r), fmt(ratio(o, r)),
                     fmt(ratio(o, n)), fmt(to), fmt(ts), fmt(u), fmt(ratio(to, u))])
    return markdown(head, rows)


def rate_table(w):
    fab, ucx = w["fabric"], w["ucx"]
    head = ["size", "tagged kmsg/s ours", "system", "net", "UCX tag_bw", "ours/UCX"]
    rows = []
    for size in _sizes(fab, "fi_tagged_bw"):
        o, s, n = (_rate(fab, size, lib) for lib in wire.LIBS)
        u = _peer(ucx, ("tag_bw", size), "kmsg_sec")
        rows.append([size_name(size), fmt(o, 1), fmt(s, 1), fmt(n, 1), fmt(u, 1),
                     fmt(ratio(o, u))])
    return markdown(head, rows)


def bw_table(w):
    fab, raw = w["fabric"], w["raw"]
    head = ["size", "fi_bw MB/s ours", "system", "net", "raw TCP stream", "ours/raw"]
    rows = []
    for size in _sizes(fab, "fi_bw"):
        o, s, n = (med(fab, RXM, "fi_bw", size, lib, "MB_sec") for lib in wire.LIBS)
        r = _peer(raw, ("bw", size), "MB_sec")
        rows.append([size_name(size), fmt(o), fmt(s), fmt(n), fmt(r), fmt(ratio(o, r))])
    return markdown(head, rows)


def mpi_table(mpi):
    if not isinstance(mpi, dict):
        return [f"({mpi})"]
    names = [t for t in ("ours", "system", "ob1tcp", "ucxtcp") if t in mpi]
    head = (["size"] + [f"{t} us" for t in names] + ["ours/ob1tcp"] +
            [f"{t} M msg/s" for t in names])
    rows = []
    for size in sorted({s for t in names for s in mpi[t]}):
        lat = [mpi[t].get(size, (None, None))[0] for t in names]
        rate = [mpi[t].get(size, (None, None))[1] for t in names]
        ob1 = mpi.get("ob1tcp", {}).get(size, (None,))[0]
        rows.append([size_name(size) if size else "0 B"] + [fmt(v) for v in lat] +
                    [fmt(ratio(mpi.get("ours", {}).get(size, (None,))[0], ob1))] +
                    [fmt(v, 3) for v in rate])
    return markdown(head, rows)


def section(w):
    md = ["## The wire path, busy-polling (issue 19)", "",
          "tcp;ofi_rxm on loopback with every same-host shortcut off (`FI_OFI_RXM_USE_CMA=0`, "
          "`FI_OFI_RXM_USE_SHM=0`), fabtests with `-c spin`, beside the peers a user would pick "
          "instead, all busy-polling, run alternately at each size: the system library's "
          "tcp;ofi_rxm and its single-layer `net` RDM provider (same binaries), UCX "
          "`ucx_perftest` tag_lat/tag_bw with `UCX_TLS=tcp`, and `tcp_baseline ... spin` "
          "(non-blocking sockets, TCP_NODELAY). Latency in usec (half round trip), medians. "
          "Spinning processes on a loaded 2-core machine measure the scheduler: only an idle "
          "run means anything here.", ""]
    md += latency_table(w) + ["", "Message rate, 64 in flight:", ""]
    md += rate_table(w) + ["", "Bandwidth, 64 in flight:", ""]
    md += bw_table(w) + [""]
    md += ["MPI (fabtests/bench/mpi-bench.sh): Open MPI ping-pong and windowed rate between two "
           "ranks of one host over the ofi MTL (pml cm) with ours and with the system "
           "library (tcp;ofi_rxm, CMA off), over Open MPI's tcp BTL (ob1tcp) and pml ucx on "
           "tcp (ucxtcp):", ""]
    md += mpi_table(w["mpi"]) + [""]
    return md


def _worst(values, worst):
    values = [v for v in values if v is not None]
    return worst(values) if values else None


def _verdict(v, ok):
    return "not measured" if v is None else ("met" if ok(v) else "**missed**")


def rows(w):
    """Issue 19's targets, each with the worst ratio over its band (a target holds at
    every size of the band)."""
    if not w:
        return [("issue 19 wire targets (wire part not run)", None, "not measured")]
    fab, raw, ucx, mpi = w["fabric"], w["raw"], w["ucx"], w["mpi"]
    small = [s for s in _sizes(fab, "fi_msg_pingpong") if s <= 4096]
    lat = lambda s: _lat(fab, "fi_msg_pingpong", s, "ours")
    vs_raw = _worst([ratio(lat(s), _peer(raw, ("pp", s), "usec_xfer")) for s in small], max)
    vs_ucx = _worst([ratio(_lat(fab, "fi_tagged_pingpong", s, "ours"),
                           _peer(ucx, ("tag_lat", s), "usec_xfer"))
                     for s in _sizes(fab, "fi_tagged_pingpong")], max)
    vs_net = _worst([ratio(lat(s), _lat(fab, "fi_msg_pingpong", s, "net"))
                     for s in _sizes(fab, "fi_msg_pingpong")], max)
    rate_ucx = _worst([ratio(_rate(fab, s, "ours"), _peer(ucx, ("tag_bw", s), "kmsg_sec"))
                       for s in _sizes(fab, "fi_tagged_bw")], min)
    rate_abs = _worst([_rate(fab, s, "ours") for s in _sizes(fab, "fi_tagged_bw")], min)
    bw_raw = _worst([ratio(med(fab, RXM, "fi_bw", s, "ours", "MB_sec"),
                           _peer(raw, ("bw", s), "MB_sec")) for s in _sizes(fab, "fi_bw")],
                    min)
    mpi_ob1 = None
    if isinstance(mpi, dict) and "ours" in mpi and "ob1tcp" in mpi:
        mpi_ob1 = _worst([ratio(mpi["ours"][s][0], mpi["ob1tcp"].get(s, (None,))[0])
                          for s in mpi["ours"] if s <= 4096], max)
    return [
        ("tcp;ofi_rxm busy-polling latency 1 B-4 KiB <= 1.15x busy raw TCP (worst size)",
         vs_raw, _verdict(vs_raw, lambda v: v <= 1.15)),
        ("tcp;ofi_rxm busy-polling tagged latency <= 0.9x UCX tcp tag_lat (worst size)",
         vs_ucx, _verdict(vs_ucx, lambda v: v <= 0.9)),
        ("tcp;ofi_rxm busy-polling latency <= system `net` RDM (worst size)", vs_net,
         _verdict(vs_net, lambda v: v <= 1.0)),
        ("tcp;ofi_rxm message rate 8 B-1 KiB >= 2x UCX tcp tag_bw (worst size)", rate_ucx,
         _verdict(rate_ucx, lambda v: v >= 2)),
        ("tcp;ofi_rxm message rate 8 B-1 KiB >= 300 kmsg/s (worst size)", rate_abs,
         _verdict(rate_abs, lambda v: v >= 300)),
        ("tcp;ofi_rxm bandwidth 4-32 KiB >= busy raw TCP stream (worst size)", bw_raw,
         _verdict(bw_raw, lambda v: v >= 1.0)),
        ("MPI ping-pong over mtl ofi (ours) <= Open MPI tcp BTL, 0 B-4 KiB (worst size)",
         mpi_ob1, _verdict(mpi_ob1, lambda v: v <= 1.0)),
    ]
