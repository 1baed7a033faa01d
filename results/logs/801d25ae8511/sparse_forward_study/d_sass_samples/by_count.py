import csv, gzip, sys, collections
def load(path):
    rows = list(csv.reader(gzip.open(path, "rt")))
    hdr, data = rows[1], rows[2:]
    return {h: i for i, h in enumerate(hdr)}, data
for path in sys.argv[1:]:
    ix, data = load(path)
    S = "Warp Stall Sampling (All Samples)"
    tot = sum(float(r[ix[S]] or 0) for r in data)
    cnt = collections.Counter(); samp = collections.Counter(); instr = collections.Counter()
    for r in data:
        e = int(float(r[ix["Instructions Executed"]] or 0)); v = float(r[ix[S]] or 0)
        samp[e] += v; instr[e] += e; cnt[e] += 1
    print(path, f"{tot:.0f} samples")
    for e, v in sorted(samp.items(), key=lambda x: -x[1])[:14]:
        print(f"  executed {e:>9} x: {cnt[e]:5d} instructions, {v/tot*100:5.1f}% of samples, {instr[e]/sum(instr.values())*100:5.1f}% of executed")
