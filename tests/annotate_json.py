"""Reading the trees of kgrind_annotate --format=json: a forest is a flat
array of nodes in pre-order, each with its id (its index) and its parent's
id (null for a root)."""


def check_flat(nodes):
    """Asserts the flat form's invariants: ids are the indices, a parent
    comes before its children, and a node follows its parent's earlier
    children's subtrees (pre-order): the open path holds its parent."""
    path = []
    for i, n in enumerate(nodes):
        assert n['id'] == i, (i, n)
        p = n['parent']
        assert p is None or 0 <= p < i, (i, n)
        while path and path[-1] != p:
            path.pop()
        assert p is None or path, (i, n, 'not in pre-order')
        path.append(i)


def nested(nodes, kids):
    """The forest as nested objects (the form of format version 1): each
    node's children under the key kids (omitted on leaves), in the array's
    order.  Built without recursion."""
    check_flat(nodes)
    made, roots = [], []
    for n in nodes:
        m = {key: n[key] for key in ('name', 'calls', 'Ir', 'inclusive')}
        made.append(m)
        if n['parent'] is None:
            roots.append(m)
        else:
            made[n['parent']].setdefault(kids, []).append(m)
    return roots


def node_paths(nodes):
    """[(names from the node's root down to it, node)], in pre-order."""
    check_flat(nodes)
    paths = []
    for n in nodes:
        up = () if n['parent'] is None else paths[n['parent']][0]
        paths.append((up + (n['name'],), n))
    return paths
