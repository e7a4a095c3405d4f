"""speedscope's file format as the tests read it: the (stack, weight)
pairs of a profile of either type, with the checks speedscope's importer
makes (src/lib/file-format.ts, CallTreeProfileBuilder in src/lib/profile.ts)."""


def samples(profile, frames):
    """[(stack of frame names, outermost first, weight)]: a sampled
    profile's samples; an evented profile's nodes (one an open event), each
    weighed by the time it was the innermost open frame (its exclusive Ir),
    in the order they close."""
    if profile['type'] == 'sampled':
        assert len(profile['samples']) == len(profile['weights'])
        return [(tuple(frames[i] for i in st), w) for st, w in zip(profile['samples'], profile['weights'])]
    assert profile['type'] == 'evented'
    out, stack, last = [], [], profile['startValue']
    for ev in profile['events']:
        assert ev['at'] >= last, 'events out of order'
        if stack:
            stack[-1][1] += ev['at'] - last
        last = ev['at']
        if ev['type'] == 'O':
            stack.append([ev['frame'], 0])
        else:
            assert ev['type'] == 'C' and stack and stack[-1][0] == ev['frame'], 'unbalanced close'
            out.append((tuple(frames[f] for f, _ in stack), stack[-1][1]))
            stack.pop()
    assert not stack and last == profile['endValue'], 'frames left open'
    return out
