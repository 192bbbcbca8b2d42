# Quick release-profile comparison: spawn → first response and pipelined get_state throughput
# for each binary given (docs/performance.md, "Release profile"). Usage: python3 scripts/quick-release-bench.py BIN...
import subprocess, time, sys, statistics, os, tempfile
def cold(binp, runs=20):
    ts=[]
    cfg=tempfile.mkdtemp()
    for _ in range(runs):
        t=time.perf_counter()
        p=subprocess.Popen([binp,"--mode","rpc","--no-session","--config-dir",cfg],stdin=subprocess.PIPE,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL)
        p.stdin.write(b'{"id":1,"type":"get_state"}\n'); p.stdin.flush()
        while True:
            l=p.stdout.readline()
            if b'"type":"response"' in l: break
        ts.append(time.perf_counter()-t)
        p.stdin.close(); p.wait()
    return statistics.median(ts)*1000
def thr(binp, n=100000):
    cfg=tempfile.mkdtemp()
    p=subprocess.Popen([binp,"--mode","rpc","--no-session","--config-dir",cfg],stdin=subprocess.PIPE,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL)
    data=b''.join(b'{"id":%d,"type":"get_state"}\n'%i for i in range(n))
    t=time.perf_counter()
    import threading
    def w():
        p.stdin.write(data); p.stdin.close()
    th=threading.Thread(target=w); th.start()
    c=0
    for l in p.stdout:
        if b'"type":"response"' in l:
            c+=1
            if c==n: break
    el=time.perf_counter()-t
    th.join(); p.wait()
    return n/el
for b in sys.argv[1:]:
    print(b, os.path.getsize(b), "cold_ms=%.2f"%cold(b), "thr=%.0f/s"%max(thr(b),thr(b)))
