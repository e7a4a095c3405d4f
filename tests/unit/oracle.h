// Brute-force reference for the kgrind core (host-only, full C++ stdlib).
//
// Everything is computed from the event stream by the definitions, with no
// shared code with kgrind/core:
//   * the full calling context tree (CCT) as a map path -> counters
//     (with simple-recursion rolling: consecutive equal labels collapsed);
//   * k-contexts and their counts (Definitions 1-3);
//   * the k-CCF as the weighted join of reversed k-contexts (Definition 5);
//   * the k-SF as the weighted join of CCT subtrees of depth <= 2k-1 rooted
//     at levels multiple of k (Definition 7), keeping the first tree apart;
//   * loop rolling over block sequences (the path-list algorithm).
// Also a driver feeding the same streams to the core, and extraction of a
// core forest into the same map representation.
#pragma once

#include <stdint.h>
#include <stdlib.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../kgrind/core/forest_ops.h"
#include "../../kgrind/core/ksf.h"

namespace oracle {

using Path = std::vector<uint32_t>;
static constexpr uint32_t kInf = kg::core::kInfinity;

struct Counters {
  uint64_t calls = 0, excl = 0, incl = 0;
  bool operator==(const Counters& o) const {
    return calls == o.calls && excl == o.excl && incl == o.incl;
  }
  bool operator!=(const Counters& o) const { return !(*this == o); }
  void add(const Counters& o) {
    calls += o.calls;
    excl += o.excl;
    incl += o.incl;
  }
};

// ---------------------------------------------------------------------------
// Event streams.  One Stream = one root activation (a thread): the root is
// entered implicitly first and everything is left implicitly at the end.
// ---------------------------------------------------------------------------
enum Op : uint8_t { ENTER, LEAVE, COST };
struct Event {
  Op op;
  uint32_t arg;  // ENTER: label; LEAVE: number of activations popped (the
                 // root is never popped by LEAVE); COST: exclusive cost
};
using Stream = std::vector<Event>;

inline Event enter(uint32_t l) { return Event{ENTER, l}; }
inline Event leave(uint32_t n = 1) { return Event{LEAVE, n}; }
inline Event cost(uint32_t c) { return Event{COST, c}; }

// ---------------------------------------------------------------------------
// The CCT oracle.
// ---------------------------------------------------------------------------
using Tree = std::map<Path, Counters>;  // root path (root label first) -> counters

struct CCT {
  Tree nodes;
  uint64_t activations = 0;  // enters + root activations
  uint64_t total_excl = 0;
  uint64_t total_incl = 0;   // sum of inclusive over non-rolled activations
};

// Adds one stream to the CCT.  roll: simple-recursion rolling.
inline void add_stream(CCT& cct, const Stream& s, uint32_t root, bool roll) {
  struct Fr {
    Path p;
    bool rolled;
    uint64_t start;
  };
  uint64_t now = 0;
  std::vector<Fr> st;
  st.push_back(Fr{Path{root}, false, 0});
  cct.nodes[st.back().p].calls++;
  cct.activations++;
  auto pop = [&]() {
    Fr& f = st.back();
    if (!f.rolled) {
      cct.nodes[f.p].incl += now - f.start;
      cct.total_incl += now - f.start;
    }
    st.pop_back();
  };
  for (const Event& e : s) {
    if (e.op == ENTER) {
      Path p = st.back().p;
      bool rolled = roll && p.back() == e.arg;
      if (!rolled) p.push_back(e.arg);
      cct.nodes[p].calls++;
      cct.activations++;
      st.push_back(Fr{p, rolled, now});
    } else if (e.op == LEAVE) {
      for (uint32_t i = 0; i < e.arg && st.size() > 1; ++i) pop();
    } else {
      cct.nodes[st.back().p].excl += e.arg;
      cct.total_excl += e.arg;
      now += e.arg;
    }
  }
  while (!st.empty()) pop();
}

inline CCT build_cct(const std::vector<Stream>& ss, uint32_t root, bool roll) {
  CCT c;
  for (const auto& s : ss) add_stream(c, s, root, roll);
  return c;
}

inline Path suffix(const Path& p, uint32_t k) {
  // maximal suffix of length at most k+1
  uint64_t len = (k == kInf) ? p.size() : std::min<uint64_t>(p.size(), uint64_t(k) + 1);
  return Path(p.end() - static_cast<ptrdiff_t>(len), p.end());
}

// Definition 3: for every activated k-context, the number of activations.
inline std::map<Path, uint64_t> k_contexts(const CCT& cct, uint32_t k) {
  std::map<Path, uint64_t> r;
  for (const auto& kv : cct.nodes) r[suffix(kv.first, k)] += kv.second.calls;
  return r;
}

// Definition 5 (weighted): the k-CCF as the join of reversed k-contexts; a
// node (reversed path from its root) gets the counters of every activation
// whose context ends with that path (length <= k+1).
inline Tree k_ccf(const CCT& cct, uint32_t k) {
  Tree r;
  for (const auto& kv : cct.nodes) {
    Path s = suffix(kv.first, k);
    std::reverse(s.begin(), s.end());
    for (size_t len = 1; len <= s.size(); ++len) r[Path(s.begin(), s.begin() + len)].add(kv.second);
  }
  return r;
}

// A k-SF in map form: (first tree?, path from the tree root) -> counters.
using SF = std::map<std::pair<bool, Path>, Counters>;

// Definition 7 (weighted), keeping the tree rooted at the CCT root apart
// from the other trees even if a label repeats.  Calls are summed over every
// copy (as Listing 3.2 increments both top and bottom); costs only at the
// canonical copy (the bottom region, or the first tree above level k).
inline SF k_sf_def7(const CCT& cct, uint32_t k) {
  SF r;
  for (const auto& kv : cct.nodes) {
    const Path& p = kv.first;
    uint64_t L = p.size() - 1;  // level in the CCT
    const Counters& c = kv.second;
    if (k == kInf) {
      r[{true, p}].add(c);
      continue;
    }
    if (k == 0) {
      r[{L == 0, Path{p.back()}}].add(c);
      continue;
    }
    uint64_t m1 = L / k;  // tree whose top region holds the node
    for (uint64_t m = (m1 > 0 ? m1 - 1 : 0); m <= m1; ++m) {
      Path sub(p.begin() + static_cast<ptrdiff_t>(m * k), p.end());
      Counters& d = r[{m == 0, sub}];
      d.calls += c.calls;
      bool canonical = (L < k) ? (m == 0) : (m == m1 - 1);
      if (canonical) {
        d.excl += c.excl;
        d.incl += c.incl;
      }
    }
  }
  return r;
}

// ---------------------------------------------------------------------------
// Loop rolling oracle (block sequences; k = infinity).  Each run starts at
// the root; on block b, if b is on the current root path (current node
// included) the path is truncated after it, else b is appended.
// ---------------------------------------------------------------------------
inline Tree loop_rolled(const std::vector<std::vector<uint32_t>>& runs, uint32_t root,
                        std::vector<std::vector<uint32_t>>* depths = nullptr) {
  Tree r;
  for (const auto& run : runs) {
    Path cur{root};
    r[cur].calls++;
    std::vector<uint32_t> ds;
    for (uint32_t b : run) {
      auto it = std::find(cur.begin(), cur.end(), b);
      if (it != cur.end())
        cur.erase(it + 1, cur.end());
      else
        cur.push_back(b);
      r[cur].calls++;
      ds.push_back(static_cast<uint32_t>(cur.size() - 1));
    }
    if (depths) depths->push_back(ds);
  }
  return r;
}

// ---------------------------------------------------------------------------
// Core side: a test allocator, the driver, extraction.
// ---------------------------------------------------------------------------
struct AllocStats {
  int64_t live = 0;
  uint64_t total = 0;
};
inline void* test_alloc(void* ctx, size_t n) {
  void* p = malloc(n);
  if (!p) abort();
  auto* s = static_cast<AllocStats*>(ctx);
  if (s) {
    s->live++;
    s->total += n;
  }
  return p;
}
inline void test_free(void* ctx, void* p) {
  auto* s = static_cast<AllocStats*>(ctx);
  if (s) s->live--;
  free(p);
}
inline kg::core::Allocator allocator(AllocStats* s = nullptr) {
  return kg::core::Allocator{s, test_alloc, test_free, false};
}

// Feeds streams to a core forest the way the tool does: its own stack of
// activations, exclusive cost to canonical(top of stack), inclusive cost
// added at leave for non-rolled activations.
struct Driver {
  struct Frame {
    kg::core::Activation a;
    bool rolled;
    uint64_t start;
  };
  std::vector<Frame> st;
  uint64_t now = 0;

