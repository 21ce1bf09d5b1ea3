"""The minor page faults of every same-process step (StolenTime), per dtype and side, over the three compare.sh
runs of a window: how many steps, and the faults per step at the minimum, median and maximum. Run from the
repository root: python3 docs/data/step-spread-2026-11-29/faults.py [FOLDER]."""
import glob, json, statistics, sys

folder = sys.argv[1] if len(sys.argv) > 1 else 'docs/data/step-spread-2026-11-29'
faults = {}
for path in sorted(glob.glob(folder + '/compare-*/run-*/same-process.json')):
    for dtype, entry in json.load(open(path))['step'].items():
        for run in entry['runs']:
            for side in ('ours', 'reference'):
                faults.setdefault((dtype, side), []).extend(run[side + '_minor_faults'])

print('| dtype | side | steps | minor faults per step: min | median | max |')
print('| --- | --- | ---: | ---: | ---: | ---: |')
for (dtype, side), values in sorted(faults.items()):
    print('| %s | %s | %d | %d | %d | %d |' % (dtype, side, len(values), min(values), statistics.median(values),
                                            max(values)))
