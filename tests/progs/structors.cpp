// C++ constructors and destructors whose variants (Itanium ABI: the
// deleting destructor D0 next to the complete D1) are separate functions of
// one demangled name: a polymorphic delete runs D0, which runs D1; an
// object on the stack runs D1 alone. The classes' names look like variant
// codes (namespace D1, class C2) and one is a template, so that a profiler
// reading mangled names must read them component by component.
#include <cstdio>

namespace D1 {
struct Shape {
   virtual ~Shape();
   virtual int area() const { return 0; }
};
Shape::~Shape() {}
}  // namespace D1

struct C2 : D1::Shape {
   int* side;
   C2() : side(new int(3)) {}
   ~C2() override;
   int area() const override { return *side * *side; }
};
C2::~C2() { delete side; }

template <class T>
struct Box : D1::Shape {
   T value;
   explicit Box(T v) : value(v) {}
   ~Box() override;
   int area() const override { return (int)value; }
};
template <class T>
Box<T>::~Box() { value = T(); }
template struct Box<long>;

__attribute__((noinline)) int measure(const D1::Shape* s) { return s->area(); }

int main(int argc, char**)
{
   int sum = 0, deleted = 0, on_stack = 0, boxes_deleted = 0;
   for (int i = 0; i < 6 + argc; i++) {
      D1::Shape* s = new C2;
      sum += measure(s);
      delete s;
      deleted++;
   }
   for (int i = 0; i < 4; i++) {
      C2 c;
      sum += measure(&c);
      on_stack++;
   }
   for (int i = 0; i < 5; i++) {
      D1::Shape* b = new Box<long>(i);
      sum += measure(b);
      delete b;
      boxes_deleted++;
   }
   std::printf("sum %d deleted %d on_stack %d boxes_deleted %d\n", sum, deleted, on_stack, boxes_deleted);
   return 0;
}
