"""Per-layout means and the qemu / baseline ratio over layouts of this
folder's results.csv: python3 layouts.py . > layouts.txt"""
import csv,statistics as st,math,sys
T={2:12.706,3:4.303,4:3.182,5:2.776,6:2.571,7:2.447,8:2.365,9:2.306,10:2.262}
def ci(xs):
    n=len(xs); return st.mean(xs), T[n]*st.stdev(xs)/math.sqrt(n)
rows=list(csv.DictReader(open(sys.argv[1]+'/results.csv')))
rounds=sorted({r['round'] for r in rows},key=int)
by={(r['round'],r['binary']):r for r in rows}
for op in ('tb','svc'):
    k=f'{op}_ns'
    print(f"== {op}")
    for b in ['baseline','qemu']+[f'{x}-{s}' for s in (1,2,3,4) for x in ('baseline','qemu')]:
        m,c=ci([int(by[(r,b)][k]) for r in rounds]); print(f"  {b:12} {m:9.0f} ± {c:6.0f}")
    # per round: geometric mean over the 5 layouts of each
    rat=[]
    for r in rounds:
        qb=[int(by[(r,'qemu')][k])]+[int(by[(r,f'qemu-{s}')][k]) for s in (1,2,3,4)]
        bb=[int(by[(r,'baseline')][k])]+[int(by[(r,f'baseline-{s}')][k]) for s in (1,2,3,4)]
        rat.append(math.exp(st.mean(map(math.log,qb))-st.mean(map(math.log,bb))))
    m,c=ci(rat); print(f"  qemu / baseline over 5 layouts each (geometric means per round): {m:.4f} ± {c:.4f}")
    bl=[st.mean(int(by[(r,b)][k]) for r in rounds) for b in ['baseline']+[f'baseline-{s}' for s in (1,2,3,4)]]
    ql=[st.mean(int(by[(r,b)][k]) for r in rounds) for b in ['qemu']+[f'qemu-{s}' for s in (1,2,3,4)]]
    print(f"  spread of layout means: baseline {min(bl):.0f}-{max(bl):.0f} ({max(bl)/min(bl):.3f}x), qemu {min(ql):.0f}-{max(ql):.0f} ({max(ql)/min(ql):.3f}x)")
    print(f"  ratio of the means over layouts: {st.mean(ql)/st.mean(bl):.4f}")
