"""The same-process steps of a window's three compare.sh runs pooled per dtype and side (StepSpread's definitions:
the median, and the 90th and 99th percentiles by nearest rank), ms, and
the 99th percentile over the median. Run from the repository root:
python3 docs/data/step-spread-2026-11-29/pooled.py [FOLDER]"""
import glob, json, math, statistics, sys

folder = sys.argv[1] if len(sys.argv) > 1 else 'docs/data/step-spread-2026-11-29'
steps = {}
for path in sorted(glob.glob(folder + '/compare-*/run-*/same-process.json')):
    for dtype, entry in json.load(open(path))['step'].items():
        for run in entry['runs']:
            for side in ('ours', 'reference'):
                steps.setdefault((dtype, side), []).extend(run[side + '_ms'])


def rank(sorted_ms, p):
    return sorted_ms[max(1, math.ceil(p * len(sorted_ms) / 100)) - 1]


print('| dtype | side | steps | median | p90 | p99 | max | p99 / median |')
print('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |')
for (dtype, side), ms in sorted(steps.items()):
    s = sorted(ms)
    median = statistics.median(s)
    print('| %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.2f |' % (dtype, side, len(s), median, rank(s, 90),
                                                                rank(s, 99), s[-1], rank(s, 99) / median))
