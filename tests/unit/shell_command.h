// Host unit tests' shell commands: what one prints on its standard output.
#pragma once
#include <cstdio>
#include <string>

namespace kg_test {

inline std::string run(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) pclose(p);
  return out;
}

}  // namespace kg_test
