// kgrind core: bump/pool allocation (header-only, freestanding).
//
// Pool hands out blocks of power-of-two sizes (16 bytes .. 32 KiB) carved
// from big chunks obtained from the user Allocator, with one free list per
// size class; blocks larger than that go straight to the Allocator.  All
// memory is returned by destroy().  No per-event malloc: nodes and child
// tables of a forest come from its Pool.
#pragma once
#include "containers.h"

namespace kg {
namespace core {

struct Pool {
  static constexpr uint32_t kMinShift = 4;    // 16 bytes
  static constexpr uint32_t kMaxShift = 15;   // 32 KiB: larger = direct
  static constexpr uint32_t kClasses = kMaxShift - kMinShift + 1;
  static constexpr size_t kFirstChunk = 64 * 1024;
  static constexpr size_t kMaxChunk = 4 * 1024 * 1024;

  struct FreeBlock {
    FreeBlock* next;
  };
  // Every chunk and every direct block starts with this header, so that
  // destroy() can walk them.
  struct Header {
    Header* next;
    size_t bytes;  // total bytes of this allocation (header included)
  };

  Allocator al_;
  FreeBlock* free_[kClasses];
  Header* chunks_;   // chunk list (newest first)
  Header* direct_;   // direct (large) blocks, doubly linked via prev below
  char* cur_;        // bump pointer in the newest chunk
  char* end_;
  size_t first_chunk_;
  size_t next_chunk_;
  size_t bytes_reserved_;  // bytes obtained from the allocator
  size_t bytes_in_use_;    // bytes handed out and not released

  // first_chunk: bytes of the first chunk (later ones double, up to
  // kMaxChunk): small for pools of which there are many, mostly tiny.
  void init(const Allocator& al, size_t first_chunk = kFirstChunk) {
    al_ = al;
    for (uint32_t i = 0; i < kClasses; ++i) free_[i] = nullptr;
    chunks_ = nullptr;
    direct_ = nullptr;
    cur_ = end_ = nullptr;
    first_chunk_ = first_chunk;
    next_chunk_ = first_chunk;
    bytes_reserved_ = 0;
    bytes_in_use_ = 0;
  }
  void destroy() {
    for (Header* h = chunks_; h;) {
      Header* n = h->next;
      al_.release(h);
      h = n;
    }
    for (Header* h = direct_; h;) {
      Header* n = h->next;
      al_.release(h);
      h = n;
    }
    init(al_, first_chunk_);
  }

  static uint32_t size_class(size_t bytes) {
    uint32_t s = kMinShift;
    while ((size_t(1) << s) < bytes) ++s;
    return s;
  }

  // Bump allocation with no free list (for objects never released
  // individually, e.g. nodes).  bytes is rounded up to granule (16 or 8):
  // blocks and bumps are 16-aligned until a bump of an 8-byte granule,
  // then 8-aligned (a node with its payload needs no more).
  void* bump(size_t bytes, size_t granule = 16) {
    bytes = (bytes + granule - 1) & ~(granule - 1);
    if (static_cast<size_t>(end_ - cur_) < bytes) new_chunk(bytes);
    void* p = cur_;
    cur_ += bytes;
    bytes_in_use_ += bytes;
    return p;
  }

  // Allocation of a block of at least `bytes` bytes; release it with the
  // same size through release_block().
  void* alloc_block(size_t bytes) {
    uint32_t s = size_class(bytes);
    if (s > kMaxShift) {
      size_t total = sizeof(Header) + (size_t(1) << s);
      // Direct blocks are doubly linked: we keep a prev pointer just before
      // the payload to unlink in O(1).
      Header* h = static_cast<Header*>(al_.allocate(total + 16));
      h->bytes = total + 16;
      link_direct(h);
      bytes_reserved_ += h->bytes;
      bytes_in_use_ += size_t(1) << s;
      return reinterpret_cast<char*>(h) + sizeof(Header) + 16;
    }
    uint32_t c = s - kMinShift;
    bytes_in_use_ += size_t(1) << s;
    if (FreeBlock* f = free_[c]) {
      free_[c] = f->next;
      return f;
    }
    size_t sz = size_t(1) << s;
    if (static_cast<size_t>(end_ - cur_) < sz) new_chunk(sz);
    void* p = cur_;
    cur_ += sz;
    return p;
  }

  void release_block(void* p, size_t bytes) {
    if (!p) return;
    uint32_t s = size_class(bytes);
    bytes_in_use_ -= size_t(1) << s;
    if (s > kMaxShift) {
      Header* h = reinterpret_cast<Header*>(static_cast<char*>(p) - 16 - sizeof(Header));
      bytes_reserved_ -= h->bytes;
      unlink_direct(h);
      al_.release(h);
      return;
    }
    FreeBlock* f = static_cast<FreeBlock*>(p);
    f->next = free_[s - kMinShift];
    free_[s - kMinShift] = f;
  }

  size_t bytes_reserved() const { return bytes_reserved_; }
  size_t bytes_in_use() const { return bytes_in_use_; }

 private:
  // The 16 bytes before a direct block's payload hold its prev pointer.
  static Header*& prev_of(Header* h) {
    return *reinterpret_cast<Header**>(reinterpret_cast<char*>(h) + sizeof(Header));
  }
  void link_direct(Header* h) {
    h->next = direct_;
    prev_of(h) = nullptr;
    if (direct_) prev_of(direct_) = h;
    direct_ = h;
  }
  void unlink_direct(Header* h) {
    Header* p = prev_of(h);
    if (p)
      p->next = h->next;
    else
      direct_ = h->next;
    if (h->next) prev_of(h->next) = p;
  }
  void new_chunk(size_t need) {
    // The tail of the old chunk is wasted (at most one block's worth); put
    // whole power-of-two pieces of it on the free lists.
    while (cur_ && end_ - cur_ >= 16) {
      uint32_t s = kMaxShift;
      while ((size_t(1) << s) > static_cast<size_t>(end_ - cur_)) --s;
      FreeBlock* f = reinterpret_cast<FreeBlock*>(cur_);
      f->next = free_[s - kMinShift];
      free_[s - kMinShift] = f;
      cur_ += size_t(1) << s;
    }
    size_t sz = next_chunk_;
    while (sz < need + sizeof(Header) + 16) sz *= 2;
    if (next_chunk_ < kMaxChunk) next_chunk_ *= 2;
    Header* h = static_cast<Header*>(al_.allocate(sz));
    h->bytes = sz;
    h->next = chunks_;
    chunks_ = h;
    bytes_reserved_ += sz;
    // Payload starts 16-byte aligned after the header.
    cur_ = reinterpret_cast<char*>(h) + ((sizeof(Header) + 15) & ~size_t(15));
    end_ = reinterpret_cast<char*>(h) + sz;
  }
};

}  // namespace core
}  // namespace kg
