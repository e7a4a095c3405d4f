// kgrind core: the k-Slab Forest (k-SF) and its online construction.
//
// Header-only, freestanding (no libc, no libstdc++, no Valgrind), no
// exceptions, no RTTI, no virtual functions, no static constructors.
// Specification: IHPP thesis chapter 3 (Definitions 1-7, Listing 3.2),
// 4.2.3 (simple-recursion rolling), 4.3.4 / 5.5.1 (loop rolling).
// The exact semantics (depth, rolling, canonical nodes, counters) are
// documented in docs/design/core.md.
//
// Quick reference:
//
//   kg::core::Forest f;                       // zero-initialised is fine
//   f.init(allocator, k, root_label);         // k in [0, kInfinity]
//   Activation a0 = f.enter_root();           // depth 0, first tree root
//   Activation a1 = f.enter(a0, label);       // call: caller pushes a1
//   ...                                       // return: caller pops
//   Node* n = Forest::canonical(a1);          // where costs go
//   f.destroy();
#pragma once
#include "arena.h"
#include "containers.h"

namespace kg {
namespace core {

static constexpr uint32_t kInfinity = 0xFFFFFFFFu;  // k = infinity (CCT)

// A node of a k-SF or k-CCF: 48 bytes.  Children storage is separate:
//   nkids == 0: kids == nullptr
//   nkids == 1: kids is the address of the only child's last two words,
//               `calls` and `incl` (only_child): where a user's record
//               overlaps them and the payload (kgrind's k=inf k-SF, whose
//               nodes' counts are derived at output), the word is a pointer
//               to the record, which the user may read through (its one-kid
//               arrays)
//   nkids >= 2: kids is an open-addressing table of ChildEntry, capacity
//               1 << child_table_bits(nkids), empty slot = 0; a probe
//               stops at an empty slot or after the whole table.
// Field order: what enter() reads first (label, nkids, kids) comes first;
// the counts a user's record may overlap (calls, incl) come last.
struct Node {
  uint32_t label;
  uint32_t nkids;
  void* kids;
  uint64_t excl;   // exclusive cost (e.g. Ir)
  Node* parent;    // nullptr for tree roots
  uint64_t calls;  // activations
  uint64_t incl;   // inclusive cost
};
static_assert(sizeof(Node) == 48, "Node must stay 48 bytes");

// A child table's slot: the child's address with 16 bits of its label above
// it (addresses fit in 48 bits), so that a probe follows the pointer only
// when the tag matches: 8 bytes instead of a (label, node) pair's 16 (at
// k=inf on cc1plus, 33 MB less).
struct ChildEntry {
  uint64_t word;  // 0: empty
  static uint64_t tag_of(uint32_t label) { return static_cast<uint64_t>(label & 0xFFFFu) << 48; }
  Node* node() const { return reinterpret_cast<Node*>(word & ((uint64_t(1) << 48) - 1)); }
  bool may_be(uint32_t label) const { return (word & ~((uint64_t(1) << 48) - 1)) == tag_of(label); }
  void set(Node* n, uint32_t label) { word = reinterpret_cast<uint64_t>(n) | tag_of(label); }
};
static_assert(sizeof(ChildEntry) == 8, "ChildEntry is 8 bytes");

// Capacity (power of two) of the child table for n >= 2 children: up to
// kFullChildTable children nextpow2(n), so a table may be full (probes are
// bounded by the capacity: at most 8); above, nextpow2(n + n/2), i.e. load
// factor <= 2/3. Most tables are small, and a full one of 2, 4 or 5-8
// children takes half the bytes (cc1plus at k=inf: 9.9 MB less peak RSS,
// 3.4 bytes a k-SF node).
static constexpr uint32_t kFullChildTable = 8;
inline uint32_t child_table_bits(uint32_t n) {
  uint32_t m = n <= kFullChildTable ? n : n + (n >> 1);  // >= 2 for n >= 2
  return 32u - static_cast<uint32_t>(__builtin_clz(m - 1));
}

// A node with one child keeps the address of the child's `calls` (Node):
// the first of its last two words.
static constexpr size_t kOnlyChildLink = __builtin_offsetof(Node, calls);
static_assert(kOnlyChildLink + 2 * sizeof(uint64_t) == sizeof(Node), "calls and incl end a node");
inline void* only_child_link(Node* c) { return reinterpret_cast<char*>(c) + kOnlyChildLink; }
// The child of a node with one child.
inline Node* only_child(const Node* n) { return reinterpret_cast<Node*>(static_cast<char*>(n->kids) - kOnlyChildLink); }

// Where n's children are: its only child or its child table.
inline const void* children_of(const Node* n) { return n->nkids == 1 ? only_child(n) : n->kids; }

// Calls f(Node*) for each child of n (unspecified but deterministic order).
template <class F>
inline void for_each_child(const Node* n, F f) {
  if (n->nkids == 0) return;
  if (n->nkids == 1) {
    f(only_child(n));
    return;
  }
  const ChildEntry* t = static_cast<const ChildEntry*>(n->kids);
  uint32_t cap = 1u << child_table_bits(n->nkids);
  for (uint32_t i = 0; i < cap; ++i)
    if (t[i].word) f(t[i].node());
}

// Child lookup; nullptr if absent.
inline Node* find_child(const Node* n, uint32_t label) {
  uint32_t m = n->nkids;
  if (m == 1) {
    Node* c = only_child(n);
    return c->label == label ? c : nullptr;
  }
  if (m == 0) return nullptr;
  const ChildEntry* t = static_cast<const ChildEntry*>(n->kids);
  uint32_t bits = child_table_bits(m);
  uint32_t mask = (1u << bits) - 1;
  uint32_t i = hash_label(label, bits);
  for (uint32_t probes = 0; probes <= mask; ++probes) {
    const ChildEntry& e = t[i];
    if (e.word == 0) return nullptr;
    if (e.may_be(label) && e.node()->label == label) return e.node();
    i = (i + 1) & mask;
  }
  return nullptr;  // a full table
}

// The (top, bottom) pair of one activation, plus its depth and phase.
// The activation stack belongs to the caller: it stores one Activation per
// activation and pops to leave.  24 bytes.
//   depth: number of (non-rolled) ancestors; the root activation has 0.
//   phase: depth mod k (k >= 1); internal bookkeeping, do not modify.
struct Activation {
  Node* top;
  Node* bottom;  // nullptr while depth < k, and always for k = 0 / infinity
  uint32_t depth;
  uint32_t phase;
};

class Forest {
 public:
  enum Kind : uint32_t { kSlabForest = 0, kCallingContextForest = 1 };
  // Flags for init().
  static constexpr uint32_t kRollSimpleRecursion = 1u;  // default: on (IHPP behaviour)
  // R in a hash map only: for forests whose labels are a small part of a
  // large label space (one per function over the program's block labels),
  // where a direct array indexed by label would be mostly empty.
  static constexpr uint32_t kSparseRoots = 2u;
  // Node memory in chunks of kSmallFirstChunk bytes at first (doubling as
  // the forest grows) instead of Pool::kFirstChunk: for forests of which
  // there are many, mostly of a few nodes (intra mode: one per function;
  // each 64 KB chunk kept two pages resident, 24 MB for 3,000 functions).
  static constexpr uint32_t kSmallPool = 4u;
  static constexpr size_t kSmallFirstChunk = 2 * 1024;

