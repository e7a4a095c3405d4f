// Buffered output to a file descriptor through the core's VG_(write).
#pragma once
#include "kg_valgrind.h"

namespace kg {

class FileWriter {
public:
   // Opens (creates or truncates) path. On failure, returns False and sets
   // *err to the errno value.
   Bool open(const HChar* path, UWord* err);
   void put(const HChar* s);
   // A string from outside (names, paths, arguments) inside a line: a
   // newline, carriage return or tab in it is written \n, \r, \t, so it
   // neither breaks the line-based format nor the tab-separated ksf-fns
   // table; with escape_backslash (cmd:, as callgrind writes it) a
   // backslash is written \\, so that arguments read back unambiguously.
   void put_escaped(const HChar* s, Bool escape_backslash = False);
   void put_char(HChar c);
   void put_u64(ULong v);
   void printf(const HChar* fmt, ...) PRINTF_CHECK(2, 3);
   // Flushes and closes; returns False if any write failed.
   Bool close();

private:
   void flush();
   static const Int kBufSize = 1 << 14;   // touched at exit: part of peak RSS
   Int fd_ = -1;
   Int used_ = 0;
   Bool failed_ = False;
   HChar buf_[kBufSize];
};

// A short description of an errno value for messages (no strerror here).
const HChar* errno_text(UWord err);

} // namespace kg
