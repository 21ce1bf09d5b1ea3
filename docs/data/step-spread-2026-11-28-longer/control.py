"""control.sh's table: per round, dtype and optimizer, the JMH score with its 99.9 % error, the error over the
mean, and the iterations' range. Run from the repository root."""
import glob, json, sys

# This window's folder by default, or another run of the same protocol (python3 control.py FOLDER).
folder = sys.argv[1] if len(sys.argv) > 1 else 'docs/data/step-spread-2026-11-28-longer/control'
print('| round | dtype | step | JMH ms (99.9 %) | error / mean | iterations: min, max |')
print('| --- | --- | --- | ---: | ---: | --- |')
for path in sorted(glob.glob(folder + '/round-*.json')):
    rnd = path.split('round-')[1].split('.')[0]
    records = json.load(open(path))
    for r in sorted(records, key=lambda r: (r['params']['nsPrecision'], r['params']['optimizer'])):
        p, m = r['params'], r['primaryMetric']
        raw = [t for fork in m['rawData'] for t in fork]
        name = 'ours (muon-adamw)' if p['optimizer'] == 'muon-adamw' else 'reference (torch-reference)'
        print('| %s | %s | %s | %.1f ± %.1f | %.0f %% | %.1f, %.1f |' % (
            rnd, p['nsPrecision'], name, m['score'], m['scoreError'], 100 * m['scoreError'] / m['score'],
            min(raw), max(raw)))
