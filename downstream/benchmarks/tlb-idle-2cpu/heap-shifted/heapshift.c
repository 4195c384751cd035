/*
 * Preloaded into QEMU (LD_PRELOAD=libheapshift.so), make one allocation
 * of $HEAP_SHIFT bytes before main(): the same build with its heap
 * objects at other page offsets.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

/* Global, so that the compiler keeps the allocation. */
void *heap_shift_block;

static void __attribute__((constructor)) heap_shift(void)
{
    const char *bytes = getenv("HEAP_SHIFT");

    if (bytes) {
        heap_shift_block = malloc(atol(bytes));
    }
}
