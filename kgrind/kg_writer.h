// Buffered output to a file descriptor through the core's VG_(write).
#pragma once
#include "kg_valgrind.h"

namespace kg {

// O_NOFOLLOW by the kernel's number (the tool API's vki headers define
// none for Linux): an open of a symbolic link fails with ELOOP.
#if defined(VGA_amd64) || defined(VGA_x86) || defined(VGA_s390x)
const UInt kOpenNoFollow = 0400000;
#elif defined(VGA_arm) || defined(VGA_arm64) || defined(VGA_ppc32) || defined(VGA_ppc64be) \
   || defined(VGA_ppc64le)
const UInt kOpenNoFollow = 0100000;
#else
#error "O_NOFOLLOW of this platform"
#endif

class FileWriter {
public:
   // Opens path for a new profile, mode 0600 (less the umask), never
   // following a symbolic link at its name: a new file is created; a
   // regular file of this user there is replaced (unlinked, then created
   // anew: nothing is written into the old file's inode; truncated in
   // place if its directory is not writable); anything else
   // (a symbolic link, a FIFO, a device, another user's file) is refused.
   // On failure, returns False and sets *why to the reason (static text).
   Bool open(const HChar* path, const HChar** why);
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
   // Flushes and closes; returns False if any write failed, and then
   // write_error() says why (ENOSPC: "No space left on device").
   Bool close();
   const HChar* write_error() const;

private:
   void flush();
   static const Int kBufSize = 1 << 14;   // touched at exit: part of peak RSS
   Int fd_ = -1;
   Int used_ = 0;
   Bool failed_ = False;
   UWord error_ = 0;   // errno of the first failed write
   HChar buf_[kBufSize];
};

// Whether something FileWriter::open refuses (a symbolic link, a FIFO,
// another user's file) is at path.
Bool name_refused(const HChar* path);

// A short description of an errno value for messages (no strerror here).
const HChar* errno_text(UWord err);

} // namespace kg
