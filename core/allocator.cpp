// The programs' allocator (linked into mplan, mplan-gui and bench_planner when MPLAN_MIMALLOC is on;
// cmake/MplanDeps.cmake): mimalloc's operator new/delete, in this one translation unit as its header
// asks. Linking libmimalloc also makes it the process's malloc (it is loaded ahead of the C library).
#include <mimalloc-new-delete.h>
