#!/usr/bin/env python3
"""Runs every libFuzzer target of build-fuzz/tests/ (what `scons fuzz SECONDS=N` calls), one after
the other, one process each (-jobs and -workers are never used: one core).

For each target fuzz_<t>: the committed seeds tests/fuzz/corpus/<t>/ are copied into the work
corpus build-fuzz/work/<t>/corpus/ (which keeps what earlier campaigns found; the committed
corpus is never written), libFuzzer runs for SECONDS with -print_final_stats=1, and the executions
it reports (stat::number_of_executed_units) are printed per target and in total. A crash, leak,
timeout (-timeout, default 2 s per input) or out-of-memory leaves libFuzzer's artifact in
build-fuzz/work/<t>/ and its path is printed; any of them fails the run (exit 1).

usage: run_fuzz.py [--build build-fuzz] [--seconds 60] [--timeout 2] [--only spec,cli]
                   [-- extra libFuzzer flags]"""
import argparse, glob, os, re, shutil, subprocess, sys, time

root = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
# Targets whose parsers print a line per refused input: their stderr is closed (libFuzzer keeps
# its own report and the sanitizers' on a duplicate of it).
QUIET = {'cli'}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', default='build-fuzz')
    ap.add_argument('--seconds', type=int, default=60)
    ap.add_argument('--timeout', type=int, default=2)
    ap.add_argument('--only', default='')
    ap.add_argument('extra', nargs='*')
    a = ap.parse_args()
    build = os.path.join(root, a.build)
    targets = sorted(os.path.basename(p)[len('fuzz_'):] for p in glob.glob(os.path.join(build, 'tests', 'fuzz_*'))
                     if os.access(p, os.X_OK) and os.path.isfile(p))
    if a.only:
        targets = [t for t in targets if t in a.only.split(',')]
    if not targets:
        print('fuzz: no targets in %s/tests (build them with `scons fuzz`)' % a.build)
        return 1
    env = dict(os.environ, PDBX_CONFIGS=os.path.join(root, 'configs'), PDBX_THEMES=os.path.join(root, 'themes'),
               ASAN_OPTIONS='detect_leaks=1:abort_on_error=0', UBSAN_OPTIONS='print_stacktrace=1:halt_on_error=1')
    total, failed, rows = 0, [], []
    print('fuzz: %d targets x %d s, one process each (%s)' % (len(targets), a.seconds, ', '.join(targets)))
    for t in targets:
        work = os.path.join(build, 'work', t)
        corpus = os.path.join(work, 'corpus')
        os.makedirs(corpus, exist_ok=True)
        seeds = os.path.join(root, 'tests', 'fuzz', 'corpus', t)
        for f in sorted(os.listdir(seeds)):
            shutil.copyfile(os.path.join(seeds, f), os.path.join(corpus, f))
        before = set(os.listdir(work))
        cmd = [os.path.join(build, 'tests', 'fuzz_' + t), corpus, '-max_total_time=%d' % a.seconds,
               '-print_final_stats=1', '-timeout=%d' % a.timeout, '-rss_limit_mb=2048',
               '-artifact_prefix=%s/' % work] + (['-close_fd_mask=2'] if t in QUIET else []) + a.extra
        log = os.path.join(work, 'fuzz.log')
        t0 = time.time()
        with open(log, 'w') as lf, open(os.devnull) as null:
            rc = subprocess.call(cmd, stdin=null, stdout=lf, stderr=subprocess.STDOUT, env=env, cwd=work)
        text = open(log, errors='replace').read()
        m = re.findall(r'stat::number_of_executed_units:\s*(\d+)', text)
        execs = int(m[-1]) if m else 0
        total += execs
        arts = sorted(set(os.listdir(work)) - before - {'fuzz.log'})
        arts = [os.path.join(work, f) for f in arts if re.match(r'(crash|leak|timeout|oom|slow-unit)-', f)]
        status = 'ok'
        if rc != 0 or arts:
            status = 'FAILED (rc %d): %s' % (rc, ' '.join(arts) or 'see ' + log)
            failed.append(t)
            tail = text.strip().splitlines()[-40:]
            print('\n'.join('    | ' + l for l in tail))
        rows.append((t, execs, time.time() - t0, len(os.listdir(corpus)), status))
        print('fuzz %-8s %12d executions in %5.0f s (%d/s), corpus %d: %s'
              % (t, execs, time.time() - t0, execs / max(1e-9, time.time() - t0), len(os.listdir(corpus)), status),
              flush=True)
    print('fuzz total    %12d executions over %d targets%s'
          % (total, len(targets), '' if not failed else '; FAILED: ' + ', '.join(failed)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
