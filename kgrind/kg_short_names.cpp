#include "kg_short_names.h"
#include "kg_runtime.h"

namespace kg {

namespace {

Bool starts(const HChar* s, const HChar* prefix) { return VG_(strncmp)(s, prefix, VG_(strlen)(prefix)) == 0; }
Bool is_space(HChar c) { return c == ' ' || c == '\t'; }
HChar closing(HChar c) { return c == '(' ? ')' : c == '<' ? '>' : c == '[' ? ']' : c == '{' ? '}' : 0; }

// The length of the operator's symbol after "operator" at s (0: none), as
// Names.pm's $OPERATOR: new/delete ([]), (), [], ->, ->*, <=>, <<, <<=, >>,
// >>=, &&, ||, ++, --, one of -+*/%^&|~!=<>, with an optional '=', or a
// conversion's type up to '(' or '<'.
SizeT operator_symbol(const HChar* s)
{
   const HChar* p = s;
   while (is_space(*p)) p++;
   if (starts(p, "new") || starts(p, "delete")) {
      p += starts(p, "new") ? 3 : 6;
      if (starts(p, "[]")) p += 2;
      return p - s;
   }
   static const HChar* const kTwo[] = { "()", "[]", "->*", "->", "<=>", "<<=", "<<", ">>=", ">>", "&&", "||",
                                        "++", "--" };
   for (const HChar* t : kTwo)
      if (starts(s, t)) return VG_(strlen)(t);
   if (*s && VG_(strchr)("-+*/%^&|~!=<>,", *s)) return s[1] == '=' ? 2 : 1;
   if (!is_space(*s)) return 0;
   p = s;
   while (is_space(*p)) p++;
   const HChar* q = p;
   while (*q && *q != '(' && *q != ')' && *q != '<') q++;
   return q > p ? q - s : 0;
}

// The length of an operator name at n[i] (0: none): "operator" at a start of
// a name (the string's start, a space or one of `after`) and its symbol.
SizeT operator_at(const HChar* n, SizeT i, const HChar* after)
{
   if (!starts(n + i, "operator")) return 0;
   if (i > 0 && !is_space(n[i - 1]) && !VG_(strchr)(after, n[i - 1])) return 0;
   SizeT sym = operator_symbol(n + i + 8);
   return sym ? 8 + sym : 0;
}

// Where the group opened at n[i] closes (operators inside are skipped), or
// -1 when the brackets do not balance.
Long group_end(const HChar* n, SizeT len, SizeT i)
{
   HChar open[256];
   UInt depth = 0;
   while (i < len) {
      SizeT op = depth ? operator_at(n, i, ":~(<,") : 0;
      if (op) {
         i += op;
         continue;
      }
      HChar c = n[i];
      if (closing(c)) {
         if (depth == sizeof open) return -1;
         open[depth++] = closing(c);
      } else if (c == ')' || c == '>' || c == ']' || c == '}') {
         if (!depth || open[depth - 1] != c) return -1;
         if (--depth == 0) return (Long)i;
      }
      i++;
   }
   return -1;
}

struct Atom {
   SizeT start, len;
};

// The name as atoms: operators, bracketed groups (with what they hold) and
// single characters. False when the brackets do not balance.
Bool atoms_of(const HChar* n, SizeT len, Atom* atoms, SizeT* count)
{
   SizeT i = 0, c = 0;
   while (i < len) {
      SizeT op = operator_at(n, i, ":~");
      SizeT l = 1;
      if (op) l = op;
      else if (closing(n[i])) {
         Long end = group_end(n, len, i);
         if (end < 0) return False;
         l = (SizeT)end - i + 1;
      }
      atoms[c++] = { i, l };
      i += l;
   }
   *count = c;
   return True;
}

// Trailing qualifiers that tell namesakes apart, kept: " [libx.so]",
// " [clone .cold]", "#2". The length of the name before them.
SizeT before_qualifiers(const HChar* n, SizeT len)
{
   SizeT end = len;
   for (;;) {
      SizeT e = end;
      while (e > 0 && n[e - 1] >= '0' && n[e - 1] <= '9') e--;
      if (e < end && e > 0 && n[e - 1] == '#') { end = e - 1; continue; }
      if (end >= 3 && n[end - 1] == ']') {
         SizeT o = end - 1;
         while (o > 0 && n[o - 1] != '[' && n[o - 1] != ']') o--;
         if (o >= 2 && n[o - 1] == '[' && is_space(n[o - 2])) { end = o - 2; continue; }
      }
      return end;
   }
}

Bool atom_is(const HChar* n, const Atom& a, HChar c) { return a.len == 1 && n[a.start] == c; }

// The end of the atoms' text if it ends in " const", " volatile",
// " noexcept", "&" or "&&" (with spaces before), else 0: the length of that
// ending.
SizeT trailing_qualifier(const HChar* n, SizeT end)
{
   static const HChar* const kWords[] = { "const", "volatile", "noexcept" };
   for (const HChar* w : kWords) {
      SizeT wl = VG_(strlen)(w);
      if (end > wl && VG_(strncmp)(n + end - wl, w, wl) == 0 && is_space(n[end - wl - 1])) {
         SizeT s = end - wl;
         while (s > 0 && is_space(n[s - 1])) s--;
         return end - s;
      }
   }
   SizeT s = end;
   if (s > 0 && n[s - 1] == '&') s--;
   else return 0;
   if (s > 0 && n[s - 1] == '&') s--;
   while (s > 0 && is_space(n[s - 1])) s--;
   return end - s;
}

HChar* copy_of(const HChar* s, SizeT len)
{
   HChar* out = (HChar*)kg::alloc(len + 1, "kg.short");
   VG_(memcpy)(out, s, len);
   out[len] = '\0';
   return out;
}

HChar* short_of(const HChar* n, SizeT len)
{
   if (!VG_(strchr)(n, '(') && !VG_(strchr)(n, '<')) return copy_of(n, len);
   Atom* a = (Atom*)kg::alloc((len + 1) * sizeof(Atom), "kg.short");
   SizeT count = 0;
   if (!atoms_of(n, len, a, &count)) {
      kg::release(a);
      return copy_of(n, len);
   }
   // trailing qualifiers, then the parameter list
   for (;;) {
      SizeT end = count ? a[count - 1].start + a[count - 1].len : 0;
      SizeT q = trailing_qualifier(n, end);
      if (!q) break;
      while (q > 0 && count) {
         SizeT l = a[--count].len;
         q = l >= q ? 0 : q - l;
      }
   }
   if (count > 1 && n[a[count - 1].start] == '(' && !(a[count - 2].len == 1 && is_space(n[a[count - 2].start])))
      count--;
   // the return type of a template function: up to the last top-level space
   SizeT first = 0;
   for (SizeT i = count; i-- > 0;) {
      if (atom_is(n, a[i], ' ') && i + 1 < count && n[a[i + 1].start] != '<') {
         if (i < count - 1) first = i + 1;
         break;
      }
   }
   SizeT out_len = 0;
   for (SizeT i = first; i < count; i++) out_len += n[a[i].start] == '<' ? 5 : a[i].len;
   HChar* out = (HChar*)kg::alloc(out_len + 1, "kg.short");
   SizeT o = 0;
   for (SizeT i = first; i < count; i++) {
      if (n[a[i].start] == '<') { VG_(memcpy)(out + o, "<...>", 5); o += 5; }
      else { VG_(memcpy)(out + o, n + a[i].start, a[i].len); o += a[i].len; }
   }
   out[o] = '\0';
   kg::release(a);
   if (o == 0) {
      kg::release(out);
      return copy_of(n, len);
   }
   return out;
}

} // namespace

HChar* short_name(const HChar* name)
{
   SizeT len = VG_(strlen)(name);
   SizeT base = before_qualifiers(name, len);
   if (base == 0 || base == len) return short_of(name, len);
   HChar* head = short_of(name, base);
   SizeT hl = VG_(strlen)(head);
   HChar* out = (HChar*)kg::alloc(hl + (len - base) + 1, "kg.short");
   VG_(memcpy)(out, head, hl);
   VG_(memcpy)(out + hl, name + base, len - base + 1);
   kg::release(head);
   return out;
}

} // namespace kg
