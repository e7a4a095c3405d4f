"""Reads the k-SF records of a kgrind profile (docs/output-format.md) and
derives k-CCFs from them, independently of the tool and of kgrind_annotate:
the tests' own reference for the thesis's definitions."""
import base64
import collections
import re


class Forest:
    def __init__(self, tid, names):
        self.tid = tid
        self.names = names
        self.nodes = {}          # id -> (parent, label, calls, excl, incl)
        self.children = collections.defaultdict(list)
        self.roots = []
        self.ir = None
        self.events = []         # ksf-events: per node id, {event: exclusive count}
        self.events_incl = []    # with events-incl=yes: per node id, {event: inclusive count}

    def add(self, nid, parent, label, calls, excl, incl):
        self.nodes[nid] = (parent, label, calls, excl, incl)
        if parent is None:
            self.roots.append(nid)
        else:
            self.children[parent].append(nid)

    def name(self, nid):
        return self.names[self.nodes[nid][1]]

    def canonical(self, nid=None):
        """A tree (or the forest) as nested sorted tuples (name, calls, kids)."""
        if nid is None:
            return sorted(self.canonical(r) for r in self.roots)
        kids = sorted(self.canonical(c) for c in self.children[nid])
        return (self.name(nid), self.nodes[nid][2], tuple(kids))

    def root_path(self, nid):
        path = []
        while nid is not None:
            path.append(self.name(nid))
            nid = self.nodes[nid][0]
        return list(reversed(path))

    def depth_in_tree(self, nid):
        return len(self.root_path(nid)) - 1


class Profile:
    def __init__(self):
        self.options = {}
        self.names = {}          # ksf-fn: label -> function name
        self.files = {}          # ksf-file (block modes): id -> path
        self.blocks = {}         # ksf-block (block modes): label -> fields
        self.forests = []


NODE_TOKEN = re.compile(r'\(|\)|(\d+)(?:\*(\d+))?(?:=(\d+)(?:/(\d+))?)?|( )')


class NodeLists:
    """Version 2 ksf-nodes: pre-order nested lists of 'label[*calls][=excl[/incl]]'
    (calls 1, excl 0, incl = excl by default); a line break is a space."""

    def __init__(self, forest):
        self.forest = forest
        self.open = []           # node ids whose children are being read
        self.last = None         # id of the last node

    def feed(self, text):
        pos = 0
        while pos < len(text):
            m = NODE_TOKEN.match(text, pos)
            assert m and m.end() > pos, f'bad ksf-nodes text at {text[pos:pos + 20]!r}'
            tok = m.group(0)
            if tok == '(':
                self.open.append(self.last)
            elif tok == ')':
                self.open.pop()
            elif tok != ' ':
                excl = int(m.group(3) or 0)
                nid = len(self.forest.nodes)
                self.forest.add(nid, self.open[-1] if self.open else None, int(m.group(1)),
                                int(m.group(2) or 1), excl, int(m.group(4) or excl))
                self.last = nid
            pos = m.end()


def ber_numbers(data):
    value = 0
    for byte in data:
        value = value << 7 | byte & 0x7F
        if byte < 0x80:
            yield value
            value = 0
    assert data[-1] < 0x80, 'line ends inside a number'


def feed_events(forest, names, text, incl=False):
    """A ksf-events line: per node in the nodes' order, 'mask [count]...',
    mask's bit c saying that the exclusive count of names[c] follows (else
    0); with incl (events-incl=yes) then bit len(names) + c that its
    inclusive count follows (else it is the exclusive one)."""
    numbers = list(ber_numbers(base64.b64decode(text, validate=True)))
    n = len(names)
    i = 0
    while i < len(numbers):
        mask = numbers[i]
        i += 1
        assert mask >> (2 * n if incl else n) == 0, mask
        counts = {}
        for c, name in enumerate(names):
            counts[name] = numbers[i] if mask >> c & 1 else 0
            i += mask >> c & 1
        forest.events.append(counts)
        if incl:
            inclusive = {}
            for c, name in enumerate(names):
                inclusive[name] = numbers[i] if mask >> (n + c) & 1 else counts[name]
                i += mask >> (n + c) & 1
            forest.events_incl.append(inclusive)