  // ---- lifetime ---------------------------------------------------------
  // k: 0 (vertex profile), 1, 2, ..., or kInfinity (CCT).
  // root_label: label of the first tree's root (e.g. the id of __root__).
  // payload_bytes (a multiple of 8): zeroed bytes of the user's right after
  // every node (payload()), for a record per node without an index of its
  // own. A node and its payload take a multiple of 8 bytes (Pool::bump).
  void init(const Allocator& al, uint32_t k, uint32_t root_label,
            uint32_t flags = kRollSimpleRecursion, uint32_t payload_bytes = 0) {
    init_common(al, k, kSlabForest, flags);
    payload_bytes_ = payload_bytes;
    root_label_ = root_label;
    first_ = new_node(root_label, nullptr);
  }
  // An empty k-CCF (used by inv_k; no first tree).
  void init_ccf(const Allocator& al, uint32_t k) {
    init_common(al, k, kCallingContextForest, 0);
    payload_bytes_ = 0;
    root_label_ = 0;
    first_ = nullptr;
  }
  void destroy() {
    roots_.destroy();
    dense_roots_.destroy();
    root_list_.destroy();
    pool_.destroy();
    first_ = nullptr;
    nodes_ = 0;
  }

  // R in the hash map from now on, the dense array freed: for a forest that
  // will grow little if at all (a thread that ended), whose dense array
  // (8 bytes a label up to its largest root's) may be far bigger than its
  // few roots. Lookups and later trees work as before; the roots keep their
  // order (tree(i)).
  void compact_roots() {
    if (flags_ & kSparseRoots) return;
    for (size_t i = 0; i < root_list_.size(); ++i)
      if (dense(root_list_[i]->label)) roots_.set(root_list_[i]->label, root_list_[i]);
    dense_roots_.destroy();
    flags_ |= kSparseRoots;
  }

