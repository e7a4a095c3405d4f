// A thread's stacks: the memory each lies in, the registered stacks, and
// the frames' storage.

namespace kg {

// The memory a stack runs in now: its innermost segment's, else its own.
static Addr memory_lo(const ShadowStack* s) { return s->segment ? s->segment->lo : s->lo; }
static Addr memory_hi(const ShadowStack* s) { return s->segment ? s->segment->hi : s->hi; }

// Stacks the program registered (VALGRIND_STACK_REGISTER): sorted by lo,
// disjoint (a registration ends those it overlaps: their memory was freed,
// and the core does not tell tools of VALGRIND_STACK_DEREGISTER).
struct StackRange {
   Addr lo, hi;
};
static StackRange* registered_stacks;
static UInt n_registered_stacks, registered_stacks_cap;

// The registered stack sp lies in, if any.
static const StackRange* registered_stack_at(Addr sp)
{
   UInt lo = 0, hi = n_registered_stacks;   // the first range above sp is in [lo, hi]
   while (lo < hi) {
      UInt mid = (lo + hi) / 2;
      if (registered_stacks[mid].lo <= sp) lo = mid + 1;
      else hi = mid;
   }
   if (lo == 0 || registered_stacks[lo - 1].hi < sp) return nullptr;
   return &registered_stacks[lo - 1];
}

// Is sp in a registered stack that is not s's (nor one holding all of s)?
// A heap mapping, or a thread's stack, may hold registered coroutine stacks:
// their memory is not the mapping's stack's.
static Bool in_other_registered_stack(const ShadowStack* s, Addr sp)
{
   if (!n_registered_stacks || s->segment) return False;
   const StackRange* r = registered_stack_at(sp);
   return r && !(r->lo <= s->lo && r->hi >= s->hi);
}

static Bool in_memory_of(const ShadowStack* s, Addr sp)
{
   return sp >= memory_lo(s) && sp <= memory_hi(s) && !in_other_registered_stack(s, sp);
}

namespace {

// base[0] is a sentinel below the stack's base frame (inline pops read the
// frame below the top) and base[cap + 1] a spare slot above the last usable
// frame (inline pushes write the next frame before checking it is usable).
void set_frames(ShadowStack* s, Frame* base, UInt cap)
{
   s->frames = base + 1;
   s->cap = cap;
}

// Usable frames of a new thread's stack, and of a new coroutine's: a
// program may leave thousands of coroutines suspended, live or dead (their
// memory freed unseen), and a coroutine's stack is often shallow (64
// frames: 1.6 KB a coroutine; 14: 384 bytes). Stacks grow when full.
const UInt kThreadFrames = 64;
const UInt kCoroutineFrames = 14;

// A stack with only its base frame, whose activation is root's; its sentinel
// has an SP no frame can be popped to.
ShadowStack* new_shadow_stack(Transition* root, Addr lo, Addr hi, UInt cap)
{
   ShadowStack* s = (ShadowStack*)alloc_zeroed(sizeof(ShadowStack));
   set_frames(s, (Frame*)kg::alloc((cap + 2) * sizeof(Frame)), cap);
   s->frames[-1] = { 0, 0, root };
   s->frames[0] = { ~(Addr)0, kg_now->ir, root };
   s->top = s->frames;
   s->lo = lo;
   s->hi = hi;
   return s;
}

// The memory of the stack a thread starts on: Valgrind's record of it, or
// else the mapping SP lies in.
void own_stack_memory(ThreadId tid, Addr* lo, Addr* hi)
{
   Addr max = VG_(thread_get_stack_max)(tid);
   SizeT size = VG_(thread_get_stack_size)(tid);
   if (max && size && max > size) {
      *lo = max - size + 1;
      *hi = max;
      return;
   }
   *lo = 0;
   *hi = ~(Addr)0;
}

// The memory of a stack SP switched to: the registered stack it lies in
// (True), else its mapping.
Bool stack_memory_at(Addr sp, Addr* lo, Addr* hi)
{
   if (const StackRange* r = n_registered_stacks ? registered_stack_at(sp) : nullptr) {
      *lo = r->lo;
      *hi = r->hi;
      return True;
   }
   const NSegment* seg = VG_(am_find_nsegment)(sp);
   if (seg) {
      *lo = seg->start;
      *hi = seg->end;
   } else {
      *lo = *hi = sp;
   }
   return False;
}

// Is s a coroutine stack tied to the mapping it lies in (not registered,
// not the thread's own)? Other coroutines' stacks may lie in that mapping
// (malloc'd stacks, stacks carved from one mmap), so SP moving within it
// may be a switch, which only what the program does tells from a call or
// a return.
Bool in_shared_mapping(const ThreadState* t, const ShadowStack* s)
{
   return s != t->own && !s->registered && !s->segment;
}

// The return address in the stack slot at sp, if the client may read it
// (else 0).
Addr return_address_at(Addr sp)
{
   if (!VG_(am_is_valid_for_client)(sp, sizeof(Addr), VKI_PROT_READ)) return 0;
   return *(const Addr*)sp;
}

// A stack that will have no frame pushed again but its base (its thread
// ended, the base frame is still settled and restarted): its frames' memory
// cut to the base frame's, which is where its top stays.
void shrink_to_base(ShadowStack* s)
{
   tl_assert(s->top == s->frames);
   if (s->cap <= 1) return;
   Frame* base = (Frame*)kg::alloc(3 * sizeof(Frame));
   base[0] = s->frames[-1];
   base[1] = s->frames[0];
   kg::release(s->frames - 1);
   set_frames(s, base, 1);
   s->top = s->frames;
}

void release_stack(ShadowStack* s)
{
   kg::release(s->frames - 1);
   kg::release(s);
}

// Drops the registrations that overlap [lo, hi] (they lie side by side in
// the sorted array); returns where a range [lo, hi] goes.
UInt forget_registered_stacks(Addr lo, Addr hi)
{
   UInt first = 0, end = n_registered_stacks;   // the first range ending above lo
   while (first < end) {
      UInt mid = (first + end) / 2;
      if (registered_stacks[mid].hi <= lo) first = mid + 1;
      else end = mid;
   }
   end = first;
   while (end < n_registered_stacks && registered_stacks[end].lo < hi) end++;
   VG_(memmove)(registered_stacks + first, registered_stacks + end,
                (n_registered_stacks - end) * sizeof(StackRange));
   n_registered_stacks -= end - first;
   return first;
}

} // namespace

} // namespace kg
