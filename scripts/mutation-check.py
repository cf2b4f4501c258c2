#!/usr/bin/env python3
"""Mutation check of the store rules: breaks each rule of include/lease/rules.hpp
once, rebuilds the core and laws tests, and lists which tests catch it. A rule
whose mutation no test catches is a rule nothing proves.

  scripts/mutation-check.py [BUILD_DIR] [MUTATION NAME ...]   (default build/dev)

rules.hpp is restored afterwards."""
import os, subprocess, sys, re, time
root=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build=sys.argv[1] if len(sys.argv)>1 and os.path.isdir(sys.argv[1]) else os.path.join(root,'build/dev')
p=os.path.join(root,'include/lease/rules.hpp')
orig=open(p).read()
muts={
 'token check dropped': ('r.status == run_status::running && !r.released && r.token == token','r.status == run_status::running && !r.released && ((void)token, true)'),
 'released check dropped': ('r.status == run_status::running && !r.released && r.token == token','r.status == run_status::running && r.token == token'),
 'overlap check dropped': ('if (req.overlap == overlap_mode::skip || req.overlap == overlap_mode::buffer_one) {','if (false) {'),
 'lateness check dropped': ('if (now > req.deadline + late_tolerance) {','if (false) {'),
 'handover count dropped': ('  ++r->handovers;\n',''),
 'handovers not subtracted': ('r.attempt - r.handovers >= req.max_attempts','r.attempt >= req.max_attempts'),
 'pruning guard dropped': ('    if (now <= r.slot + retain + late_tolerance) continue;\n','    (void)retain; (void)now;\n'),
 'superseded check dropped': ('''    if (detail::has_newer(js, req.run.slot)) {
      res.outcome = claim_outcome::superseded;''','''    if (false) {
      res.outcome = claim_outcome::superseded;'''),
 'takeover none dropped': ('if (req.reason == claim_reason::takeover) {','if (false) {'),
 'newer run check on takeover dropped': ('} else if (detail::has_newer(js, r.slot)) {','} else if (false) {'),
 'older expired runs not interrupted': ('if (!r.live(now) || req.overlap == overlap_mode::replace) r.status','if (req.overlap == overlap_mode::replace) r.status'),
 'fence not incremented': ('r.fence = ++js.fence;','r.fence = js.fence;'),
 'release does not end lease': ('  r->lease_end = now;\n','  (void)now;\n'),
 'live lease answered as expired': ('} else if (r.live(now)) {','} else if (false) {'),
}
only=[a for a in sys.argv[1:] if not os.path.isdir(a)]
uncaught=[]
for name,(a,b) in muts.items():
    if only and name not in only: continue
    assert a in orig, name
    open(p,'w').write(orig.replace(a,b,1))
    time.sleep(1.1)  # a new mtime for ninja
    b_=subprocess.run(['cmake','--build',build,'--target','core','laws'],capture_output=True,text=True)
    if b_.returncode!=0: print(f'## {name}: does not compile'); print(b_.stdout[-2000:]); continue
    r=subprocess.run(f'ctest --test-dir {build} -R "^(core|laws):" 2>&1 | grep -E "Failed|\\*\\*\\*"',shell=True,capture_output=True,text=True)
    fails=sorted({re.sub(r'^.*Test +#\d+: ','',l).split(' ....')[0].split(' (Failed)')[0].strip() for l in r.stdout.splitlines() if 'Test' in l and ('Failed' in l or '***' in l)})
    if not fails: uncaught.append(name)
    print(f'## {name}: {len(fails)} failing'); [print('   -',f) for f in fails]
open(p,'w').write(orig)
print('every mutation was caught' if not uncaught else 'NOT CAUGHT: '+', '.join(uncaught))
sys.exit(1 if uncaught else 0)
