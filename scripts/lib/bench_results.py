#!/usr/bin/env python3
"""scripts/lib/bench_results.py — Google Benchmark JSON files to benchmark/RESULTS.md.

Called by scripts/bench:

    bench_results.py OUT.md --machine machine.json --command "..." \
        --json NAME=file.json ... --text NAME=file.txt ...

Every figure is shown next to its floor from the same run and the ratio
floor / figure (1.0 = as fast as the floor; below 1 = slower). Each is the
median over the repetitions, with [min–max] over them as its spread. How a
figure finds its floor, per binary:

* a `vs_floor` counter (redis_bench, postgres_bench): the floor was timed
  right after each operation in the same iteration (`floor_us`);
* a `speedup` counter (batched vs single heartbeats): single / batched;
* `store_X` next to `floor_X` (sqlite_store_bench), on CPU time;
* `BM_poll_per_event/N` next to `BM_store_floor/N` (bench_scheduler_poll);
* everything in schedule_bench next to `floor_every_5s` (lease::every).

The cluster programs' outputs (--text, from benchmark/cluster) are shown as
they are, after a table of their headline figures next to the targets
(cluster_table: parsed from the lines those programs print).
"""
import argparse
import json
import re
import statistics
import sys

TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def fmt_time(us):
    if us is None:
        return "—"
    if us < 1:
        return f"{us * 1e3:.1f} ns"
    if us < 1000:
        return f"{us:.3g} µs" if us < 100 else f"{us:.0f} µs"
    return f"{us / 1e3:.3g} ms"


def fmt_num(v, digits=2):
    return "—" if v is None else f"{v:.{digits}f}"


def spread(values, show, unit=""):
    """median [min–max] of values, each shown with `show`."""
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    med = statistics.median(values)
    if len(values) == 1:
        return show(med) + unit
    return f"{show(med)}{unit} [{show(min(values))}–{show(max(values))}]"


def load_runs(path):
    """name -> list of per-repetition entries (iterations only, no aggregates)."""
    with open(path) as f:
        data = json.load(f)
    runs = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate":
            continue
        if b.get("error_occurred"):
            runs.setdefault(b["run_name"], []).append({"error": b.get("error_message", "error")})
            continue
        runs.setdefault(b["run_name"], []).append(b)
    # Registration order (repetitions were interleaved at random).
    order = {b["run_name"]: (b.get("family_index", 0), b.get("per_family_instance_index", 0))
             for b in data.get("benchmarks", [])}
    return data.get("context", {}), dict(sorted(runs.items(), key=lambda kv: order.get(kv[0], (0, 0))))


def t_us(b, which="real_time"):
    return b[which] * TO_US[b.get("time_unit", "ns")]


