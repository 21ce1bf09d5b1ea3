"""The same-process steps of a window's three compare.sh runs (same-process.json), pooled per dtype and side: their
times (StepSpread's definitions: the median, and the 90th and 99th percentiles by nearest rank, ms, and the 99th
percentile over the median), then their minor page faults per step (StolenTime). Run from the repository root:
python3 docs/data/step-spread-2026-11-29/spread.py [FOLDER]."""
import glob, json, math, statistics, sys

folder = sys.argv[1] if len(sys.argv) > 1 else 'docs/data/step-spread-2026-11-29'
ms, faults = {}, {}
for path in sorted(glob.glob(folder + '/compare-*/run-*/same-process.json')):
    for dtype, entry in json.load(open(path))['step'].items():
        for run in entry['runs']:
            for side in ('ours', 'reference'):
                ms.setdefault((dtype, side), []).extend(run[side + '_ms'])
                faults.setdefault((dtype, side), []).extend(run.get(side + '_minor_faults', []))


def rank(sorted_values, p):
    return sorted_values[max(1, math.ceil(p * len(sorted_values) / 100)) - 1]


print('| dtype | side | steps | median | p90 | p99 | max | p99 / median |')
print('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |')
for (dtype, side), values in sorted(ms.items()):
    s = sorted(values)
    median = statistics.median(s)
    print('| %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.2f |' % (dtype, side, len(s), median, rank(s, 90),
                                                                rank(s, 99), s[-1], rank(s, 99) / median))
print()
print('| dtype | side | steps | minor faults per step: min | median | max |')
print('| --- | --- | ---: | ---: | ---: | ---: |')
for (dtype, side), values in sorted(faults.items()):
    if values:
        print('| %s | %s | %d | %d | %d | %d |' % (dtype, side, len(values), min(values),
                                                statistics.median(values), max(values)))
