// Micro-benchmark of the kgrind core: ns per enter/leave event and bytes per
// node on synthetic call streams (see docs/design/core.md for the figures).
//
//   g++ -std=gnu++17 -O2 -DNDEBUG -I. bench/core/bench_core.cpp -o build/bench_core
//   build/bench_core [events=100000000] [seed=1]
//
// The stream comes from a random walk on a synthetic call graph: 5000
// functions; most have 1-4 callees, 2% are dispatchers with 50-3000
// callees; callee choice is skewed (a few hot callees per function);
// 5% of functions call themselves (simple recursion), some pairs call each
// other; the depth wanders between ~8 and ~48 (max 256).  A segment of 2^23
// events (ending at the depth it started from) is generated once and
// replayed until the requested number of events; the first replay builds
// the forest (cold), later ones only find existing nodes (the common case).
// Each enter also attributes one unit of exclusive cost to the canonical
// node, as the tool does.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <time.h>

#include <random>
#include <vector>

#include "kgrind/core/forest_ops.h"
#include "kgrind/core/ksf.h"

using namespace kg::core;

namespace {

const uint32_t RET = 0xFFFFFFFFu;  // marker in the raw walk only

// The replayed stream: "leave `pops` activations, then enter `label`"
// (pops is data, not control flow: the tool's return handler is a
// truncation of its own stack, and its call handler a separate function,
// so enter/leave dispatch costs no branch misprediction there either).
struct Ev {
  uint32_t label;
  uint32_t pops;
};

void* halloc(void*, size_t n) {
  void* p = malloc(n);
  if (!p) abort();
  return p;
}
void hfree(void*, void* p) { free(p); }

struct Graph {
  std::vector<std::vector<uint32_t>> callees;
};

Graph make_graph(std::mt19937_64& rng, uint32_t nfun) {
  Graph g;
  g.callees.resize(nfun + 1);
  std::uniform_real_distribution<double> U(0, 1);
  for (uint32_t f = 1; f <= nfun; ++f) {
    uint32_t fan;
    double x = U(rng);
    if (x < 0.02)
      fan = 50 + rng() % 2950;  // dispatcher
    else if (x < 0.15)
      fan = 0;                  // leaf
    else
      fan = 1 + rng() % 4;
    for (uint32_t i = 0; i < fan; ++i) g.callees[f].push_back(1 + rng() % nfun);
    if (U(rng) < 0.05) g.callees[f].push_back(f);  // simple recursion
  }
  // mutual recursion pairs
  for (uint32_t i = 0; i < nfun / 50; ++i) {
    uint32_t a = 1 + rng() % nfun, b = 1 + rng() % nfun;
    g.callees[a].push_back(b);
    g.callees[b].push_back(a);
  }
  g.callees[0].push_back(1);  // root calls "main" = 1
  if (g.callees[1].empty()) g.callees[1].push_back(2);
  return g;
}

std::vector<uint32_t> make_stream(std::mt19937_64& rng, const Graph& g, size_t n) {
  std::vector<uint32_t> ev;
  ev.reserve(n + 1024);
  std::vector<uint32_t> st{0, 1};  // root, main (main entered before the segment)
  std::uniform_real_distribution<double> U(0, 1);
  std::geometric_distribution<uint32_t> hot(0.35);
  while (ev.size() < n || st.size() > 2) {
    uint32_t f = st.back();
    size_t d = st.size();
    double pcall = d < 8 ? 0.75 : d > 48 ? 0.3 : 0.5;
    if (ev.size() >= n) pcall = 0;  // wind down to main
    const auto& cs = g.callees[f];
    if (!cs.empty() && d < 256 && U(rng) < pcall) {
      uint32_t i = hot(rng);
      uint32_t c = cs[i < cs.size() ? i : rng() % cs.size()];
      ev.push_back(c);
      st.push_back(c);
    } else if (d > 2) {
      ev.push_back(RET);
      st.pop_back();
    }
  }
  return ev;
}

// A program-like stream: every function has a fixed body of call sites
// (callee, repeat count, conditional?) executed in order; callees have
// larger ids (a DAG), plus self-recursive functions with bounded recursion.
// Execution repeats main's body until n events, like a program's main loop.
std::vector<uint32_t> make_program_stream(std::mt19937_64& rng, uint32_t nfun, size_t n) {
  struct Site {
    uint32_t callee;
    uint32_t repeat;
    bool cond;
  };
  std::vector<std::vector<Site>> body(nfun + 1);
  std::vector<bool> recursive(nfun + 1);
  std::uniform_real_distribution<double> U(0, 1);
  for (uint32_t f = 1; f <= nfun; ++f) {
    recursive[f] = U(rng) < 0.03;
    if (f > nfun * 3 / 4 && U(rng) < 0.7) continue;  // leaves
    uint32_t sites = (U(rng) < 0.02) ? 20 + rng() % 200 : 1 + rng() % 6;  // dispatchers
    for (uint32_t i = 0; i < sites && f < nfun; ++i) {
      uint32_t span = std::min<uint32_t>(nfun - f, 1000);
      uint32_t c = f + 1 + rng() % span;
      uint32_t rep = U(rng) < 0.2 ? 2 + rng() % 12 : 1;
      body[f].push_back(Site{c, rep, U(rng) < 0.4});
    }
  }
  std::vector<uint32_t> ev;
  ev.reserve(n + 4096);
  // explicit execution stack: (function, site index, repeats left, recursion left)
  struct Fr {
    uint32_t f, site, rep, rec;
  };
  std::vector<Fr> st;
  st.push_back(Fr{1, 0, 0, 0});
  while (!st.empty()) {
    Fr& fr = st.back();
    if (fr.rec > 0) {  // recursive self call first
      uint32_t r = fr.rec - 1;
      fr.rec = 0;
      ev.push_back(fr.f);
      st.push_back(Fr{fr.f, 0, 0, r});
      continue;
    }
    const auto& b = body[fr.f];
    if (fr.site >= b.size()) {
      if (st.size() == 1) {  // main loops until the budget is spent
        if (ev.size() >= n) break;
        fr.site = 0;
        continue;
      }
      ev.push_back(RET);
      st.pop_back();
      continue;
    }
    const Site& site = b[fr.site];
    if (fr.rep == 0) fr.rep = site.repeat;
    bool run = (!site.cond || U(rng) < 0.5) && ev.size() < n;
    if (--fr.rep == 0) fr.site++;
    if (!run || st.size() > 200) continue;
    uint32_t c = site.callee;
    uint32_t rec = recursive[c] ? static_cast<uint32_t>(rng() % 8) : 0;
    ev.push_back(c);
    st.push_back(Fr{c, 0, 0, rec});
  }
  return ev;
}

std::vector<Ev> encode(const std::vector<uint32_t>& raw, uint64_t* leaves) {
  std::vector<Ev> out;
  uint32_t pops = 0;
  *leaves = 0;
  for (uint32_t e : raw) {
    if (e == RET) {
      ++pops;
      ++*leaves;
    } else {
      out.push_back(Ev{e, pops});
      pops = 0;
    }
  }
  // trailing leaves back to main: a final "pop, enter main's first callee"
  // would change the depth; instead the segment restarts at main anyway.
  return out;
}

// Thread CPU time: the benchmark machine may be shared; CPU time is less
// sensitive to descheduling than wall time (caches are still shared).
double now_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Result {
  double cold_ns, warm_ns, best_ns;
  uint64_t nodes, table_bytes, reserved;
  uint64_t events;
};

// One configuration.  baseline: the same loop over the caller's stack
// without the core (what the caller's own bookkeeping costs).
Result run(const std::vector<Ev>& seg, uint64_t seg_events, uint64_t total, uint32_t k, bool baseline) {
  Allocator al = {nullptr, halloc, hfree};
  Forest f;
  f.init(al, k, 0);
  std::vector<Activation> stack(1024);
  uint64_t sink = 0;
  Result r{};
  uint64_t done = 0;
  bool first = true;
  double t_cold = 0, t_warm = 0, t_best = 1e30;
  uint64_t n_warm = 0;
  while (done < total) {
    size_t sp = 0;
    stack[0] = f.enter_root();
    stack[1] = f.enter(stack[0], 1);  // main
    sp = 1;
    double t0 = now_s();
    if (baseline) {
      for (const Ev& e : seg) {
        sp -= e.pops;
        Activation a = stack[sp];
        a.depth += e.label;
        stack[++sp] = a;
        sink += a.depth;
      }
    } else {
      for (const Ev& e : seg) {
        sp -= e.pops;
        Activation a = f.enter(stack[sp], e.label);
        Forest::canonical(a)->excl += 1;
        stack[++sp] = a;
      }
    }
    double t = now_s() - t0;
    if (first)
      t_cold = t;
    else {
      t_warm += t;
      n_warm += seg_events;
      if (t < t_best) t_best = t;
    }
    first = false;
    done += seg_events;
  }
  r.cold_ns = t_cold * 1e9 / seg_events;
  r.warm_ns = n_warm ? t_warm * 1e9 / n_warm : 0;
  r.best_ns = n_warm ? t_best * 1e9 / seg_events : 0;
  r.nodes = f.node_count();
  r.table_bytes = f.child_table_bytes();
  r.reserved = f.reserved_bytes();
  r.events = done;
  if (sink == 42) printf(" ");
  f.destroy();
  return r;
}

// Loop rolling on a synthetic CFG walk (block sequences; k = infinity).
double run_loops(uint64_t total, std::mt19937_64& rng, uint64_t* nodes) {
  const uint32_t nblocks = 64;
  std::vector<std::vector<uint32_t>> succ(nblocks + 1);
  for (uint32_t b = 1; b <= nblocks; ++b) {
    succ[b].push_back(b < nblocks ? b + 1 : 1);           // fall through
    if (rng() % 3 == 0) succ[b].push_back(1 + rng() % b);  // back edge (loop)
    if (rng() % 4 == 0) succ[b].push_back(1 + rng() % nblocks);
  }
  std::vector<uint32_t> seq(1 << 22);
  uint32_t cur = 1;
  for (auto& s : seq) {
    cur = succ[cur][rng() % succ[cur].size()];
    s = cur;
  }
  Allocator al = {nullptr, halloc, hfree};
  Forest f;
  f.init(al, kInfinity, 0);
  uint64_t done = 0;
  double t0 = now_s();
  while (done < total) {
    Activation a = f.enter_root();
    for (uint32_t b : seq) {
      a = f.enter_loop(a, b);
      a.top->excl += 1;
    }
    done += seq.size();
  }
  double t = now_s() - t0;
  *nodes = f.node_count();
  f.destroy();
  return t * 1e9 / done;
}

}  // namespace

