"""Markdown tables of medians, ours vs system vs the physical limit."""

from .runner import median


def fmt(v, digits=2):
    if v is None:
        return "fail"
    if isinstance(v, str):
        return v
    if v >= 1000:
        return f"{v:.0f}"
    if 0 < v < 0.01:   # e.g. MB/s of a 64 B ping-pong under emulation
        return f"{v:.2g}"
    return f"{v:.{digits}f}"


def msg_rate(usec_per_msg):
    """Thousands of messages per second, from usec_xfer (4 decimals since session 18, 2 in
    older logs)."""
    return 1000.0 / usec_per_msg if usec_per_msg else None


def ratio(a, b):
    return a / b if a is not None and b else None


def size_name(s):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if s >= 1 << shift and s % (1 << (shift - 1)) == 0:
            return f"{s / (1 << shift):g} {unit}"
    return f"{s} B"


def med(results, prov, bench, size, lib, key):
    recs = results.get((prov, bench, size), {}).get(lib, [])
    return median([r[key] if r else None for r in recs])


def markdown(head, rows):
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] +
            ["| " + " | ".join(r) + " |" for r in rows])


def lat_cells(results, prov, bench, size):
    o = med(results, prov, bench, size, "ours", "usec_xfer")
    s = med(results, prov, bench, size, "system", "usec_xfer")
    return [fmt(o), fmt(s), fmt(ratio(o, s))], o


def bw_cells(results, prov, size, bench="fi_bw"):
    o = med(results, prov, bench, size, "ours", "MB_sec")
    s = med(results, prov, bench, size, "system", "MB_sec")
    return [fmt(o), fmt(s), fmt(ratio(o, s))], o


def host_table(results, base, sizes, prov, benches):
    """tcp;ofi_rxm or tcp on loopback, raw TCP socket beside."""
    head = ["size"]
    if "fi_msg_pingpong" in benches:
        head += ["msg lat ours", "system", "ratio"]
    if "fi_tagged_pingpong" in benches:
        head += ["tagged lat ours", "system", "ratio"]
    head += ["raw TCP lat", "bw ours MB/s", "system", "ratio", "raw TCP MB/s", "ours/raw",
             "kmsg/s ours", "system"]
    rows = []
    for size in sizes:
        row = [size_name(size)]
        for bench in ("fi_msg_pingpong", "fi_tagged_pingpong"):
            if bench in benches:
                row += lat_cells(results, prov, bench, size)[0]
        row.append(fmt(base.get(("pp", size), (None, None))[0]))
        cells, o = bw_cells(results, prov, size)
        raw = base.get(("bw", size), (None, None))[1]
        row += cells + [fmt(raw), fmt(ratio(o, raw))]
        row += [fmt(msg_rate(med(results, prov, "fi_bw", size, lib, "usec_xfer")), 1)
                for lib in ("ours", "system")]
        rows.append(row)
    return markdown(head, rows)


def limit_cell(limits, tool, size):
    """A physical-limit figure: "-" where that tool was not run (it runs at a few sizes)."""
    return fmt(limits[(tool, size)]) if (tool, size) in limits else "-"


def vm_table(results, limits, sizes, prov, benches):
    """verbs;ofi_rxm or verbs in the VM, every run waiting by sleeping (fabtests -c sread,
    ibv_rc_pingpong -e, perftest -e); the limit tools ran at a few sizes only."""
    head = ["size"]
    if "fi_msg_pingpong" in benches:
        head += ["msg lat ours", "system", "ratio"]
    if "fi_tagged_pingpong" in benches:
        head += ["tagged lat ours", "system", "ratio"]
    head += ["ibv_rc_pingpong -e lat", "ib_send_lat -e", "ours/ibv_rc", "bw ours MB/s",
             "system", "ratio", "ib_send_bw -e MB/s", "kmsg/s ours", "system"]
    rows = []
    for size in sizes:
        row = [size_name(size)]
        first = None
        for bench in ("fi_msg_pingpong", "fi_tagged_pingpong"):
            if bench in benches:
                cells, o = lat_cells(results, prov, bench, size)
                row += cells
                first = o if first is None else first
        rc = limits.get(("ibv_rc_pingpong", size))
        row += [limit_cell(limits, "ibv_rc_pingpong", size),
                limit_cell(limits, "ib_send_lat", size), fmt(ratio(first, rc)) if rc else "-"]
        cells, o = bw_cells(results, prov, size, "fi_bw")
        row += cells + [limit_cell(limits, "ib_send_bw", size)]
        row += [fmt(msg_rate(med(results, prov, "fi_bw", size, lib, "usec_xfer")), 1)
                for lib in ("ours", "system")]
        rows.append(row)
    return markdown(head, rows)


