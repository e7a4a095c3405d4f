// Kid arrays: a transition's transitions from its frames, by slot, which
// inline IR looks up to push a frame with no helper.

namespace kg {

namespace {

// Kid arrays given up (grown or laid out again), for reuse: free_kids[i]
// lists arrays of 2^i slots, linked through their first slot.
const UInt kKidSizeClasses = 5;   // 1 to kKidSlots slots
static_assert(kKidSlots == 1u << (kKidSizeClasses - 1), "a size class per array size");
Transition** free_kids[kKidSizeClasses];

// The slot mask of tr's kid array (Transition::kid_mask).
UWord kid_mask_of(const Transition* tr) { return kids_grow() ? tr->kid_mask : kKidSlots - 1; }
UInt kid_slots(const Transition* tr) { return (UInt)kid_mask_of(tr) + 1; }
// The slot of tr's kid array for a call of fn_id from site.
UInt kid_slot_in(const Transition* tr, UInt fn_id, Addr site)
{
   return kid_slot(fn_id, site, kid_mask_of(tr), kids_grow() ? tr->kid_shift : kFiniteKidShift);
}

// free_kids' list for arrays of `slots` slots (a power of two).
UInt kids_size_class(UInt slots) { return (UInt)__builtin_ctz(slots); }

Transition** new_kids(UInt slots)
{
   UInt i = kids_size_class(slots);
   Transition** kids = free_kids[i];
   if (kids) free_kids[i] = (Transition**)kids[0];
   else kids = (Transition**)alloc_permanent(slots * sizeof(Transition*));
   for (UInt s = 0; s < slots; s++) kids[s] = &no_transition;
   return kids;
}

void release_kids(Transition** kids, UInt slots)
{
   UInt i = kids_size_class(slots);
   kids[0] = (Transition*)free_kids[i];
   free_kids[i] = kids;
}

using core::KidLayout;

// A kid's key in its array (kid_key), for the layouts (core/kid_layout.h):
// an array grows only when no shift separates its kids (cc1plus at k=inf:
// two kids collide in one in four shifts' slots, and grown arrays were 4.4
// slots for 1.9 kids).
UWord key_of_kid(const Transition* kid) { return kid_key(kid->fn_id, kid->site); }

// In the payload layout, a node's first transition whose one kid
// is the first transition into the node's only child needs no array: the
// node's `kids` word points to that kid (core::only_child_link: the
// child's `calls` word, where its first transition starts when its counts
// are derived: act_offset), so it is the array (cc1plus at k=inf: most of
// 887 k one-kid arrays). Before the node gains a second child, the
// transition gets an array of its own (own_kids_before_new_child).
Transition** node_kids_word(const Transition* tr) { return (Transition**)&ctx_of(child_of(tr))->kids; }
Bool borrows_kids(const Transition* tr) { return tr->in_payload && tr->kids == node_kids_word(tr); }
Bool may_borrow_kids(const Transition* tr, const Transition* kid)
{
   return tr->in_payload && ctx_of(child_of(tr))->nkids == 1 && *node_kids_word(tr) == kid;
}

// Before parent's node gains a child labelled `label` (forest_enter), which
// makes its `kids` word a child table: a first transition borrowing the
// word gets an array of its own.
void own_kids_before_new_child(const ActNode* parent, UInt label)
{
   if (!acts_in_nodes() || !borrows_kids(first_transition(parent))) return;
   if (core::find_child(ctx_of(parent), label)) return;
   Transition* tr = first_transition(parent);
   Transition* kid = tr->kids[0];
   tr->kids = new_kids(1);
   tr->kids[0] = kid;
}

// tr's kids and kid in a new array of layout l.
void lay_out_kids(Transition* tr, Transition* kid, KidLayout l)
{
   UInt old_slots = kid_slots(tr);
   Bool borrowed = borrows_kids(tr);
   Transition** old = tr->kids;
   tr->kids = new_kids(l.slots);
   tr->kid_mask = (UChar)(l.slots - 1);
   tr->kid_shift = (UChar)l.shift;
   for (UInt s = 0; s < old_slots; s++)
      if (old[s] != &no_transition) tr->kids[kid_slot_in(tr, old[s]->fn_id, old[s]->site)] = old[s];
   tr->kids[kid_slot_in(tr, kid->fn_id, kid->site)] = kid;
   if (!borrowed) release_kids(old, old_slots);
}

// A kid that finds its slot in a full array held by another kid takes it
// at every kEvictEvery-th such miss only. Two kids that alternate in one
// slot (a call of a frame and an inlined level entered from it, two
// callees of one site) then miss a little over half the time instead of
// every time, and a kid whose slot holds one that no longer runs gets it
// after a few misses.
const UInt kEvictEvery = 8;
UInt slot_misses;

void take_slot(Transition*& slot, Transition* kid)
{
   if (slot == &no_transition || ++slot_misses % kEvictEvery == 0) slot = kid;
}

// kid joins tr's kid array, whose slot for it is another kid's: while the
// array can grow, in a layout that separates them all (else kids that no
// shift separates: in kKidSlots slots, fullest_layout); in kKidSlots slots it may take
// the slot of the kid there (take_slot), with no search (the two may alternate: cppvirt's
// hot loops call 11 kids of one frame that no shift separates in 16
// slots, and searching at every miss made k=inf 40 % slower).
void add_colliding_kid(Transition* tr, Transition* kid)
{
   UInt slots = kid_slots(tr);
   if (slots == kKidSlots) {
      take_slot(tr->kids[kid_slot_in(tr, kid->fn_id, kid->site)], kid);
      return;
   }
   const Transition* kids[kKidSlots + 1];
   UInt n = 0;
   for (UInt s = 0; s < slots; s++)
      if (tr->kids[s] != &no_transition) kids[n++] = tr->kids[s];
   kids[n++] = kid;
   KidLayout l;
   if (!core::separating_layout(kids, n, slots, key_of_kid, &l)) l = core::fullest_layout(kids, n, key_of_kid);
   lay_out_kids(tr, kid, l);
}

// A transition's kids are the transitions from its child activation (they
// are keyed by parent activation, call site and callee), whichever
// transition entered that activation: at finite k, where arrays never grow,
// the transitions into one activation share one array, kept in the
// activation (cc1plus at k=2: 72 k arrays instead of 134 k, 7.4 MB less peak
// RSS, docs/design/ksf.md, "Kid arrays"; in the ActNode's unused own_active rather
// than an index by child, 1.6 MB less).
Transition** shared_kids(ActNode* child)
{
   tl_assert(!kids_grow());
   if (!child->shared_kids) child->shared_kids = new_kids(kKidSlots);
   return child->shared_kids;
}

// kid becomes top's kid in its slot: at k = inf, where another kid has that
// slot, the array is laid out again (add_colliding_kid); at finite k kid
// may take it (take_slot).
void add_kid(Transition* top, Transition* kid)
{
   if (top->kids == no_kids && may_borrow_kids(top, kid)) {
      top->kids = node_kids_word(top);
      top->kid_mask = 0;
      return;
   }
   if (top->kids == no_kids) {
      UInt slots = kids_grow() ? 1 : kKidSlots;
      top->kids = kids_grow() || !child_of(top) ? new_kids(slots) : shared_kids(child_of(top));
      if (kids_grow()) top->kid_mask = (UChar)(slots - 1);
   }
   Transition*& slot = top->kids[kid_slot_in(top, kid->fn_id, kid->site)];
   if (!kids_grow()) take_slot(slot, kid);
   else if (slot == &no_transition) slot = kid;
   else add_colliding_kid(top, kid);
}

// The transition into traced fn at call_site (0: not known) from a frame
// of transition `from`: from's kid in their slot if that is the one, else
// the thread's table's, which becomes the kid (entry(): fn's first
// instruction, activation_transition's, asked only then).
template <typename Entry>
Transition* kid_transition(ThreadState* t, Transition* from, FnInfo* fn, Addr call_site, Entry entry)
{
   Transition* kid = from->kids[kid_slot_in(from, fn->id, call_site)];
   if (kid->fn_id == fn->id && kid->site == call_site) return kid;
   kid = activation_transition(t, child_of(from), fn, entry(), call_site);
   add_kid(from, kid);
   return kid;
}

// The transition into traced fn from the top frame at call_site (0: not
// known), where inline IR missed it (a full stack, or not entered by a
// call).
Transition* entered_transition(ThreadState* t, FnInfo* fn, BlockInfo* blk, Addr call_site)
{
   return kid_transition(t, kg_now->top->tr, fn, call_site, [blk] { return blk->addr; });
}

// The transition into inlined level `chain` from a frame of transition
// `from` (whose level is chain's parent, or its physical function): from's
// kid in the level's slot when its site is the level's (a level's site
// names its function, and its slot is its site's alone: kid_key; as inline
// IR's push_level takes it), else kid_transition's (entry: the address of
// the code that enters it).
Transition* level_transition_from(ThreadState* t, Transition* from, UInt chain, Addr entry)
{
   Addr site = inline_site(chain);
   const InlineChain& c = inline_chain(chain);
   Transition* kid = from->kids[kid_slot_in(from, c.fn->id, site)];
   if (kid->site == site) return kid;
   return kid_transition(t, from, c.fn, site, [entry] { return entry; });
}

// The same from the top frame, entered by blk's code.
Transition* level_transition(ThreadState* t, UInt chain, BlockInfo* blk)
{
   return level_transition_from(t, kg_now->top->tr, chain, blk->addr);
}

} // namespace

} // namespace kg
