#!/usr/bin/env python3
"""Check every relative link (and its #anchor) in the *.md files of a tree.

Usage: scripts/mdlinks.py ROOT [FILE...]   (no FILE: every *.md under ROOT, .git skipped)
Anchors follow GitHub's slugs: lower case, punctuation other than '-' and '_'
dropped, each space a '-', duplicates suffixed -1, -2, ...
"""
import os, re, sys, urllib.parse

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
files = sys.argv[2:]
if not files:
    for d, dirs, fs in os.walk(root):
        dirs[:] = [x for x in dirs if x != '.git']
        files += [os.path.join(d, f) for f in fs if f.endswith('.md')]
files = sorted(os.path.abspath(f) for f in files)

FENCE = re.compile(r'^\s*(```|~~~)')
LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
HTMLREF = re.compile(r'<(?:img|a)\b[^>]*?(?:src|href)="([^"]+)"', re.I)

def slug(text):
    t = re.sub(r'<[^>]+>', '', text)          # inline html
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', t)  # links -> their text
    t = t.strip().lower()
    t = re.sub(r'[^\w\- ]', '', t, flags=re.UNICODE)
    return t.replace(' ', '-')

_anchors = {}
def anchors(path):
    if path in _anchors:
        return _anchors[path]
    seen, out = {}, set()
    infence = False
    with open(path, encoding='utf-8') as f:
        for line in f:
            if FENCE.match(line):
                infence = not infence
                continue
            if infence:
                continue
            m = re.match(r'^(#{1,6})\s+(.*?)\s*#*\s*$', line)
            if not m:
                for a in re.findall(r'<a\s+(?:name|id)="([^"]+)"', line):
                    out.add(a)
                continue
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f'{s}-{n}')
    _anchors[path] = out
    return out

def links(path):
    infence = False
    with open(path, encoding='utf-8') as f:
        for no, line in enumerate(f, 1):
            if FENCE.match(line):
                infence = not infence
                continue
            if infence:
                continue
            plain = re.sub(r'`[^`]*`', lambda m: ' ' * len(m.group(0)), line)
            for m in LINK.finditer(plain):
                yield no, m.group(1)
            for m in HTMLREF.finditer(plain):
                yield no, m.group(1)

bad = 0
checked = 0
for path in files:
    for no, target in links(path):
        if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):
            continue  # http:, https:, mailto:
        checked += 1
        url, _, frag = target.partition('#')
        url = urllib.parse.unquote(url)
        dest = path if url == '' else os.path.normpath(os.path.join(os.path.dirname(path), url))
        rel = os.path.relpath(path, root)
        if not os.path.exists(dest):
            print(f'{rel}:{no}: missing {target}')
            bad += 1
            continue
        if frag and dest.endswith('.md') and os.path.isfile(dest):
            if urllib.parse.unquote(frag) not in anchors(dest):
                print(f'{rel}:{no}: no anchor #{frag} in {os.path.relpath(dest, root)}')
                bad += 1
print(f'{len(files)} files, {checked} relative links checked, {bad} broken')
sys.exit(1 if bad else 0)
