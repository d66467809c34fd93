"""The targets of issue 7, each with the figure measured and a verdict."""

from .runner import median
from .tables import med, ratio, size_name


def band_ratio(results, prov, bench, key, lo, hi, sizes, ref=None):
    """Median over the sizes in [lo, hi] of the per-size ratio ours / reference, where the
    reference is the system library or ref(size) (a physical limit)."""
    rs = []
    for size in sizes:
        if lo <= size <= hi:
            o = med(results, prov, bench, size, "ours", key)
            r = ratio(o, ref(size) if ref else med(results, prov, bench, size, "system", key))
            if r is not None:
                rs.append(r)
    return median(rs)


def every_size(results, prov, bench, key, sizes, better):
    """(sizes where ours is at least as good as the system, sizes compared, worst ratio)."""
    rs = [ratio(med(results, prov, bench, size, "ours", key),
                med(results, prov, bench, size, "system", key)) for size in sizes]
    rs = [r for r in rs if r is not None]
    if not rs:
        return 0, 0, None
    worst = max(rs) if key == "usec_xfer" else min(rs)
    return sum(1 for r in rs if better(r)), len(rs), worst


def verdict(v, ok):
    return "not measured" if v is None else ("met" if ok(v) else "**missed**")


def host_rows(results, base, scale, sizes):
    """Issue 7's rows that issue 19 kept (its latency and 16-256 KiB bandwidth rows gave
    way to the wire part's, wire_report.rows)."""
    rxm = "tcp;ofi_rxm"
    big = band_ratio(results, rxm, "fi_bw", "MB_sec", 1 << 20, 4 << 20, sizes,
                     ref=lambda s: base.get(("bw", s), (None, None))[1])
    mem = None
    common = [n for n in scale["ours"] if isinstance(scale["ours"][n], tuple)
              and isinstance(scale["system"].get(n), tuple)]
    if common:
        n = max(common)
        mem = (n, ratio(scale["ours"][n][1], scale["system"][n][1]))
    mem_v = mem[1] if mem else None
    return [
        ("tcp;ofi_rxm >= 1 MiB bandwidth >= 0.95x raw TCP stream", big,
         verdict(big, lambda v: v >= 0.95)),
        (f"memory per connected peer (hub, N={mem[0] if mem else '-'}) <= 1/8 system", mem_v,
         verdict(mem_v, lambda v: v <= 0.125)),
    ]


def clearly_worse(results, prov, bench, key, sizes):
    """Sizes where every repetition of ours is worse than every repetition of the system
    (the two ranges do not overlap): a loss that noise of this run cannot explain."""
    worse = []
    for size in sizes:
        libs = results.get((prov, bench, size), {})
        o = [r[key] for r in libs.get("ours", []) if r]
        s = [r[key] for r in libs.get("system", []) if r]
        if len(o) > 1 and len(s) > 1 and (
                min(o) > max(s) if key == "usec_xfer" else max(o) < min(s)):
            worse.append(size)
    return worse


def vm_rows(results, limits, sizes):
    rxm = "verbs;ofi_rxm"
    rows = []
    for bench, key, what, better in (
            ("fi_msg_pingpong", "usec_xfer", "latency (msg pingpong)", lambda r: r <= 1),
            ("fi_tagged_pingpong", "usec_xfer", "latency (tagged pingpong)", lambda r: r <= 1),
            ("fi_bw", "MB_sec", "streaming bandwidth (fi_bw)", lambda r: r >= 1)):
        good, n, worst = every_size(results, rxm, bench, key, sizes, better)
        name = f"verbs;ofi_rxm {what} >= system at every size"
        if n == 0:
            ours = [med(results, rxm, bench, s, "ours", key) for s in sizes]
            rows.append((name, None, "not measured" + (
                " (the system library failed every run, see the table)"
                if any(v is not None for v in ours) else "")))
        else:
            worse = clearly_worse(results, rxm, bench, key, sizes)
            note = (f"; ours worse in every repetition at {len(worse)} sizes"
                    + (f": {', '.join(size_name(w) for w in worse)}" if worse else ""))
            rows.append((name + f" (worst ratio {worst:.2f}{note})", f"{good}/{n} sizes",
                         "met" if good == n else "**missed**"))
    rc = band_ratio(results, rxm, "fi_msg_pingpong", "usec_xfer", 1, 64, sizes,
                    ref=lambda s: limits.get(("ibv_rc_pingpong", s)))
    rows.append(("verbs;ofi_rxm small-message latency (1-64 B) <= 1.3x ibv_rc_pingpong", rc,
                 verdict(rc, lambda v: v <= 1.3)))
    return rows
