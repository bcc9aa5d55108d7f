#!/usr/bin/env python3
# The A/B and A/A runs of `bench/verdicts.sh ab OUT` (or nights of `bench/nightly_ab.sh OUT`)
# judged again from their recorded pairs (result.json ab.cells[].pairs, verdicts.cells[].pairs): each cell by the paired t test (the verdict as
# recorded by a run with `regression.ab_estimate: mean`, which bench/verdicts.sh pins) and by a
# 20 % trimmed-mean paired test (Yuen), with the same level (0.5 % a cell), the same 2 % threshold
# and the same minimum detectable change (95 % power). The controller applies the second as
# `regression.ab_estimate: trimmed`, its default since 2026-12-07 (docs/verdicts-design.md).
# Then the controller's confirm before alarm over the same runs: a cell whose first pairs said
# regression holds only when its confirmation's pairs show B worse beyond the threshold and
# their band at 5 % (one-sided). Runs recorded before the controller confirmed (no
# confirm_pairs) take the next run of the same kind's pairs of that cell as their
# confirmation: measured minutes later on fresh targets, as the controller would.
#
#   bench/ab_pairs.py OUT
import json,math,statistics as st,glob,sys
if len(sys.argv) != 2:
    sys.exit("usage: bench/ab_pairs.py OUT")
out=sys.argv[1]
def tq(p,df):  # Student t quantile by bisection on the CDF (regularized incomplete beta via series)
    import math
    def cdf(t):
        x=df/(df+t*t)
        # regularized incomplete beta I_x(df/2, 1/2) via continued fraction
        a,b=df/2,0.5
        def betacf(a,b,x):
            MAXIT=200;EPS=3e-14;FPMIN=1e-300
            qab=a+b;qap=a+1;qam=a-1;c=1;d=1-qab*x/qap
            if abs(d)<FPMIN:d=FPMIN
            d=1/d;h=d
            for m in range(1,MAXIT+1):
                m2=2*m;aa=m*(b-m)*x/((qam+m2)*(a+m2))
                d=1+aa*d;d=FPMIN if abs(d)<FPMIN else d;c=1+aa/c;c=FPMIN if abs(c)<FPMIN else c;d=1/d;h*=d*c
                aa=-(a+m)*(qab+m)*x/((a+m2)*(qap+m2))
                d=1+aa*d;d=FPMIN if abs(d)<FPMIN else d;c=1+aa/c;c=FPMIN if abs(c)<FPMIN else c;d=1/d;de=d*c;h*=de
                if abs(de-1)<EPS:break
            return h
        bt=math.exp(math.lgamma(a+b)-math.lgamma(a)-math.lgamma(b)+a*math.log(x)+b*math.log(1-x))
        ib=bt*betacf(a,b,x)/a if x<(a+1)/(a+b+2) else 1-bt*betacf(b,a,1-x)/b
        return 1-ib/2 if t>0 else ib/2
    lo,hi=0,50
    for _ in range(100):
        mid=(lo+hi)/2
        if cdf(mid)<p: lo=mid
        else: hi=mid
    return (lo+hi)/2
alpha=0.005
def ab_cells(j):  # a run's A/B verdicts: `--ab`'s, or a nightly's against the last good build
    if 'ab' in j: return j['ab']['cells']
    return [c for c in j['verdicts']['cells'] if c.get('pairs')]
res={}
for f in sorted(glob.glob(out+'/a[ab]-*/result.json')):
    kind=f.split('/')[-2][:2]
    try: cells=ab_cells(json.load(open(f)))
    except Exception: continue
    for c in cells:
        l=sorted(math.log(p['b']/p['a']) for p in c['pairs'] if p.get('a',0)>0 and p.get('b',0)>0)
        n=len(l); g=0.2; k=int(g*n)
        tm=st.mean(l[k:n-k]); w=[min(max(x,l[k]),l[n-k-1]) for x in l]
        se=st.stdev(w)/((1-2*g)*math.sqrt(n)); df=n-2*k-1
        half=tq(1-alpha,df)*se; thr=math.log1p(0.02)
        v='regression' if -tm>half and -tm>thr else ('improvement' if tm>half and tm>thr else 'other')
        mdc=(max(half,thr)+1.645*se)*100
        res.setdefault((kind,c['key']),[]).append((c['verdict'],v,c['change_pct'],c['mdc_pct'],(math.exp(tm)-1)*100,mdc))
for (kind,key),rs in sorted(res.items()):
    print(f"{kind} {key}: runs {len(rs)}; t-test regression {sum(r[0]=='regression' for r in rs)}, trimmed regression {sum(r[1]=='regression' for r in rs)}; "
          f"change median {st.median(r[2] for r in rs):+.2f} (trimmed {st.median(r[4] for r in rs):+.2f}); mdc median {st.median(r[3] for r in rs):.2f} (trimmed {st.median(r[5] for r in rs):.2f})")

def worse_beyond(pairs, level):
    l=[math.log(p['b']/p['a']) for p in pairs if p.get('a',0)>0 and p.get('b',0)>0]
    if len(l)<2: return False
    m=st.mean(l); se=st.stdev(l)/math.sqrt(len(l)); half=tq(1-level,len(l)-1)*se
    return -m>half and -m>math.log1p(0.02)
runs={}
for f in sorted(glob.glob(out+'/a[ab]-*/result.json')):
    kind=f.split('/')[-2][:2]
    try: cells=ab_cells(json.load(open(f)))
    except Exception: continue
    runs.setdefault(kind,[]).append({c['key']:c for c in cells})
for kind,rs in sorted(runs.items()):
    first=alarms=stand_in=0; caught={}; judged={}
    for i,r in enumerate(rs):
        alarm=False
        for key,c in r.items():
            if not (c.get('suspect') or c['verdict']=='regression'):
                judged[key]=judged.get(key,0)+1
                continue
            first+=1
            conf=c.get('confirm_pairs')
            if not conf and i+1<len(rs) and key in rs[i+1]:
                conf=rs[i+1][key]['pairs']; stand_in+=1
            if not conf: continue  # the last run: nothing to confirm it with
            judged[key]=judged.get(key,0)+1
            held=worse_beyond(conf,0.05)
            caught[key]=caught.get(key,0)+held
            alarm|=held
        alarms+=alarm
    print(f"{kind} confirmed: {len(rs)} runs, {first} cells whose first pairs said regression "
          f"({stand_in} confirmed by the next run's pairs), {alarms} runs with a confirmed regression; "
          + ", ".join(f"{k} {caught.get(k,0)} of {n}" for k,n in sorted(judged.items())))
