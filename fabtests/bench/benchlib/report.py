"""RESULTS.md and bench.png from the figures of one run."""

import datetime
import os
import re
import shutil
import subprocess
import sys

from . import samehost_report, tables, vm, wire_report
from .tables import fmt, med


def load_note(label, start, end, ncpu):
    """Load averages (1/5/15 min) at the start and the end of a part of the run."""
    text = (f"{label}: load average {start[0]:.1f} / {start[1]:.1f} / {start[2]:.1f} at the "
            f"start, {end[0]:.1f} / {end[1]:.1f} / {end[2]:.1f} at the end ({ncpu} CPUs).")
    if max(start[0], end[0]) > ncpu * 0.5:
        text += (" **Loaded by other work**: absolute figures are noisy and pessimistic; "
                 "ratios mean more because both libraries ran alternately under the same "
                 "conditions.")
    return text


def build_stamp(build, srcdir):
    """When our library was built and from which source commit."""
    lib = os.path.join(build, ".libs", "libfabric.so.1")
    built = datetime.datetime.utcfromtimestamp(os.path.getmtime(lib)).strftime("%H:%M UTC")
    head = subprocess.run(["git", "-C", srcdir, "log", "-1", "--format=%h (%s)"],
                          capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", srcdir, "status", "--porcelain", "--", "prov", "src"],
                           capture_output=True, text=True).stdout.strip()
    return f"at {built} from commit {head}" + (
        " with uncommitted changes in prov/ or src/" if dirty else "")


def keep_diagnosis(out):
    """The hand-written diagnosis section of a previous RESULTS.md survives a re-run."""
    try:
        text = open(os.path.join(out, "RESULTS.md")).read()
    except OSError:
        return "(no diagnosis written yet)"
    m = re.search(r"<!-- diagnosis:begin -->\n(.*?)\n<!-- diagnosis:end -->", text, re.S)
    return m.group(1) if m else "(no diagnosis written yet)"


METHOD = (
    "Method: the same benchmark binaries (fabtests/benchmarks/fi_msg_pingpong, "
    "fi_tagged_pingpong, fi_bw{tagged_bw} from our build tree) run once with our "
    "libfabric.so.1 and once with the system's, alternately for each size (ours first in "
    "even repetitions, system first in odd ones), with the same options and iteration "
    "counts. Each cell is the median of {reps} repetitions. Latency is usec per one-way "
    "transfer (half a round trip); bandwidth is one-way MB/s (10^6 bytes) with a window of "
    "64 sends in flight; kmsg/s is the message rate of that stream. Completions are waited "
    "for with `-c {comp}`. Raw TCP is fabtests/bench/tcp_baseline: a plain socket ping-pong "
    "and stream between two processes on loopback, TCP_NODELAY, run right after each "
    "tcp;ofi_rxm pair of the same size (same iterations). Ratios are ours / system "
    "(latency: lower is better; bandwidth and rate: higher is better).")

VM_METHOD = (
    "Measured inside the Soft-RoCE VM (`fabtests/scripts/rxe-vm --smp 1`: qemu TCG "
    "emulation, one vCPU, qemu at nice -15 when run as root, rxe0 on dummy0, both processes "
    "in the VM), so absolute figures are far below real hardware and only ratios measured in "
    "this VM mean anything. Every process waits for completions by sleeping, none spins: "
    "under TCG, spinning processes (Debian's fi_pingpong, ibv_rc_pingpong without -e) made "
    "every latency bimodal, 35-100 us or 3.6-10 ms, for both libraries; with two vCPUs even "
    "sleeping readers took 4-11 ms (a wake-up is an interrupt to a halted vCPU whose qemu "
    "thread the host must schedule first). The libraries run our fabtests "
    "benchmarks (fi_msg_pingpong, fi_tagged_pingpong, fi_bw, fi_tagged_bw) with "
    "`-c sread`, the same binary and options for both; the plain verbs msg runs add "
    "`-F context` (the system's verbs CQ refuses the tagged format). One process pair sweeps "
    "all sizes of a benchmark (starting a pair costs 10-30 s under emulation): ping-pong "
    "`{pp}`, streams `{bw}` (`-M`: a size moves at most that many bytes, so large sizes run "
    "fewer iterations, at least 2). The library going first alternates between "
    "repetitions; each cell is the median of {reps} repetitions. Both libraries run with "
    "`FI_UNIVERSE_SIZE=64`: with the default (256) the system's rxm, which sizes its core "
    "CQs by the universe size, cannot create them on rxe and its fi_enable fails. The wire "
    "limit beside, also sleeping on events: `ibv_rc_pingpong -e` (usec/iter is a round trip, "
    "halved here), perftest `ib_send_lat -e` (t_avg, one way) and `ib_send_bw -e` (BW "
    "average, MiB/s converted to MB/s), one pair per size at the few sizes shown (`-` "
    "elsewhere), once per repetition after the library runs. A sweep that does not finish "
    "in 240 s (a limit pair: 90 s) is stopped; sizes it did not reach are marked `fail`.")


