// Must not compile: a 768-wide extent cannot become a 512-wide one.
#include <tessera/core/extents.hpp>

using namespace tessera;

int main() {
#ifdef TESSERA_EXPECT_OK
    const Extents<dyn, 768> e(3);
#else
    const Extents<dyn, 512> e(3);
#endif
    const Extents<dyn, 768> f(e);
    return static_cast<int>(f.size() % 2);
}
