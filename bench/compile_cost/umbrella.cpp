// The allocator's translation unit through the umbrella header, as the README includes it:
// every feature's declarations (workspaces, pools, saved sizes, the drop-in) parsed too. The
// body is allocator.cpp's, whose own include is then a no-op.
#include <kbuf/kbuf.hpp>

#include "allocator.cpp"