  void pop(kg::core::Forest&) {
    Frame& f = st.back();
    if (!f.rolled) kg::core::Forest::add_inclusive(f.a, now - f.start);
    st.pop_back();
  }
  void run(kg::core::Forest& f, const Stream& s) {
    using kg::core::Forest;
    st.clear();
    st.push_back(Frame{f.enter_root(), false, now});
    for (const Event& e : s) {
      if (e.op == ENTER) {
        const kg::core::Activation& p = st.back().a;
        kg::core::Activation a = f.enter(p, e.arg);
        bool rolled = Forest::is_rolled(p, a);
        st.push_back(Frame{a, rolled, now});
      } else if (e.op == LEAVE) {
        // leave_to(depth): the caller truncates its own stack.
        for (uint32_t i = 0; i < e.arg && st.size() > 1; ++i) pop(f);
      } else {
        Forest::add_exclusive(st.back().a, e.arg);
        now += e.arg;
      }
    }
    while (!st.empty()) pop(f);
  }
};

inline SF extract_sf(const kg::core::Forest& f) {
  SF r;
  std::map<uint64_t, Path> paths;
  kg::core::visit_preorder(f, [&](const kg::core::VisitInfo& v) {
    Path p = v.parent_id ? paths.at(v.parent_id) : Path{};
    p.push_back(v.node->label);
    paths[v.id] = p;
    Counters c{v.node->calls, v.node->excl, v.node->incl};
    auto key = std::make_pair(v.first_tree, p);
    if (r.count(key)) abort();  // duplicate path: structural bug
    r[key] = c;
  });
  return r;
}

inline Tree extract_tree(const kg::core::Forest& f) {
  Tree r;
  for (const auto& kv : extract_sf(f)) {
    if (r.count(kv.first.second)) abort();
    r[kv.first.second] = kv.second;
  }
  return r;
}

// Structural invariants: parent pointers, child counts, distinct labels.
inline std::string check_structure(const kg::core::Forest& f) {
  std::ostringstream err;
  uint64_t n = 0;
  kg::core::visit_preorder(f, [&](const kg::core::VisitInfo& v) {
    ++n;
    const kg::core::Node* nd = v.node;
    uint32_t cnt = 0;
    std::vector<uint32_t> labels;
    kg::core::for_each_child(nd, [&](kg::core::Node* c) {
      ++cnt;
      labels.push_back(c->label);
      if (c->parent != nd) err << "bad parent of " << c->label << "; ";
      if (kg::core::find_child(nd, c->label) != c) err << "find_child fails for " << c->label << "; ";
    });
    if (cnt != nd->nkids) err << "nkids mismatch; ";
    std::sort(labels.begin(), labels.end());
    if (std::adjacent_find(labels.begin(), labels.end()) != labels.end()) err << "duplicate child label; ";
    if (v.level == 0 && nd->parent) err << "root with parent; ";
  });
  if (n != f.node_count()) err << "node_count " << f.node_count() << " != visited " << n << "; ";
  return err.str();
}

template <class K, class V>
inline std::string diff_maps(const std::map<K, V>& a, const std::map<K, V>& b,
                             std::string (*fmt_key)(const K&), std::string (*fmt_val)(const V&),
                             size_t max_lines = 12) {
  std::ostringstream o;
  size_t lines = 0;
  auto ia = a.begin();
  auto ib = b.begin();
  while ((ia != a.end() || ib != b.end()) && lines < max_lines) {
    if (ib == b.end() || (ia != a.end() && ia->first < ib->first)) {
      o << "  only left:  " << fmt_key(ia->first) << " " << fmt_val(ia->second) << "\n";
      ++ia;
      ++lines;
    } else if (ia == a.end() || ib->first < ia->first) {
      o << "  only right: " << fmt_key(ib->first) << " " << fmt_val(ib->second) << "\n";
      ++ib;
      ++lines;
    } else {
      if (!(ia->second == ib->second)) {
        o << "  differ:     " << fmt_key(ia->first) << " " << fmt_val(ia->second) << " vs "
          << fmt_val(ib->second) << "\n";
        ++lines;
      }
      ++ia;
      ++ib;
    }
  }
  return o.str();
}

inline std::string fmt_path(const Path& p) {
  std::ostringstream o;
  o << "<";
  for (size_t i = 0; i < p.size(); ++i) o << (i ? "," : "") << p[i];
  o << ">";
  return o.str();
}
inline std::string fmt_sfkey(const std::pair<bool, Path>& k) {
  return std::string(k.first ? "first:" : "R:") + fmt_path(k.second);
}
inline std::string fmt_counters(const Counters& c) {
  std::ostringstream o;
  o << "(" << c.calls << "," << c.excl << "," << c.incl << ")";
  return o.str();
}
inline std::string diff(const Tree& a, const Tree& b) { return diff_maps(a, b, fmt_path, fmt_counters); }
inline std::string diff(const SF& a, const SF& b) { return diff_maps(a, b, fmt_sfkey, fmt_counters); }

// ---------------------------------------------------------------------------
// Random streams.
// ---------------------------------------------------------------------------
struct GenParams {
  uint32_t labels = 8;       // labels 1..labels (0 is the root label)
  uint32_t max_depth = 12;
  uint32_t events = 400;
  double p_enter = 0.55;     // otherwise leave (or cost)
  double p_cost = 0.2;
  double p_self = 0.0;       // simple recursion: enter the current label
  double p_mutual = 0.0;     // enter the grandparent's label (a b a b ...)
  double p_multi = 0.1;      // a leave pops several levels (longjmp)
  double p_root_label = 0.0; // enter the root label itself (label 0)
};

inline Stream gen_stream(std::mt19937_64& rng, const GenParams& g) {
  std::uniform_real_distribution<double> U(0, 1);
  Stream s;
  std::vector<uint32_t> st{0};
  for (uint32_t i = 0; i < g.events; ++i) {
    double x = U(rng);
    if (x < g.p_cost) {
      s.push_back(cost(static_cast<uint32_t>(rng() % 100 + 1)));
      continue;
    }
    bool can_enter = st.size() <= g.max_depth;
    if (can_enter && (U(rng) < g.p_enter || st.size() == 1)) {
      uint32_t l;
      double y = U(rng);
      if (y < g.p_self)
        l = st.back();
      else if (y < g.p_self + g.p_mutual && st.size() >= 2)
        l = st[st.size() - 2];
      else if (y < g.p_self + g.p_mutual + g.p_root_label)
        l = 0;
      else
        l = static_cast<uint32_t>(rng() % g.labels + 1);
      s.push_back(enter(l));
      st.push_back(l);
    } else {
      uint32_t n = 1;
      if (U(rng) < g.p_multi) n = static_cast<uint32_t>(rng() % (st.size() + 1) + 1);
      s.push_back(leave(n));
      for (uint32_t j = 0; j < n && st.size() > 1; ++j) st.pop_back();
    }
  }
  return s;
}

// A family of parameter sets: shallow, deep, heavy recursion, mutual
// recursion, wide fan-out, multi-level unwinds, root label reuse.
inline GenParams params_for(uint64_t seed) {
  GenParams g;
  switch (seed % 8) {
    case 0:  // shallow, wide
      g.labels = 40; g.max_depth = 3; g.events = 600; break;
    case 1:  // deep
      g.labels = 6; g.max_depth = 40; g.p_enter = 0.7; g.events = 600; break;
    case 2:  // heavy simple recursion
      g.labels = 5; g.max_depth = 30; g.p_self = 0.5; g.p_enter = 0.65; break;
    case 3:  // mutual recursion
      g.labels = 4; g.max_depth = 30; g.p_mutual = 0.5; g.p_enter = 0.65; break;
    case 4:  // multi-level unwinds
      g.labels = 10; g.max_depth = 20; g.p_multi = 0.4; g.p_enter = 0.7; break;
    case 5:  // tiny alphabet, everything collides
      g.labels = 2; g.max_depth = 16; g.p_self = 0.2; g.p_mutual = 0.2; break;
    case 6:  // root label re-entered
      g.labels = 5; g.max_depth = 10; g.p_root_label = 0.15; g.p_self = 0.1; break;
    default:  // mixed, hundreds of labels (child tables grow)
      g.labels = 300; g.max_depth = 8; g.events = 1500; g.p_self = 0.05; g.p_mutual = 0.05; break;
  }
  return g;
}

}  // namespace oracle
