// Host unit tests' scratch directories: one of its own under /tmp, removed
// with everything in it when the object goes (also when a failed ASSERT
// ends the test early).
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace kg_test {

class TempDir {
 public:
  // /tmp/<prefix>-XXXXXX; path() is "" if it could not be made.
  explicit TempDir(const std::string& prefix) {
    std::string t = "/tmp/" + prefix + "-XXXXXX";
    if (mkdtemp(t.data())) path_ = t;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kg_test
