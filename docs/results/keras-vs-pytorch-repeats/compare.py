import json, sys
from scipy.stats import wilcoxon
def load(f):
    out={}
    for l in open(f):
        r=json.loads(l)
        key=(r['fault'].replace('-keras',''), r['repeat'])
        out[key]=r
    return out
t=load('results-pytorch.jsonl'); k=load('results-keras.jsonl')
keys=sorted(set(t)&set(k))
print('| fault | repeat | PyTorch IR (sig.) | Keras IR (sig.) |')
print('|---|---|---|---|')
d=[]
for key in keys:
    a,b=t[key],k[key]
    ir=lambda r: None if r['ir'] is None else round(r['ir'],2)
    print(f"| {key[0]} | {key[1]} | {ir(a)} ({'yes' if a['significant'] else 'no'}) | {ir(b)} ({'yes' if b['significant'] else 'no'}) |")
    if a['ir'] is not None and b['ir'] is not None: d.append(b['ir']-a['ir'])
print('pairs', len(d), 'keras better', sum(x>1e-9 for x in d), 'worse', sum(x<-1e-9 for x in d))
nz=[x for x in d if abs(x)>1e-9]
if nz: print('wilcoxon', wilcoxon(nz))
print('sig torch', sum(t[k_]['significant'] for k_ in keys), 'sig keras', sum(k[k_]['significant'] for k_ in keys))
import statistics
print('median IR torch', statistics.median([t[x]['ir'] or 0 for x in keys]), 'keras', statistics.median([k[x]['ir'] or 0 for x in keys]))