void bench_stream(const char* name, const std::vector<uint32_t>& raw, uint64_t total);

int main(int argc, char** argv) {
  uint64_t total = argc > 1 ? strtoull(argv[1], nullptr, 10) : 100000000ull;
  uint64_t seed = argc > 2 ? strtoull(argv[2], nullptr, 10) : 1;
  std::mt19937_64 rng(seed);
  printf("sizeof(Node) = %zu bytes, sizeof(Activation) = %zu bytes\n", sizeof(Node), sizeof(Activation));
  bench_stream("program-like stream (5000 functions, fixed call sites, loops, recursion)",
               make_program_stream(rng, 5000, size_t(1) << 23), total);
  Graph g = make_graph(rng, 5000);
  bench_stream("random-walk stream (5000 functions, skewed random callees; cache-hostile)",
               make_stream(rng, g, size_t(1) << 23), total);
  uint64_t ln = 0;
  double lns = run_loops(total / 4, rng, &ln);
  printf("\nloop rolling (64-block CFG, k=inf): %.2f ns/block, %llu nodes\n", lns, (unsigned long long)ln);
  return 0;
}

void bench_stream(const char* name, const std::vector<uint32_t>& raw, uint64_t total) {
  uint64_t leaves = 0;
  std::vector<Ev> seg = encode(raw, &leaves);
  uint64_t seg_events = seg.size() + leaves;
  size_t maxd = 0, d = 0;
  double sumd = 0;
  for (uint32_t e : raw) {
    d += e == RET ? -1 : 1;
    if (e != RET) sumd += d;
    if (d > maxd) maxd = d;
  }
  printf("\n%s\nsegment: %llu events (%zu enters, %llu leaves, mean depth at enter %.1f, max %zu), "
         "replayed to >= %llu events\n",
         name, (unsigned long long)seg_events, seg.size(), (unsigned long long)leaves, sumd / seg.size() + 1, maxd + 1,
         (unsigned long long)total);
  printf("%-10s %11s %11s %11s %10s %12s %16s %16s\n", "k", "cold ns/ev", "warm ns/ev", "best ns/ev",
         "nodes", "node B/node", "children B/node", "reserved B/node");
  Result b = run(seg, seg_events, total, 1, true);
  printf("%-10s %11.2f %11.2f %11.2f %10s %12s %16s %16s\n", "baseline", b.cold_ns, b.warm_ns, b.best_ns, "-",
         "-", "-", "-");
  for (uint32_t k : {1u, 2u, 4u, kInfinity}) {
    Result r = run(seg, seg_events, total, k, false);
    char kn[16];
    if (k == kInfinity)
      snprintf(kn, sizeof kn, "inf");
    else
      snprintf(kn, sizeof kn, "%u", k);
    printf("%-10s %11.2f %11.2f %11.2f %10llu %12zu %16.1f %16.1f\n", kn, r.cold_ns, r.warm_ns, r.best_ns,
           (unsigned long long)r.nodes, sizeof(Node), double(r.table_bytes) / r.nodes,
           double(r.reserved) / r.nodes);
  }
}
