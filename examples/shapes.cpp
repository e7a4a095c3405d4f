// A small C++ program (a class, a template, the standard library) for
// docs/manual.md's recipe on names.
#include <cstdio>
#include <vector>

struct Shape {
   double w, h;
   double area() const { return w * h; }
};

template <typename T>
T total_area(const std::vector<Shape> &shapes)
{
   T sum = 0;
   for (const Shape &s : shapes) sum += static_cast<T>(s.area());
   return sum;
}

int main()
{
   std::vector<Shape> shapes;
   for (int i = 0; i < 200; i++) shapes.push_back(Shape{i * 1.0, 2.0});
   std::printf("%g %ld\n", total_area<double>(shapes), total_area<long>(shapes));
   return 0;
}