def section(name, path, out):
    context, runs = load_runs(path)
    reps = max((len(v) for v in runs.values()), default=0)
    out.append(f"### {name}\n")
    out.append(f"`{context.get('executable', name)}`, {reps} repetition(s) each, interleaved at random "
               f"(floors and figures see the same load); load average at its start: "
               f"{' / '.join(f'{x:.2f}' for x in context.get('load_avg', []))}.\n")
    rows = []
    # A benchmark may fail in some repetitions only: its figures are those of
    # the others, and the error is listed with how many repetitions it took.
    errors = [f"`{n}`: {next(x['error'] for x in r if 'error' in x)}"
              f" ({sum('error' in x for x in r)} of {len(r)} repetitions)"
              for n, r in runs.items() if any("error" in x for x in r)]
    ok = {n: [x for x in r if "error" not in x] for n, r in runs.items()}
    ok = {n: r for n, r in ok.items() if r}

    def paired_rows():
        for n, r in ok.items():
            if "vs_floor" in r[0] and "floor_us" in r[0]:
                extra = ""
                if "wait_cost" in r[0]:
                    extra = (f"the same claim without WAIT: {spread([x['plain_us'] for x in r], fmt_time)}; "
                             f"WAIT 1 costs {spread([x['wait_cost'] for x in r], fmt_num)}×")
                if "cpu_vs_floor" in r[0]:
                    extra = (f"server CPU {spread([x['srv_cpu_us'] for x in r], fmt_time)} vs the floor's "
                             f"{spread([x['floor_srv_cpu_us'] for x in r], fmt_time)}: "
                             f"{spread([x['cpu_vs_floor'] for x in r], fmt_num)}")
                rows.append((n, spread([t_us(x) for x in r], fmt_time), spread([x["floor_us"] for x in r], fmt_time),
                             spread([x["vs_floor"] for x in r], fmt_num), extra))
            elif "speedup" in r[0]:
                extra = (f"round trips: {fmt_num(r[0].get('trips_batched'), 0)} batched vs "
                         f"{fmt_num(r[0].get('trips_single'), 0)} single")
                rows.append((n + " (batched)", spread([t_us(x) for x in r], fmt_time),
                             spread([x["single_ms"] * 1e3 for x in r], fmt_time) + " (one call each)",
                             spread([x["speedup"] for x in r], fmt_num) + "× (single / batched)", extra))

    if any("median_ms" in r[0] for r in ok.values()):
        for n, r in ok.items():
            def ms(key):
                # A pushed hand-over takes a few ms: one decimal below 10 ms.
                return spread([x[key] for x in r], lambda v: f"{v:.1f}" if v < 10 else f"{v:.0f}")
            rows.append((n, f"{ms('min_ms')} / {ms('median_ms')} / {ms('p95_ms')} / {ms('max_ms')} ms",
                         "—", "—", f"min / median / p95 / max of {r[0].get('iterations', '?')} per repetition; "
                         "the bound is in the benchmark's source"))
    elif any("vs_floor" in r[0] or "speedup" in r[0] for r in ok.values()):
        for n in ok:
            if n.startswith("BM_floor"):
                rows.append((n + " (the floor alone)", spread([t_us(x) for x in ok[n]], fmt_time), "", "", ""))
        paired_rows()
    elif any(n.startswith("store_") for n in ok):
        for n, r in ok.items():
            if not n.startswith("store_"):
                continue
            f = ok.get("floor_" + n[len("store_"):])
            fig = [t_us(x, "cpu_time") for x in r]
            flo = [t_us(x, "cpu_time") for x in f] if f else []
            ratio = [b / a for a, b in zip(fig, flo)] if f else []
            per_s = spread([x.get("items_per_second", 1e6 / t_us(x, "cpu_time")) for x in r],
                           lambda v: f"{v / 1e3:.1f}k") + " ops/s"
            rows.append((n, spread(fig, fmt_time) + f" CPU ({per_s})",
                         spread(flo, fmt_time) if f else "—", spread(ratio, fmt_num) if ratio else "—", ""))
        for n, r in ok.items():
            if not n.startswith("store_") and not n.startswith("floor_"):
                rows.append((n, spread([t_us(x, "cpu_time") for x in r], fmt_time) + " CPU", "", "",
                             "compare with floor_heartbeat, the cheapest raw write; the store runs one of these before each operation"))
    elif any(n.startswith("BM_poll_per_event") for n in ok):
        medians = []
        for n, r in ok.items():
            if not n.startswith("BM_poll_per_event"):
                continue
            size = n.split("/", 1)[1]
            f = ok.get("BM_store_floor/" + size, [])
            fig = [t_us(x, "cpu_time") for x in r]
            flo = [t_us(x, "cpu_time") for x in f]
            medians.append(statistics.median(fig))
            rows.append((f"poll() per due event, {int(size):,} jobs", spread(fig, fmt_time) + " CPU",
                         spread(flo, fmt_time) + " (the store alone)",
                         spread([b / a for a, b in zip(fig, flo)], fmt_num), ""))
        if medians:
            rows.append(("flatness, 100 → 100,000 jobs", f"{max(medians) / min(medians):.2f}× (max / min median)",
                         "", "", "aim: within 2×"))
    else:
        floor_name = next((n for n in ok if n.startswith("floor")), None)
        flo = [t_us(x, "cpu_time") for x in ok.get(floor_name, [])]
        for n, r in ok.items():
            fig = [t_us(x, "cpu_time") for x in r]
            if n == floor_name:
                rows.append((n + " (the floor)", spread(fig, fmt_time) + " CPU", "", "", ""))
                continue
            ratio = [b / a for a, b in zip(fig, flo)]
            rows.append((n, spread(fig, fmt_time) + " CPU", spread(flo, fmt_time) if flo else "—",
                         spread(ratio, lambda v: f"{v:.3f}") if ratio else "—", ""))
    out.append("| benchmark | figure | floor, same run | floor / figure | also |")
    out.append("| --- | --- | --- | --- | --- |")
    for name_, fig, flo, ratio, extra in rows:
        shown = name_.replace("/manual_time", "")
        out.append(f"| `{shown}` | {fig} | {flo} | {ratio} | {extra} |")
    if errors:
        out.append("")
        out.append("Errors: " + "; ".join(errors))
    out.append("")


