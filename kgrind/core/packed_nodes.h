// kgrind core: a forest's nodes packed into bytes, the way a thread that
// ended keeps its k-SF until the profile is written (thousands of threads
// keep one each, so every byte a node counts). Freestanding, header-only.
//
// The nodes come in pre-order, each one:
//   head [rise - 7] label [calls - 7] [excl] [incl]
// numbers in BER (ksf_nodes.h). The head byte:
//   bits 0-2  calls if below 7; 7: calls - 7 follows the label
//   bit  3    excl follows (else it is 0)
//   bit  4    incl follows (else it equals excl)
//   bits 5-7  rise = the previous node's depth + 1 - this node's depth (the
//             first node's previous depth counts as -1) if below 7; 7: rise
//             - 7 follows the head
// A leaf whose calls are few and whose inclusive cost is its exclusive one,
// the usual node, takes a head, its label and its cost: 3-5 bytes against
// 5 numbers' 7-8.
#pragma once
#include "ksf_nodes.h"

namespace kg {
namespace core {

struct PackedNode {
  uint32_t depth;  // 0 for a tree's root
  uint32_t label;
  uint64_t calls, excl, incl;
};

// The most bytes one node takes.
const unsigned kMaxPackedNodeBytes = 1 + 5 * kMaxBerBytes;

// Writes n at out after a node at depth prev_depth (-1 before the first
// node; n.depth <= prev_depth + 1, as pre-order gives). Returns the bytes
// written (at most kMaxPackedNodeBytes).
inline unsigned pack_node(const PackedNode& n, int64_t prev_depth, uint8_t* out) {
  uint64_t rise = (uint64_t)(prev_depth + 1 - (int64_t)n.depth);
  unsigned head = (n.calls < 7 ? (unsigned)n.calls : 7u) | (n.excl ? 8u : 0u) | (n.incl != n.excl ? 16u : 0u) |
                  (rise < 7 ? (unsigned)rise : 7u) << 5;
  unsigned used = 0;
  out[used++] = (uint8_t)head;
  if (rise >= 7) used += put_ber(rise - 7, out + used);
  used += put_ber(n.label, out + used);
  if (n.calls >= 7) used += put_ber(n.calls - 7, out + used);
  if (n.excl) used += put_ber(n.excl, out + used);
  if (n.incl != n.excl) used += put_ber(n.incl, out + used);
  return used;
}

// Reads the node pack_node wrote at p after a node at depth prev_depth,
// moving p past it.
inline PackedNode unpack_node(const uint8_t*& p, int64_t prev_depth) {
  unsigned head = *p++;
  uint64_t rise = head >> 5;
  if (rise == 7) rise += get_ber(p);
  PackedNode n;
  n.depth = (uint32_t)(prev_depth + 1 - (int64_t)rise);
  n.label = (uint32_t)get_ber(p);
  n.calls = head & 7;
  if (n.calls == 7) n.calls += get_ber(p);
  n.excl = (head & 8) ? get_ber(p) : 0;
  n.incl = (head & 16) ? get_ber(p) : n.excl;
  return n;
}

}  // namespace core
}  // namespace kg
