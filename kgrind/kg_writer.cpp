#include "kg_writer.h"
#include <stdarg.h>

namespace kg {

namespace {

const UInt kMode = VKI_S_IRUSR | VKI_S_IWUSR;   // 0600, as perf.data and core dumps

// Creates path, failing if anything is at its name (O_EXCL: not even a
// dangling symbolic link is followed).
SysRes create_new(const HChar* path)
{
   return VG_(open)(path, VKI_O_CREAT | VKI_O_EXCL | VKI_O_WRONLY | kOpenNoFollow, kMode);
}

// Why the thing at path (an open descriptor of it) may not be replaced by
// a profile; null if it may (a regular file of this user).
const HChar* refusal(Int fd)
{
   struct vg_stat st;
   if (VG_(fstat)(fd, &st) != 0) return "cannot examine the existing file";
   if (!VKI_S_ISREG(st.mode)) return "not a regular file (refused)";
   if (st.uid != (UInt)VG_(geteuid)()) return "owned by another user (refused)";
   return nullptr;
}

// The thing at path, opened to be examined, never followed if a link
// (ELOOP), never waited for if a FIFO (O_NONBLOCK); a file this user may
// write but not read is opened for writing, without truncation.
SysRes open_to_examine(const HChar* path)
{
   SysRes fd = VG_(open)(path, VKI_O_RDONLY | VKI_O_NONBLOCK | kOpenNoFollow, 0);
   if (sr_isError(fd) && sr_Err(fd) == VKI_EACCES)
      fd = VG_(open)(path, VKI_O_WRONLY | VKI_O_NONBLOCK | kOpenNoFollow, 0);
   return fd;
}

const HChar* open_error(UWord err)
{
   // O_NOFOLLOW's error: the name is a symbolic link.
   return err == VKI_ELOOP ? "a symbolic link, not followed (refused)" : errno_text(err);
}

} // namespace

Bool name_refused(const HChar* path)
{
   SysRes fd = open_to_examine(path);
   if (sr_isError(fd)) return sr_Err(fd) == VKI_ELOOP;
   Bool refused = refusal((Int)sr_Res(fd)) != nullptr;
   VG_(close)((Int)sr_Res(fd));
   return refused;
}

Bool FileWriter::open(const HChar* path, const HChar** why)
{
   SysRes res = create_new(path);
   if (sr_isError(res) && sr_Err(res) == VKI_EEXIST) {
      // Something is there: a profile of an earlier run (replaced), or not.
      SysRes old = open_to_examine(path);
      if (sr_isError(old)) {
         *why = open_error(sr_Err(old));
         return False;
      }
      *why = refusal((Int)sr_Res(old));
      VG_(close)((Int)sr_Res(old));
      if (*why) return False;
      if (VG_(unlink)(path) == 0) {
         res = create_new(path);   // EEXIST again: something was put there
      } else {
         // A directory this user may not write, a file it may: written in
         // place, as before (and checked again: the name may have changed).
         res = VG_(open)(path, VKI_O_WRONLY | VKI_O_TRUNC | VKI_O_NONBLOCK | kOpenNoFollow, 0);
         if (!sr_isError(res) && (*why = refusal((Int)sr_Res(res)))) {
            VG_(close)((Int)sr_Res(res));
            return False;
         }
      }
   }
   if (sr_isError(res)) {
      *why = open_error(sr_Err(res));
      return False;
   }
   fd_ = (Int)sr_Res(res);
   used_ = 0;
   failed_ = False;
   error_ = 0;
   return True;
}

void FileWriter::flush()
{
   Int done = 0;
   while (done < used_ && !failed_) {
      Int n = VG_(write)(fd_, buf_ + done, used_ - done);
      if (n > 0) {
         done += n;
      } else {
         // VG_(write) returns -errno; 0 for a regular file: the disk is full
         failed_ = True;
         error_ = n < 0 ? (UWord)-n : VKI_ENOSPC;
      }
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

const HChar* FileWriter::write_error() const
{
   return failed_ ? errno_text(error_) : "not open";
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
   case VKI_ELOOP: return "Too many levels of symbolic links";
   case VKI_ENXIO: return "No such device or address";
   case VKI_EFBIG: return "File too large";
   case 122: return "Disk quota exceeded";   // EDQUOT (no VKI_ name)
   case VKI_EIO: return "Input/output error";
   case 36: return "File name too long";       // ENAMETOOLONG
   default: return "I/O error";
   }
}

} // namespace kg