def vm_section(vm, vm_results, vm_limits, limit_runs):
    if "skipped" in vm:
        return ["## verbs and verbs;ofi_rxm (Soft-RoCE VM)", "",
                f"Not measured in this run: {vm['skipped']}.", ""]
    opts = vm.get("options", {})
    md = ["## verbs;ofi_rxm (rdm endpoints) in the Soft-RoCE VM", "",
          VM_METHOD.format(pp=" ".join(opts.get("fi_msg_pingpong", [])),
                           bw=" ".join(opts.get("fi_bw", [])), reps=vm["reps"]), "",
          "Libraries in the VM: " + "; ".join(f"{k} = `{v}`"
                                               for k, v in vm["resolved"].items()) + ". " +
          "Load average inside the VM {:.1f} / {:.1f} / {:.1f} at the start, {:.1f} / {:.1f} / "
          "{:.1f} at the end (what starves the VM is the host's load, above).".format(
              *vm["load"][0], *vm["load"][1]) +
          f" The VM part took {vm['elapsed'] / 60:.1f} minutes, "
          f"{vm['failures']} failed runs (cells marked fail).", ""]
    md += tables.vm_table(vm_results, vm_limits, vm["sizes"], "verbs;ofi_rxm",
                          ["fi_msg_pingpong", "fi_tagged_pingpong"]) + [""]
    md += ["Message rate (windowed stream of 64, verbs;ofi_rxm):", ""]
    md += tables.rate_table(vm_results, "verbs;ofi_rxm") + [""]
    md += ["## verbs (msg endpoints) in the Soft-RoCE VM", ""]
    md += tables.vm_table(vm_results, vm_limits, vm["sizes"], "verbs",
                          ["fi_msg_pingpong"]) + [""]
    md += ["Repeatability in the VM: the spread (max - min) / median of the repetitions of "
           "one cell (same library, benchmark and size; usec per transfer), summarised over "
           "the sizes. A ratio between the libraries is decided only where both spreads are "
           "well below the difference it shows.", ""]
    md += tables.spread_rows(vm_results, limit_runs, vm["sizes"]) + [""]
    return md


