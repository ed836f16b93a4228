#!/usr/bin/env bash
# Hostile strings in an imported recording (issue 10, faults 6 and 7): the model name and tag,
# device, host, spec name, warnings, point messages and the end reason carry terminal escape
# sequences (CSI clear screen, OSC window title, BEL, the one-byte C1 CSI U+009B) and bytes
# that are not UTF-8 (a stray 0xFF, an overlong '/', a surrogate, a truncated sequence).
# `pdbx ls`, `pdbx show` (table, csv, json), `pdbx diff`, `pdbx export` and the explorer must
# print none of it raw: no ESC, BEL or C1 control from the data, and valid UTF-8 everywhere
# (JSON parsed by Python with strict UTF-8 decoding); the text itself stays visible ('?' on a
# terminal, \u001b and U+FFFD in JSON).
. "${PDBX_SOURCE_DIR:?PDBX_SOURCE_DIR not set}/tests/fixtures/tui_lib.bash"
export TZ=UTC
ID=2026-11-20__10-00-00_evil0001
OK=2026-11-20__11-00-00_good0002

# The hostile string as it appears inside a JSON string of the run file: escapes that cJSON
# decodes to ESC, BEL and U+009B, then raw bytes that are not UTF-8, then a marker.
"$PY" - "$SRC/tests/fixtures/tui_fixture.py" "$ID" "$TMP/evil.jsonl" <<'PYEOF' || fail "fixture"
import json, subprocess, sys
fixture, rid, out = sys.argv[1:4]
lines = subprocess.run([sys.executable, fixture, rid, "--status", "cancelled", "--oom-at", "8"],
                       check=True, capture_output=True, text=True).stdout.splitlines()
EVIL = (b'Evil\\u001b[2J\\u001b]0;PWNED\\u0007\\u009b31m'
        b'\xff\xc0\xaf\xed\xa0\x80\xe2\x82-end')
with open(out, "wb") as f:
    for line in lines:
        e = json.loads(line)
        t = e["type"]
        if t == "run_start":
            e["model"]["name"] = e["model"]["tag"] = e["env"]["device"] = e["host"] = "@EVIL@"
            e["spec"]["name"] = "@EVIL@"
        elif t in ("warning", "point_end") and "message" in e:
            e["message"] = "@EVIL@"
        elif t == "run_end":
            e["reason"] = "@EVIL@"
        f.write(json.dumps(e, separators=(",", ":")).encode().replace(b"@EVIL@", EVIL) + b"\n")
PYEOF
# one zstd frame per line: a recording, imported like any other
: > "$TMP/evil.pdbx"
while IFS= read -r line; do
    printf '%s' "$line" | zstd -q -c >> "$TMP/evil.pdbx" || fail "zstd"
done < "$TMP/evil.jsonl"
"$PY" -c 'import sys; sys.exit(b"\xff\xc0\xaf" not in open(sys.argv[1], "rb").read())' "$TMP/evil.jsonl" \
    || fail "the fixture lost its invalid bytes"
mkdir -p "$STORE"
"$PDBX" import "$TMP/evil.pdbx" --store "$STORE" > "$TMP/import.out" 2>"$TMP/import.err" \
    || fail "import: $(cat "$TMP/import.err")"
[ "$(cat "$TMP/import.out")" = "$ID" ] || fail "import printed '$(cat "$TMP/import.out")', not $ID"
make_run "$OK" --t0 1795172400
export PDBX_STORE="$STORE"

# check_text FILE WHAT: no byte of a control from the data (ESC, BEL, C1 as UTF-8 or raw),
# strict UTF-8, and the hostile name visible in its safe form.
check_text() {
    "$PY" - "$1" "$2" <<'PYEOF' || fail "$2: unsafe output (see above)"
import sys
path, what = sys.argv[1:3]
raw = open(path, "rb").read()
for bad, name in ((b"\x1b", "ESC"), (b"\x07", "BEL"), (b"\xc2\x9b", "U+009B CSI"), (b"\x9b", "raw 0x9B")):
    if bad in raw:
        i = raw.index(bad)
        sys.exit("%s: raw %s at byte %d: %r" % (what, name, i, raw[max(0, i - 20):i + 20]))
try:
    text = raw.decode("utf-8", errors="strict")
except UnicodeDecodeError as e:
    sys.exit("%s: not UTF-8: %s" % (what, e))
if "Evil?[2J?]0;PWNED??31m" not in text:
    sys.exit("%s: the sanitised model name is missing:\n%s" % (what, text[:3000]))
PYEOF
}