def cluster_table(texts):
    """Headline rows of the cluster programs' outputs (benchmark/cluster), or []."""
    rows = []
    for name, text in texts:
        m = re.search(r"^cluster benchmark, store (\w+)", text, re.M)
        if not m:
            continue
        store = m.group(1)

        def grab(pattern, fmt, default="—"):
            g = re.search(pattern, text, re.M)
            return fmt(g) if g else default

        take = grab(r"after the last acknowledged heartbeat:\s+(\d+) /\s+(\d+) /\s+(\d+) /\s+(\d+) ms\s+bound (\d+) ms.*?: (\d+) over; "
                    r"target median <= (\d+) ms: (\w+)",
                    lambda g: f"{g[2]} ms (target ≤ {g[7]}: {g[8]}); max {g[4]} ms (bound {g[5]}: {g[6]} over)")
        hand = grab(r"SIGTERM -> the backup's handler start:\s+(\d+) /\s+(\d+) /\s+(\d+) /\s+(\d+) ms",
                    lambda g: f"{g[2]} ms (max {g[4]})")
        crash = grab(r"^c\. crash loop: (\d+) attempt\(s\) started.*?(interrupted (\d+) ms after|NO interrupted)",
                     lambda g: f"{g[1]} attempts, interrupted after {g[3]} ms" if g[3] else f"{g[1]} attempts, NOT interrupted")
        idle = grab(r"^d\. idle.*?instance syscalls ([\d.]+)/s(?:, server commands ([\d.]+)/s)?",
                    lambda g: f"{g[1]} syscalls/s" + (f", {g[2]} commands/s" if g[2] else ""))
        # S | once | twice | missed | lag p50 / p99 | to pool p50 / p99 | trips | script cmds | CPU | stop
        sweep = re.findall(r"^\s+(\d+)\s+\| (\d+) / (\d+) \(([\d.]+)%\)\s+\| (\d+)\s+\| (\d+)\s+\| (\S+) / (\S+)\s+\| "
                           r"(\S+) / (\S+)\s+\| (\S+)\s+\| (\S+)\s+\| (\S+) / (\S+) ms\s+\| (\d+)", text, re.M)
        runs = "; ".join(f"{int(r[0]):,}: {r[3]} %, p99 {r[7]} ms (handed to the pool: {r[9]}), stop {r[14]} ms"
                         for r in sweep) or "—"
        work = "; ".join(f"{int(r[0]):,}: " + ("no client round trips (in-process)" if r[10] == "-" else f"{r[10]} trips")
                         + (f", {r[11]} script cmds" if r[11] != "-" else "") for r in sweep[:1] + sweep[-1:])
        rows.append((store, take, hand, crash, idle, runs, work or "—"))
    if not rows:
        return []
    out = ["### Cluster benchmarks: headline figures against the targets", "",
           "From the outputs below (3 instance processes per store, each program its own run). Targets (issue #13, "
           "for Redis): takeover median ≤ lease + heartbeat / 2 after the last acknowledged heartbeat, never beyond "
           "lease + 2 × heartbeat + one round trip; 0 idle traffic; 10,000 jobs/s ≥ 99.9 % exactly once, lag p99 ≤ "
           "500 ms, stop() ≤ 1 s; ≤ 5 client round trips and ≤ 20 commands inside scripts per fire.", "",
           "| store | takeover after kill -9, median after last ack | hand-over after SIGTERM, median | crash loop | "
           "idle | sweep S jobs/s: exactly once, lag p99 (of it, slot → handed to the executor), stop() | store work per fire (smallest, largest S) |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    out += [f"| {' | '.join(r)} |" for r in rows]
    out.append("")
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--machine", required=True)
    p.add_argument("--command", required=True)
    p.add_argument("--text", action="append", default=[], help="NAME=FILE: a program's output, shown as it is")
    p.add_argument("--json", action="append", default=[], help="NAME=FILE: a Google Benchmark JSON file")
    a = p.parse_args()
    with open(a.machine) as f:
        m = json.load(f)
    out = ["# Benchmark results", "",
           f"Written by `scripts/bench` — do not edit by hand; rerun it. Command: `{a.command}`.", "",
           "| machine | |", "| --- | --- |",
           f"| date | {m['date']} |",
           f"| commit | `{m['commit']}` |",
           f"| CPU | {m['cpu']}, {m['cores']} cores |",
           f"| compiler | {m['compiler']}, release preset (`-O3 -DNDEBUG`) |",
           f"| load average (1 / 5 / 15 min) | before: {m['load_before']}; after: {m['load_after']} |",
           f"| servers | {m['servers']} |", ""]
    if m.get("note"):
        out += [m["note"], ""]
    out += ["Each figure is the median over the repetitions, with [min–max] over them. The ratio is floor / "
            "figure: 1.00 is as fast as the floor, 0.50 twice as slow. Floors are measured in the same binary "
            "and the same run (see each benchmark's source for what its floor is).", ""]
    for item in a.json:
        name, path = item.split("=", 1)
        section(name, path, out)
    texts = []
    for item in a.text:
        name, path = item.split("=", 1)
        with open(path) as f:
            texts.append((name, f.read().rstrip()))
    out += cluster_table(texts)
    for name, text in texts:
        out += [f"### {name}", "", "```", text, "```", ""]
    with open(a.out, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
