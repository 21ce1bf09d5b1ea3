#!/usr/bin/env python3
"""Prints PyTorch/ours time ratios from the JMH JSON files and pytorch_peer.py's JSON files (see compare.sh).

Usage: ratios.py NS_JSON STEP_JSON PEER_JSON [PEER_JSON ...]. With several peer files (PyTorch run in different
environments), each entry is compared against the fastest PyTorch median, whose file is named.
"""
import json
import sys


def jmh_scores(path):
    out = {}
    for record in json.load(open(path)):
        params = record.get("params", {})
        out[(record["benchmark"].split(".")[-2], tuple(sorted(params.items())))] = (
            record["primaryMetric"]["score"], record["primaryMetric"]["scoreError"])
    return out


def fastest_peer(peers, section, key):
    best = None
    for path, peer in peers:
        entry = peer[section].get(key)
        if entry and (best is None or entry["median_ms"] < best[0]):
            best = (entry["median_ms"], path)
    return best


def main(ns_json, step_json, *peer_jsons):
    ours = {**jmh_scores(ns_json), **jmh_scores(step_json)}
    peers = [(path, json.load(open(path))) for path in peer_jsons]
    first = peers[0][1]
    print(f"PyTorch {first['torch']} (BLAS {first['blas']}), {first['threads']} threads")
    print(f"{'what':<52} {'ours ms':>14} {'PyTorch ms':>11} {'PyTorch/ours':>13}  PyTorch run")
    for (bench, params), (score, error) in sorted(ours.items()):
        p = dict(params)
        if bench == "NewtonSchulzBenchmark":
            key, section = f"{p['shape']}/{p['dtype']}", "ns"
            label = f"NS {key} ({p['variant']})"
        elif p.get("optimizer") == "adamw":
            continue  # AdamW alone is not what the peer's Muon + AdamW step measures
        else:
            key, section = p["nsPrecision"], "step"
            label = f"step GPT-2-small width {key} ({p['optimizer']}, {p['nsAlgorithm']})"
        theirs = fastest_peer(peers, section, key)
        if theirs:
            ms, path = theirs
            print(f"{label:<52} {score:>8.1f} ±{error:>4.0f} {ms:>11.1f} {ms / score:>12.2f}x  {path}")


if __name__ == "__main__":
    main(*sys.argv[1:])
