#include "kg_callgrind_body.h"
#include "kg_context_names.h"
#include "kg_events.h"
#include "kg_inline_chains.h"
#include "kg_runtime.h"

namespace kg {

namespace {

UInt context_file(const ForestNode* n)
{
   FnInfo* fn = label_function(n->label);
   return fn ? fn->file : 0;
}

UInt context_object(const ForestNode* n)
{
   FnInfo* fn = label_function(n->label);
   return fn ? fn->object : 0;
}

UWord first_edge(const Writer& w, const ForestNode* caller)
{
   UWord lo = 0, hi = w.n_edges;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if ((UWord)w.edges[mid]->a < (UWord)caller) lo = mid + 1;
      else hi = mid;
   }
   return lo;
}

void write_file_switch(Writer& w, UInt* current, UInt file, UInt home)
{
   if (file == *current) return;
   *current = file;
   w.files.emit(w.out, file == home ? "fe" : "fi", file, file_name(file));
   w.last_line_known = False;
}

// A position: "line", or "0xaddr line" with positions: instr line (the
// address in the object file, where KCachegrind's objdump finds it).
void write_position(Writer& w, Addr addr, UInt line)
{
   if (w.instr) w.out.printf("0x%lx %u", (unsigned long)file_address(addr), line);
   else w.out.printf("%u", line);
}

// One subposition relative to the previous one: "+3", "-12", "*" (same).
void write_relative(FileWriter& out, ULong value, ULong last)
{
   if (value == last) out.put_char('*');
   else if (value > last) out.printf("+%llu", value - last);
   else out.printf("-%llu", last - value);
}

// The position of a cost line, relative to the previous cost line's as
// callgrind compresses positions (both subpositions with positions: instr
// line); the first one after fn=/fl=/fi=/fe= is absolute. Line numbers of
// big sources (sqlite3.c has 250 k lines) shrink from 5-6 characters to
// 1-2, instruction addresses from 6-10 to 1-3.
void write_cost_position(Writer& w, Addr addr, UInt line)
{
   Addr at = w.instr ? file_address(addr) : 0;
   if (!w.last_line_known) write_position(w, addr, line);
   else {
      if (w.instr) {
         write_relative(w.out, at, w.last_addr);
         w.out.put_char(' ');
      }
      write_relative(w.out, line, w.last_line);
   }
   w.last_addr = at;
   w.last_line = line;
   w.last_line_known = True;
}

// after_costs: the caller's cost lines came right before its calls.
void write_calls(Writer& w, const ForestNode* caller, UInt* current_file, UInt home, Bool after_costs)
{
   // gprof2dot keeps a cob= until the next cost line of the caller's own
   // (not for one call, as the format says): a callee in the caller's
   // object after one in another gets cob= too.
   UInt cob_in_force = after_costs ? w.last_object : kNoObject;
   for (UWord e = first_edge(w, caller); e < w.n_edges && w.edges[e]->a == caller; e++) {
      const CallEdge* edge = w.edges[e];
      SourceLoc site = { nullptr, 0, 0 };
      Addr site_addr = edge->call_site;
      if (site_addr) call_site_loc(site_addr, &site);
      // An inlined level's position: the instruction where it was first
      // entered.
      if (is_inline_site(site_addr)) site_addr = edge->target;
      write_file_switch(w, current_file, site.fn ? site.file : home, home);
      const ForestNode* callee = (const ForestNode*)edge->b;
      // Readers take the object and file in force (fi= included) when cob=
      // or cfi= is missing, and bind a function to the first ones they see
      // it with: written whenever the callee's differ, as callgrind does.
      UInt callee_object = context_object(callee);
      if (callee_object != w.last_object || callee_object != cob_in_force) {
         w.objects.emit(w.out, "cob", callee_object, object_name(callee_object));
         cob_in_force = callee_object;
      }
      UInt callee_file = context_file(callee);
      if (callee_file != *current_file) w.files.emit(w.out, "cfi", callee_file, file_name(callee_file));
      write_context_ref(w, "cfn", callee);
      // The target position: the callee's first instruction (line 0 without
      // instruction positions, as before).
      SourceLoc target = { nullptr, 0, 0 };
      if (w.instr && edge->target) source_loc(edge->target, &target);
      w.out.printf("calls=%llu ", edge->calls);
      write_position(w, edge->target, target.line);
      w.out.put_char('\n');
      write_cost_position(w, site_addr, site.line);
      w.out.printf(" %llu", edge->incl);
      if (w.n_events && edge->incl_events) write_event_costs(w.out, edge->incl_events, w.n_events);
      w.out.put_char('\n');
   }
}

UWord first_jump(const Writer& w, const ForestNode* ctx)
{
   UWord lo = 0, hi = w.n_jumps;
   while (lo < hi) {
      UWord mid = (lo + hi) / 2;
      if ((UWord)w.jumps[mid].ctx < (UWord)ctx) lo = mid + 1;
      else hi = mid;
   }
   return lo;
}

// callgrind's --collect-jumps lines: "jcnd=<taken>/<executed> <target>" or
// "jump=<count> <target>", then the jump's own position; jfi= when the target
// is in another file than the one in force.
void write_jump(Writer& w, const ContextJump& j, UInt current_file)
{
   SourceLoc to;
   source_loc(j.to, &to);
   if (to.fn && to.file != current_file) w.files.emit(w.out, "jfi", to.file, file_name(to.file));
   if (j.cond) w.out.printf("jcnd=%llu/%llu ", j.taken, j.executed);
   else w.out.printf("jump=%llu ", j.taken);
   write_position(w, j.to, to.line);     // targets stay absolute
   w.out.put_char('\n');
   write_cost_position(w, j.from, j.from_line->line);
   w.out.put_char('\n');
}

// One context: its exclusive cost per line (or per instruction, each
// followed by its jumps), then its calls.
void write_context(Writer& w, const ForestNode* n)
{
   const ContextLineCost* costs;
   UWord n_costs = w.costs.costs_of(n, &costs);
   Bool has_costs = n_costs > 0;
   Bool has_calls = first_edge(w, n) < w.n_edges && w.edges[first_edge(w, n)]->a == n;
   if (!has_costs && !has_calls) return;
   UInt home = context_file(n);
   UInt object = context_object(n);
   // ob= and fl= stay in force across fn= lines: write them on change only.
   if (object != w.last_object) w.objects.emit(w.out, "ob", object, object_name(object));
   if (home != w.last_file) w.files.emit(w.out, "fl", home, file_name(home));
   w.last_object = object;
   write_context_ref(w, "fn", n);
   w.last_line_known = False;
   UInt current = home;
   // The jumps from each cost's instruction, or line (positions: line;
   // both sorted alike: order_jumps_by_line).
   UWord j = first_jump(w, n);
   for (UWord c = 0; c < n_costs; c++) {
      const ContextLineCost& cost = costs[c];
      write_file_switch(w, &current, cost.line->file, home);
      write_cost_position(w, cost.addr, cost.line->line);
      w.out.printf(" %llu", cost.ir);
      if (w.n_events) write_event_costs(w.out, w.costs.events_of(c), w.n_events);
      w.out.put_char('\n');
      auto before = [&](const ContextJump& x) {
         return w.instr ? x.from < cost.addr : compare_lines((UWord)x.from_line, (UWord)cost.line) < 0;
      };
      auto at = [&](const ContextJump& x) {
         return w.instr ? x.from == cost.addr : compare_lines((UWord)x.from_line, (UWord)cost.line) == 0;
      };
      for (; j < w.n_jumps && w.jumps[j].ctx == n && before(w.jumps[j]); j++) {}
      for (; j < w.n_jumps && w.jumps[j].ctx == n && at(w.jumps[j]); j++) write_jump(w, w.jumps[j], current);
   }
   write_calls(w, n, &current, home, has_costs);
   // After fi=/fe= lines the next context states its file again. No blank
   // line between contexts: readers need none (3.9 KB of sqlite3's profile).
   w.last_file = current == home ? home : kNoFile;
}

Int compare_body_order(const void* pa, const void* pb)
{
   const ContextSlot* a = *(const ContextSlot* const*)pa;
   const ContextSlot* b = *(const ContextSlot* const*)pb;
   const FnInfo* fa = label_function(a->node->label);
   const FnInfo* fb = label_function(b->node->label);
   UInt oa = fa ? fa->object : 0, ob = fb ? fb->object : 0;
   if (oa != ob) return oa < ob ? -1 : 1;
   UInt la = fa ? fa->file : 0, lb = fb ? fb->file : 0;
   if (la != lb) return la < lb ? -1 : 1;
   return a->name_id < b->name_id ? -1 : a->name_id > b->name_id ? 1 : 0;
}

// The contexts in body order: grouped by object and file, as callgrind
// writes them (fewer ob=/fl= lines), then in forest pre-order.
UWord body_order(const Writer& w, const ContextSlot** order)
{
   UWord n = 0;
   for (UWord i = 0; i < w.n_slots; i++)
      if (rep_of(w, w.slots[i]) == w.slots[i].node) order[n++] = &w.slots[i];
   VG_(ssort)(order, n, sizeof(ContextSlot*), compare_body_order);
   return n;
}

} // namespace

void write_contexts(Writer& w)
{
   const ContextSlot** order = (const ContextSlot**)kg::alloc((w.n_names + 1) * sizeof(ContextSlot*));
   UWord n = body_order(w, order);
   w.out.put("\n");
   for (UWord i = 0; i < n; i++) write_context(w, order[i]->node);
   kg::release(order);
}

} // namespace kg
