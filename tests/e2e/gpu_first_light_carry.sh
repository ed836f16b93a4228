#!/usr/bin/env bash
# suite: plain build only: packs and runs the plain build's binaries; the sanitizer build's need the ASan runtime, which is not carried
# suite: long: starts first in the pool (a real sweep or a long session), so the pool does not end on it
# bench/gpu_first_light.sh's carry as far as a machine without a GPU can try it:
#  1. --prepare --no-build packs the build and the Debian 12 runtime packages into a carry folder
#     (outside the tree here: .gitignore untouched, and it says such a folder cannot travel) of
#     at most 60 MiB, with a manifest;
#  2. --dry-run with that carry checks its contents and size;
#  3. the device run, in a mount namespace where this machine's copies of every library the
#     carry brings (OpenMPI, PMIx, hwloc, libevent, munge, cJSON, cmocka, OpenBLAS), OpenMPI's
#     plugins, help files and config, the mpirun and zstd programs, ssh and the network-fabric
#     libraries the dropped plugins needed are hidden: the relocated mpirun starts a 2-rank
#     pdbx-engine (step plumbing passes), the GPU steps skip with "no CUDA device", and the
#     output folder holds exactly summary.txt, summary.json and raw.tar.gz (with the run file);
#  4. the same namespace without the carry (the build and this machine's libraries): step start
#     fails naming the library that is not found, every step after the device check is "not
#     run", exit 1.
# Skips (77) where unshare -m is not permitted, where apt-get download reaches no mirror, and on
# a machine with a GPU (there: run bench/gpu_first_light.sh itself).
set -u
SRC=${PDBX_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${PDBX_BUILD:?PDBX_BUILD not set}
script=$SRC/bench/gpu_first_light.sh
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$BUILD/lib/libpdbx_cuda.so" ] ||
    { echo "SKIP: $BUILD/lib/libpdbx_cuda.so not built (nvcc not found): nothing to carry"; exit 77; }
if ! why=$(unshare -m true 2>&1); then
    echo "SKIP: unshare -m not permitted here (${why:-not root}): cannot hide the system libraries"
    exit 77
fi
if nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: this machine has a GPU: run bench/gpu_first_light.sh itself (this test simulates a device run without one)"
    exit 77
fi
tmp=$(mktemp -d /tmp/pdbx-first-light-carry.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
carry=$tmp/carry

# 1. --prepare
gitignore=$(cat "$SRC/.gitignore" 2>/dev/null)
out=$(bash "$script" --prepare --no-build --carry "$carry" 2>&1)
rc=$?
if [ "$rc" = 3 ]; then
    echo "SKIP: apt-get download reaches no Debian mirror: $(tail -n 1 <<<"$out")"
    exit 77
fi
[ "$rc" = 0 ] || fail "--prepare failed (rc $rc):
$out"
size=$(du -sb "$carry" | awk '{print $1}')
[ "$size" -le $((60 * 1024 * 1024)) ] || fail "carry is $size bytes, over 60 MiB"
[ "$(ls "$carry")" = "$(printf 'manifest.txt\npayload.tar.gz')" ] || fail "carry holds: $(ls "$carry")"
for p in libopenmpi3 openmpi-bin libpmix2 libcjson1 libcmocka0 libopenblas0-pthread zstd; do
    grep -q "^package: $p " "$carry/manifest.txt" || fail "manifest lists no package $p"
done
grep -q '^glibc_needed: 2\.[0-9]*$' "$carry/manifest.txt" || fail "manifest has no glibc_needed"
grep -q "carry: $carry: payload.tar.gz + manifest.txt = [0-9.]* MiB (cap 60 MiB)" <<<"$out" || fail "--prepare did not print the carry's size:
$out"
grep -q "is outside the tree, and the device tool carries only folders inside it" <<<"$out" ||
    fail "--prepare did not say that a carry outside the tree cannot travel:
$out"
[ "$(cat "$SRC/.gitignore" 2>/dev/null)" = "$gitignore" ] || fail "--prepare with a carry outside the tree changed .gitignore"

# 2. the dry run checks the carry
out=$(bash "$script" --dry-run --carry "$carry" 2>&1) || fail "dry run with the carry failed:
$out"
for s in 'carried build/bin/pdbx-engine: ok' 'carried root/usr/bin/orterun: ok' 'carried ld/carry/libmpi.so.40: ok' \
         'carry size [0-9.]* MiB (cap 60 MiB): ok' '^dry run: ok'; do
    grep -q -- "$s" <<<"$out" || fail "dry run with the carry: no '$s':
$out"
done

# 3. the device run with this machine's copies of what the carry brings hidden
cat >"$tmp/hide.sh" <<'EOF'
# run inside unshare -m: hides (bind mounts over) this machine's copies of what the carry brings
L=/usr/lib/x86_64-linux-gnu
for d in $L/openmpi $L/pmix2 $L/openblas-pthread $L/hwloc /usr/share/openmpi /etc/openmpi; do
    [ -d "$d" ] && mount -t tmpfs none "$d"
done
hide() { [ -e "$1" ] && mount --bind /dev/null "$(readlink -f "$1")"; }
# every library the carry puts first, by the name the loader looks for
for so in $(sed -n 's#^lib: carry/\([^ ]*\) .*#\1#p' "$1/manifest.txt"); do
    for f in $L/$so /lib/x86_64-linux-gnu/$so; do hide "$f"; done
done
for so in libucp.so.0 libucs.so.0 libuct.so.0 libucm.so.0 libfabric.so.1 libibverbs.so.1 librdmacm.so.1 \
          libpsm2.so.2 libpsm_infinipath.so.1 libnl-3.so.200 libnl-route-3.so.200 libefa.so.1 libnuma.so.1; do
    hide "$L/$so"
done
for f in /usr/bin/orterun /usr/bin/orted /usr/bin/zstd /usr/bin/ssh /usr/bin/rsh; do hide "$f"; done
shift
exec "$@"
EOF
# the hiding works: the build's own engine no longer starts
missing=$(unshare -m bash "$tmp/hide.sh" "$carry" ldd "$BUILD/bin/pdbx-engine" 2>&1 | grep -cE 'not found|file too short')
[ "$missing" -gt 0 ] || fail "hiding the system libraries had no effect on $BUILD/bin/pdbx-engine"

unshare -m bash "$tmp/hide.sh" "$carry" bash "$script" --carry "$carry" --budget 120 "$tmp/out" >"$tmp/run.log" 2>&1
rc=$?
[ "$rc" = 0 ] || fail "device run with the carry exited $rc:
$(cat "$tmp/run.log")"
sum=$tmp/out/summary.txt
[ -f "$sum" ] || fail "no summary.txt"
row() { grep -E "^ *[0-9]+  $1 " "$sum"; }
row start | grep -q ' pass .*from the carry' || fail "step start did not pass from the carry: $(row start)"
row plumbing | grep -q ' pass .*2 ranks through .*/payload/root/usr/bin/mpirun' ||
    fail "step plumbing did not pass through the carried mpirun:
$(cat "$sum")"
row device | grep -q ' skip .*no CUDA device' || fail "step device: $(row device)"
for s in unit e2e sweep record torch flash memcheck racecheck collectives; do
    row "$s" | grep -qE ' skip +[0-9]+ .*(no CUDA device|SKIP)' || fail "step $s did not skip for want of a device: $(row "$s")"
done
[ "$(cd "$tmp/out" && echo *)" = "raw.tar.gz summary.json summary.txt" ] || fail "output folder holds: $(cd "$tmp/out" && echo *)"
tar tzf "$tmp/out/raw.tar.gz" | grep -q '^store/runs/.*\.pdbx$' || fail "raw.tar.gz holds no run file"
tar tzf "$tmp/out/raw.tar.gz" | grep -q '^raw/start.log$' || fail "raw.tar.gz holds no raw/start.log"
"${PYTHON:-python3}" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["steps"]) == 12 and d["exit"] == 0, d' \
    "$tmp/out/summary.json" || fail "summary.json"
grep -q "^exit 0: every step that ran passed" "$sum" || fail "summary does not end with exit 0"

# 4. without the carry the hidden libraries are what start reports, and nothing else runs
unshare -m bash "$tmp/hide.sh" "$carry" env PDBX_BUILD="$BUILD" bash "$script" --carry "$tmp/none" \
    --budget 120 "$tmp/out2" >"$tmp/run2.log" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "device run without the carry exited $rc (want 1):
$(cat "$tmp/run2.log")"
grep -E '^ *1  start +FAIL .*(libmpi\.so\.40|libcjson\.so\.1)' "$tmp/out2/summary.txt" >/dev/null ||
    fail "step start does not name the missing library:
$(cat "$tmp/out2/summary.txt")"
# the device check still runs (it needs none of pdbx's programs); every other step does not
[ "$(grep -cE '^ *[0-9]+  [a-z0-9]+ +not run .*does not start here' "$tmp/out2/summary.txt")" = 10 ] ||
    fail "not every step after device is 'not run':
$(cat "$tmp/out2/summary.txt")"
echo "ok: carry $(awk -v b="$size" 'BEGIN { printf "%.1f MiB", b / 1048576 }'); device run with the system's OpenMPI, cJSON, cmocka, OpenBLAS, PMIx, hwloc, zstd hidden: plumbing through the carried mpirun passed, GPU steps skipped; without the carry start names the missing library"