def spread(values):
    """(max - min) / median of one cell's repetitions, or None with fewer than two."""
    values = [v for v in values if v is not None]
    m = median(values)
    return (max(values) - min(values)) / m if len(values) > 1 and m else None


def spread_rows(results, limit_runs, sizes):
    """How far the repetitions of one cell (same library, benchmark and size) are apart:
    per (provider, benchmark, library) the median and the worst spread over the sizes, and
    how many sizes spread by more than 50 %. Ratios mean something only where this is small."""
    groups = {}
    for (prov, bench, size), libs in results.items():
        if size not in sizes and bench != "fi_tagged_bw":
            continue
        key = "usec_xfer"
        for lib, recs in libs.items():
            sp = spread([r[key] if r else None for r in recs])
            if sp is not None:
                groups.setdefault((prov, bench, lib), []).append(sp)
    rows = []
    for (prov, bench, lib), sps in sorted(groups.items()):
        rows.append([prov, bench, lib, f"{median(sps):.0%}", f"{max(sps):.0%}",
                     f"{sum(1 for v in sps if v > 0.5)}/{len(sps)}"])
    for (tool, size), vals in sorted(limit_runs.items()):
        sp = spread(vals)
        if sp is not None:
            rows.append([RXE_NAME, f"{tool} -e {size_name(size)}", "-", f"{sp:.0%}",
                         f"{sp:.0%}", f"{int(sp > 0.5)}/1"])
    return markdown(["provider", "benchmark", "library", "median spread", "worst",
                     "sizes > 50 %"], rows)


RXE_NAME = "rxe0"


def rate_table(results, prov, sizes=(8, 64)):
    """Message rate of windowed streams of small messages, untagged and tagged."""
    head = ["size", "msg kmsg/s ours", "system", "ratio", "tagged kmsg/s ours", "system",
            "ratio"]
    rows = []
    for size in sizes:
        row = [size_name(size)]
        for bench in ("fi_bw", "fi_tagged_bw"):
            o = msg_rate(med(results, prov, bench, size, "ours", "usec_xfer"))
            s = msg_rate(med(results, prov, bench, size, "system", "usec_xfer"))
            row += [fmt(o, 1), fmt(s, 1), fmt(ratio(o, s))]
        rows.append(row)
    return markdown(head, rows)


def scale_table(scale):
    head = ["N peers", "connect ms ours", "system", "hub KiB/peer ours", "system",
            "client KiB/endpoint ours", "system"]
    rows = []
    for n in sorted(scale["ours"]):
        cells = [str(n)]
        for idx in range(3):
            for lib in ("ours", "system"):
                v = scale[lib].get(n)
                cells.append(fmt(v[idx], 1) if isinstance(v, tuple) else (v or "-"))
        rows.append(cells)
    return markdown(head, rows)


def av_churn_table(av):
    head = ["provider", "us per insert+remove ours", "system", "ratio",
            "RSS KiB after 2 M ours", "system", "RSS growth KiB ours", "system"]
    rows = []
    for prov in ("tcp;ofi_rxm", "tcp"):
        o, s = av["ours"].get(prov), av["system"].get(prov)
        ok = isinstance(o, tuple) and isinstance(s, tuple)
        cell = lambda v, i, d=2: fmt(v[i], d) if isinstance(v, tuple) else (v or "-")
        growth = lambda v: fmt(v[2] - v[1], 0) if isinstance(v, tuple) else (v or "-")
        rows.append([prov, cell(o, 0, 3), cell(s, 0, 3),
                     fmt(o[0] / s[0], 2) if ok and s[0] else "-",
                     cell(o, 2, 0), cell(s, 2, 0), growth(o), growth(s)])
    return markdown(head, rows)
