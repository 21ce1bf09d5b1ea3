"""What the kernel says the same-process steps lost to others (issue 59): for every step of ours and of the
reference (torch.optim.Muon's formulas on the same libtorch) in the three compare.sh runs' same-process.json, its
time over its run's median, the CPUs' steal time and our threads' run-queue wait during it (StolenTime). Prints,
per dtype and side, how the slow steps (more than 8 % over their run's median) differ from the others, and the
Pearson correlation of a step's excess time with its steal and with its wait. Run from the repository root."""
import glob, json, statistics, sys

# This window's folder by default, or another run of the same protocol (python3 steal.py FOLDER).
folder = sys.argv[1] if len(sys.argv) > 1 else 'docs/data/step-spread-2026-11-28-longer'


def pearson(x, y):
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float('nan')


rows = {}
for path in sorted(glob.glob(folder + '/compare-*/run-*/same-process.json')):
    step = json.load(open(path))['step']
    for dtype, entry in step.items():
        for run in entry['runs']:
            for side in ('ours', 'reference'):
                ms = run[side + '_ms']
                median = statistics.median(ms)
                for t, steal, wait in zip(ms, run[side + '_steal_ms'], run[side + '_runqueue_wait_ms']):
                    rows.setdefault((dtype, side), []).append((t - median, t / median, steal, wait))

print('| dtype | side | steps | slow (> 8 % over the run median) | steal ms per step: slow, others '
      '| run-queue wait ms per step: slow, others | Pearson (excess ms, steal) | Pearson (excess ms, wait) |')
print('| --- | --- | ---: | ---: | --- | --- | ---: | ---: |')
for (dtype, side), r in sorted(rows.items()):
    slow = [x for x in r if x[1] > 1.08]
    rest = [x for x in r if x[1] <= 1.08]
    mean = lambda xs, i: statistics.fmean([x[i] for x in xs]) if xs else float('nan')
    print('| %s | %s | %d | %d | %.1f, %.1f | %.1f, %.1f | %.2f | %.2f |' % (
        dtype, side, len(r), len(slow), mean(slow, 2), mean(rest, 2), mean(slow, 3), mean(rest, 3),
        pearson([x[0] for x in r], [x[2] for x in r]), pearson([x[0] for x in r], [x[3] for x in r])))

# Pair by pair (each pair of steps ran back to back, order alternating): do ours and the reference slow down
# together? The Pearson correlation of their times over their runs' medians, per dtype.
print()
print('| dtype | pairs | Pearson (ours / median, reference / median) | pairs with ours > 8 % over: of them, reference over its median |')
print('| --- | ---: | ---: | --- |')
pairs = {}
for path in sorted(glob.glob(folder + '/compare-*/run-*/same-process.json')):
    for dtype, entry in json.load(open(path))['step'].items():
        for run in entry['runs']:
            mo, mr = statistics.median(run['ours_ms']), statistics.median(run['reference_ms'])
            pairs.setdefault(dtype, []).extend((o / mo, r / mr) for o, r in zip(run['ours_ms'], run['reference_ms']))
for dtype, p in sorted(pairs.items()):
    slow = [r for o, r in p if o > 1.08]
    print('| %s | %d | %.2f | %d: %d over, reference median %.1f %% over its own |' % (
        dtype, len(p), pearson([o for o, r in p], [r for o, r in p]), len(slow), sum(1 for r in slow if r > 1),
        100 * (statistics.median(slow) - 1) if slow else float('nan')))
