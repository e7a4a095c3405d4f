"""An oracle for inline-extended contexts (--inline-frames), independent of
kgrind: callgrind's per-instruction Ir in each physical calling context
(--dump-instr=yes --separate-callers=N) and each instruction's inline chain
from llvm-symbolizer --inlining. An instruction of physical function f in
callgrind's context `f'p'q...` with inline chain g (in f), h (in g) lies in
the source-level context `... > q > (q's inlined levels at its call of p) >
p > (p's inlined levels at its call of f) > f > g > h`; the call sites of
each physical call are callgrind's calls= lines of the caller's context.

Inlined functions are compared by their demangled linkage names where the
debug info has one (kgrind names them so, kg_inline_names.h;
llvm-symbolizer's --no-demangle names go through binutils' c++filt, the
demangler Valgrind's is), else by their base identifier (base_name: the
oracle says DW_AT_name, `get`, kgrind its scopes too, `Table::get`).

Only the program's own code has its inline chains read (on the
executable, built -no-pie so that callgrind's addresses are the file's):
a context is compared when all its levels are the executable's functions
or inlined into them. A caller whose calls of one callee context come from
call sites of different inline chains makes the callee's instructions'
contexts unknowable from callgrind's data (it keeps no call sites in a
context): their Ir is kept apart (Oracle.ambiguous) and their possible
contexts reported."""
import collections
import functools
import re
import subprocess

import callgrind_format
import ksf_records

_OPERATOR = re.compile(r'operator\s*(\(\)|\[\]|->\*?|<<=?|>>=?|<=>|[-+*/%^&|~!=<>,]=?|new(\[\])?|delete(\[\])?|\w+)')
_INLINED = ' [inlined]'


def base_name(name):
    """The identifier of a function's name: no return type, scope, template
    arguments, parameters, version (@@GLIBC_...) or suffixes ([clone ...],
    kgrind's [file] for namesakes, [inlined])."""
    if name.endswith(_INLINED):
        name = name[:-len(_INLINED)]
    name = re.sub(r'(\s\[[^\]]*\])+$', '', name)
    if re.fullmatch(r'\([^()]*\)', name):
        return name         # (below main)
    name = name.split('@')[0]
    name = _OPERATOR.sub('operator', name)
    out, depth = [], 0
    for ch in name:
        if ch in '<(':
            depth += 1
        elif ch in '>)':
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    words = [w for w in ''.join(out).split() if w not in ('const', 'volatile', 'noexcept', '&', '&&')]
    flat = words[-1] if words else ''.join(out)
    return flat.split('::')[-1]


def physical_name(name):
    """A symbol's name as Valgrind's tools give it, without kgrind's
    qualifier of namesakes (` [file.c]`, ` [object]`)."""
    return re.sub(r' \[(?!clone )[^\]]*\]$', '', name)


def inlined_key(name):
    """An inlined function's name as compared: a demangled linkage name
    whole (it has a parameter list), other names by base_name."""
    if name.endswith(_INLINED):
        name = name[:-len(_INLINED)]
    name = re.sub(r'(\s\[[^\]]*\])+$', '', name)
    return name if name.endswith(')') or name.endswith(') const') else base_name(name)


# (a function of its arguments alone, asked for each instruction's levels:
# 440,000 times for a googletest sample, 1.4 s)
@functools.lru_cache(maxsize=None)
def level(name, inlined):
    """Physical functions by their whole names (both tools take Valgrind's);
    inlined ones by inlined_key."""
    return inlined_key(name) + _INLINED if inlined else physical_name(name)


