// Context ids (KGRIND_CURRENT_CONTEXT, KGRIND_CURRENT_SITE_CONTEXT): stable
// ids of k-contexts, and of k-contexts with their levels' call sites.

namespace kg {

namespace {
struct ContextId {
   const void* a;     // ForestNode*: a canonical k-SF node
   const void* b;     // the thread's serial (0: threads joined)
   UWord id;
};
PairMap<ContextId> context_ids;
UWord n_context_ids = 0;   // one numbering for both kinds of ids

// A site context's chain of call sites, interned one site at a time from
// the innermost level's out: the chain one site shorter (or its start, for
// the first site) and the site, so that equal chains are one entry. The
// entry of a chain that a request ended on carries its id.
struct SiteChain {
   const void* a;     // the chain one site shorter (a SiteChain*), or the start's
   const void* b;     // Addr: the outermost site of the chain
   UWord id;          // 0: no request ended here
   const ForestNode* node;
   UInt thread;
   UInt n_sites;
   UInt* lines;       // the sites' lines, innermost first (0: not known)
};
// The start of a site chain: (k-SF node, thread serial) -> an entry whose
// address the first site's chain is keyed by.
PairMap<ContextId> site_starts;
PairMap<SiteChain> site_chains;

// Where the shadow stack and a context disagree (a bug): said once.
void mismatch(UInt level)
{
   static Bool told = False;
   if (!told) VG_(umsg)("kgrind: KGRIND_CURRENT_SITE_CONTEXT: the shadow stack does not match the context at level %u;"
                        " its call sites from there on are left unknown\n", level);
   told = True;
}

// The frame of the outermost activation of a context level of function
// label (k-SF label: the function's id + 1), at or below f: the level's
// frames are an activation and the rolled ones (simple recursion) above it;
// frames of other kinds (untraced functions, signal fences, stack segments)
// belong to no level. nullptr when the frames do not match.
const Frame* level_frame(const Frame* f, const Frame* base, UInt label)
{
   auto activation_at_or_below = [base](const Frame* g) {
      while (g > base && g->tr->kind != kActivation) g--;
      return g > base ? g : nullptr;
   };
   f = activation_at_or_below(f);
   if (!f || f->tr->fn_id + 1 != label) return nullptr;
   while (rolled(f->tr)) {
      f = activation_at_or_below(f - 1);
      if (!f || f->tr->fn_id + 1 != label) return nullptr;
   }
   return f;
}
} // namespace

UWord current_context_id(ThreadId tid)
{
   switch_to(tid);
   push_running_levels(current);   // asked from inlined code
   ForestNode* node = ctx_of(child_of(kg_now->top->tr));
   UWord serial = clo.join_threads ? 0 : current->serial;
   ContextId* c = context_ids.get(node, (const void*)serial);
   if (!c->id) c->id = ++n_context_ids;
   return c->id;
}

// The context's levels are the k-SF node's root path, up to k + 1 levels
// (kg_ksf_records.cpp, for_context_nodes); level i's call site is the site
// of its outermost frame's transition, the call from level i + 1. Read
// from the shadow stack as it is now (longjmp, exceptions and signal
// returns already popped what they left).
UWord current_site_context_id(ThreadId tid)
{
   switch_to(tid);
   push_running_levels(current);
   ForestNode* node = ctx_of(child_of(kg_now->top->tr));
   UWord serial = clo.join_threads ? 0 : current->serial;
   const ContextId* start = site_starts.get(node, (const void*)serial);
   const Frame* base = base_frame(current);
   const Frame* f = kg_now->top;
   SiteChain* c = nullptr;
   UInt n = 0;
   for (const ForestNode* level = node; level->parent && (clo.k == kInfiniteK || n < clo.k); level = level->parent, n++) {
      if (f) {
         f = level_frame(f, base, level->label);
         if (!f) mismatch(n);
      }
      Addr site = f ? f->tr->site : 0;
      c = site_chains.get(c ? (const void*)c : start, (const void*)site);
      if (f) f--;
   }
   // A context of one level: the chain of no site (its node's levels are
   // always one, so no chain of one site has the same key).
   if (!c) c = site_chains.get(start, nullptr);
   if (c->id) return c->id;
   c->id = ++n_context_ids;
   c->node = node;
   c->thread = (UInt)serial;
   c->n_sites = n;
   c->lines = (UInt*)alloc_permanent((n ? n : 1) * sizeof(UInt));
   const SiteChain* s = c;
   for (UInt i = n; i > 0; i--) {
      SourceLoc loc = { nullptr, 0, 0, nullptr };
      if (s->b) call_site_loc((Addr)s->b, &loc);
      c->lines[i - 1] = loc.line;
      s = (const SiteChain*)s->a;   // the start, after the first site
   }
   return c->id;
}

void for_each_context_id(void (*f)(const ContextIdInfo& c, void* arg), void* arg)
{
   context_ids.for_each([&](ContextId* c) {
      f({ c->id, (UInt)(UWord)c->b, (const ForestNode*)c->a, False, 0, nullptr }, arg);
   });
   site_chains.for_each([&](SiteChain* c) {
      if (c->id) f({ c->id, c->thread, c->node, True, c->n_sites, c->lines }, arg);
   });
}

} // namespace kg
