// Names for code addresses: functions, source files and lines, objects.
// Everything is interned once, so the rest of the tool compares pointers/ids.
#pragma once
#include "kg_valgrind.h"

namespace kg {

// A function, identified by (object, name, entry): two static functions of
// one name in two source files of one object are two functions, as in
// callgrind (which tells them apart by their files).
struct FnInfo {
   UInt id;              // 0-based, in order of first use
   const HChar* name;    // demangled; "???" when there is no symbol
   UInt object;          // object (ELF file) id
   Addr entry;           // its symbol's address in the object file (the run-time
                         // address less the object's bias); 0 without a symbol
   UInt file;            // source file of its entry
   Bool no_symbol;       // no symbol covers it ("???")
   Bool by_address;      // named by its entry's offset in its object: no symbol, but its
                         // entry is known (an unwind table's FDE, or a call's target)
   Bool traced;          // matches --funcs (all functions without --funcs)
   Bool resolver;        // ld.so's lazy-binding trampoline (_dl_runtime_resolve*)
   Bool context_start;   // where a makecontext coroutine's function returns to
                         // (glibc's __start_context): the coroutine has ended
   Bool context_set;     // glibc's setcontext: from an ended coroutine's
                         // __start_context it goes to uc_link, never back
   Bool stack_segment;   // libgcc's __morestack: -fsplit-stack code moves SP to
                         // a new stack segment there and goes on in it
   UInt array_counters;  // counters its blocks take in a context's counter array (kg_counters.h)
   // A C++ constructor's or destructor's variant in the Itanium ABI (its
   // mangled name's C1, C2, C3, D0, D1, D2): "D0"; "" for other functions.
   // A class's deleting and complete destructors demangle alike.
   HChar structor[3];
};

struct SourceLoc {
   FnInfo* fn;
   UInt file;            // file id; the unknown file is "???"
   UInt line;            // 0 when unknown
};

void debuginfo_init();

// Where instruction `a` comes from (function, file, line).
void source_loc(Addr a, SourceLoc* out);

// Is a the first instruction of a function symbol?
Bool is_function_entry(Addr a);

// For code without symbols: a function named by its entry address
// ("0x401136"), in the same object as `like`.
FnInfo* function_named_by_address(Addr entry, const FnInfo* like);

// The address of a's instruction in its object file (the run-time address
// minus the object's text bias), as callgrind writes instruction positions
// and objdump shows them; a itself outside any object's text.
Addr file_address(Addr a);

// The text section [*lo, *hi) of the object holding a; False outside any
// object (JIT code).
Bool object_text(Addr a, Addr* lo, Addr* hi);

// Code in an object that no symbol covers and that is no PLT stub: a
// stripped library's static function, .init, .fini.
Bool is_unnamed_object_code(Addr a);

// A PLT stub of any kind, which calls pass through: code in .plt, or
// without a symbol that is `[endbr64] [bnd] jmp *slot(%rip)` with the slot
// in a GOT (.plt.sec, .plt.got, and such stubs wherever they are).
Bool is_plt_stub(Addr a);

// A signal restorer, which a handler returns into: `mov $15, %rax;
// syscall` (rt_sigreturn), the C library's (`__restore_rt`) or Valgrind's.
Bool is_sigreturn_code(Addr a);

// fn's name as the profile shows it: qualified by its object, "name
// [object]", when it has no symbol ("0x1130 [prog]", by offset) or when
// functions of other objects have the same name ("memset [libc.so.6]");
// the object's file name, or its path where file names clash. Namesakes in
// one object (static functions) are qualified by their source files,
// "helper [a.c]", and by their entries where the files are the same too,
// "helper [h.h 0x1139]". Code outside any object (JIT code) keeps its
// address alone: "0x4a5b000".
const HChar* display_name(const FnInfo* fn);

// display_name(fn) as it would be now, without fixing the names of the
// functions the profile has not named yet (display_name does, for dumps):
// kgrind_control's status must not change the profile's names. Valid until
// the next call.
const HChar* current_name(const FnInfo* fn);

// Whether activations of fn are traced (see --funcs).
inline Bool fn_traced(const FnInfo* fn) { return fn->traced; }

// After the run: warns about --funcs patterns that matched nothing.
void warn_unmatched_patterns();

UInt intern_file(const HChar* path);
const HChar* file_name(UInt id);
const HChar* object_name(UInt id);
UInt function_count();
UInt file_count();
UInt object_count();
FnInfo* function_by_id(UInt id);

} // namespace kg
