import re,sys,glob,json
# The raw folder: this one by default, or another run of the same protocol (python3 table.py FOLDER).
folder=sys.argv[1] if len(sys.argv)>1 else 'docs/data/step-spread-2026-11-28-compare'
rows=[]
for r in (1,2,3):
    f=folder+'/compare-%d/ratios.txt'%r
    try: txt=open(f).read()
    except: continue
    for block in re.split(r'^== ', txt, flags=re.M)[1:]:
        head=block.split('\n')[0]
        m=re.match(r'\S*/(run-\d)', head)
        if not m: continue
        run=m.group(1)
        for dtype in ('bfloat16','float32'):
            mm=re.search(r'step GPT-2-small width %s \(muon-adamw, AUTO\)\s+([\d.]+) ±\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)x.*?= ([\d.]+)x'%dtype, block)
            it=re.search(r'step GPT-2-small width %s.*?\n    ours per JMH iteration: median ([\d.]+), p90 ([\d.]+), p99 ([\d.]+), max ([\d.]+).*?\n    same-process steps: ours median ([\d.]+), p90 ([\d.]+), p99 ([\d.]+), max ([\d.]+) ms \((\d+)\); reference median ([\d.]+), p90 ([\d.]+), p99 ([\d.]+), max ([\d.]+)'%dtype, block, re.S)
            if mm and it:
                mean,err,pt,ratio,same=map(float,mm.groups())
                g=list(map(float,it.groups()))
                rows.append((r,run,dtype,mean,err,100*err/mean,pt,ratio,same,g))
print('| compare.sh run | dtype | ours, JMH ms (99.9 %) | error / mean | JMH iterations: median, p90, max | same-process steps, ours: median, p90, p99, max | reference (no code of ours in the step): median, p90, p99, max | PyTorch / ours | same-process ref / ours |')
print('| --- | --- | ---: | ---: | --- | --- | --- | ---: | ---: |')
for r,run,dtype,mean,err,pct,pt,ratio,same,g in rows:
    print('| %d, %s | %s | %.1f ± %.1f | %.0f %% | %.1f, %.1f, %.1f | %.1f, %.1f, %.1f, %.1f | %.1f, %.1f, %.1f, %.1f | %.2f× | %.2f× |'%(r,run,dtype,mean,err,pct,g[0],g[1],g[3],g[4],g[5],g[6],g[7],g[9],g[10],g[11],g[12],ratio,same))
print()
print('| compare.sh run | dtype | PyTorch eager step, own process (no code of ours): file, median, min, max | (max − min) / median |')
print('| --- | --- | --- | ---: |')
for r in (1,2,3):
    f=folder+'/compare-%d/ratios.txt'%r
    try: txt=open(f).read()
    except: continue
    for block in re.split(r'^== ', txt, flags=re.M)[1:]:
        m=re.match(r'\S*/(run-\d)', block.split('\n')[0])
        if not m: continue
        run=m.group(1)
        for dtype in ('bfloat16','float32'):
            mm=re.search(r'step GPT-2-small width %s \(muon-adamw, AUTO\).*?(peer-[a-z-]+\.json)'%dtype, block)
            if not mm: continue
            d=json.load(open(folder+'/compare-%d/%s/%s'%(r,run,mm.group(1))))
            v=d['step'][dtype]
            print('| %d, %s | %s | %s: %.1f, %.1f, %.1f | %.0f %% |'%(r,run,dtype,mm.group(1),v['median_ms'],v['min_ms'],v['max_ms'],100*(v['max_ms']-v['min_ms'])/v['median_ms']))
