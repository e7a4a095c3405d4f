// A small C++ program in the shape of a build tool: one variable lookup
// (Scope::lookup) reached from several callers, for the KCachegrind
// pictures of docs/manual.md (docs/img/make_kcachegrind_pictures.sh).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

struct Scope {
   std::map<std::string, std::string> vars;
   const Scope* parent = nullptr;

   __attribute__((noinline)) const std::string* lookup(const std::string& name) const
   {
      for (const Scope* s = this; s; s = s->parent) {
         auto it = s->vars.find(name);
         if (it != s->vars.end()) return &it->second;
      }
      return nullptr;
   }
};

struct Rule {
   std::string command, description, depfile;
};

// "$in -o $out": each $word replaced by its value in the scope.
__attribute__((noinline)) std::string expand(const std::string& text, const Scope& scope)
{
   std::string out;
   for (size_t i = 0; i < text.size(); i++) {
      if (text[i] != '$') { out += text[i]; continue; }
      size_t j = i + 1;
      while (j < text.size() && (isalnum((unsigned char)text[j]) || text[j] == '_')) j++;
      const std::string* v = scope.lookup(text.substr(i + 1, j - i - 1));
      if (v) out += *v;
      i = j - 1;
   }
   return out;
}

__attribute__((noinline)) size_t evaluate_command(const Rule& r, const Scope& s) { return expand(r.command, s).size(); }
__attribute__((noinline)) size_t describe(const Rule& r, const Scope& s) { return expand(r.description, s).size(); }
__attribute__((noinline)) bool has_depfile(const Scope& s) { return s.lookup("depfile") != nullptr; }
__attribute__((noinline)) bool is_restat(const Scope& s) { return s.lookup("restat") != nullptr; }

int main()
{
   Scope global;
   global.vars = { {"cc", "gcc"}, {"cflags", "-O2 -g"}, {"restat", "1"} };
   Rule rule{"$cc $cflags -c $in -o $out", "CC $out", ""};
   size_t total = 0;
   for (int i = 0; i < 2000; i++) {
      Scope edge;
      edge.parent = &global;
      edge.vars["in"] = "src/file" + std::to_string(i) + ".c";
      edge.vars["out"] = "obj/file" + std::to_string(i) + ".o";
      if (i % 3 == 0) edge.vars["depfile"] = "obj/file" + std::to_string(i) + ".d";
      total += evaluate_command(rule, edge) + describe(rule, edge) + has_depfile(edge) + is_restat(edge);
   }
   std::printf("%zu\n", total);
   return 0;
}