def inline_chains(exe, addrs, symbolizer='llvm-symbolizer-14'):
    """{address: (inlined function names, outermost first)} from
    llvm-symbolizer --inlining (binutils' addr2line -i names an inlined
    constructor after its caller); and the names it gives. Linkage names
    demangled by binutils' c++filt (llvm's demangler writes `<int>>`, GNU's
    `<int> >`, as Valgrind's)."""
    addrs = sorted(addrs)
    text = subprocess.run([symbolizer, '--inlining', '--no-demangle', f'--obj={exe}'],
                          input=''.join(f'{a:#x}\n' for a in addrs), capture_output=True, text=True,
                          check=True).stdout
    blocks = text.split('\n\n')
    chains, names = {}, set()
    for addr, block in zip(addrs, blocks):
        lines = block.strip('\n').splitlines()
        fns = lines[0::2]
        names.update(fns)
        # innermost first, the physical function last.
        chains[addr] = tuple(reversed(fns[:-1]))
    assert len(chains) == len(addrs)
    mangled = sorted({n for n in names if n.startswith('_Z')})
    if mangled:
        out = subprocess.run(['c++filt'], input=''.join(f'{n}\n' for n in mangled), capture_output=True,
                             text=True, check=True).stdout.splitlines()
        plain = dict(zip(mangled, out))
        chains = {a: tuple(plain.get(n, n) for n in c) for a, c in chains.items()}
        names = {plain.get(n, n) for n in names}
    return chains, names


def plt_ranges(exe):
    out = subprocess.run(['objdump', '-h', str(exe)], capture_output=True, text=True, check=True).stdout
    return [(int(m.group(2), 16), int(m.group(2), 16) + int(m.group(1), 16))
            for m in re.finditer(r'\.plt(?:\.got|\.sec)?\s+([0-9a-f]+)\s+([0-9a-f]+)', out)]


class Oracle:
    """Ir per inline-extended context from a callgrind run (--dump-instr=yes,
    --separate-callers=N, --separate-recs=1) of exe."""

    def __init__(self, callgrind_path, exe, symbolizer='llvm-symbolizer-14'):
        prof = callgrind_format.parse(callgrind_path)
        obj = str(exe)
        self.stubs = plt_ranges(exe)
        self.instrs = [(ctx, addr, ir) for (ob, ctx, addr), ir in prof.instrs.items()
                       if ir and (ob == obj or self.stub(ctx.split("'")[0]))]
        # callee context -> {(caller context, call instruction)}
        self.sites = collections.defaultdict(set)
        for (caller, callee, addr), n in prof.call_instrs.items():
            if n:
                self.sites[callee].add((caller, addr))
        in_exe = {a for c, a, _i in self.instrs if not self.stub(c.split("'")[0])}
        self.site_addrs = {a for s in self.sites.values() for _c, a in s}
        self.chains, names = inline_chains(exe, in_exe | self.site_addrs, symbolizer)
        self.in_exe = in_exe | {a for a in self.site_addrs if self._in_exe_text(a, exe)}
        self.inlined_names = {inlined_key(n) for n in names}
        # Named functions of the executable (not Valgrind's "(below main)",
        # nor code without a symbol, which the tools name differently).
        self.physical = {level(c.split("'")[0], False) for (ob, c, _a) in prof.instrs if ob == obj} - {
            n for n in self.physical_all(prof) if re.fullmatch(r'\([^()]*\)|0x[0-9a-f]+', n)}

    @staticmethod
    def physical_all(prof):
        return {level(c.split("'")[0], False) for (_ob, c, _a) in prof.instrs}

    def stub(self, fn):
        """Whether callgrind's function fn is a PLT stub of the executable
        (callgrind names a .plt.got stub by its address; kgrind charges a
        stub's instructions to its call, in the caller's context)."""
        return re.match(r'^0x[0-9a-f]+$', fn) is not None and any(lo <= int(fn, 16) < hi for lo, hi in self.stubs)

    def _in_exe_text(self, addr, exe):
        if not hasattr(self, '_text'):
            out = subprocess.run(['objdump', '-h', str(exe)], capture_output=True, text=True, check=True).stdout
            m = re.search(r'\.text\s+([0-9a-f]+)\s+([0-9a-f]+)', out)
            self._text = (int(m.group(2), 16), int(m.group(2), 16) + int(m.group(1), 16))
        return self._text[0] <= addr < self._text[1]

    def stack(self, ctx, addr, needed):
        """The source-level levels of an instruction (outermost first) as far
        as the executable's callers go, at least `needed` of them if known
        (None: all up to the first caller outside the executable), and
        whether an ambiguous call site stopped it: (levels, alternatives)."""
        frames = ctx.split("'")
        levels = [level(frames[0], False)] + [level(n, True) for n in self.chains.get(addr, ())]
        cur = ctx
        if self.stub(frames[0]):
            # The caller's, at the call site's inline level.
            levels = []
            frames = ['(stub)', *frames[1:]]
            levels, alternatives = self._caller_levels(cur, frames, 1, levels)
            if alternatives is not None or levels is None:
                return levels or [], alternatives
            cur = self._caller
            frames = frames[1:]
        for depth in range(1, len(frames)):
            if needed is not None and len(rolled(levels)) >= needed:
                break
            sites = self.sites.get(cur, set())
            if not sites or any(a not in self.in_exe for _c, a in sites):
                break
            chains = {self.chains.get(a, ()) for _c, a in sites}
            callers = {c for c, _a in sites}
            assert len(callers) == 1, (cur, callers)
            if len(chains) > 1:
                return levels, [[level(frames[depth], False)] + [level(n, True) for n in c] for c in chains]
            levels = [level(frames[depth], False)] + [level(n, True) for n in chains.pop()] + levels
            cur = callers.pop()
        return levels, None

    def _caller_levels(self, cur, frames, depth, levels):
        sites = self.sites.get(cur, set())
        if not sites or any(a not in self.in_exe for _c, a in sites):
            return None, None
        chains = {self.chains.get(a, ()) for _c, a in sites}
        callers = {c for c, _a in sites}
        assert len(callers) == 1, (cur, callers)
        if len(chains) > 1:
            return levels, [[level(frames[depth], False)] + [level(n, True) for n in c] for c in chains]
        self._caller = callers.pop()
        return [level(frames[depth], False)] + [level(n, True) for n in chains.pop()] + levels, None

    def contexts(self, k):
        """({k-context: Ir} of the contexts whose levels are all the
        executable's, {k-context: Ir} of instructions whose context an
        ambiguous call site hides}. k None: whole paths from main."""
        exact, ambiguous = collections.Counter(), collections.Counter()
        for ctx, addr, ir in self.instrs:
            # One level more than the context: rolling may merge the outermost.
            levels, alternatives = self.stack(ctx, addr, None if k is None else k + 2)
            levels = rolled(levels)
            if alternatives is not None:
                if k is None or len(levels) < k + 1:
                    ambiguous[tuple(levels)] += ir
                    continue
            if k is None:
                if levels[0] != 'main':
                    continue
                exact[tuple(levels)] += ir
            elif len(levels) >= k + 1:
                key = tuple(levels[-(k + 1):])
                if self.own(key):
                    exact[key] += ir
        return exact, ambiguous

    def own(self, key):
        """Whether every level of a context is the executable's function or
        one inlined into it."""
        return all(n[:-len(_INLINED)] in self.inlined_names if n.endswith(_INLINED) else n in self.physical
                   for n in key)


