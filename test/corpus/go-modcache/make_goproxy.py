"""Builds a GOPROXY=file:// directory from module sources (module@version directories).

Go reads a file proxy as <module>/@v/list, <version>.info, <version>.mod and <version>.zip; the
zip holds the module's files under "<module>@<version>/". Used by the corpus set-up so the Go
project's dependency lands in the module cache without a network.
"""
import json
import os
import sys
import zipfile

src, out = sys.argv[1], sys.argv[2]
for root, dirs, files in os.walk(src):
    base = os.path.basename(root)
    if "@" not in base:
        continue
    dirs[:] = []
    rel = os.path.relpath(root, src)
    module, version = rel.rsplit("@", 1)
    vdir = os.path.join(out, module, "@v")
    os.makedirs(vdir, exist_ok=True)
    with open(os.path.join(vdir, "list"), "a") as f:
        f.write(version + "\n")
    with open(os.path.join(vdir, version + ".info"), "w") as f:
        json.dump({"Version": version, "Time": "2026-01-01T00:00:00Z"}, f)
    with open(os.path.join(root, "go.mod")) as f:
        mod = f.read()
    with open(os.path.join(vdir, version + ".mod"), "w") as f:
        f.write(mod)
    with zipfile.ZipFile(os.path.join(vdir, version + ".zip"), "w") as z:
        for dirpath, _, names in os.walk(root):
            for name in sorted(names):
                path = os.path.join(dirpath, name)
                arc = f"{module}@{version}/" + os.path.relpath(path, root)
                z.write(path, arc)