class NodeStream:
    """Version 3 ksf-nodes: base64 of BER integers (7 bits a byte, high bit
    on all but the last), a node 'shape label [calls - 7] [excl] [incl]' in
    pre-order; shape bits 0-2 are the calls (7: calls - 7 follows), bits 3
    and 4 say that excl and incl follow, bit 5 that children follow, shape
    >> 6 how many lists close after it. A label
    is written less its previous sibling's (siblings in increasing order);
    first children and tree roots as they are."""

    def __init__(self, forest):
        self.forest = forest
        self.open = []
        self.previous = None     # the label of the previous sibling of the next node

    @staticmethod
    def numbers(data):
        return ber_numbers(data)

    def feed(self, text):
        numbers = list(self.numbers(base64.b64decode(text, validate=True)))
        i = 0
        while i < len(numbers):
            shape, label = numbers[i], numbers[i + 1]
            if self.previous is not None:
                label += self.previous
            i += 2
            calls = shape & 7
            if calls == 7:
                calls += numbers[i]
                i += 1
            fields = []
            for bit in (8, 16):
                fields.append(numbers[i] if shape & bit else None)
                i += bool(shape & bit)
            excl, incl = fields[0] or 0, fields[1]
            nid = len(self.forest.nodes)
            self.forest.add(nid, self.open[-1] if self.open else None, label, calls, excl,
                            excl if incl is None else incl)
            if shape & 32:
                self.open.append(nid)
                self.previous = None
            elif shape >> 6:
                closes = shape >> 6
                assert closes <= len(self.open)
                outer = self.open[len(self.open) - closes]
                del self.open[len(self.open) - closes:]
                self.previous = self.forest.nodes[outer][1] if self.open else None
            else:
                self.previous = label if self.open else None


BODY_NAME = re.compile(r'c?fn=\((\d+)\) *(.+)')


def table_name(entry, version, body):
    """A ksf-fns entry's name: version 3 writes '@<id>' for the callgrind
    body's name (id) up to its first "'", and '@@...' for a name starting
    with '@'."""
    if version < 3 or not entry.startswith('@'):
        return entry
    if entry.startswith('@@'):
        return entry[1:]
    return body[int(entry[1:])].split("'", 1)[0]


def parse(path):
    prof = Profile()
    cur = None
    ended = False
    version = 0
    body = {}                    # fn= id -> name (the callgrind body's)
    with open(path) as f:
        for line in f:
            if not line.startswith('# ksf-'):
                m = BODY_NAME.match(line.rstrip('\n'))
                if m:
                    body[int(m.group(1))] = m.group(2)
                continue
            line = line.rstrip('\n')
            if line.startswith('# ksf-version: '):
                version = int(line.split(': ')[1])
            elif line.startswith('# ksf-options: '):
                prof.options = dict(kv.split('=') for kv in line.split(': ', 1)[1].split())
            elif line.startswith('# ksf-fn '):       # version 1
                _, _, fid, name = line.split(' ', 3)
                prof.names[int(fid)] = name
            elif line.startswith('# ksf-fns '):      # version 2, 3: tab-separated, ids implicit
                for entry in line[len('# ksf-fns '):].split('\t'):
                    prof.names[len(prof.names)] = table_name(entry, version, body)
            elif line.startswith('# ksf-file '):
                _, _, fid, name = line.split(' ', 3)
                prof.files[int(fid)] = name
            elif line.startswith('# ksf-block '):
                f = line.split(' ', 9)
                prof.blocks[int(f[2])] = dict(addr=int(f[3], 16), fn=prof.names[int(f[4])], offset=int(f[5]),
                                              file=prof.files.get(int(f[6])), line=int(f[7]),
                                              count=int(f[8]), name=f[9])
            elif line.startswith('# ksf-thread '):
                m = re.match(r'# ksf-thread (\S+) nodes=(\d+) ir=(\d+)(?: fn=(\d+))?$', line)
                assert m, line
                cur = Forest(m.group(1), prof.names)
                cur.ir = int(m.group(3))
                cur.expected_nodes = int(m.group(2))
                cur.fn = prof.names[int(m.group(4))] if m.group(4) else None   # intra mode
                prof.forests.append(cur)
                lists = NodeStream(cur) if version >= 3 else NodeLists(cur)
            elif line.startswith('# ksf-nodes '):
                lists.feed(line[len('# ksf-nodes '):])
            elif line.startswith('# ksf-events '):
                feed_events(cur, prof.options['events'].split(','), line[len('# ksf-events '):],
                            prof.options.get('events-incl') == 'yes')
            elif line.startswith('# ksf-node '):
                f = line.split()
                assert f[3] == '-' or int(f[3]) in cur.nodes, line   # parent first
                cur.add(int(f[2]), None if f[3] == '-' else int(f[3]), int(f[4]),
                        int(f[5]), int(f[6]), int(f[7]))
            elif line.startswith('# ksf-end-thread'):
                assert not lists.open, line
                assert len(cur.nodes) == cur.expected_nodes
                assert 'events' not in prof.options or len(cur.events) == len(cur.nodes), line
                cur = None
            elif line == '# ksf-end':
                ended = True
    assert ended, f'{path}: k-SF records are truncated'
    return prof


