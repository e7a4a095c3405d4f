#include "kg_options.h"

namespace kg {

Options clo = {
   "kgrind.out.%p",
};

Bool process_option(const HChar* arg)
{
   if VG_STR_CLO(arg, "--kgrind-out-file", clo.out_file) {
      if (clo.out_file[0] == '\0')
         VG_(fmsg_bad_option)(arg, "the output file name is empty\n");
   }
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
"    --kgrind-out-file=<file>  output file name [kgrind.out.%%p]\n"
"                              (%%p is the pid, %%q{VAR} an environment variable)\n"
   );
}

void print_debug_usage()
{
   VG_(printf)("    (none)\n");
}

} // namespace kg
