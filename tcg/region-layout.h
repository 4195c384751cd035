/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Layout of the TCG code buffer: regions, alignment and guard pages.
 */

#ifndef TCG_REGION_LAYOUT_H
#define TCG_REGION_LAYOUT_H

/*
 * The code buffer is one mapping of @total_size bytes whose start is
 * aligned to @unit.  It is split into @n regions: region i starts at byte
 * i * @stride, every region but the last spans @stride bytes and the last
 * one runs to the end of the buffer.  The final @guard_size bytes of each
 * region are a PROT_NONE guard (CONFIG_DEBUG_TCG builds only).
 *
 * Invariants: @unit is the transparent huge page size when huge pages are
 * wanted and every TCG thread's region can hold at least one, else the
 * host page size; @stride and @total_size are multiples of @unit; @n is at
 * least the number of TCG threads; n * stride <= total_size.
 */
typedef struct TCGRegionLayout {
    size_t unit;
    size_t total_size;
    size_t n;
    size_t stride;
    size_t guard_size;
} TCGRegionLayout;

/*
 * Lay out a buffer of about @tb_size bytes for @n_threads TCG threads.
 * @huge_page_size is 0 when huge pages are not to be used.  @tb_size is
 * raised where @n_threads regions of one page of code would not fit.
 */
void tcg_region_layout_init(TCGRegionLayout *l, size_t tb_size,
                            unsigned n_threads, size_t page_size,
                            size_t huge_page_size, bool guards);

/* Bytes of region @i that hold code: all but its guard. */
size_t tcg_region_layout_code_size(const TCGRegionLayout *l, size_t i);

/* Bytes of all regions that hold code. */
size_t tcg_region_layout_capacity(const TCGRegionLayout *l);

/*
 * The size of a transparent huge page for an anonymous (@shmem false) or
 * a memfd (@shmem true) mapping made with MADV_HUGEPAGE, or 0 where the
 * host has none for it.
 */
size_t tcg_host_huge_page_size(bool shmem);

/*
 * Map @size bytes at an address aligned to @align with mmap() @prot and
 * @flags: anonymous memory if @fd < 0, else the start of @fd.
 */
void *tcg_region_map(size_t size, size_t align, int prot, int flags, int fd,
                     Error **errp);

/*
 * Resident and huge-page-backed bytes of [@start, @start + @size), from
 * /proc/self/smaps.  Returns false where that is not available.
 */
bool tcg_region_thp_usage(const void *start, size_t size,
                          size_t *resident, size_t *huge);

#endif
