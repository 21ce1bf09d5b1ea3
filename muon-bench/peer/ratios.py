#!/usr/bin/env python3
"""Prints our/PyTorch time ratios from the JMH JSON files and pytorch_peer.py's JSON (see compare.sh)."""
import json
import sys


def jmh_scores(path):
    out = {}
    for record in json.load(open(path)):
        params = record.get("params", {})
        out[(record["benchmark"].split(".")[-2], tuple(sorted(params.items())))] = (
            record["primaryMetric"]["score"], record["primaryMetric"]["scoreError"])
    return out


def main(ns_json, step_json, peer_json):
    ours = {**jmh_scores(ns_json), **jmh_scores(step_json)}
    peer = json.load(open(peer_json))
    print(f"PyTorch {peer['torch']} (BLAS {peer['blas']}), {peer['threads']} threads")
    print(f"{'what':<44} {'ours ms':>14} {'PyTorch ms':>11} {'PyTorch/ours':>13}")
    for (bench, params), (score, error) in sorted(ours.items()):
        p = dict(params)
        if bench == "NewtonSchulzBenchmark":
            key = f"{p['shape']}/{p['dtype']}"
            theirs = peer["ns"].get(key)
            label = f"NS {key} ({p['variant']})"
        else:
            key = p["nsPrecision"]
            theirs = peer["step"].get(key)
            label = f"step GPT-2-small width {key} ({p['optimizer']}, {p['nsAlgorithm']})"
        if theirs:
            ms = theirs["median_ms"]
            print(f"{label:<44} {score:>8.1f} ±{error:>4.0f} {ms:>11.1f} {ms / score:>12.2f}x")


if __name__ == "__main__":
    main(*sys.argv[1:4])