def write(cfg, run, out_path):
    """run: dict with host results/base/scale, vm data, target rows, timings, loads."""
    now = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
    tagged_bw = ", fi_tagged_bw" if run["tagged_bw"] else ""
    md = ["# Benchmark results: our libfabric vs the system's (Debian 1.17)", "",
          f"Generated by `fabtests/scripts/bench{' --quick' if cfg.quick else ''}` on {now} "
          f"in {run['elapsed'] / 60:.1f} minutes. Regenerate with `make bench` "
          "(or `fabtests/scripts/bench`).", "",
          METHOD.format(tagged_bw=tagged_bw, reps=cfg.reps, comp=cfg.comp), "",
          "Libraries: " + "; ".join(f"{k} = `{v}`" for k, v in cfg.resolved.items()) +
          f". Ours was built {build_stamp(cfg.build, cfg.srcdir)}.", "",
          load_note("Host load", run["load"][0], run["load"][1], os.cpu_count() or 1), ""]
    if cfg.concurrent_note:
        md += [cfg.concurrent_note, ""]
    md += ["## Targets (issues 7, 19 and 20)", "", "| target | measured | verdict |", "|---|---|---|"]
    for name, v, verdict in run["targets"]:
        md.append(f"| {name} | {fmt(v, 3)} | {verdict} |")
    md += ["", "<!-- diagnosis:begin -->", cfg.diagnosis, "<!-- diagnosis:end -->", ""]
    results, base = run["host"]
    for prov, ep, benches in cfg.providers:
        md += [f"## {prov} ({ep} endpoints) on loopback", ""]
        md += tables.host_table(results, base, cfg.sizes, prov, benches) + [""]
        if prov == "tcp;ofi_rxm":
            md += [f"Message rate (windowed stream of 64, {prov}):", ""]
            md += tables.rate_table(results, prov) + [""]
    if run.get("wire"):
        md += wire_report.section(run["wire"])
    if run.get("samehost"):
        md += samehost_report.section(run["samehost"])
    if run["vm"] is not None:
        md += vm_section(run["vm"], *run["vm_decoded"], vm.limit_runs(run["vm"]))
    md += ["## Scale: connecting N peers over tcp;ofi_rxm", "",
           "fabtests/bench/scale: a hub process with one endpoint; another process opens N "
           "endpoints in one domain and each sends one message to the hub (rxm connects on "
           "first send). connect ms: from opening the fabric to all N send completions. "
           "hub KiB/peer: growth of the hub's anonymous RSS (RssAnon: heap and mappings, not shared-library code pages) while the N peers connected, / N. "
           "client KiB/endpoint: anonymous RSS growth of the other process for its N endpoints and "
           "connections, / N. Each figure is the median of the repetitions (same count as "
           "above), the library going first alternating. Runs of a library stop growing N once the next one would "
           "need more than 3 GiB on this shared machine or took > 20 s.", ""]
    md += tables.scale_table(run["scale"]) if run["scale"]["ours"] else ["(not run)"]
    md += [""]
    md += ["## Address vector churn (issue 17 item 2)", "",
           "fabtests/bench/av_churn: an FI_AV_TABLE of the provider's domain; one address "
           "inserted and removed 2 M times, each time a new one (a server whose clients come "
           "and go). us per pair: wall time / 2 M; RSS: the process's resident set after the "
           "2 M pairs and its growth over them (flat is the goal). Median of the repetitions, "
           "libraries alternating.", ""]
    av = run.get("av_churn")
    md += tables.av_churn_table(av) if av and av["ours"] else ["(not run)"]
    md += [""]
    if not run["tagged_bw"]:
        md += ["Not measured: tagged message rate (no fabtests/benchmarks/fi_tagged_bw in the "
               "build tree).", ""]
    if run["png"]:
        md += ["Plot: [bench.png](bench.png) (latency and bandwidth vs size, ours vs system "
               "vs the limit; tcp;ofi_rxm on loopback" +
               (", verbs;ofi_rxm in the VM" if run["vm_plotted"] else "") + ").", ""]
    with open(out_path, "w") as f:
        f.write("\n".join(md))


def plot(out_dir, panels):
    """panels: [(title, [(size, lat_ours, lat_sys, lat_limit, bw_ours, bw_sys, bw_limit)],
    limit_name)]; one row of a latency and a bandwidth plot per panel."""
    if not shutil.which("gnuplot"):
        if os.geteuid() == 0:
            subprocess.run(["apt-get", "install", "-y", "-q", "gnuplot-nox"],
                           capture_output=True)
        if not shutil.which("gnuplot"):
            print("bench: gnuplot not available, no plot", file=sys.stderr)
            return None
    png = os.path.join(out_dir, "bench.png")
    script = [f"set terminal pngcairo size 1200,{450 * len(panels)} noenhanced",
              f"set output '{png}'",
              f"set multiplot layout {len(panels)},2",
              "set logscale x 2", "set format x '%.0b%BB'", "set xlabel 'message size'",
              "set key top left", "set grid", "set logscale y"]
    dats = []
    for i, (title, rows, limit) in enumerate(panels):
        dat = os.path.join(out_dir, f"bench{i}.dat")
        dats.append(dat)
        with open(dat, "w") as f:
            for row in rows:
                f.write(" ".join("NaN" if v is None else str(v) for v in row) + "\n")
        for col, what in ((2, "latency (usec, one way)"), (5, "bandwidth (MB/s)")):
            script += [f"set title '{title}: {what.split(' ')[0]}'", f"set ylabel '{what}'",
                       f"plot '{dat}' using 1:{col} with linespoints title 'ours', "
                       f"'' using 1:{col + 1} with linespoints title 'system 1.17', "
                       f"'' using 1:{col + 2} with linespoints title '{limit}'"]
    script.append("unset multiplot")
    p = subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True,
                       capture_output=True)
    for dat in dats:
        os.unlink(dat)
    if p.returncode:
        print(f"bench: gnuplot failed: {p.stderr}", file=sys.stderr)
        return None
    return png


def plot_rows(results, sizes, prov, lat_limit, bw_limit, bw_bench="fi_bw"):
    return [(s, med(results, prov, "fi_msg_pingpong", s, "ours", "usec_xfer"),
             med(results, prov, "fi_msg_pingpong", s, "system", "usec_xfer"), lat_limit(s),
             med(results, prov, bw_bench, s, "ours", "MB_sec"),
             med(results, prov, bw_bench, s, "system", "MB_sec"), bw_limit(s))
            for s in sizes]