# check_json FILE WHAT [any]: strict UTF-8, valid JSON, no raw ESC or C1 in the bytes, and
# (unless "any": a document without the run's strings) the escapes kept as data (\u001b) and
# the invalid bytes as U+FFFD.
check_json() {
    "$PY" - "$1" "$2" "${3:-}" <<'PYEOF' || fail "$2: bad JSON output (see above)"
import json, sys
path, what, anydoc = sys.argv[1:4]
raw = open(path, "rb").read()
for bad in (b"\x1b", b"\x07", b"\xc2\x9b"):
    if bad in raw:
        sys.exit("%s: raw control %r in the JSON bytes" % (what, bad))
try:
    doc = json.loads(raw.decode("utf-8", errors="strict"))
except (UnicodeDecodeError, ValueError) as e:
    sys.exit("%s: not strict UTF-8 JSON: %s" % (what, e))
want = "Evil\x1b[2J\x1b]0;PWNED\x07\x9b31m"
found = []
def walk(v):
    if isinstance(v, str) and v.startswith("Evil"):
        found.append(v)
    elif isinstance(v, dict):
        [walk(x) for x in v.values()]
    elif isinstance(v, list):
        [walk(x) for x in v]
walk(doc)
if not found and anydoc != "any":
    sys.exit("%s: no model name in the document" % what)
for v in found:
    if not v.startswith(want) or "\ufffd" not in v:     # the tag field cuts "-end" off
        sys.exit("%s: %r is not the recorded string with U+FFFD for the bad bytes" % (what, v))
PYEOF
}

# ---- CLI ------------------------------------------------------------------------------------
"$PDBX" ls > "$TMP/ls" 2>&1 || fail "ls"
check_text "$TMP/ls" "pdbx ls"
"$PDBX" ls --json > "$TMP/ls.json" 2>&1 || fail "ls --json"
check_json "$TMP/ls.json" "pdbx ls --json"
"$PDBX" show "$ID" > "$TMP/show" 2>&1 || fail "show"
check_text "$TMP/show" "pdbx show"
grep -q "^model Evil" "$TMP/show" || fail "show: the model line is not one line"
"$PDBX" show "$ID" --format json > "$TMP/show.json" 2>&1 || fail "show --format json"
check_json "$TMP/show.json" "pdbx show --format json"
"$PDBX" show "$ID" --format csv > "$TMP/show.csv" 2>&1 || fail "show --format csv"
"$PY" -c 'import sys; d = open(sys.argv[1], "rb").read(); sys.exit(b"\x1b" in d or b"\xc2\x9b" in d)' "$TMP/show.csv" \
    || fail "show --format csv has a raw control"
"$PDBX" diff "$OK" "$ID" > "$TMP/diff" 2>&1 || fail "diff: $(head -c 500 "$TMP/diff")"
check_text "$TMP/diff" "pdbx diff"
"$PDBX" diff "$OK" "$ID" --format json > "$TMP/diff.json" 2>&1 || fail "diff --format json"
check_json "$TMP/diff.json" "pdbx diff --format json" any
# export: the trace file is JSON; the NPZ is refused for the run's model tag, and the one-line
# message that quotes the tag is safe too.
"$PDBX" export "$ID" --trace "$TMP/out/trace.json" > "$TMP/export" 2>&1 || fail "export --trace: $(cat "$TMP/export")"
check_json "$TMP/out/trace.json" "exported trace"
"$PDBX" export "$ID" --npz "$TMP/out" > "$TMP/export.npz" 2>&1 && fail "an NPZ with a hostile model tag was written"
"$PY" -c 'import sys; d = open(sys.argv[1], "rb").read(); sys.exit(b"\x1b" in d or b"\xc2\x9b" in d or b"\x07" in d)' "$TMP/export.npz" \
    || fail "export --npz error message has a raw control: $(cat -v "$TMP/export.npz")"
grep -q "model tag: 'Evil?\[2J" "$TMP/export.npz" || fail "export --npz message: $(cat -v "$TMP/export.npz")"

# ---- explorer --------------------------------------------------------------------------------
# tmux interprets what the program writes, so a raw sequence shows as its effect, not as bytes:
# the pane title (OSC 0), colours (CSI via ESC or U+009B). The screen, captured with its
# attributes (-e), may hold only the SGR sequences tmux itself writes, and must show the name
# in its safe form.
check_screen() {
    local what=$1
    tmx capture-pane -e -p -t e2e > "$TMP/screen.e" || fail "capture-pane"
    "$PY" - "$TMP/screen.e" "$what" <<'PYEOF' || fail "$what: unsafe screen"
import re, sys
raw = open(sys.argv[1], "rb").read()
text = raw.decode("utf-8", errors="strict")
rest = re.sub("\x1b\\[[0-9;:]*m", "", text)          # tmux's own colour/attribute changes
bad = [c for c in rest if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
if bad:
    sys.exit("%s: controls on the screen: %r" % (sys.argv[2], sorted(set(bad))))
if "Evil?[2J?]0;PWNED??31m" not in rest:
    sys.exit("%s: the sanitised model name is not on the screen:\n%s" % (sys.argv[2], rest))
PYEOF
    tmx display-message -p -t e2e '#{pane_title}' | grep -q PWNED && fail "$what: the data set the pane title"
    return 0
}
start
wait_for "2 runs"
check_screen "runs list"
keys End; wait_for "Evil"
keys Enter; wait_for "PWNED" 10
check_screen "run view"
quit_and_check
echo "PASS: sanitise_output"
