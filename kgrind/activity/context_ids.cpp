// Context ids (KGRIND_CURRENT_CONTEXT): stable ids of k-contexts.

namespace kg {

namespace {
struct ContextId {
   const void* a;     // ForestNode*: a canonical k-SF node
   const void* b;     // the thread's serial (0: threads joined)
   UWord id;
};
PairMap<ContextId> context_ids;
UWord n_context_ids = 0;
} // namespace

UWord current_context_id(ThreadId tid)
{
   switch_to(tid);
   ForestNode* node = ctx_of(child_of(kg_now->top->tr));
   UWord serial = clo.join_threads ? 0 : current->serial;
   ContextId* c = context_ids.get(node, (const void*)serial);
   if (!c->id) c->id = ++n_context_ids;
   return c->id;
}

void for_each_context_id(void (*f)(UWord id, UInt thread, const ForestNode* node, void* arg), void* arg)
{
   context_ids.for_each([&](ContextId* c) { f(c->id, (UInt)(UWord)c->b, (const ForestNode*)c->a, arg); });
}

} // namespace kg
