#!/usr/bin/env python3
"""Prints PyTorch/ours time ratios from compare.sh's run directories, one table per run and the median of the runs.

Usage: ratios.py RUN_DIR [RUN_DIR ...]. Each RUN_DIR holds ns.json and step.json (JMH) and peer-*.json
(pytorch_peer.py, one per OpenMP environment). Each entry is compared against PyTorch's fastest median of that run,
whose file is named. The NS rows also compare against `torch-reference`, torch.optim.Muon's iteration run on our
libtorch through the same bindings: PyTorch / torch-reference is what the newer libtorch gives, torch-reference /
ours what our kernels give. The step rows, where a RUN_DIR holds same-process.json (SameProcessStep: our step and
torch.optim.Muon's formulas with libtorch's AdamW, stepped alternately in one JVM), also give that same-process
ratio, reference / ours, at the end of the row, with the range of the runner's own runs; and its median over the
RUN_DIRs beside PyTorch / ours, each with its range. Under each step row, the spread of our step and not only its
middle: the median, 90th and 99th percentile (nearest rank) and the slowest of JMH's iterations, and of the
same-process runs' steps (pooled over its runs), ours and the reference's, as StepSpread computes them.
"""
import glob
import json
import math
import os
import statistics
import sys


def jmh_scores(path):
    out = {}
    for record in json.load(open(path)):
        params = record.get("params", {})
        out[(record["benchmark"].split(".")[-2], tuple(sorted(params.items())))] = (
            record["primaryMetric"]["score"], record["primaryMetric"]["scoreError"])
    return out


def jmh_iterations(path):
    """Each entry's measured iterations, every fork's, by the same key as jmh_scores."""
    out = {}
    for record in json.load(open(path)):
        params = record.get("params", {})
        raw = record["primaryMetric"].get("rawData", [])
        out[(record["benchmark"].split(".")[-2], tuple(sorted(params.items())))] = [t for fork in raw for t in fork]
    return out


def spread(times):
    """(median, p90, p99, max) of step times, percentiles by nearest rank: StepSpread's definition."""
    ordered = sorted(times)
    n = len(ordered)

    def rank(p):
        return ordered[max(math.ceil(p * n / 100), 1) - 1]
    return statistics.median(ordered), rank(90), rank(99), ordered[-1]


def spread_text(times):
    median, p90, p99, worst = spread(times)
    return f"median {median:.1f}, p90 {p90:.1f}, p99 {p99:.1f}, max {worst:.1f} ms ({len(times)})"


def fastest_peer(peers, section, key):
    best = None
    for path, peer in peers:
        entry = peer[section].get(key)
        if entry and (best is None or entry["median_ms"] < best[0]):
            best = (entry["median_ms"], os.path.basename(path))
    return best


def same_process(run_dir):
    """SameProcessStep's results by NS dtype ({} where the run has none): the median of its runs' ratios
    (reference / ours), their range, and the medians of both sides' step times over its runs."""
    path = os.path.join(run_dir, "same-process.json")
    if not os.path.exists(path):
        return {}
    out = {}
    for dtype, result in json.load(open(path))["step"].items():
        runs = result["runs"]
        out[dtype] = {"ratio": result["ratio_median"], "min": result["ratio_min"], "max": result["ratio_max"],
                      "ours_ms": statistics.median(r["ours_median_ms"] for r in runs),
                      "reference_ms": statistics.median(r["reference_median_ms"] for r in runs), "runs": len(runs),
                      "ours_steps": [t for r in runs for t in r["ours_ms"]],
                      "reference_steps": [t for r in runs for t in r["reference_ms"]]}
    return out


