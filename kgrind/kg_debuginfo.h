// Names for code addresses: functions, source files and lines, objects.
// Everything is interned once, so the rest of the tool compares pointers/ids.
#pragma once
#include "kg_objects.h"
#include "kg_valgrind.h"

namespace kg {

// A function, identified by (object, name, entry): two static functions of
// one name in two source files of one object are two functions, as in
// callgrind (which tells them apart by their files).
struct FnInfo {
   UInt id;              // 0-based, in order of first use
   UInt first_levels;    // inline chains of one level in its code so far (kg_inline_chains.cpp)
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
   // A split part of another function (gcc's `f.cold`, `f.cold.1`: the
   // unlikely paths moved out of f's body, which f jumps to and which jump
   // back into f): its code is `whole`'s, found by name in the same object
   // (null: not a part, or its function not seen yet).
   Bool split_part;
   FnInfo* whole;
   // An inlined function (inlined_function): a context level whose code is
   // its physical function's.
   Bool inlined;
   UInt whole_sought;    // function_count() at the last search that found no whole
};

struct SourceLoc {
   FnInfo* fn;
   UInt file;            // file id; the unknown file is "???"
   UInt line;            // 0 when unknown
   const FnInfo* part;   // the split part of fn the code lies in (FnInfo::whole), else null
};

void debuginfo_init();

// Where instruction `a` comes from (function, file, line).
void source_loc(Addr a, SourceLoc* out);

// Is a the first instruction of a function symbol?
Bool is_function_entry(Addr a);

// Has code of Go's runtime.gogo (the goroutine switch, whose symbol is
// runtime.gogo.abi0 in the Go versions whose amd64 ABI keeps g in R14)
// been translated? Then the program runs goroutines, whether Go's runtime
// started its threads (raw clone) or libc did (linked with cgo).
Bool go_runtime_seen();

// For code without symbols: a function named by its entry address
// ("0x401136"), in the same object as `like`.
FnInfo* function_named_by_address(Addr entry, const FnInfo* like);

// The function `name` inlined into code of object `object` (a context level
// of --inline-frames): one per (object, name), named "name [inlined]", its
// file the first one given. The name is qualified where the object's debug
// info gives it (kg_inline_names.h), else the debug info's short name.
FnInfo* inlined_function(const HChar* name, UInt object, UInt file);

// Code in an object that no symbol covers and that is no PLT stub: a
// stripped library's static function, .init, .fini.
Bool is_unnamed_object_code(Addr a);

// A PLT stub of any kind, which calls pass through: code in .plt, or
// without a symbol that jumps through a slot in a GOT (kg_machine_code.h:
// .plt.sec, .plt.got, and such stubs wherever they are).
Bool is_plt_stub(Addr a);

// Whether activations of fn are traced (see --funcs).
inline Bool fn_traced(const FnInfo* fn) { return fn->traced; }

// After the run: warns about --funcs patterns that matched nothing.
void warn_unmatched_patterns();

// C strings in order (a WordFM's key comparison).
Word compare_strings(UWord a, UWord b);

UInt intern_file(const HChar* path);
const HChar* file_name(UInt id);
const HChar* object_name(UInt id);
UInt function_count();
UInt file_count();
UInt object_count();
// Every function by its id: a plain array, since helpers on the hot path
// ask for it (sqlite3 at k=2: the core's XArray index it replaced was 1 %
// of the run).
extern FnInfo** functions_by_id;
inline FnInfo* function_by_id(UInt id) { return functions_by_id[id]; }

} // namespace kg
