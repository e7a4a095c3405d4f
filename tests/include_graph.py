#!/usr/bin/env python3
"""The include graph of kgrind's tool (kgrind/) and the `use` graph of
kgrind_annotate's modules (perl/), by module, with their layers.

    tests/include_graph.py            the layers, lowest first: each module
                                      with the modules it uses
    tests/include_graph.py --dot      the same as a Graphviz graph
    tests/include_graph.py --root DIR  of another checkout

A module is a file name without its extension (kg_frames.h and
kg_frames.cpp are the module kg_frames; a Perl module is its package name).
Includes must point down: the graph has no cycle. tests/test_layout.py
checks that, and the size of every file.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOL = ROOT / 'kgrind'
PERL = ROOT / 'perl'
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
USE = re.compile(r'^\s*(?:use|require)\s+(KGrind(?:::\w+)+)', re.M)


def tool_files():
    return sorted(p for p in TOOL.rglob('*') if p.suffix in ('.h', '.cpp'))


def perl_files():
    return sorted(p for p in PERL.rglob('*') if p.suffix in ('.pm', '.pl'))


def tool_module(path):
    return str(path.relative_to(TOOL).with_suffix(''))


def perl_module(path):
    if path.suffix == '.pl':
        return path.stem
    return '::'.join(path.relative_to(PERL / 'lib').with_suffix('').parts)


def tool_graph():
    """{module: set of modules it includes} for kgrind/ (system and Valgrind
    headers left out)."""
    graph = {}
    for path in tool_files():
        mod = tool_module(path)
        deps = graph.setdefault(mod, set())
        for name in INCLUDE.findall(path.read_text(errors='replace')):
            for base in (path.parent, TOOL):
                target = (base / name).resolve()
                if target.exists() and TOOL in target.parents:
                    dep = tool_module(target)
                    if dep != mod:
                        deps.add(dep)
                    break
    return graph


def perl_graph():
    graph = {}
    modules = {perl_module(p) for p in perl_files()}
    for path in perl_files():
        mod = perl_module(path)
        deps = graph.setdefault(mod, set())
        for dep in USE.findall(path.read_text(errors='replace')):
            if dep in modules and dep != mod:
                deps.add(dep)
    return graph


def cycles(graph):
    """The strongly connected components of more than one module."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    # The walk recurses once per module on a path; the limit is put back so
    # that tests running later in the same process see Python's default.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def layers(graph):
    """Each module's layer: 0 for a module that uses none, else one more
    than the highest layer it uses (cycles must be gone)."""
    level = {}

    def of(v, seen=()):
        if v not in level:
            if v in seen:
                raise ValueError(f'cycle through {v}')
            level[v] = 1 + max((of(w, seen + (v,)) for w in graph.get(v, ())), default=-1)
        return level[v]

    for v in graph:
        of(v)
    return level


def print_layers(title, graph):
    print(f'# {title}')
    found = cycles(graph)
    if found:
        for comp in found:
            print('cycle: ' + ' <-> '.join(comp))
        return
    level = layers(graph)
    for n in range(max(level.values(), default=-1) + 1):
        print(f'layer {n}:')
        for mod in sorted(m for m in level if level[m] == n):
            deps = ', '.join(sorted(graph[mod]))
            print(f'  {mod}' + (f'  <- uses {deps}' if deps else ''))


def print_dot(graphs):
    print('digraph includes {\n  rankdir=BT; node [shape=box, fontsize=10];')
    for graph in graphs:
        for mod in sorted(graph):
            for dep in sorted(graph[mod]):
                print(f'  "{mod}" -> "{dep}";')
    print('}')


def set_root(root):
    global ROOT, TOOL, PERL
    ROOT = pathlib.Path(root).resolve()
    TOOL, PERL = ROOT / 'kgrind', ROOT / 'perl'


if __name__ == '__main__':
    if '--root' in sys.argv:
        set_root(sys.argv[sys.argv.index('--root') + 1])
    if '--dot' in sys.argv[1:]:
        print_dot([tool_graph(), perl_graph()])
    else:
        print_layers('kgrind/ (the tool): #include "..."', tool_graph())
        print()
        print_layers('perl/ (kgrind_annotate, kgrind_control): use KGrind::...', perl_graph())