def run_rows(run_dir):
    """(label, ours ms, ours error, PyTorch ms, PyTorch file, same-libtorch reference ms or None, same-process
    result or None) per entry."""
    ours = {**jmh_scores(os.path.join(run_dir, "ns.json")), **jmh_scores(os.path.join(run_dir, "step.json"))}
    iterations = jmh_iterations(os.path.join(run_dir, "step.json"))
    same = same_process(run_dir)
    peers = [(path, json.load(open(path))) for path in sorted(glob.glob(os.path.join(run_dir, "peer-*.json")))]
    references = {}
    for (bench, params), (score, _) in ours.items():
        p = dict(params)
        if bench == "NewtonSchulzBenchmark" and p["variant"] == "torch-reference":
            references[f"{p['shape']}/{p['dtype']}"] = score
    rows = []
    for (bench, params), (score, error) in sorted(ours.items()):
        p = dict(params)
        if bench == "NewtonSchulzBenchmark":
            if p["variant"] == "torch-reference":
                continue
            key, section = f"{p['shape']}/{p['dtype']}", "ns"
            label = f"NS {key} ({p['variant']})"
        elif p.get("optimizer") == "adamw":
            continue  # AdamW alone is not what the peer's Muon + AdamW step measures
        else:
            key, section = p["nsPrecision"], "step"
            label = f"step GPT-2-small width {key} ({p['optimizer']}, {p['nsAlgorithm']})"
        theirs = fastest_peer(peers, section, key)
        if theirs:
            rows.append((label, score, error, theirs[0], theirs[1], references.get(key) if section == "ns" else None,
                         same.get(key) if section == "step" else None,
                         iterations.get((bench, params)) if section == "step" else None))
    return peers[0][1] if peers else None, rows


def main(*run_dirs):
    if not run_dirs:
        sys.exit("usage: ratios.py RUN_DIR [RUN_DIR ...]")
    ratios = {}
    for run_dir in run_dirs:
        first, rows = run_rows(run_dir)
        print(f"== {run_dir}: PyTorch {first['torch']} (BLAS {first['blas']}), {first['threads']} threads")
        print(f"{'what':<52} {'ours ms':>14} {'PyTorch ms':>11} {'PyTorch/ours':>13} {'same-libtorch ref ms':>21}"
              f" {'ref/ours':>9}  PyTorch run")
        for label, score, error, theirs, path, reference, same, steps in rows:
            ref = f"{reference:>21.1f} {reference / score:>8.2f}x" if reference else f"{'':>21} {'':>9}"
            note = ""
            if same:
                note = (f"  same-process: reference {same['reference_ms']:.1f} ms / ours {same['ours_ms']:.1f} ms ="
                        f" {same['ratio']:.2f}x ({same['runs']} runs {same['min']:.2f}-{same['max']:.2f})")
            print(f"{label:<52} {score:>8.1f} ±{error:>4.0f} {theirs:>11.1f} {theirs / score:>12.2f}x {ref}  {path}"
                  f"{note}")
            if steps:
                print(f"    ours per JMH iteration: {spread_text(steps)}")
            if same and same["ours_steps"]:
                print(f"    same-process steps: ours {spread_text(same['ours_steps'])}; reference"
                      f" {spread_text(same['reference_steps'])}")
            ratios.setdefault(label, []).append((theirs / score, reference / score if reference else None,
                                                 same["ratio"] if same else None))
    if len(run_dirs) > 1:
        print(f"== median of {len(run_dirs)} runs")
        for label, values in ratios.items():
            peer = statistics.median(v[0] for v in values)
            refs = [v[1] for v in values if v[1] is not None]
            ref = f", same-libtorch ref / ours {statistics.median(refs):.2f}x" if refs else ""
            runs = ", ".join(f"{v[0]:.2f}" for v in values)
            same = [v[2] for v in values if v[2] is not None]
            if same:
                ref += (f", same-process ref / ours {statistics.median(same):.2f}x (runs: "
                        f"{', '.join(f'{v:.2f}' for v in same)}; range {min(same):.2f}-{max(same):.2f}; PyTorch / ours"
                        f" range {min(v[0] for v in values):.2f}-{max(v[0] for v in values):.2f})")
            print(f"{label:<52} PyTorch / ours {peer:.2f}x (runs: {runs}){ref}")


if __name__ == "__main__":
    main(*sys.argv[1:])