def k_of(prof):
    k = prof.options['k']
    return None if k == 'inf' else int(k)


def kccf(forest, k, kprime):
    """inv_k' of a k-SF (thesis Def. 6, Fig. 3.8): the k'-contexts, as
    {context tuple (outermost first, activated function last): calls}.
    kprime=None keeps whole root paths (the CCT of a k=inf profile)."""
    keep = None if kprime is None else kprime + 1
    out = collections.Counter()
    # Walk each tree top-down, carrying the (suffix of the) root path.
    for tree_index, root in enumerate(forest.roots):
        stack = [(root, (forest.name(root),), 0)]
        while stack:
            nid, path, depth = stack.pop()
            calls = forest.nodes[nid][2]
            cleared = tree_index > 0 and k is not None and depth < k
            if calls and not cleared:
                out[path[-keep:] if keep else path] += calls
            for kid in forest.children[nid]:
                kid_path = path + (forest.name(kid),)
                if keep is not None and len(kid_path) > keep + 1:
                    kid_path = kid_path[-(keep + 1):]
                stack.append((kid, kid_path, depth + 1))
    return out


def _tree_of(forest, nid):
    while forest.nodes[nid][0] is not None:
        nid = forest.nodes[nid][0]
    return nid


def parse_listing(text):
    """The thesis's tree dumps ('| name(),count', two spaces per level) as
    the same canonical form as Forest.canonical()."""
    entries = []
    for line in text.strip('\n').splitlines():
        m = re.match(r'^( *)\| (\S+)\(\),\s*(\d+)$', line)
        assert m, line
        entries.append((len(m.group(1)) // 2, m.group(2), int(m.group(3))))

    def build(i, level):
        depth, name, count = entries[i]
        kids = []
        j = i + 1
        while j < len(entries) and entries[j][0] > level:
            if entries[j][0] == level + 1:
                kid, j = build(j, level + 1)
                kids.append(kid)
            else:
                raise AssertionError(f'bad indentation at {entries[j]}')
        return (name, count, tuple(sorted(kids))), j

    trees = []
    i = 0
    while i < len(entries):
        tree, i = build(i, 0)
        trees.append(tree)
    return sorted(trees)


def ber(numbers):
    """BER integers (Perl's pack 'w'), as version 3's ksf-nodes holds them."""
    out = bytearray()
    for value in numbers:
        groups = [value & 0x7F]
        value >>= 7
        while value:
            groups.append(0x80 | value & 0x7F)
            value >>= 7
        out += bytes(reversed(groups))
    return bytes(out)


def node_groups(forest):
    """A forest's version 3 ksf-nodes numbers, one list a node: pre-order,
    siblings by label (a line holds whole nodes)."""
    groups = []
    stack = [(nid, 0, 0) for nid in reversed(forest.roots)]
    while stack:   # iterative: synthetic forests (bench/annotate_bench.py) are large
        nid, previous, closes_after = stack.pop()   # closes_after: lists closing after nid's subtree
        _, label, calls, excl, incl = forest.nodes[nid]
        kids = sorted(forest.children[nid], key=lambda c: forest.nodes[c][1])
        closes = 0 if kids else closes_after
        shape = closes << 6 | bool(kids) << 5 | (incl != excl) << 4 | bool(excl) << 3 | min(calls, 7)
        numbers = [shape, label - previous]
        numbers.extend([calls - 7] if calls >= 7 else [])
        numbers.extend([excl] if excl else [])
        numbers.extend([incl] if incl != excl else [])
        groups.append(numbers)
        previous_labels = [0] + [forest.nodes[kid][1] for kid in kids[:-1]]
        for i in reversed(range(len(kids))):
            stack.append((kids[i], previous_labels[i], closes_after + 1 if i == len(kids) - 1 else 0))
    return groups


def node_stream(forest):
    """A forest's version 3 ksf-nodes numbers: pre-order, siblings by label."""
    return [x for numbers in node_groups(forest) for x in numbers]
