import csv,gzip,sys,collections,statistics as st
rows=list(csv.DictReader(gzip.open(sys.argv[1],'rt')))
seq=collections.defaultdict(list)
for r in rows: seq[(int(r['slot']),int(r['role']))].append((int(r['ev']),int(r['clock'])))
lead_k=[];lead_v=[];wk=[];wv=[]
for s in {k[0] for k in seq}:
    P=seq.get((s,2),[]); 
    pk=[c for e,c in P if e==20]; pv=[c for e,c in P if e==21]
    for role in (0,1):
        C=seq.get((s,role),[])
        # consumer iteration it (>=1): ev0 time, ev1 (after wait_k(it)), ev2 (after wait_v(it-1))
        it=0; 
        for i,(e,c) in enumerate(C):
            if e==0:
                it+=1
                c1=C[i+1][1]; c2=C[i+2][1]
                if it<len(pk): lead_k.append(c - pk[it]); wk.append(c1-c)
                if it-1<len(pv): lead_v.append(c - pv[it-1]); wv.append(c2-c1)
print("consumer loop top minus producer's K load issue (same it): median %.0f, p10 %.0f" % (st.median(lead_k), sorted(lead_k)[len(lead_k)//10]))
print("consumer loop top minus producer's V load issue (it-1): median %.0f, p10 %.0f" % (st.median(lead_v), sorted(lead_v)[len(lead_v)//10]))
