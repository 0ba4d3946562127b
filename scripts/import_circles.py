#!/usr/bin/env python3
"""Import circles between the files of one crate.

    python3 scripts/import_circles.py crates/apiserver/src [-v]

Reads every .rs file under the source directory, takes each `crate::`, `super::` and child
module path it uses (re-exports and `mod` declarations are not uses; comments and `#[cfg(test)]
mod tests` are skipped), and prints each strongly connected group of two or more files: files
that import each other, directly or round a circle. `-v` also prints every file's imports.
`--max N` exits 1 when a circle spans more than N files (scripts/test.sh runs it with 2 over
every crate, so circles stay broken).
"""
import os,re,sys
root=sys.argv[1]
files={}
for d,_,fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p=os.path.join(d,f); rel=os.path.relpath(p,root)
            files[rel]=open(p).read()
def modpath(rel):
    parts=rel[:-3].split('/')
    if parts[-1] in('mod','lib'): parts=parts[:-1]
    return parts
mods={tuple(modpath(r)):r for r in files}
def resolve(path):
    # longest prefix matching a module
    for n in range(len(path),0,-1):
        if tuple(path[:n]) in mods: return mods[tuple(path[:n])]
    return None
deps={}
for rel,src in files.items():
    src=re.sub(r'#\[cfg\(test\)\]\s*mod tests \{.*','',src,flags=re.S)
    src=re.sub(r'//.*','',src)
    # re-exports are not uses
    src=re.sub(r'^\s*pub(?:\([\w:]+\))? use [^;]*;','',src,flags=re.M)
    me=modpath(rel)
    parent=me[:-1] if not (rel.endswith('mod.rs') or rel=='lib.rs') else me[:-1]
    # a file's `super` is its parent module (for mod.rs, the parent of its directory)
    src=re.sub(r'\bsuper::', 'crate::'+''.join(x+'::' for x in parent), src)
    src=re.sub(r'\bself::(?=\w)', 'crate::'+''.join(x+'::' for x in me), src) if rel.endswith('mod.rs') else src
    out=set()
    # expand use crate::{a::{b,c}, d}
    def expand(prefix, body):
        res=[]; depth=0; cur=''
        for ch in body:
            if ch=='{': depth+=1
            if ch=='}': depth-=1
            if ch==',' and depth==0: res.append(cur.strip()); cur=''
            else: cur+=ch
        if cur.strip(): res.append(cur.strip())
        paths=[]
        for r in res:
            m=re.match(r'([\w:]*?)::\{(.*)\}$',r,re.S)
            if m: paths+=expand(prefix+m.group(1).split('::'),m.group(2))
            else: paths.append(prefix+[x for x in r.split(' as ')[0].split('::') if x])
        return paths
    # child modules used by relative path (`mod write;` then `write::create`)
    for child in re.findall(r'^\s*(?:pub(?:\([\w:]+\))? )?mod (\w+);', src, re.M):
        src=re.sub(r'(?<![\w:])'+child+r'::', 'crate::'+''.join(x+'::' for x in me)+child+'::', src)
    for m in re.finditer(r'crate::((?:\w+::)*)\{([^;]*)\};',src,re.S):
        for p in expand([x for x in m.group(1).split('::') if x],m.group(2)):
            t=resolve(p)
            if t: out.add(t)
    for m in re.finditer(r'crate::((?:\w+::)*\w+)\b(?!::)',src):
        t=resolve(m.group(1).split('::'))
        if t: out.add(t)
    for m in re.finditer(r'(?:use )?super::((?:\w+::)*\w+)',src):
        base=me[:-1] if not rel.endswith('mod.rs') else me[:-1]
        t=resolve(base+m.group(1).split('::'))
        if t: out.add(t)
    out.discard(rel); out.discard('lib.rs')
    deps[rel]=out
# tarjan
idx={};low={};st=[];on=set();sccs=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in deps.get(v,()):
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        sccs.append(comp)
for v in deps:
    if v not in idx: sc(v)
limit=int(sys.argv[sys.argv.index('--max')+1]) if '--max' in sys.argv else None
too_wide=False
for s in sorted(sccs,key=len,reverse=True):
    if len(s)>1: print(len(s),sorted(s))
    if limit is not None and len(s)>limit: too_wide=True
if '-v' in sys.argv:
    for k in sorted(deps): print(k,'->',sorted(deps[k]))
if too_wide:
    print(f'{root}: an import circle spans more than {limit} files', file=sys.stderr)
    sys.exit(1)