  // ---- online construction (Listing 3.2) --------------------------------
  // A new activation of the first tree's root (once per thread / run).
  Activation enter_root() {
    first_->calls++;
    Activation a;
    a.top = first_;
    a.bottom = nullptr;
    a.depth = 0;
    a.phase = 0;
    return a;
  }

  // A new activation of `label` called from activation p.  Returns the new
  // activation's pair; the caller pushes it.  With simple-recursion rolling
  // on, if label == p's label the parent's node(s) are incremented and the
  // returned activation equals p (same top, bottom, depth): is_rolled().
  inline Activation enter(const Activation& p, uint32_t label) {
    Node* t = p.top;
    Activation a;
    if (__builtin_expect(t->label == label, 0) && (flags_ & kRollSimpleRecursion)) {
      t->calls++;
      if (p.bottom) p.bottom->calls++;
      return p;
    }
    a.depth = p.depth + 1;
    uint32_t ph = p.phase + 1;
    if (ph != kmod_) {
      // Regular top update (always for k = infinity).
      a.top = child(t, label);
      a.phase = ph;
      a.bottom = p.bottom ? child(p.bottom, label) : nullptr;
    } else {
      // depth is a multiple of k: bottom continues below the parent's top,
      // top moves to the root of the tree labelled `label` (R lookup).
      a.top = tree_root(label);
      a.phase = 0;
      a.bottom = k_ == 0 ? nullptr : child(t, label);
    }
    a.top->calls++;
    // The next call from this activation will read the children of top
    // and bottom: start fetching them (hides one miss on cold paths). Not
    // for leaves: a prefetch of address 0 costs a page walk (on this VM
    // most of the time of the block modes' forest steps).
    if (a.top->kids) __builtin_prefetch(children_of(a.top));
    if (a.bottom) {
      a.bottom->calls++;
      if (a.bottom->kids) __builtin_prefetch(children_of(a.bottom));
    }
    return a;
  }

  // Loop rolling (k = infinity only; BB sequences, thesis 4.3.4 / 5.5.1).
  // The next block `label` after activation p: if a node labelled `label`
  // is on the root path of p.top (p.top itself included), top moves to that
  // node (depth decreases accordingly); otherwise top moves to (or creates)
  // the child of p.top.  The node reached is incremented.  bottom stays null.
  Activation enter_loop(const Activation& p, uint32_t label) {
    Node* t = p.top;
    Activation a;
    a.bottom = nullptr;
    // A child labelled `label` only exists if `label` is not on t's root
    // path (root paths never change), so try it first: O(1) common case.
    Node* c = find_child(t, label);
    if (!c) {
      uint32_t up = 0;
      for (Node* u = t; u; u = u->parent, ++up) {
        if (u->label == label) {
          u->calls++;
          a.top = u;
          a.depth = p.depth - up;
          a.phase = a.depth;
          return a;
        }
      }
      c = add_child(t, label);
    }
    c->calls++;
    a.top = c;
    a.depth = p.depth + 1;
    a.phase = a.depth;
    return a;
  }

