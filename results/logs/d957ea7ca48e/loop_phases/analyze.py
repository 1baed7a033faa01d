# Phases of the traced main loop: medians over CTAs and iterations (steady state).
import csv, sys, statistics as st, collections
rows = list(csv.DictReader(open(sys.argv[1])))
seq = collections.defaultdict(list)
smid = {}
for r in rows:
    seq[(int(r['slot']), int(r['role']))].append((int(r['ev']), int(r['clock'])))
    smid[int(r['slot'])] = int(r['smid'])
names = {(0,1):'scales+wait_k',(1,2):'wait_v',(2,3):'wait GEMM turn',(3,4):'issue S,PV (+rescale O)',(4,8):'wait S',
         (8,5):'row max',(5,6):'wait exp turn',(6,7):'exps+sums',(7,9):'softmax tail',(8,9):'softmax',(9,10):'wait PV',
         (10,11):'to_p',(11,0):'loop back'}
ph = collections.defaultdict(list); iters = []; cta = []
for (s, role), ev in seq.items():
    if role == 2: continue
    ks = [i for i, (e, _) in enumerate(ev) if e == 0]
    starts = {e: c for e, c in ev if e in (30, 31)}
    if 30 in starts and 31 in starts: cta.append((s, role, starts[30], starts[31], len(ks)))
    for a, b in zip(ks[2:-2], ks[3:-1]):  # steady state: skip the first two and last iterations
        it = ev[a:b + 1]
        iters.append(it[-1][1] - it[0][1])
        for (e0, c0), (e1, c1) in zip(it, it[1:]):
            ph[(e0, e1)].append(c1 - c0)
print(f"{len(iters)} steady iterations; cycles per iteration: median {st.median(iters):.0f}, mean {st.mean(iters):.0f}")
tot = st.median(iters)
for k, v in sorted(ph.items(), key=lambda kv: [0,1,2,3,4,8,5,6,7,9,10,11].index(kv[0][0])):
    print(f"  {names.get(k, str(k)):28s} median {st.median(v):7.0f}  mean {st.mean(v):7.0f}  p90 {sorted(v)[int(.9*len(v))]:7.0f}  ({st.mean(v)/st.mean(iters)*100:4.1f}% of mean)")
# CTA lifetimes and the gaps between consecutive CTAs on one SM
life = [e - b for s, r, b, e, n in cta if r == 0]
print(f"CTA: {len(life)} traced, cycles start..end median {st.median(life):.0f}; iterations {st.median([n for *_, n in cta])+1:.0f}")
by_sm = collections.defaultdict(list)
for s, r, b, e, n in cta:
    if r == 0: by_sm[smid[s]].append((b, e))
gaps = []
for sm, v in by_sm.items():
    v.sort()
    gaps += [b2 - e1 for (b1, e1), (b2, e2) in zip(v, v[1:])]
if gaps: print(f"gap between consecutive traced CTAs on one SM: median {st.median(gaps):.0f} cycles (n={len(gaps)})")
# first iteration latency: kernel start -> first loop top
first = []
for (s, role), ev in seq.items():
    if role == 2: continue
    c30 = [c for e, c in ev if e == 30]; c0 = [c for e, c in ev if e == 0]
    if c30 and c0: first.append(c0[0] - c30[0])
if first: print(f"start -> loop top of iteration 1: median {st.median(first):.0f} cycles")
# the two consumers against each other: their exp phases
ov = []
for s in {k[0] for k in seq}:
    e0 = [c for e, c in seq.get((s, 0), []) if e in (6, 7)]; e1 = [c for e, c in seq.get((s, 1), []) if e in (6, 7)]
    if len(e0) > 4 and len(e1) > 4: ov.append(s)
print(f"slots with both consumers traced: {len(ov)}")
