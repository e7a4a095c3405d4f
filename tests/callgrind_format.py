"""A small, strict reader of callgrind-format profiles (kgrind's and Valgrind's).

It is written from the format specification (Valgrind manual, "Callgrind
Format Specification"), independently of the tool's writer, so tests can
check what a reader sees.
"""
import collections
import re


class Profile:
    def __init__(self):
        self.header = {}
        self.events = []
        self.summary = None
        self.totals = None
        # (object, file, function, line) -> Ir, exclusive self cost
        self.lines = collections.Counter()
        # with `positions: instr line`: (object, function, address) -> Ir
        self.instrs = collections.Counter()
        self.calls = []          # (caller fn, callee fn, count, inclusive Ir)
        # where the calls are: (caller fn, callee fn, file, line) -> count
        self.call_sites = collections.Counter()
        self.jumps = []          # Jump tuples (jump=/jcnd= lines)
        self.comments = []

    def by_function(self):
        """Exclusive Ir per function. A kgrind context `c'a'e` counts for
        its activated function `c`."""
        out = collections.Counter()
        for (_ob, _fl, fn, _line), ir in self.lines.items():
            out[callee(fn)] += ir
        return out

    def by_context(self):
        out = collections.Counter()
        for (_ob, _fl, fn, _line), ir in self.lines.items():
            out[fn] += ir
        return out

    def by_file_line(self):
        out = collections.Counter()
        for (_ob, fl, _fn, line), ir in self.lines.items():
            out[(fl, line)] += ir
        return out

    def total(self):
        return sum(self.lines.values())


Jump = collections.namedtuple(
    'Jump', 'fn from_addr from_line to_fn to_file to_addr to_line cond taken executed')


def callee(context):
    """The activated function of a kgrind context name (callgrind's
    --separate-callers naming: callee'caller1'caller2...)."""
    return context.split("'", 1)[0]


_NAME = re.compile(r'^(ob|fl|fi|fe|fn|cob|cfi|cfl|cfn|jfi|jfn)=(?:\((\d+)\))?\s*(.*)$')


def _subposition(text, last):
    """One subposition: absolute (decimal or 0x hex), +N/-N relative to the
    last position's, or * for the same."""
    if text == '*':
        return last
    if text[0] in '+-':
        return last + int(text, 0)
    return int(text, 0)



def parse(path):
    prof = Profile()
    names = {'ob': {}, 'fl': {}, 'fn': {}}
    space = {'ob': 'ob', 'cob': 'ob', 'fl': 'fl', 'fi': 'fl', 'fe': 'fl',
             'cfi': 'fl', 'cfl': 'fl', 'fn': 'fn', 'cfn': 'fn', 'jfi': 'fl', 'jfn': 'fn'}
    cur = {'ob': '???', 'fl': '???', 'fi': None, 'fn': None, 'cfn': None,
           'jfi': None, 'jfn': None}
    pending_call = None
    pending_jump = None
    positions = ['line']
    last_pos = [0]
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip('\n')
            if not line:
                continue
            if line.startswith('#'):
                prof.comments.append(line)
                continue
            m = _NAME.match(line)
            if m:
                key, num, name = m.group(1), m.group(2), m.group(3)
                table = names[space[key]]
                if num is not None:
                    if name:
                        table[num] = name
                    if num not in table:
                        raise ValueError(f'{path}:{lineno}: undefined id {num}')
                    name = table[num]
                if key == 'fn':
                    cur['fn'] = name
                    cur['fi'] = None
                elif key in ('fl',):
                    cur['fl'] = name
                    cur['fi'] = None
                elif key in ('fi', 'fe'):
                    cur['fi'] = name
                elif key == 'ob':
                    cur['ob'] = name
                elif key in ('cfn', 'jfi', 'jfn'):
                    cur[key] = name
                continue
            if line.startswith('calls='):
                count = int(line[6:].split()[0])
                pending_call = count
                continue
            m = re.match(r'^(jump|jcnd)=(\d+)(?:/(\d+))?\s+(.*)$', line)
            if m:
                # The target is relative to the last position and does not
                # move it (callgrind's writer); the next line is the source.
                target = [_subposition(t, l) for t, l in zip(m.group(4).split(), last_pos)]
                taken = int(m.group(2))
                executed = int(m.group(3)) if m.group(3) else taken
                pending_jump = (m.group(1) == 'jcnd', taken, executed, target)
                continue
            if re.match(r'^[+-]?\d', line) or line.startswith('*'):
                parts = line.split()
                n = len(positions)
                # Position compression: "+N"/"-N" relative to the last
                # position, "*" the same position.
                last_pos = [_subposition(t, l) for t, l in zip(parts[:n], last_pos)]
                pos = last_pos[positions.index('line')] if 'line' in positions else 0
                costs = [int(x) for x in parts[n:] if x != '*']
                if pending_jump is not None:
                    cond, taken, executed, target = pending_jump
                    pos_of = dict(zip(positions, last_pos))
                    tpos = dict(zip(positions, target))
                    prof.jumps.append(Jump(cur['fn'], pos_of.get('instr'), pos_of.get('line'),
                                           cur['jfn'] or cur['fn'], cur['jfi'] or cur['fi'] or cur['fl'],
                                           tpos.get('instr'), tpos.get('line'), cond, taken, executed))
                    pending_jump = None
                    cur['jfi'] = cur['jfn'] = None
                    if costs:
                        raise ValueError(f'{path}:{lineno}: costs on a jump line')
                    continue
                if pending_call is not None:
                    prof.calls.append((cur['fn'], cur['cfn'], pending_call, costs[0] if costs else 0))
                    prof.call_sites[(cur['fn'], cur['cfn'], cur['fi'] or cur['fl'], pos)] += pending_call
                    pending_call = None
                    continue
                if cur['fn'] is None:
                    raise ValueError(f'{path}:{lineno}: cost line before fn=')
                fl = cur['fi'] or cur['fl']
                prof.lines[(cur['ob'], fl, cur['fn'], pos)] += costs[0] if costs else 0
                if 'instr' in positions:
                    prof.instrs[(cur['ob'], cur['fn'], last_pos[positions.index('instr')])] += costs[0] if costs else 0
                continue
            m = re.match(r'^([a-zA-Z][a-zA-Z0-9 _-]*):\s*(.*)$', line)
            if m:
                key, val = m.group(1), m.group(2)
                prof.header.setdefault(key, val)
                if key == 'positions':
                    positions = val.split()
                    last_pos = [0] * len(positions)
                elif key == 'events':
                    prof.events = val.split()
                elif key == 'summary':
                    prof.summary = int(val.split()[0])
                elif key == 'totals':
                    prof.totals = int(val.split()[0])
                continue
            raise ValueError(f'{path}:{lineno}: unparsable line: {line!r}')
    return prof