  // The node whose root path holds the activation's full k-context: every
  // activation and every unit of cost is attributed there exactly once.
  static Node* canonical(const Activation& a) { return a.bottom ? a.bottom : a.top; }
  // Was `child` (returned by enter(parent, ...)) rolled into its parent?
  static bool is_rolled(const Activation& parent, const Activation& child) {
    return child.depth == parent.depth && child.top == parent.top;
  }
  static void add_exclusive(const Activation& a, uint64_t cost) { canonical(a)->excl += cost; }
  static void add_inclusive(const Activation& a, uint64_t cost) { canonical(a)->incl += cost; }

  // ---- structure --------------------------------------------------------
  uint32_t k() const { return k_; }
  Kind kind() const { return kind_; }
  uint32_t flags() const { return flags_; }
  uint32_t root_label() const { return root_label_; }
  Node* first_tree() const { return first_; }  // nullptr for a k-CCF
  // The other trees (R), in creation order.
  size_t tree_count() const { return root_list_.size(); }
  Node* tree(size_t i) const { return root_list_[i]; }
  Node* find_tree(uint32_t label) const {
    if (dense(label)) return label < dense_roots_.size() ? dense_roots_[label] : nullptr;
    Node* const* p = roots_.find(label);
    return p ? *p : nullptr;
  }
  uint64_t node_count() const { return nodes_; }
  // The user's bytes after node n (init's payload_bytes).
  static void* payload(Node* n) { return n + 1; }
  uint32_t payload_bytes() const { return payload_bytes_; }
  // Memory: node bytes (48 per node and its payload) and children-table bytes in use.
  uint64_t node_bytes() const { return nodes_ * (sizeof(Node) + payload_bytes_); }
  uint64_t child_table_bytes() const { return table_bytes_; }
  uint64_t reserved_bytes() const {
    return pool_.bytes_reserved() + roots_.memory_bytes() + dense_roots_.capacity() * sizeof(Node*) +
           root_list_.capacity() * sizeof(Node*);
  }

  // get-or-add primitives (used by join / inv_k / tests).
  inline Node* child(Node* n, uint32_t label) {
    Node* c = find_child(n, label);
    return __builtin_expect(c != nullptr, 1) ? c : add_child(n, label);
  }
  // R lookup: labels below kDenseRootLimit (the tool's dense function / block
  // ids) index a direct array; larger labels go through a hash map.
  inline Node* tree_root(uint32_t label) {
    if (__builtin_expect(label < dense_roots_.size(), 1)) {
      Node* r = dense_roots_[label];
      if (__builtin_expect(r != nullptr, 1)) return r;
    }
    return tree_root_slow(label);
  }
  // For join: the first tree's root, created if this forest has none.
  Node* ensure_first(uint32_t root_label) {
    if (!first_) {
      root_label_ = root_label;
      first_ = new_node(root_label, nullptr);
    }
    return first_;
  }

  // Adds a child known to be absent.
  __attribute__((noinline)) Node* add_child(Node* n, uint32_t label) {
    Node* c = new_node(label, n);
    uint32_t m = n->nkids;
    if (m == 0) {
      n->kids = only_child_link(c);
    } else if (m == 1) {
      uint32_t bits = child_table_bits(2);
      ChildEntry* t = new_table(bits);
      Node* old = only_child(n);
      table_put(t, bits, old);
      table_put(t, bits, c);
      n->kids = t;
    } else {
      uint32_t bits = child_table_bits(m);
      uint32_t nbits = child_table_bits(m + 1);
      ChildEntry* t = static_cast<ChildEntry*>(n->kids);
      if (nbits != bits) {
        ChildEntry* nt = new_table(nbits);
        uint32_t cap = 1u << bits;
        for (uint32_t i = 0; i < cap; ++i)
          if (t[i].word) table_put(nt, nbits, t[i].node());
        pool_.release_block(t, sizeof(ChildEntry) << bits);
        table_bytes_ -= sizeof(ChildEntry) << bits;
        t = nt;
        n->kids = t;
      }
      table_put(t, nbits, c);
    }
    n->nkids = m + 1;
    return c;
  }

