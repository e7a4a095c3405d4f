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
        self.calls = []          # (caller fn, callee fn, count, inclusive Ir)
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


def callee(context):
    """The activated function of a kgrind context name (callgrind's
    --separate-callers naming: callee'caller1'caller2...)."""
    return context.split("'", 1)[0]


_NAME = re.compile(r'^(ob|fl|fi|fe|fn|cob|cfi|cfl|cfn)=(?:\((\d+)\))?\s*(.*)$')


def parse(path):
    prof = Profile()
    names = {'ob': {}, 'fl': {}, 'fn': {}}
    space = {'ob': 'ob', 'cob': 'ob', 'fl': 'fl', 'fi': 'fl', 'fe': 'fl',
             'cfi': 'fl', 'cfl': 'fl', 'fn': 'fn', 'cfn': 'fn'}
    cur = {'ob': '???', 'fl': '???', 'fi': None, 'fn': None, 'cfn': None}
    pending_call = None
    last_pos = 0
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
                elif key == 'cfn':
                    cur['cfn'] = name
                continue
            if line.startswith('calls='):
                count = int(line[6:].split()[0])
                pending_call = count
                continue
            if re.match(r'^[+-]?\d', line) or line.startswith('*'):
                parts = line.split()
                pos = parts[0]
                # Position compression: "+N"/"-N" relative to the last
                # position, "*" the same position.
                if pos == '*':
                    pos = last_pos
                elif pos[0] in '+-':
                    pos = last_pos + int(pos)
                else:
                    pos = int(pos)
                last_pos = pos
                costs = [int(x) for x in parts[1:] if x != '*']
                if pending_call is not None:
                    prof.calls.append((cur['fn'], cur['cfn'], pending_call, costs[0] if costs else 0))
                    pending_call = None
                    continue
                if cur['fn'] is None:
                    raise ValueError(f'{path}:{lineno}: cost line before fn=')
                fl = cur['fi'] or cur['fl']
                prof.lines[(cur['ob'], fl, cur['fn'], pos)] += costs[0] if costs else 0
                continue
            m = re.match(r'^([a-zA-Z][a-zA-Z0-9 _-]*):\s*(.*)$', line)
            if m:
                key, val = m.group(1), m.group(2)
                prof.header.setdefault(key, val)
                if key == 'events':
                    prof.events = val.split()
                elif key == 'summary':
                    prof.summary = int(val.split()[0])
                elif key == 'totals':
                    prof.totals = int(val.split()[0])
                continue
            raise ValueError(f'{path}:{lineno}: unparsable line: {line!r}')
    return prof
