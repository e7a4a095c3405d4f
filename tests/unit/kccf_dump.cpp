// kccf_dump: the C++ core's k-CCF of kgrind profiles, as JSON, for the
// agreement test tests/test_annotate_core_agreement.py (kgrind_annotate must
// agree with the core node for node).  A host program, not part of the tool.
//
//   kccf_dump [--k=N|inf] [--join-threads] [--sort=Ir|calls|inclusive] profile...
//
// It reads only the `# ksf-` records of each profile (docs/output-format.md,
// section 3), rebuilds every thread's k-SF as a kg::core::Forest with the
// core's own primitives (Forest::init with the recorded k and root label 0,
// ensure_first / tree_root / child along the records' parent links, then the
// recorded calls / excl / incl), joins the forests of equal thread ids across
// profiles (all of them into "all" with --join-threads or when a profile was
// recorded with joined threads) with kg::core::join, and computes the
// k'-CCF with kg::core::inv_k.  Output, one JSON document:
//
//   {"k": 2, "recorded_k": 2, "threads": [ {"tid": 1 | "all", "Ir": ...,
//     "ksf_nodes": n, "kccf_nodes": m, "calls": <canonical activations>,
//     "kccf": [ {"id", "parent", "name", "calls", "Ir", "inclusive"}, ... ],
//     "ksf":  [ {"id", "parent", "name", "calls", "Ir", "inclusive"}, ... ] } ]}
//
// (each forest a flat array of its nodes in pre-order: id is the index,
// parent the parent's id or null for a root)
//
// "kccf" and "ksf" have exactly the shape of kgrind_annotate --format=json
// (docs/kgrind-annotate.schema.json); siblings are ordered as its default
// --tree-order=sorted: by the --sort key descending, then by name (bytes).
// Threads are ordered as kgrind_annotate orders them (numeric tid; "all").
//
// Bad input: one line on stderr, exit status 2.  The records are checked
// only as far as the rebuild needs (kgrind_annotate checks them strictly).
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "forest_ops.h"
#include "ksf.h"

namespace {

using kg::core::Forest;
using kg::core::Node;

void* host_alloc(void*, size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) {
    std::fprintf(stderr, "kccf_dump: out of memory\n");
    std::exit(3);
  }
  return p;
}
void host_free(void*, void* p) { std::free(p); }
const kg::core::Allocator kAlloc = {nullptr, host_alloc, host_free, false};

[[noreturn]] void die(const std::string& where, const std::string& what) {
  std::fprintf(stderr, "kccf_dump: %s: %s\n", where.c_str(), what.c_str());
  std::exit(2);
}