 private:
  static constexpr uint32_t kDenseRootLimit = 1u << 22;

  bool dense(uint32_t label) const { return label < kDenseRootLimit && !(flags_ & kSparseRoots); }

  __attribute__((noinline)) Node* tree_root_slow(uint32_t label) {
    if (dense(label)) {
      if (label >= dense_roots_.size()) {
        size_t n = dense_roots_.size() ? dense_roots_.size() : 64;
        while (n <= label) n *= 2;
        if (n > kDenseRootLimit) n = kDenseRootLimit;
        dense_roots_.resize(n);  // zero-filled
      }
      Node* r = new_node(label, nullptr);
      dense_roots_[label] = r;
      root_list_.push_back(r);
      return r;
    }
    Node** p = roots_.find(label);
    if (p) return *p;
    Node* r = new_node(label, nullptr);
    roots_.set(label, r);
    root_list_.push_back(r);
    return r;
  }

  void init_common(const Allocator& al, uint32_t k, Kind kind, uint32_t flags) {
    al_ = al;
    pool_.init(al, (flags & kSmallPool) ? kSmallFirstChunk : Pool::kFirstChunk);
    roots_.init(al, 0);
    dense_roots_.init(al, 0);
    root_list_.init(al, 64);
    k_ = k;
    kmod_ = (k == 0) ? 1u : k;
    kind_ = kind;
    flags_ = flags;
    nodes_ = 0;
    table_bytes_ = 0;
  }
  Node* new_node(uint32_t label, Node* parent) {
    Node* n = static_cast<Node*>(pool_.bump(sizeof(Node) + payload_bytes_, payload_bytes_ % 16 ? 8 : 16));
    uint64_t* payload_words = static_cast<uint64_t*>(payload(n));
    for (uint32_t i = 0; i < payload_bytes_ / 8; ++i) payload_words[i] = 0;
    n->label = label;
    n->nkids = 0;
    n->parent = parent;
    n->kids = nullptr;
    n->calls = 0;
    n->excl = 0;
    n->incl = 0;
    ++nodes_;
    return n;
  }
  ChildEntry* new_table(uint32_t bits) {
    size_t bytes = sizeof(ChildEntry) << bits;
    ChildEntry* t = static_cast<ChildEntry*>(pool_.alloc_block(bytes));
    uint32_t cap = 1u << bits;
    for (uint32_t i = 0; i < cap; ++i) t[i].word = 0;
    table_bytes_ += bytes;
    return t;
  }
  static void table_put(ChildEntry* t, uint32_t bits, Node* c) {
    uint32_t mask = (1u << bits) - 1;
    uint32_t i = hash_label(c->label, bits);
    while (t[i].word) i = (i + 1) & mask;
    t[i].set(c, c->label);
  }

  Allocator al_;
  Pool pool_;
  Vec<Node*> dense_roots_;  // R for labels < kDenseRootLimit (nullptr = none)
  U64Map<Node*> roots_;     // R for larger labels
  Vec<Node*> root_list_;  // the same roots in creation order
  Node* first_;
  uint32_t k_;
  uint32_t kmod_;  // phase wraps at kmod_: k for k >= 1, 1 for k = 0
  uint32_t root_label_;
  uint32_t flags_;
  uint32_t payload_bytes_;
  Kind kind_;
  uint64_t nodes_;
  uint64_t table_bytes_;

 public:
  const Allocator& allocator() const { return al_; }
};

}  // namespace core
}  // namespace kg
