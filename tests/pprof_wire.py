"""An independent reader of pprof's profile.proto (github.com/google/pprof,
proto/profile.proto) at the protobuf wire-format level, for the tests of
kgrind_annotate --format=pprof: gunzip, then varints and length-delimited
fields, no protobuf library."""
import gzip

VARINT, I64, LEN, I32 = 0, 1, 2, 5


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7f) << shift
        if b < 0x80:
            return value, i
        shift += 7


def fields(buf):
    """(field number, wire type, value) of a message: ints or bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == VARINT:
            value, i = varint(buf, i)
        elif wire == LEN:
            n, i = varint(buf, i)
            value = buf[i:i + n]
            i += n
            assert len(value) == n, 'truncated field'
        elif wire == I64:
            value, i = int.from_bytes(buf[i:i + 8], 'little'), i + 8
        elif wire == I32:
            value, i = int.from_bytes(buf[i:i + 4], 'little'), i + 4
        else:
            raise ValueError(f'wire type {wire}')
        yield field, wire, value


def packed(value, wire):
    """A repeated integer field: packed (bytes) or one plain varint."""
    if wire == VARINT:
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = varint(value, i)
        out.append(v)
    return out


def message(buf, repeated=(), packed_ints=(), messages=None):
    """A message as a dict: repeated fields as lists, submessages decoded by
    messages[field] (a function of their bytes)."""
    messages = messages or {}
    d = {f: [] for f in (*repeated, *packed_ints)}
    for f, wire, v in fields(buf):
        if f in packed_ints:
            d[f] += packed(v, wire)
        elif f in messages:
            v = messages[f](v)
            if f in repeated:
                d[f].append(v)
            else:
                d[f] = v
        elif f in repeated:
            d[f].append(v)
        else:
            d[f] = v
    return d


def value_type(b):
    return message(b)


def sample(b):
    return message(b, repeated=(3,), packed_ints=(1, 2), messages={3: message})


def location(b):
    return message(b, repeated=(4,), messages={4: message})


def decode(path):
    """The profile as plain Python: string table, functions, locations and
    samples resolved to names."""
    raw = gzip.decompress(path.read_bytes())
    p = message(raw, repeated=(1, 2, 3, 4, 5, 6), packed_ints=(13,),
                messages={1: value_type, 2: sample, 3: message, 4: location, 5: message, 11: value_type})
    strings = [s.decode('utf-8', 'surrogateescape') for s in p[6]]
    assert strings and strings[0] == '', 'string_table[0] must be ""'
    s = lambda i: strings[i]  # noqa: E731
    functions = {f[1]: {'name': s(f.get(2, 0)), 'system_name': s(f.get(3, 0)),
                        'filename': s(f.get(4, 0)), 'start_line': f.get(5, 0)} for f in p[5]}
    locations = {}
    for loc in p[4]:
        # a function and, before it, the functions inlined into it
        # (innermost first): one line each
        lines = [{'function': functions[line[1]], 'line': line.get(2, 0)} for line in loc[4]]
        assert lines
        locations[loc[1]] = {'function': lines[-1]['function'], 'line': lines[-1]['line'], 'lines': lines,
                             'mapping': loc.get(2, 0)}
    samples = []
    for smp in p[2]:
        labels = {}
        for lab in smp[3]:
            labels[s(lab[1])] = s(lab[2]) if lab.get(2) else lab.get(3, 0)
        samples.append({'stack': [line['function']['name'] for i in smp[1] for line in locations[i]['lines']],
                        'values': smp[2], 'labels': labels})
    return {'sample_types': [(s(v.get(1, 0)), s(v.get(2, 0))) for v in p[1]],
            'default_sample_type': s(p.get(14, 0)), 'samples': samples, 'functions': functions,
            'locations': locations, 'mappings': p[3], 'comments': [s(i) for i in p[13]],
            'strings': strings}


def top_level_fields(path):
    """The profile message's field numbers in the order they are written."""
    return [f for f, _wire, _v in fields(gzip.decompress(path.read_bytes()))]
