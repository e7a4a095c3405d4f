#include "kg_writer.h"
#include <stdarg.h>

namespace kg {

Bool FileWriter::open(const HChar* path, UWord* err)
{
   SysRes res = VG_(open)(path, VKI_O_CREAT | VKI_O_WRONLY | VKI_O_TRUNC,
                          VKI_S_IRUSR | VKI_S_IWUSR | VKI_S_IRGRP | VKI_S_IROTH);
   if (sr_isError(res)) {
      *err = sr_Err(res);
      return False;
   }
   fd_ = (Int)sr_Res(res);
   used_ = 0;
   failed_ = False;
   return True;
}

void FileWriter::flush()
{
   Int done = 0;
   while (done < used_ && !failed_) {
      Int n = VG_(write)(fd_, buf_ + done, used_ - done);
      if (n <= 0) failed_ = True;
      else done += n;
   }
   used_ = 0;
}

void FileWriter::put(const HChar* s)
{
   while (*s) {
      if (used_ == kBufSize) flush();
      buf_[used_++] = *s++;
   }
}

void FileWriter::put_escaped(const HChar* s, Bool escape_backslash)
{
   for (; *s; s++) {
      HChar c = *s;
      HChar escape = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't'
                   : c == '\\' && escape_backslash ? '\\' : 0;
      if (escape) {
         put_char('\\');
         c = escape;
      }
      put_char(c);
   }
}

void FileWriter::put_char(HChar c)
{
   if (used_ == kBufSize) flush();
   buf_[used_++] = c;
}

void FileWriter::put_u64(ULong v)
{
   HChar tmp[24];
   VG_(sprintf)(tmp, "%llu", v);
   put(tmp);
}

void FileWriter::printf(const HChar* fmt, ...)
{
   // Formatted pieces are short (numbers, keys); names go through put().
   HChar tmp[512];
   va_list vargs;
   va_start(vargs, fmt);
   VG_(vsnprintf)(tmp, sizeof tmp, fmt, vargs);
   va_end(vargs);
   put(tmp);
}

Bool FileWriter::close()
{
   if (fd_ < 0) return False;
   flush();
   VG_(close)(fd_);
   fd_ = -1;
   return !failed_;
}

const HChar* errno_text(UWord err)
{
   switch (err) {
   case VKI_ENOENT: return "No such file or directory";
   case VKI_EACCES: return "Permission denied";
   case VKI_EPERM: return "Operation not permitted";
   case VKI_EROFS: return "Read-only file system";
   case VKI_ENOTDIR: return "Not a directory";
   case VKI_EISDIR: return "Is a directory";
   case VKI_ENOSPC: return "No space left on device";
   case VKI_EEXIST: return "File exists";
   case VKI_EMFILE: return "Too many open files";
   default: return "I/O error";
   }
}

} // namespace kg
