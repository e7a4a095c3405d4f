// kgrind core: operations on forests: join (Def. 4/4*), inv_k (Def. 6) with
// the top-region counter rule (Fig. 3.8), copies, visitors.
//
// Header-only and freestanding like ksf.h.  Every traversal is iterative
// (explicit stacks from the forest's allocator): trees can be as deep as the
// client's call stack (k = infinity, unrolled recursion).
#pragma once
#include "containers.h"
#include "ksf.h"

namespace kg {
namespace core {

// ---------------------------------------------------------------------------
// Levels and the counter rule.
// ---------------------------------------------------------------------------

// Is a node at `level` (0 = tree root) of a non-first tree of a k-SF in the
// top region?  Those nodes duplicate counters also held by a bottom-region
// node (Fig. 3.8) and are excluded from inv_k and from totals.
inline bool in_cleared_top_region(const Forest& f, bool first_tree, uint32_t level) {
  if (f.kind() != Forest::kSlabForest || first_tree) return false;
  // k = 0: no top region (vertex profile, every R root is canonical).
  // k = infinity: there are no non-first trees.
  return level < f.k();
}

// ---------------------------------------------------------------------------
// Visitors.
// ---------------------------------------------------------------------------
struct VisitInfo {
  const Node* node;
  uint64_t id;         // preorder number, from 1; trees are numbered in order
  uint64_t parent_id;  // 0 for a tree root
  uint32_t level;      // 0 for a tree root
  uint32_t tree;       // 0 = first tree (k-SF only), then R trees 1, 2, ...
                       // (for a k-CCF trees are numbered from 0)
  bool first_tree;     // node belongs to the first tree (k-SF only)
  bool cleared;        // k-SF top-region node of a non-first tree: its
                       // counters are duplicates, not canonical
};

// Calls fn(root, tree index, whether it is the first tree) for each tree:
// first the first tree (k-SF), then the other trees in creation order.
template <class F>
inline void for_each_tree(const Forest& f, F fn) {
  size_t ntrees = f.tree_count() + (f.first_tree() ? 1 : 0);
  for (size_t ti = 0; ti < ntrees; ++ti) {
    bool first = f.first_tree() && ti == 0;
    fn(first ? f.first_tree() : f.tree(f.first_tree() ? ti - 1 : ti), ti, first);
  }
}

// Visits every node in preorder (a parent before its children): first the
// first tree (k-SF), then the other trees in creation order.  Children are
// visited in the (deterministic, unspecified) order of the child table, or
// by increasing key(const Node*) if sort_children.  f(const VisitInfo&).
template <class F, class K>
inline void visit_preorder_by(const Forest& f, F fn, K key, bool sort_children) {
  struct Item {
    const Node* n;
    uint64_t parent_id;
    uint32_t level;
    uint32_t pad;
  };
  Vec<Item> st;
  st.init(f.allocator(), 64);
  Vec<const Node*> kids;
  kids.init(f.allocator(), 16);
  uint64_t next_id = 1;
  for_each_tree(f, [&](const Node* root, size_t ti, bool first) {
    Item it = {root, 0, 0, 0};
    st.push_back(it);
    while (!st.empty()) {
      Item cur = st.back();
      st.pop_back();
      VisitInfo vi;
      vi.node = cur.n;
      vi.id = next_id++;
      vi.parent_id = cur.parent_id;
      vi.level = cur.level;
      vi.tree = static_cast<uint32_t>(ti);
      vi.first_tree = first;
      vi.cleared = in_cleared_top_region(f, first, cur.level);
      fn(static_cast<const VisitInfo&>(vi));
      kids.clear();
      for_each_child(cur.n, [&](Node* c) { kids.push_back(c); });
      if (sort_children) {
        // insertion sort by key, descending (pushed in reverse below).
        for (size_t i = 1; i < kids.size(); ++i) {
          const Node* x = kids[i];
          size_t j = i;
          while (j > 0 && key(kids[j - 1]) < key(x)) {
            kids[j] = kids[j - 1];
            --j;
          }
          kids[j] = x;
        }
      } else {
        // reverse so that the table order is the visiting order
        for (size_t i = 0, j = kids.size(); i + 1 < j; ++i, --j) swap_values(kids[i], kids[j - 1]);
      }
      for (size_t i = 0; i < kids.size(); ++i) {
        Item c = {kids[i], vi.id, cur.level + 1, 0};
        st.push_back(c);
      }
    }
  });
  kids.destroy();
  st.destroy();
}

// The same, children sorted by label if sort_children.
template <class F>
inline void visit_preorder(const Forest& f, F fn, bool sort_children = false) {
  visit_preorder_by(f, fn, [](const Node* n) { return n->label; }, sort_children);
}

// Visits every node after its children (trees in the order of
// visit_preorder): f(Node*), which may change the node's counters, e.g. to
// sum its children's.
template <class F>
inline void visit_postorder(const Forest& f, F fn) {
  struct Item {
    Node* n;
    bool children_done;
  };
  Vec<Item> st;
  st.init(f.allocator(), 64);
  for_each_tree(f, [&](Node* root, size_t, bool) {
    st.push_back(Item{root, false});
    while (!st.empty()) {
      Item cur = st.back();
      st.pop_back();
      if (cur.children_done) {
        fn(cur.n);
        continue;
      }
      st.push_back(Item{cur.n, true});
      for_each_child(cur.n, [&](Node* c) { st.push_back(Item{c, false}); });
    }
  });
  st.destroy();
}

namespace detail {
// A slab node's copy (Fig. 3.8): the node whose root path is v's path below
// its depth-k ancestor, in the tree rooted at that ancestor's label; null if
// absent.  depth: v's level, at least k.
inline const Node* slab_copy(const Forest& f, const Node* v, uint32_t depth, Vec<uint32_t>& labels) {
  labels.clear();
  for (; depth > f.k(); --depth, v = v->parent) labels.push_back(v->label);
  const Node* copy = f.find_tree(v->label);
  for (size_t i = labels.size(); copy && i-- > 0;) copy = find_child(copy, labels[i]);
  return copy;
}

// Marks, in `extra`, the copies of a kept slab node v with no calls, the
// copies' copies (a copy at depth >= k is a slab node too), and their
// ancestors up to one that counted(node) (kept already, with its path).
// A slab node with calls has counting copies: they are kept already.
template <class C>
inline void mark_slab_copies(const Forest& f, const Node* v, uint32_t depth, C counted, Vec<uint32_t>& labels,
                             U64Map<uint8_t>& extra) {
  while (depth >= f.k()) {
    const Node* copy = slab_copy(f, v, depth, labels);
    if (!copy) return;
    for (const Node* a = copy; a && !counted(a); a = a->parent) {
      bool inserted = false;
      extra.insert(reinterpret_cast<uint64_t>(a), &inserted);
      if (!inserted) break;
    }
    v = copy;
    depth -= f.k();
  }
}
}  // namespace detail

// The nodes on a path to a count, for writers that leave out the subtrees
// holding none (a fork child's zeroed copy of its parent's forest; what ran
// while counting was paused or before the counters were zeroed).
// keep[id - 1] := 1 (id: the preorder number of visit_preorder_by with the
// same key and sort_children) if the node or a descendant is counted(node),
// for the first tree's root, so that a forest is never empty, and for the
// top-region copies of kept slab nodes and their paths (a reader checks
// that every slab node has its copy, Fig. 3.8; a slab node with calls has
// counting copies, one without, e.g. a frame open at a fork, may not);
// else 0.  Returns how many nodes are kept.  Leaving out the others changes
// no count, and no path of a kept node.
template <class C, class K>
inline uint64_t mark_counted_paths(const Forest& f, C counted, K key, bool sort_children, Vec<uint8_t>& keep) {
  Vec<uint64_t> path;  // path[level]: the ids of the current node's ancestors
  path.init(f.allocator(), 64);
  struct Uncalled {    // a slab node without calls, if kept: its copies too
    const Node* node;
    uint64_t id;
    uint32_t level;
  };
  Vec<Uncalled> uncalled;
  uncalled.init(f.allocator(), 0);
  bool slabs = f.kind() == Forest::kSlabForest && f.k() != 0 && f.k() != kInfinity;
  keep.clear();
  uint64_t kept = 0;
  auto mark = [&](uint64_t id) {
    keep[id - 1] = 1;
    ++kept;
  };
  visit_preorder_by(f, [&](const VisitInfo& v) {
    keep.push_back(0);
    path.resize(v.level + 1);
    path[v.level] = v.id;
    if (v.first_tree && v.level == 0) mark(v.id);
    if (slabs && v.level >= f.k() && !v.node->calls) uncalled.push_back(Uncalled{v.node, v.id, v.level});
    if (!counted(v.node)) return;
    // Up to the first ancestor already kept: each node is marked once.
    for (uint32_t l = v.level + 1; l-- > 0 && !keep[path[l] - 1];) mark(path[l]);
  }, key, sort_children);
  path.destroy();
  U64Map<uint8_t> extra;
  extra.init(f.allocator(), 0);
  Vec<uint32_t> labels;
  labels.init(f.allocator(), 16);
  for (size_t i = 0; i < uncalled.size(); ++i)
    if (keep[uncalled[i].id - 1])
      detail::mark_slab_copies(f, uncalled[i].node, uncalled[i].level, counted, labels, extra);
  if (extra.size()) {
    visit_preorder_by(f, [&](const VisitInfo& v) {
      if (!keep[v.id - 1] && extra.contains(reinterpret_cast<uint64_t>(v.node))) mark(v.id);
    }, key, sort_children);
  }
  labels.destroy();
  extra.destroy();
  uncalled.destroy();
  return kept;
}

// Counter totals over canonical (non-cleared) nodes.  For a k-SF these are
// the totals of the event stream: activations (incl. rolled ones and root
// activations), exclusive cost, inclusive cost.
struct Totals {
  uint64_t calls;
  uint64_t excl;
  uint64_t incl;
  uint64_t nodes;
};
inline Totals canonical_totals(const Forest& f) {
  Totals t = {0, 0, 0, 0};
  visit_preorder(f, [&](const VisitInfo& v) {
    ++t.nodes;
    if (v.cleared) return;
    t.calls += v.node->calls;
    t.excl += v.node->excl;
    t.incl += v.node->incl;
  });
  return t;
}

// ---------------------------------------------------------------------------
// join (Def. 4*): dst := join(dst, src).  src is unchanged.
// Both must be of the same kind and k (and, for k-SFs, the same first-tree
// root label); returns false (and does nothing) otherwise.  Counters are
// summed node by node along equal label paths.  First trees join first
// trees; the other trees join by root label.
// ---------------------------------------------------------------------------
namespace detail {
inline void join_subtree(Forest& dst, Node* d, const Node* s, Vec<const Node*>& st) {
  // st holds (dst, src) pairs flattened.
  st.clear();
  st.push_back(d);
  st.push_back(s);
  while (!st.empty()) {
    const Node* sn = st.back();
    st.pop_back();
    Node* dn = const_cast<Node*>(st.back());
    st.pop_back();
    dn->calls += sn->calls;
    dn->excl += sn->excl;
    dn->incl += sn->incl;
    for_each_child(sn, [&](Node* sc) {
      Node* dc = dst.child(dn, sc->label);
      st.push_back(dc);
      st.push_back(sc);
    });
  }
}
}  // namespace detail

inline bool join(Forest& dst, const Forest& src) {
  if (&dst == &src) return false;
  if (dst.kind() != src.kind() || dst.k() != src.k()) return false;
  if (src.first_tree() && dst.first_tree() && src.root_label() != dst.root_label()) return false;
  Vec<const Node*> st;
  st.init(dst.allocator(), 64);
  if (src.first_tree()) {
    Node* d = dst.ensure_first(src.root_label());
    detail::join_subtree(dst, d, src.first_tree(), st);
  }
  for (size_t i = 0; i < src.tree_count(); ++i) {
    const Node* s = src.tree(i);
    detail::join_subtree(dst, dst.tree_root(s->label), s, st);
  }
  st.destroy();
  return true;
}

// dst (uninitialised or destroyed) := a copy of src.
inline void copy_forest(Forest& dst, const Forest& src) {
  if (src.kind() == Forest::kSlabForest)
    dst.init(src.allocator(), src.k(), src.root_label(), src.flags());
  else
    dst.init_ccf(src.allocator(), src.k());
  join(dst, src);
}

// Sets to zero the counters of the top-region nodes of every tree but the
// first (Fig. 3.8).  In place; inv_k does not need it (it applies the rule
// on the fly), but a caller that wants to print Fig. 3.8 can use it on a
// copy.
inline void clear_top_regions(Forest& f) {
  visit_preorder(f, [&](const VisitInfo& v) {
    if (!v.cleared) return;
    Node* n = const_cast<Node*>(v.node);
    n->calls = 0;
    n->excl = 0;
    n->incl = 0;
  });
}

// ---------------------------------------------------------------------------
// inv_k' (Def. 6) of a k-SF, or of any forest, with the counter rule.
//
// out (uninitialised or destroyed) := inv_kp(sf) where every node v of sf
// contributes its reversed root-path suffix of at most kp+1 nodes, each node
// of that reversed path receiving v's counters -- except that nodes in the
// top region of a non-first tree (in_cleared_top_region) contribute zero
// counters (they still contribute their path, which by construction is
// already present with non-zero counters).
// For a k-SF built with k, any kp <= k gives the kp-CCF (kp = kInfinity is
// allowed when k is).  Returns false if kp > sf.k() (out is then initialised
// and empty).
// ---------------------------------------------------------------------------
inline bool inv_k(Forest& out, const Forest& sf, uint32_t kp) {
  out.init_ccf(sf.allocator(), kp);
  if (sf.kind() == Forest::kSlabForest && kp > sf.k()) return false;
  visit_preorder(sf, [&](const VisitInfo& v) {
    const Node* n = v.node;
    uint64_t c = 0, e = 0, i = 0;
    if (!v.cleared) {
      c = n->calls;
      e = n->excl;
      i = n->incl;
    }
    Node* d = out.tree_root(n->label);
    d->calls += c;
    d->excl += e;
    d->incl += i;
    const Node* u = n->parent;
    for (uint32_t j = 0; u && j < kp; ++j, u = u->parent) {
      d = out.child(d, u->label);
      d->calls += c;
      d->excl += e;
      d->incl += i;
    }
  });
  return true;
}

}  // namespace core
}  // namespace kg