def rolled(levels):
    """kgrind's rolled simple recursion (--unroll-simple-rec=no): a level
    that calls its own function directly is one level, inlined ones too."""
    out = []
    for lv in levels:
        if not out or out[-1] != lv:
            out.append(lv)
    return out


def kgrind_contexts(path, k):
    """{k-context: exclusive Ir} from a kgrind profile's k-SF records (the
    canonical nodes: all but the top regions of the trees after the first),
    names by base_name; k None: whole paths, from main."""
    prof = ksf_records.parse(path)
    out = collections.Counter()
    for forest in prof.forests:
        for tree_index, root in enumerate(forest.roots):
            stack = [(root, (forest.name(root),), 0)]
            while stack:
                nid, path, depth = stack.pop()
                excl = forest.nodes[nid][3]
                if excl and not (tree_index > 0 and k is not None and depth < k):
                    out[path if k is None else path[-(k + 1):]] += excl
                for kid in forest.children[nid]:
                    kid_path = path + (forest.name(kid),)
                    if k is not None:
                        kid_path = kid_path[-(k + 1):]
                    stack.append((kid, kid_path, depth + 1))
    named = collections.Counter()
    for path, ir in out.items():
        named[tuple(level(n, callgrind_format.inlined_level(n)) for n in path)] += ir
    if k is not None:
        return named
    whole = collections.Counter()
    for path, ir in named.items():
        if 'main' in path:
            whole[path[path.index('main'):]] += ir
    return whole
