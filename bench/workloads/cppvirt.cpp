// C++ workload: virtual calls through a class hierarchy and STL containers
// (vector, map, unordered_map, string, priority_queue, sort).
//   cppvirt [scale]      scale = rounds (default 1)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Shape {
   virtual ~Shape() = default;
   virtual double area() const = 0;
   virtual double perimeter() const = 0;
   virtual void grow(double f) = 0;
   virtual const char* kind() const = 0;
};

struct Circle : Shape {
   double r;
   explicit Circle(double r_) : r(r_) {}
   double area() const override { return 3.14159265 * r * r; }
   double perimeter() const override { return 2 * 3.14159265 * r; }
   void grow(double f) override { r *= f; }
   const char* kind() const override { return "circle"; }
};

struct Rect : Shape {
   double w, h;
   Rect(double w_, double h_) : w(w_), h(h_) {}
   double area() const override { return w * h; }
   double perimeter() const override { return 2 * (w + h); }
   void grow(double f) override { w *= f; h *= f; }
   const char* kind() const override { return "rect"; }
};

struct Square : Rect {
   explicit Square(double s) : Rect(s, s) {}
   const char* kind() const override { return "square"; }
};

struct Triangle : Shape {
   double a, b, c;
   Triangle(double a_, double b_, double c_) : a(a_), b(b_), c(c_) {}
   double area() const override {
      double s = (a + b + c) / 2;
      double v = s * (s - a) * (s - b) * (s - c);
      return v > 0 ? v / (s + 1) : 0;   // no sqrt: keep it call-bound
   }
   double perimeter() const override { return a + b + c; }
   void grow(double f) override { a *= f; b *= f; c *= f; }
   const char* kind() const override { return "triangle"; }
};

struct Visitor {
   virtual ~Visitor() = default;
   virtual void visit(const Shape& s) = 0;
};

struct AreaSum : Visitor {
   double total = 0;
   void visit(const Shape& s) override { total += s.area(); }
};

struct KindCount : Visitor {
   std::map<std::string, unsigned> counts;
   void visit(const Shape& s) override { counts[s.kind()]++; }
};

unsigned rng_state = 12345;
unsigned next_rand() { rng_state = rng_state * 1103515245u + 12345u; return rng_state >> 8; }

std::unique_ptr<Shape> make_shape(unsigned i)
{
   double x = 1 + (next_rand() % 100) / 10.0;
   switch (i % 4) {
   case 0: return std::make_unique<Circle>(x);
   case 1: return std::make_unique<Rect>(x, x / 2 + 1);
   case 2: return std::make_unique<Square>(x);
   default: return std::make_unique<Triangle>(x, x + 1, x + 1.5);
   }
}

double round_once(unsigned n)
{
   std::vector<std::unique_ptr<Shape>> shapes;
   shapes.reserve(n);
   for (unsigned i = 0; i < n; i++) shapes.push_back(make_shape(next_rand()));

   AreaSum sum;
   KindCount kinds;
   std::vector<Visitor*> visitors{&sum, &kinds};
   for (int pass = 0; pass < 3; pass++)
      for (auto& s : shapes) {
         for (Visitor* v : visitors) v->visit(*s);
         s->grow(1.001);
      }

   std::sort(shapes.begin(), shapes.end(),
             [](const std::unique_ptr<Shape>& a, const std::unique_ptr<Shape>& b) {
                return a->perimeter() < b->perimeter();
             });

   std::unordered_map<std::string, double> by_name;
   for (unsigned i = 0; i < n; i += 3)
      by_name["s" + std::to_string(i % 5000)] += shapes[i]->area();

   std::priority_queue<std::pair<double, unsigned>> pq;
   for (unsigned i = 0; i < n; i++) {
      pq.emplace(shapes[i]->area(), i);
      if (pq.size() > 64) pq.pop();
   }
   double acc = sum.total;
   for (auto& kv : kinds.counts) acc += kv.second;
   for (auto& kv : by_name) acc += kv.second * 1e-6;
   while (!pq.empty()) { acc += pq.top().first; pq.pop(); }
   return acc;
}

}  // namespace

int main(int argc, char** argv)
{
   unsigned scale = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
   double acc = 0;
   for (unsigned r = 0; r < scale; r++) acc += round_once(40000);
   std::printf("cppvirt: %.3f\n", acc);
   return 0;
}
