#include "kg_options.h"
#include "kg_runtime.h"

namespace kg {

Options clo = {
   "kgrind.out.%p",
   2,
   False,
   False,
   0,
   {},
};

namespace {

Bool pattern_matched[kMaxFuncPatterns];

// "--k=<n|inf>": 0 .. 1000 or inf.
void parse_k(const HChar* arg, const HChar* value)
{
   if (VG_STREQ(value, "inf")) { clo.k = kInfiniteK; return; }
   HChar* end = nullptr;
   Long k = VG_(strtoll10)(value, &end);
   if (value[0] == '\0' || *end != '\0' || k < 0 || k > 1000)
      VG_(fmsg_bad_option)(arg, "--k takes a whole number from 0 to 1000, or 'inf'\n");
   clo.k = (UInt)k;
}

// "--funcs=a,b*,c": comma-separated globs (* and ?), matched against demangled names.
void parse_funcs(const HChar* arg, const HChar* value)
{
   if (value[0] == '\0') VG_(fmsg_bad_option)(arg, "--funcs needs at least one name or pattern\n");
   HChar* copy = kg::strdup(value);
   HChar* start = copy;
   for (HChar* p = copy;; p++) {
      if (*p != ',' && *p != '\0') continue;
      Bool last = *p == '\0';
      *p = '\0';
      if (start[0] == '\0')
         VG_(fmsg_bad_option)(arg, "--funcs has an empty pattern (two commas, or a comma at an end)\n");
      if (clo.n_func_patterns == kMaxFuncPatterns)
         VG_(fmsg_bad_option)(arg, "--funcs takes at most %u patterns\n", kMaxFuncPatterns);
      clo.func_patterns[clo.n_func_patterns++] = start;
      if (last) break;
      start = p + 1;
   }
}

} // namespace

Bool process_option(const HChar* arg)
{
   const HChar* value;
   if VG_STR_CLO(arg, "--kgrind-out-file", clo.out_file) {
      if (clo.out_file[0] == '\0')
         VG_(fmsg_bad_option)(arg, "the output file name is empty\n");
   }
   else if VG_STR_CLO(arg, "--k", value) parse_k(arg, value);
   else if VG_STR_CLO(arg, "--funcs", value) parse_funcs(arg, value);
   else if VG_BOOL_CLO(arg, "--join-threads", clo.join_threads) {}
   else if VG_BOOL_CLO(arg, "--unroll-simple-rec", clo.unroll_simple_rec) {}
   else if (VG_STREQN(9, arg, "--kgrind-")) {
      // The core's message would only say "Unrecognised option"; name ours.
      VG_(fmsg_bad_option)(arg, "unknown kgrind option (see --help)\n");
   }
   else {
      return False;
   }
   return True;
}

void print_usage()
{
   VG_(printf)(
"    --k=<n|inf>               calling-context depth: callers kept per context [2]\n"
"                              (0 = vertex profile, 1 = edge profile, inf = CCT)\n"
"    --funcs=<glob>[,<glob>]   trace only matching functions (demangled names,\n"
"                              * and ? wildcards); others pass their cost to the\n"
"                              nearest traced caller [all]\n"
"    --join-threads=no|yes     one forest for all threads [no]\n"
"    --unroll-simple-rec=no|yes  keep each level of simple recursion [no: rolled]\n"
"    --kgrind-out-file=<file>  output file name [kgrind.out.%%p]\n"
"                              (%%p is the pid, %%q{VAR} an environment variable)\n"
   );
}

void print_debug_usage()
{
   VG_(printf)("    (none)\n");
}

Bool name_is_traced(const HChar* name)
{
   if (clo.n_func_patterns == 0) return True;
   Bool traced = False;
   for (UInt i = 0; i < clo.n_func_patterns; i++) {
      if (VG_(string_match)(clo.func_patterns[i], name)) {
         pattern_matched[i] = True;
         traced = True;
      }
   }
   return traced;
}

UInt unmatched_patterns(const HChar** out, UInt max)
{
   UInt n = 0;
   for (UInt i = 0; i < clo.n_func_patterns && n < max; i++)
      if (!pattern_matched[i]) out[n++] = clo.func_patterns[i];
   return n;
}

} // namespace kg
