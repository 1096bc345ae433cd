import json,sys,statistics as st
def load(p):
    return {(r["fault"],r["repeat"]):r for r in map(json.loads,open(p))}
a=load(sys.argv[1]); b=load(sys.argv[2])
keys=sorted(set(a)&set(b))
print("%-48s %3s %8s %8s"%("fault","rep","before","after"))
for k in keys:
    x,y=a[k],b[k]
    fmt=lambda r:"%.2f%s"%(r["ir"] if r["ir"] is not None else float('nan'),"*" if r["significant"] else " ")
    print("%-48s %3d %8s %8s"%(k[0][:48],k[1],fmt(x),fmt(y)))
for name,d in (("before",a),("after",b)):
    irs=[d[k]["ir"] for k in keys if d[k]["ir"] is not None]
    print(name,"sig %d/%d"%(sum(d[k]["significant"] for k in keys),len(keys)),"median IR %.2f"%st.median(irs), "neg reported", sum(1 for k in keys if d[k]["significant"] and d[k]["ir"]<0), "trainings/cell %.1f"%st.mean(len(d[k].get("history") or [])  or d[k].get("trials",0) for k in keys))