// Global label table: name <-> id; __root__ is 0 (the forests' root label).
std::vector<std::string> g_names;
std::map<std::string, uint32_t> g_ids;
uint32_t label_id(const std::string& n) {
  auto it = g_ids.find(n);
  if (it != g_ids.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(g_names.size());
  g_names.push_back(n);
  g_ids.emplace(n, id);
  return id;
}

struct Thread {
  std::string tid;     // "1", "2", ..., or "all"
  uint64_t ir = 0;     // ksf-thread ir= (summed when joined)
  Forest f;            // the thread's k-SF (core)
};

struct Profile {
  uint32_t k = 0;
  bool joined = false;
  std::vector<std::unique_ptr<Thread>> threads;
};

bool parse_u64(const std::string& s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  *v = x;
  return true;
}

std::vector<std::string> split_spaces(const std::string& s, size_t max_fields) {
  // Splits at single spaces; the last field (max_fields-th) takes the rest.
  std::vector<std::string> out;
  size_t i = 0;
  while (out.size() + 1 < max_fields) {
    size_t j = s.find(' ', i);
    if (j == std::string::npos) break;
    out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  out.push_back(s.substr(i));
  return out;
}

// Version 3's ksf-nodes payload: base64 (RFC 4648) of BER integers.
bool decode_numbers(const std::string& b64, std::vector<uint64_t>* out) {
  static const std::string digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (b64.empty() || b64.size() % 4) return false;
  std::vector<unsigned char> bytes;
  for (size_t i = 0; i < b64.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t j = 0; j < 4; j++) {
      char c = b64[i + j];
      size_t d = digits.find(c);
      if (c == '=' && i + 4 == b64.size() && j >= 2) { pad++; d = 0; }
      else if (d == std::string::npos || pad) return false;
      v = v << 6 | static_cast<uint32_t>(d);
    }
    for (int j = 0; j < 3 - pad; j++) bytes.push_back(static_cast<unsigned char>(v >> (16 - 8 * j)));
  }
  uint64_t value = 0;
  for (size_t i = 0; i < bytes.size(); i++) {
    if (value >> 57) return false;   // past 64 bits
    value = value << 7 | (bytes[i] & 0x7F);
    if (bytes[i] < 0x80) { out->push_back(value); value = 0; }
    else if (i + 1 == bytes.size()) return false;   // the line ends inside a number
  }
  return true;
}

Profile read_profile(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) die(file, std::string("cannot open: ") + std::strerror(errno));
  Profile P;
  bool have_options = false, ended = false;
  std::vector<uint32_t> fnmap;  // file fn id -> global label id
  std::map<std::string, unsigned> fnseen;
  Thread* cur = nullptr;
  std::vector<Node*> nodes;     // record id -> core node of the current thread
  std::vector<uint64_t> node_labels;   // record id -> its ksf-fns id
  std::vector<uint64_t> open;   // version 2, 3: nodes whose children's list is open
  uint64_t declared = 0;
  int version = 0;
  std::map<uint64_t, std::string> body_names;   // the callgrind body's fn=/cfn= (id) name
  int64_t previous_label = -1;  // version 3: the next node's previous sibling's label
  std::string line;
  uint64_t ln = 0;
  while (std::getline(in, line)) {
    ++ln;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.compare(0, 6, "# ksf-") != 0) {
      size_t at = line.compare(0, 4, "fn=(") == 0 ? 4 : line.compare(0, 5, "cfn=(") == 0 ? 5 : 0;
      size_t close = at ? line.find(')', at) : std::string::npos;
      uint64_t id;
      if (close != std::string::npos && close + 2 < line.size() && parse_u64(line.substr(at, close - at), &id))
        body_names[id] = line.substr(line.find_first_not_of(' ', close + 1));
      continue;
    }
    std::string where = file + ":" + std::to_string(ln);
    if (ended) die(where, "k-SF record after ksf-end");
    // One node in pre-order: a root when parent is kNoParent.
    const uint64_t kNoParent = ~0ull;
    auto add_node = [&](uint64_t par, uint64_t fn, uint64_t calls, uint64_t excl, uint64_t incl) {
      uint64_t id = nodes.size();
      if (fn >= fnmap.size()) die(where, "unknown function id");
      uint32_t lab = fnmap[fn];
      Node* n;
      if (par == kNoParent) {
        if (id == 0) {
          if (lab != 0) die(where, "node 0 must be __root__");
          n = cur->f.ensure_first(0);  // Forest::init already made it
        } else {
          if (cur->f.find_tree(lab)) die(where, "two trees with the same root label");
          n = cur->f.tree_root(lab);
        }
      } else {
        if (id == 0 || par >= id) die(where, "parent does not precede the node");
        Node* p = nodes[par];
        if (kg::core::find_child(p, lab)) die(where, "duplicate sibling label");
        n = cur->f.child(p, lab);
      }
      n->calls = calls;
      n->excl = excl;
      n->incl = incl;
      nodes.push_back(n);
      node_labels.push_back(fn);
    };
    if (line.compare(0, 12, "# ksf-nodes ") == 0 && version >= 3) {
      // shape label [calls - 7] [excl] [incl]: shape bits 0-2 calls (7:
      // more follow), 3 excl and 4 incl follow, 5 children follow, >> 6
      // lists closed; a label less its previous sibling's
      if (!cur) die(where, "ksf-nodes outside a thread");
      std::vector<uint64_t> v;
      if (!decode_numbers(line.substr(12), &v)) die(where, "malformed ksf-nodes payload");
      size_t i = 0;
      while (i < v.size()) {
        uint64_t shape = v[i];
        size_t need = 2 + ((shape & 7) == 7) + (shape >> 3 & 1) + (shape >> 4 & 1);
        if (i + need > v.size()) die(where, "node cut at the end of a ksf-nodes line");
        uint64_t label = v[i + 1] + (previous_label >= 0 ? static_cast<uint64_t>(previous_label) : 0);
        i += 2;
        uint64_t calls = (shape & 7) == 7 ? 7 + v[i++] : (shape & 7);
        uint64_t excl = shape & 8 ? v[i++] : 0;
        uint64_t incl = shape & 16 ? v[i++] : excl;
        add_node(open.empty() ? kNoParent : open.back(), label, calls, excl, incl);
        uint64_t closes = shape >> 6;
        if (shape & 32) {
          if (closes) die(where, "a node with children closes lists");
          open.push_back(nodes.size() - 1);
          previous_label = -1;
        } else if (closes) {
          if (closes > open.size()) die(where, "more lists closed than open");
          uint64_t outer = open[open.size() - closes];
          open.resize(open.size() - closes);
          previous_label = open.empty() ? -1 : static_cast<int64_t>(node_labels[outer]);
        } else {
          previous_label = open.empty() ? -1 : static_cast<int64_t>(label);
        }
      }
      continue;
    }
    if (line.compare(0, 12, "# ksf-nodes ") == 0) {   // version 2: nested lists
      if (!cur) die(where, "ksf-nodes outside a thread");
      size_t i = 12;
      while (i < line.size()) {
        char c = line[i];
        if (c == ' ') {
          i++;
        } else if (c == '(') {
          if (nodes.empty()) die(where, "'(' before any node");
          open.push_back(nodes.size() - 1);
          i++;
        } else if (c == ')') {
          if (open.empty()) die(where, "unbalanced ')'");
          open.pop_back();
          i++;
        } else {
          // label[*calls][=excl[/incl]]
          size_t end = line.find_first_of(" ()", i);
          std::string tok = line.substr(i, end == std::string::npos ? std::string::npos : end - i);
          i = end == std::string::npos ? line.size() : end;
          size_t star = tok.find('*'), eq = tok.find('='), slash = tok.find('/');
          uint64_t fn, calls = 1, excl = 0, incl;
          bool ok = parse_u64(tok.substr(0, std::min(std::min(star, eq), tok.size())), &fn);
          if (star != std::string::npos) ok = ok && parse_u64(tok.substr(star + 1, std::min(eq, tok.size()) - star - 1), &calls);
          if (eq != std::string::npos)
            ok = ok && parse_u64(tok.substr(eq + 1, std::min(slash, tok.size()) - eq - 1), &excl);
          incl = excl;
          if (slash != std::string::npos) ok = ok && eq != std::string::npos && parse_u64(tok.substr(slash + 1), &incl);
          if (!ok || (star != std::string::npos && eq != std::string::npos && star > eq))
            die(where, "malformed node '" + tok + "' in ksf-nodes");
          add_node(open.empty() ? kNoParent : open.back(), fn, calls, excl, incl);
        }
      }
      continue;
    }
    if (line.compare(0, 11, "# ksf-node ") == 0) {    // version 1: one node per line
      if (!cur) die(where, "ksf-node outside a thread");
      std::vector<std::string> f = split_spaces(line.substr(11), 6);
      uint64_t id, fn, calls, excl, incl, par = 0;
      if (f.size() != 6 || !parse_u64(f[0], &id) || !parse_u64(f[2], &fn) || !parse_u64(f[3], &calls) ||
          !parse_u64(f[4], &excl) || !parse_u64(f[5], &incl) || (f[1] != "-" && !parse_u64(f[1], &par)))
        die(where, "malformed ksf-node record");
      if (id != nodes.size()) die(where, "ksf-node ids not dense");
      add_node(f[1] == "-" ? kNoParent : par, fn, calls, excl, incl);
      continue;
    }
    if (line.compare(0, 15, "# ksf-version: ") == 0) {
      if (line != "# ksf-version: 1" && line != "# ksf-version: 2" && line != "# ksf-version: 3")
        die(where, "unsupported ksf-version");
      version = line.back() - '0';
      continue;
    }
    if (line.compare(0, 15, "# ksf-options: ") == 0) {
      std::vector<std::string> f = split_spaces(line.substr(15), 100);
      std::map<std::string, std::string> o;
      for (auto& kv : f) {
        size_t eq = kv.find('=');
        if (eq == std::string::npos) die(where, "malformed ksf-options");
        o[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      uint64_t k;
      if (o["k"] == "inf") {
        P.k = kg::core::kInfinity;
      } else if (parse_u64(o["k"], &k) && k < kg::core::kInfinity) {
        P.k = static_cast<uint32_t>(k);
      } else {
        die(where, "bad k in ksf-options");
      }
      P.joined = o["joined"] == "yes";
      have_options = true;
      continue;
    }
    // Several functions may share a name (mmap in ld.so and in libc): the
    // n-th one of a file is "name#n", as kgrind_annotate names it.
    auto add_function = [&](std::string name) {
      if ((fnmap.size() == 0) != (name == "__root__")) die(where, "__root__ must be function 0");
      unsigned seen = ++fnseen[name];
      if (seen > 1) name += "#" + std::to_string(seen);
      fnmap.push_back(label_id(name));
    };
    if (line.compare(0, 9, "# ksf-fn ") == 0) {       // version 1
      std::vector<std::string> f = split_spaces(line.substr(9), 2);
      uint64_t id;
      if (f.size() != 2 || !parse_u64(f[0], &id) || id != fnmap.size()) die(where, "malformed ksf-fn");
      add_function(f[1]);
      continue;
    }
    // Version 3: "@<id>" is the body's name (id) up to its first "'", "@@x" the name "@x".
    auto table_name = [&](const std::string& entry) -> std::string {
      if (version < 3 || entry.empty() || entry[0] != '@') return entry;
      if (entry.size() > 1 && entry[1] == '@') return entry.substr(1);
      uint64_t id;
      if (!parse_u64(entry.substr(1), &id) || !body_names.count(id)) die(where, "ksf-fns: unknown body name " + entry);
      const std::string& name = body_names[id];
      return name.substr(0, name.find('\''));
    };
    if (line.compare(0, 10, "# ksf-fns ") == 0) {      // version 2, 3: tab-separated entries
      size_t i = 10;
      for (;;) {
        size_t tab = line.find('\t', i);
        add_function(table_name(line.substr(i, tab == std::string::npos ? std::string::npos : tab - i)));
        if (tab == std::string::npos) break;
        i = tab + 1;
      }
      continue;
    }
    if (line.compare(0, 13, "# ksf-thread ") == 0) {
      if (!have_options) die(where, "ksf-thread before ksf-options");
      if (cur) die(where, "nested ksf-thread");
      std::vector<std::string> f = split_spaces(line.substr(13), 3);
      uint64_t ir;
      if (f.size() != 3 || f[1].compare(0, 6, "nodes=") || f[2].compare(0, 3, "ir=") ||
          !parse_u64(f[1].substr(6), &declared) || !parse_u64(f[2].substr(3), &ir))
        die(where, "malformed ksf-thread");
      P.threads.emplace_back(new Thread);
      cur = P.threads.back().get();
      cur->tid = f[0];
      cur->ir = ir;
      // The recorded k and root label 0 (__root__).  The rolling flag only
      // matters for online construction, which is not used here.
      cur->f.init(kAlloc, P.k, 0);
      nodes.clear();
      node_labels.clear();
      open.clear();
      previous_label = -1;
      continue;
    }
    if (line.compare(0, 17, "# ksf-end-thread ") == 0) {
      if (!cur || line.substr(17) != cur->tid) die(where, "ksf-end-thread does not match ksf-thread");
      if (!open.empty()) die(where, "unclosed '(' in ksf-nodes");
      if (nodes.size() != declared || cur->f.node_count() != declared)
        die(where, "node count differs from nodes=");
      cur = nullptr;
      continue;
    }
    if (line == "# ksf-end") {
      if (cur) die(where, "ksf-end inside a thread");
      ended = true;
      continue;
    }
    die(where, "unknown k-SF record");
  }
  if (!ended) die(file, "no '# ksf-end' record");
  return P;
}

// ---------------------------------------------------------------------------
// JSON output, as kgrind_annotate writes it.
std::string js(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

enum SortKey { kByIr, kByCalls, kByInclusive };
SortKey g_sort = kByIr;

uint64_t key_of(const Node* n) {
  return g_sort == kByCalls ? n->calls : g_sort == kByInclusive ? n->incl : n->excl;
}

void sort_nodes(std::vector<const Node*>& v) {
  std::stable_sort(v.begin(), v.end(), [](const Node* a, const Node* b) {
    uint64_t ka = key_of(a), kb = key_of(b);
    if (ka != kb) return ka > kb;
    return g_names[a->label] < g_names[b->label];
  });
}

// One node and its subtree, in pre-order; next is the next node's id.
void json_node(std::string& o, const Node* n, long parent, long& next) {
  long id = next++;
  if (id) o += ',';
  o += "{\"id\":" + std::to_string(id) + ",\"parent\":" + (parent < 0 ? "null" : std::to_string(parent)) +
       ",\"name\":" + js(g_names[n->label]) + ",\"calls\":" + std::to_string(n->calls) +
       ",\"Ir\":" + std::to_string(n->excl) + ",\"inclusive\":" + std::to_string(n->incl) + '}';
  std::vector<const Node*> kids;
  kg::core::for_each_child(n, [&](Node* c) { kids.push_back(c); });
  sort_nodes(kids);
  for (const Node* c : kids) json_node(o, c, id, next);
}

void json_forest(std::string& o, const Forest& f) {
  std::vector<const Node*> roots;
  if (f.first_tree()) roots.push_back(f.first_tree());
  for (size_t i = 0; i < f.tree_count(); ++i) roots.push_back(f.tree(i));
  sort_nodes(roots);
  o += '[';
  long next = 0;
  for (const Node* r : roots) json_node(o, r, -1, next);
  o += ']';
}

std::string kstr(uint32_t k) { return k == kg::core::kInfinity ? "\"inf\"" : std::to_string(k); }

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  bool join_threads = false, have_kp = false;
  uint32_t kp = 0;
  label_id("__root__");
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--join-threads") {
      join_threads = true;
    } else if (a.compare(0, 4, "--k=") == 0) {
      uint64_t v;
      if (a.substr(4) == "inf") kp = kg::core::kInfinity;
      else if (parse_u64(a.substr(4), &v) && v < kg::core::kInfinity) kp = static_cast<uint32_t>(v);
      else die(a, "bad --k value");
      have_kp = true;
    } else if (a == "--sort=Ir") {
      g_sort = kByIr;
    } else if (a == "--sort=calls") {
      g_sort = kByCalls;
    } else if (a == "--sort=inclusive") {
      g_sort = kByInclusive;
    } else if (a.compare(0, 2, "--") == 0) {
      die(a, "unknown option");
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) die("usage", "kccf_dump [--k=N|inf] [--join-threads] [--sort=KEY] profile...");
  std::vector<Profile> profiles;
  for (auto& f : files) profiles.push_back(read_profile(f));
  uint32_t K = profiles[0].k;
  for (auto& P : profiles)
    if (P.k != K) die(files[0], "profiles with different k");
  if (!have_kp) kp = K;
  if (K != kg::core::kInfinity && kp > K) die(files[0], "--k above the recorded k");
  bool join_all = join_threads;
  for (auto& P : profiles) join_all = join_all || P.joined;

  // Join forests of equal thread ids (or all of them) with the core's join.
  std::map<std::pair<int, uint64_t>, std::unique_ptr<Thread>> by;  // ordered as kgrind_annotate
  for (auto& P : profiles) {
    for (auto& T : P.threads) {
      std::string tid = join_all ? "all" : T->tid;
      uint64_t num = 0;
      std::pair<int, uint64_t> key = (tid == "all" || !parse_u64(tid, &num)) ? std::make_pair(0, uint64_t(0))
                                                                             : std::make_pair(1, num);
      auto it = by.find(key);
      if (it == by.end()) {
        std::unique_ptr<Thread> J(new Thread);
        J->tid = tid;
        J->f.init(kAlloc, K, 0);
        it = by.emplace(key, std::move(J)).first;
      }
      if (!kg::core::join(it->second->f, T->f)) die(files[0], "core join refused the forests");
      it->second->ir += T->ir;
    }
  }

  std::string o = "{\"k\":" + kstr(kp) + ",\"recorded_k\":" + kstr(K) + ",\"threads\":[";
  bool first = true;
  for (auto& e : by) {
    Thread& T = *e.second;
    Forest ccf;
    if (!kg::core::inv_k(ccf, T.f, kp)) die(files[0], "core inv_k refused k'");
    // Canonical activations (visit_preorder skips the cleared top regions).
    kg::core::Totals tot = kg::core::canonical_totals(T.f);
    uint64_t visited = 0;
    kg::core::visit_preorder(T.f, [&](const kg::core::VisitInfo&) { ++visited; });
    if (visited != T.f.node_count()) die(files[0], "visit_preorder missed nodes");
    if (!first) o += ',';
    first = false;
    o += "{\"tid\":" + (T.tid == "all" ? std::string("\"all\"") : T.tid) + ",\"Ir\":" + std::to_string(T.ir) +
         ",\"ksf_nodes\":" + std::to_string(T.f.node_count()) + ",\"kccf_nodes\":" +
         std::to_string(ccf.node_count()) + ",\"calls\":" + std::to_string(tot.calls) + ",\"kccf\":";
    json_forest(o, ccf);
    o += ",\"ksf\":";
    json_forest(o, T.f);
    o += '}';
    ccf.destroy();
  }
  o += "]}\n";
  std::fwrite(o.data(), 1, o.size(), stdout);
  for (auto& e : by) e.second->f.destroy();
  for (auto& P : profiles)
    for (auto& T : P.threads) T->f.destroy();
  return std::fflush(stdout) == 0 ? 0 : 2;
}
