"""A small, strict reader of callgrind-format profiles (kgrind's and Valgrind's).

It is written from the format specification (Valgrind manual, "Callgrind
Format Specification"), independently of the tool's writer, so tests can
check what a reader sees. Where the specification leaves semantics open, it
follows the readers users see the profile with, and rejects what they would
show wrongly:

- Name compression: `spec=(id) name` defines id in the name space of its
  kind (objects: ob/cob; files: fl/fi/fe/cfi/cfl/jfi; functions:
  fn/cfn/jfn), `spec=(id)` uses it; an undefined id, or an id defined again
  with another name, is an error.
- Functions are bound to the object and file in force where they are first
  named (KCachegrind keys a function by name, file and object then): `fn=`
  by `ob=` and `fl=`, `cfn=` by `cob=` and `cfi=`/`cfl=`, which default to
  the `ob=` in force and the file in force (`fi=`/`fe=` included) and hold
  for one call only. A function named again under another object or file is
  an error: a reader would show two functions, or file one under the wrong
  object.
- `calls=` needs a `cfn=` since the previous call and must be followed by a
  cost line (the call's source position and inclusive cost).
- Cost lines: positions as in `positions:`, each absolute (decimal or 0x
  hex), `+N`/`-N` relative to the previous cost line's, or `*` the same;
  then at most one number per event. `fi=`/`fe=` and cost lines need a
  `fn=` first. `totals:` must equal the sum of the self costs.
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
        # every event: (object, file, function, line) -> Counter(event -> n)
        self.event_lines = collections.defaultdict(collections.Counter)
        # summary: and totals: as event -> n
        self.summary_events = None
        self.totals_events = None
        # with `positions: instr line`: (object, function, address) -> Ir
        self.instrs = collections.Counter()
        # the same by (object, file, address): an address is code of that
        # object only if that file is the object's
        self.instr_lines = collections.Counter()
        # every event per instruction: (object, function, address) ->
        # Counter(event -> n)
        self.instr_events = collections.defaultdict(collections.Counter)
        self.calls = []          # (caller fn, callee fn, count, inclusive Ir)
        # every event of each call line: (caller fn, callee fn,
        # Counter(event -> inclusive n))
        self.call_events = []
        # where the calls are: (caller fn, callee fn, file, line) -> count
        self.call_sites = collections.Counter()
        # the same with the inclusive cost: (caller, callee, file, line) -> Ir
        self.call_site_costs = collections.Counter()
        # with `positions: instr line`, at the call instruction:
        # (caller fn, callee fn, address) -> count
        self.call_instrs = collections.Counter()
        self.jumps = []          # Jump tuples (jump=/jcnd= lines)
        self.comments = []
        # function name -> {(object, file)}: where each function (each
        # compressed id) named so is bound; two entries mean two functions
        # of one name
        self.function_homes = collections.defaultdict(set)

    def by_function(self):
        """Exclusive Ir per function. A kgrind context `c'a'e` counts for
        its activated function `c`."""
        out = collections.Counter()
        for (_ob, _fl, fn, _line), ir in self.lines.items():
            out[callee(fn)] += ir
        return out

    def by_physical_function(self):
        """Exclusive Ir per physical function (the one whose code runs, as
        cachegrind and callgrind count): a kgrind context whose activated
        function is inlined (`g [inlined]'f [inlined]'p'...`) counts for
        its first level that is not; one with no such level (inlining deeper
        than the body's contexts) for None."""
        out = collections.Counter()
        for (_ob, _fl, fn, _line), ir in self.lines.items():
            out[physical(fn)] += ir
        return out

    def by_function_events(self):
        """Exclusive cost per function of every event: function ->
        Counter(event -> n), contexts counting for their activated function."""
        out = collections.defaultdict(collections.Counter)
        for (_ob, _fl, fn, _line), costs in self.event_lines.items():
            out[callee(fn)].update(costs)
        return out

    def by_file_line_events(self):
        """(file, line) -> Counter(event -> n)."""
        out = collections.defaultdict(collections.Counter)
        for (_ob, fl, _fn, line), costs in self.event_lines.items():
            out[(fl, line)].update(costs)
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

    def object_of(self, fn):
        """The object a function (by name) is bound to; it must be one."""
        objects = {ob for ob, _fl in self.function_homes[fn]}
        if len(objects) != 1:
            raise ValueError(f'{fn!r} is bound to objects {sorted(objects)}')
        return objects.pop()

    def total(self):
        return sum(self.lines.values())


Jump = collections.namedtuple(
    'Jump', 'fn from_addr from_line to_fn to_file to_addr to_line cond taken executed')


def callee(context):
    """The activated function of a kgrind context name (callgrind's
    --separate-callers naming: callee'caller1'caller2...)."""
    return context.split("'", 1)[0]


_INLINED_LEVEL = re.compile(r'(?!0x[0-9a-f]+ \[).* \[inlined\](?: \[[^\]]*\])*')


def inlined_level(name):
    """Whether a function's name is an inlined level (--inline-frames):
    `g [inlined]`, qualified as any namesake (`__mmap64 [inlined]
    [ld-linux-x86-64.so.2]`); a function named by its address is none
    (`0x1139 [inlined]`: code of an object named inlined)."""
    return _INLINED_LEVEL.fullmatch(name) is not None


def physical(context):
    """The physical function of a kgrind context name: its first level
    not an inlined one (--inline-frames), or None."""
    for level in context.split("'"):
        if not inlined_level(level):
            return level
    return None


_NAME = re.compile(r'^(ob|fl|fi|fe|fn|cob|cfi|cfl|cfn|jfi|jfn)=(.*)$')
_COMPRESSED = re.compile(r'^\((\d+)\)(?:\s+(.*))?$')
_SPACE = {'ob': 'ob', 'cob': 'ob', 'fl': 'fl', 'fi': 'fl', 'fe': 'fl', 'cfi': 'fl',
          'cfl': 'fl', 'jfi': 'fl', 'fn': 'fn', 'cfn': 'fn', 'jfn': 'fn'}
_SUBPOSITION = re.compile(r'^(\*|[+-]\d+|[+-]?0x[0-9a-fA-F]+|\d+)$')
_COST_LINE = re.compile(r'[+-]?\d|\*')
_CALLS = re.compile(r'^calls=(\d+)\s+(\S.*)$')
_JUMP = re.compile(r'^(jump|jcnd)=(\d+)(?:/(\d+))?\s+(.*)$')
_HEADER = re.compile(r'^([a-zA-Z][a-zA-Z0-9 _-]*):\s*(.*)$')


def _subposition(text, last):
    """One subposition: absolute (decimal or 0x hex), +N/-N relative to the
    last position's, or * for the same."""
    if text.isascii() and text.isdigit() and (text[0] != '0' or text == '0'):
        return int(text)            # the common case: absolute, decimal
    if not _SUBPOSITION.match(text):
        raise ValueError(f'bad subposition {text!r}')
    if text == '*':
        return last
    if text[0] in '+-':
        return last + int(text, 0)
    return int(text, 0)


class _Reader:
    def __init__(self, path):
        self.path = path
        self.prof = Profile()
        self.names = {'ob': {}, 'fl': {}, 'fn': {}}
        self.homes = {}          # function key -> (object, file) where first named
        self.ob = '???'
        self.fl = '???'
        self.fi = None
        self.fn = None
        self.fn_key = None
        self.call = {}           # cob, cfi, cfn of the next call
        self.jump = {}           # jfi, jfn of the next jump
        self.pending_call = None
        self.pending_jump = None
        self.positions = ['line']
        self.last_pos = [0]
        self.in_body = False
        self.lineno = 0

    def fail(self, message):
        raise ValueError(f'{self.path}:{self.lineno}: {message}')

    def name(self, key, text):
        """(name, compression key) of a name spec's value."""
        table = self.names[_SPACE[key]]
        m = _COMPRESSED.match(text)
        if not m:
            return text, ('name', text)
        num, name = m.group(1), m.group(2)
        if name is not None:
            if num in table and table[num] != name:
                self.fail(f'id ({num}) redefined: {table[num]!r} -> {name!r}')
            table[num] = name
        elif num not in table:
            self.fail(f'undefined id ({num})')
        return table[num], ('id', num)

    def bind(self, key, name, obj, fl):
        """A function named under (obj, fl): the same as where it was first
        named. (A name without compression names the function of that
        name in (obj, fl), whichever that is.)"""
        if key[0] == 'name':
            key = (key, obj, fl)
        home = self.homes.setdefault(key, (obj, fl))
        if home != (obj, fl):
            self.fail(f'function {name!r} named under object/file {(obj, fl)}, '
                      f'first under {home}')
        self.prof.function_homes[name].add(home)

    def file_in_force(self):
        return self.fi or self.fl

    def name_spec(self, key, text):
        name, nkey = self.name(key, text)
        if key == 'ob':
            self.ob = name
        elif key == 'fl':
            self.fl, self.fi = name, None
        elif key in ('fi', 'fe'):
            if self.fn is None:
                self.fail(f'{key}= before fn=')
            self.fi = name
        elif key == 'fn':
            self.fn, self.fn_key, self.fi = name, nkey, None
            self.bind(nkey, name, self.ob, self.fl)
        elif key == 'cob':
            self.call['ob'] = name
        elif key in ('cfi', 'cfl'):
            self.call['fl'] = name
        elif key == 'cfn':
            self.call['fn'] = name
            self.bind(nkey, name, self.call.get('ob', self.ob),
                      self.call.get('fl', self.file_in_force()))
        elif key == 'jfi':
            self.jump['fl'] = name
        elif key == 'jfn':
            self.jump['fn'] = name

    def header_line(self, key, val):
        prof = self.prof
        prof.header.setdefault(key, val)
        if key == 'positions':
            self.positions = val.split()
            if not self.positions or set(self.positions) - {'instr', 'line'}:
                self.fail(f'bad positions: {val!r}')
            self.last_pos = [0] * len(self.positions)
        elif key == 'events':
            prof.events = val.split()
        elif key == 'summary':
            prof.summary = int(val.split()[0])
            prof.summary_events = dict(zip(prof.events, map(int, val.split())))
        elif key == 'totals':
            prof.totals = int(val.split()[0])
            prof.totals_events = dict(zip(prof.events, map(int, val.split())))

    def position(self, parts):
        if len(parts) < len(self.positions):
            self.fail('too few subpositions')
        return [_subposition(t, last) for t, last in zip(parts, self.last_pos)]

    def costs(self, parts):
        if len(parts) > len(self.prof.events):
            self.fail('more costs than events')
        if not all(x.isdecimal() for x in parts):
            self.fail(f'bad costs {parts!r}')
        return [int(x) for x in parts]

    def cost_line(self, line):
        prof = self.prof
        if not prof.events:
            self.fail('cost line before events:')
        if self.fn is None:
            self.fail('cost line before fn=')
        parts = line.split()
        n = len(self.positions)
        self.last_pos = self.position(parts)
        pos_of = dict(zip(self.positions, self.last_pos))
        costs = self.costs(parts[n:])
        ir = costs[0] if costs else 0
        line_no = pos_of.get('line', 0)
        if self.pending_jump is not None:
            cond, taken, executed, target = self.pending_jump
            tpos = dict(zip(self.positions, target))
            prof.jumps.append(Jump(self.fn, pos_of.get('instr'), pos_of.get('line'),
                                   self.jump.get('fn', self.fn),
                                   self.jump.get('fl', self.file_in_force()),
                                   tpos.get('instr'), tpos.get('line'), cond, taken, executed))
            self.pending_jump = None
            self.jump = {}
            if costs:
                self.fail('costs on a jump line')
            return
        if self.pending_call is not None:
            callee_fn = self.call['fn']
            prof.calls.append((self.fn, callee_fn, self.pending_call, ir))
            prof.call_events.append((self.fn, callee_fn, collections.Counter(
                {e: n for e, n in zip(prof.events, costs) if n})))
            site = (self.fn, callee_fn, self.file_in_force(), line_no)
            prof.call_sites[site] += self.pending_call
            prof.call_site_costs[site] += ir
            if 'instr' in pos_of:
                prof.call_instrs[(self.fn, callee_fn, pos_of['instr'])] += self.pending_call
            self.pending_call = None
            self.call = {}          # cob=, cfi=, cfn= hold for one call
            return
        prof.lines[(self.ob, self.file_in_force(), self.fn, line_no)] += ir
        if len(prof.events) > 1:
            prof.event_lines[(self.ob, self.file_in_force(), self.fn, line_no)].update(
                {e: n for e, n in zip(prof.events, costs) if n})
        if 'instr' in pos_of:
            prof.instrs[(self.ob, self.fn, pos_of['instr'])] += ir
            prof.instr_lines[(self.ob, self.file_in_force(), pos_of['instr'])] += ir
            if len(prof.events) > 1:
                prof.instr_events[(self.ob, self.fn, pos_of['instr'])].update(
                    {e: n for e, n in zip(prof.events, costs) if n})

    def body_line(self, line):
        if _COST_LINE.match(line):     # most lines: first
            self.cost_line(line)
            return
        m = _NAME.match(line)
        if m:
            self.name_spec(m.group(1), m.group(2).strip())
            return
        m = _CALLS.match(line)
        if m:
            if 'fn' not in self.call:
                self.fail('calls= without cfn=')
            self.position(m.group(2).split())   # the target: well-formed
            self.pending_call = int(m.group(1))
            return
        m = _JUMP.match(line)
        if m:
            # The target is relative to the last position and does not
            # move it (callgrind's writer); the next line is the source.
            target = self.position(m.group(4).split())
            taken = int(m.group(2))
            executed = int(m.group(3)) if m.group(3) else taken
            self.pending_jump = (m.group(1) == 'jcnd', taken, executed, target)
            return
        m = _HEADER.match(line)
        if m:
            self.header_line(m.group(1), m.group(2))
            return
        self.fail(f'unparsable line: {line!r}')

    def read(self):
        with open(self.path) as f:
            for self.lineno, raw in enumerate(f, 1):
                line = raw.rstrip('\n')
                if not line:
                    continue
                if line.startswith('#'):
                    self.prof.comments.append(line)
                    continue
                awaiting = self.pending_call is not None or self.pending_jump is not None
                if awaiting and not _COST_LINE.match(line):
                    self.fail('a calls=/jump= line not followed by a cost line')
                self.body_line(line)
        if self.pending_call is not None or self.pending_jump is not None:
            self.fail('the file ends after a calls=/jump= line')
        prof = self.prof
        if prof.totals is not None and prof.totals != prof.total():
            self.fail(f'totals: {prof.totals} but the cost lines sum to {prof.total()}')
        return prof


def parse(path):
    return _Reader(path).read()
