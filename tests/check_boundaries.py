#!/usr/bin/env python3
"""Fails when a source file includes a project header from a directory that its library does
not declare as a dependency. Each directory's SConscript declares its library with
env.PdbxLibrary('<dir>', sources, deps=[...]); a file may include headers of its own directory
and of the declared ones. Every directory holding C sources must declare a library.

usage: check_boundaries.py [ROOT]   (prints one line per violation; exit 1 when any)"""
import ast, os, re, sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
SKIP = ('tests', 'bench', 'build', 'build-san', 'build-fuzz', '.git')
DECL = re.compile(r"PdbxLibrary\(\s*'([^']+)'.*?deps\s*=\s*(\[[^\]]*\])", re.S)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

declared = {}
source_dirs = set()
for dirpath, dirnames, filenames in os.walk(root):
    rel = os.path.relpath(dirpath, root)
    if rel.split(os.sep)[0] in SKIP:
        dirnames[:] = []
        continue
    if 'SConscript' in filenames:
        text = open(os.path.join(dirpath, 'SConscript')).read()
        for name, deps in DECL.findall(text):
            declared[name] = set(ast.literal_eval(deps))
    if any(f.endswith(('.c', '.h', '.cu')) for f in filenames):
        source_dirs.add('' if rel == '.' else rel)

problems = []
for d in sorted(source_dirs):
    if d not in declared:
        problems.append('%s/: no library declared (env.PdbxLibrary in %s/SConscript)' % (d, d))
        continue
    for f in sorted(os.listdir(os.path.join(root, d))):
        if not f.endswith(('.c', '.h', '.cu')):
            continue
        text = open(os.path.join(root, d, f), errors='replace').read()
        for m in INCLUDE.finditer(text):
            header = m.group(1)
            hdir = os.path.dirname(header)
            if hdir == '' or hdir == d or hdir in declared[d]:
                continue
            line = text.count('\n', 0, m.start()) + 1
            problems.append('%s/%s:%d: includes "%s", but %s declares no dependency on %s/ '
                            '(allowed: %s)' % (d, f, line, header, d, hdir,
                                               ', '.join(sorted(declared[d])) or 'none'))
for p in problems:
    print(p)
print('%d directories checked, %d violations' % (len(source_dirs), len(problems)))
sys.exit(1 if problems else 0)
