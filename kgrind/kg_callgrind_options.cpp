#include "kg_callgrind_options.h"

namespace kg {

namespace {

struct ForeignOption {
   const HChar* name;      // without "=" and value
   Bool numbered;          // also name<n> (--separate-callers2=f)
   const HChar* instead;   // what kgrind does instead
};

const ForeignOption kCallgrindOptions[] = {
   { "--callgrind-out-file", False, "kgrind's output file is --kgrind-out-file=<file> (%p and %q{VAR} as callgrind's)" },
   { "--separate-callers", True, "kgrind's contexts are call chains already: --k=<n> keeps n callers, --view-k=<n> "
                                 "the callgrind body's (names f'g'h as callgrind's)" },
   { "--separate-recs", True, "kgrind rolls simple recursion into one context; --unroll-simple-rec=yes keeps each level" },
   { "--skip-direct-rec", False, "kgrind rolls direct recursion into one context; --unroll-simple-rec=yes keeps each level" },
   { "--skip-plt", False, "kgrind always passes PLT stubs through: the caller calls the target and the stub's "
                          "instructions count in the caller" },
   { "--combine-dumps", False, "kgrind writes each dump to its own file (<file>.<n>); kgrind_annotate joins the "
                               "files given together" },
   { "--compress-strings", False, "kgrind always compresses names as callgrind does by default (every reader "
                                  "takes them): drop it" },
   { "--compress-pos", False, "kgrind always writes relative positions as callgrind does by default: drop it" },
   { "--dump-bb", False, "kgrind's positions are lines, or instructions with --dump-instr=yes; "
                         "--mode=intra|inter profiles basic blocks" },
   { "--dump-bbs", False, "kgrind's positions are lines, or instructions with --dump-instr=yes; "
                          "--mode=intra|inter profiles basic blocks" },
   { "--collect-alloc", False, "kgrind does not count allocations" },
   { "--fn-group", True, "kgrind has no function groups; --funcs and --fn-skip select functions" },
   { "--mangle-names", False, "kgrind writes demangled names" },
   { "--simulate-cache", False, "the old name of --cache-sim: use --cache-sim=yes" },
   { "--simulate-wb", False, "kgrind's cache simulation (--cache-sim=yes) has no write-back events" },
   { "--simulate-hwpref", False, "kgrind's cache simulation (--cache-sim=yes) has no hardware prefetch" },
   { "--cacheuse", False, "kgrind's cache simulation (--cache-sim=yes) has no cache use events" },
   { "--ct-verbose", True, "callgrind's debugging output; kgrind's debugging options are in --help-debug" },
   { "--ct-vstart", False, "callgrind's debugging output; kgrind's debugging options are in --help-debug" },
};

// arg names `o`: "<name>", "<name>=...", or for a numbered option
// "<name><digits>=...".
Bool names(const HChar* arg, const ForeignOption& o)
{
   SizeT n = VG_(strlen)(o.name);
   if (VG_(strncmp)(arg, o.name, n) != 0) return False;
   const HChar* rest = arg + n;
   if (o.numbered)
      while (*rest >= '0' && *rest <= '9') rest++;
   return *rest == '\0' || *rest == '=';
}

} // namespace

Bool refuse_callgrind_option(const HChar* arg)
{
   for (const ForeignOption& o : kCallgrindOptions)
      if (names(arg, o)) VG_(fmsg_bad_option)(arg, "%s is callgrind's; %s\n", o.name, o.instead);
   return False;
}

} // namespace kg
