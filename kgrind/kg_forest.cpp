#include "kg_forest.h"
#include "kg_options.h"
#include "kg_runtime.h"

namespace kg {

namespace {

void* core_alloc(void*, size_t n) { return kg::alloc(n, "kg.forest"); }
void core_free(void*, void* p) { kg::release(p); }

core::Allocator valgrind_allocator()
{
   core::Allocator al;
   al.ctx = nullptr;
   al.alloc = core_alloc;
   al.free = core_free;
   return al;
}

} // namespace

Forest* forest_new(UInt k, UInt payload_bytes, Bool small)
{
   Forest* f = (Forest*)alloc_zeroed(sizeof(Forest));
   UInt flags = clo.unroll_simple_rec ? 0u : (UInt)core::Forest::kRollSimpleRecursion;
   if (small) flags |= core::Forest::kSmallPool;
   f->sf.init(valgrind_allocator(), k, kRootLabel, flags, payload_bytes);
   return f;
}

void forest_compact(Forest* f)
{
   f->sf.compact_roots();
}

void forest_reset(Forest* f)
{
   core::visit_preorder(f->sf, [](const core::VisitInfo& v) {
      core::Node* n = const_cast<core::Node*>(v.node);
      n->calls = 0;
      n->excl = 0;
      n->incl = 0;
   });
}

void forest_join(Forest* dst, const Forest* src)
{
   core::join(dst->sf, src->sf);
}

} // namespace kg
