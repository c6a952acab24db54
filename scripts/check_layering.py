#!/usr/bin/env python3
"""Checks by grep what the build enforces (cmake/cannl_layers.cmake): every #include of a cannl
header in src/<layer>/ and include/cannl/<layer>/ names the layer itself or one it depends on,
directly or through others, as declared by the cannl_layer(<name> DEPS ...) lines of
CMakeLists.txt; a private header (src/<other>/...) only of the layer itself. A quick answer
without a build; exits 1 listing the offending lines.

    scripts/check_layering.py
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAYER_CALL = re.compile(r"^cannl_layer\((\w+)(.*)\)\s*$", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def declared_layers():
    """{layer: (direct deps, headers directly under include/cannl/)} in declaration order."""
    layers = {}
    for name, rest in LAYER_CALL.findall((ROOT / "CMakeLists.txt").read_text()):
        words, section = rest.split(), None
        deps, headers = [], []
        for w in words:
            if w in ("DEPS", "LIBS", "HEADERS"):
                section = w
            elif section == "DEPS":
                deps.append(w)
            elif section == "HEADERS":
                headers.append(w)
        layers[name] = (deps, headers)
    return layers


def closure(layers, name):
    seen, todo = set(), [name]
    while todo:
        layer = todo.pop()
        if layer not in seen:
            seen.add(layer)
            todo.extend(layers[layer][0])
    return seen


def main():
    layers = declared_layers()
    problems = []
    for layer in layers:
        allowed = closure(layers, layer)
        allowed_headers = {h for l in allowed for h in layers[l][1]}
        files = [p for d in (ROOT / "src" / layer, ROOT / "include" / "cannl" / layer) if d.is_dir()
                 for p in sorted(d.rglob("*")) if p.suffix in (".h", ".cpp", ".def")]
        for path in files:
            text = path.read_text()
            for match in INCLUDE.finditer(text):
                target = match.group(1)
                parts = target.split("/")
                line = text.count("\n", 0, match.start()) + 1
                where = f"{path.relative_to(ROOT)}:{line}: {target}"
                if parts[0] == "cannl" and len(parts) == 2 and parts[1] not in allowed_headers:
                    problems.append(f"{where} (belongs to no layer {layer} may use)")
                elif parts[0] == "cannl" and len(parts) > 2 and parts[1] not in allowed:
                    problems.append(f"{where} (layer {layer} does not depend on {parts[1]})")
                elif parts[0] in layers and parts[0] != layer and len(parts) > 1:
                    problems.append(f"{where} (a private header of layer {parts[0]})")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) against the layer order of CMakeLists.txt", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
