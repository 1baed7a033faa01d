import csv, gzip, sys, collections
path = sys.argv[1]; keep = set(int(x) for x in sys.argv[2].split(","))
rows = list(csv.reader(gzip.open(path, "rt")))
hdr, data = rows[1], rows[2:]
ix = {h: i for i, h in enumerate(hdr)}
S = "Warp Stall Sampling (All Samples)"
reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
base = int(data[0][0], 16)
tot = sum(float(r[ix[S]] or 0) for r in data)
runs = []; cur = None
for r in data:
    e = int(float(r[ix["Instructions Executed"]] or 0)); off = int(r[0], 16) - base
    if e in keep:
        if cur and cur["e"] == e and off - cur["hi"] <= 0x10:
            cur["hi"] = off; cur["rows"].append(r)
        else:
            cur = {"e": e, "lo": off, "hi": off, "rows": [r]}; runs.append(cur)
    else:
        cur = None if (cur and e != 0) else cur
for run in runs:
    v = sum(float(r[ix[S]] or 0) for r in run["rows"])
    if v / tot < 0.002: continue
    why = collections.Counter()
    ops = collections.Counter()
    for r in run["rows"]:
        for h in reasons: why[h[6:]] += float(r[ix[h]] or 0)
        ops[next(t for t in r[1].split() if not t.startswith("@")).split(".")[0]] += 1
    print(f"{run['lo']:#07x}-{run['hi']:#07x} ex={run['e']} n={len(run['rows']):4d} {v/tot*100:5.2f}%  why: " +
          ", ".join(f"{k} {c/v*100:.0f}%" for k, c in why.most_common(3)) + " | ops: " + ", ".join(f"{k}{c}" for k, c in ops.most_common(5)))
