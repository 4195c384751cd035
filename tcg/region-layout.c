/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Layout of the TCG code buffer: regions, alignment and guard pages.
 *
 * A 4 KiB guard page at the end of each region, or a buffer start that is
 * not huge-page aligned, keeps the kernel from backing the surrounding
 * 2 MiB with a transparent huge page: with -smp 4 and tb-size=64, upstream
 * QEMU's 32 regions of 2044 KiB get no huge page at all.  Here regions are
 * whole huge pages and guards exist only in debug builds, where regions
 * are kept large enough that the guards cost few huge pages.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/host-utils.h"
#include "qemu/units.h"
#include "region-layout.h"

/* Regions of at least this size are preferred, as in upstream QEMU. */
#define REGION_PREFERRED_SIZE   (2 * MiB)
/* More regions than threads let busy threads take more of the buffer. */
#define REGIONS_PER_THREAD_MAX  8
/* With guards, a region loses at most one huge page in this many. */
#define GUARDED_REGION_UNITS    8

void tcg_region_layout_init(TCGRegionLayout *l, size_t tb_size,
                            unsigned n_threads, size_t page_size,
                            size_t huge_page_size, bool guards)
{
    size_t guard_size = guards ? page_size : 0;
    size_t unit = page_size;
    size_t n = 1;

    g_assert(n_threads >= 1 && is_power_of_2(page_size));

    /* Every thread needs a region with one page of code and its guard. */
    tb_size = MAX(tb_size, n_threads * (page_size + guard_size));
    if (huge_page_size > page_size && tb_size / n_threads >= huge_page_size) {
        unit = huge_page_size;
    }
    l->total_size = QEMU_ALIGN_DOWN(tb_size, unit);

    /*
     * One region per thread at least; more, up to REGIONS_PER_THREAD_MAX
     * per thread, while regions stay REGION_PREFERRED_SIZE and whole
     * units.  With guards, keep GUARDED_REGION_UNITS units per region
     * where the threads leave room for it.
     */
    if (n_threads > 1) {
        n = l->total_size / REGION_PREFERRED_SIZE;
        n = MIN(n, (size_t)n_threads * REGIONS_PER_THREAD_MAX);
        n = MIN(n, l->total_size / unit);
        if (guard_size && unit > page_size) {
            n = MIN(n, l->total_size / (unit * GUARDED_REGION_UNITS));
        }
        n = MAX(n, n_threads);
    }
    l->n = n;
    l->unit = unit;
    l->stride = QEMU_ALIGN_DOWN(l->total_size / n, unit);
    l->guard_size = guard_size;
}

size_t tcg_region_layout_code_size(const TCGRegionLayout *l, size_t i)
{
    size_t span = l->stride;

    g_assert(i < l->n);
    if (i == l->n - 1) {
        span = l->total_size - i * l->stride;
    }
    return span - l->guard_size;
}

size_t tcg_region_layout_capacity(const TCGRegionLayout *l)
{
    return l->total_size - l->n * l->guard_size;
}

#ifdef CONFIG_LINUX
/* Whether a transparent_hugepage mode file lets MADV_HUGEPAGE take effect. */
static bool thp_mode_honours_madvise(const char *path)
{
    g_autofree char *mode = NULL;

    if (!g_file_get_contents(path, &mode, NULL, NULL)) {
        return false;
    }
    return strstr(mode, "[always]") || strstr(mode, "[madvise]") ||
           strstr(mode, "[within_size]") || strstr(mode, "[advise]") ||
           strstr(mode, "[force]");
}

size_t tcg_host_huge_page_size(bool shmem)
{
    const char *dir = "/sys/kernel/mm/transparent_hugepage";
    g_autofree char *mode = g_strdup_printf("%s/%s", dir,
                                            shmem ? "shmem_enabled"
                                                  : "enabled");
    g_autofree char *pmd = g_strdup_printf("%s/hpage_pmd_size", dir);
    g_autofree char *text = NULL;
    size_t page_size = qemu_real_host_page_size();
    uint64_t size;

    if (!thp_mode_honours_madvise(mode)) {
        return 0;
    }
    if (g_file_get_contents(pmd, &text, NULL, NULL) &&
        qemu_strtou64(g_strstrip(text), NULL, 10, &size) == 0 &&
        is_power_of_2(size) && size > page_size) {
        return size;
    }
    /* Kernels before 4.10 lack hpage_pmd_size: one page table's reach. */
    return page_size * (page_size / sizeof(void *));
}

bool tcg_region_thp_usage(const void *start, size_t size,
                          size_t *resident, size_t *huge)
{
    g_autofree char *smaps = NULL;
    uintptr_t lo = (uintptr_t)start, hi = lo + size;
    bool inside = false;
    char **lines;

    if (!g_file_get_contents("/proc/self/smaps", &smaps, NULL, NULL)) {
        return false;
    }
    *resident = *huge = 0;
    lines = g_strsplit(smaps, "\n", -1);
    for (char **line = lines; *line; line++) {
        unsigned long vma_lo, vma_hi;
        size_t kib;

        if (sscanf(*line, "%lx-%lx ", &vma_lo, &vma_hi) == 2) {
            inside = vma_lo < hi && vma_hi > lo;
        } else if (!inside) {
            continue;
        } else if (sscanf(*line, "Rss: %zu kB", &kib) == 1) {
            *resident += kib * KiB;
        } else if (sscanf(*line, "AnonHugePages: %zu kB", &kib) == 1 ||
                   sscanf(*line, "ShmemPmdMapped: %zu kB", &kib) == 1) {
            *huge += kib * KiB;
        }
    }
    g_strfreev(lines);
    return true;
}
#else
size_t tcg_host_huge_page_size(bool shmem)
{
    return 0;
}

bool tcg_region_thp_usage(const void *start, size_t size,
                          size_t *resident, size_t *huge)
{
    return false;
}
#endif

#ifndef _WIN32
void *tcg_region_map(size_t size, size_t align, int prot, int flags, int fd,
                     Error **errp)
{
    uint8_t *reserved, *start;
    size_t span = size + align;

    if (align <= qemu_real_host_page_size()) {
        start = mmap(NULL, size, prot, flags, fd, 0);
        if (start == MAP_FAILED) {
            error_setg_errno(errp, errno,
                             "allocate %zu bytes for jit buffer", size);
            return NULL;
        }
        return start;
    }

    /* Reserve an aligned range, map into it, and return the slack. */
    reserved = mmap(NULL, span, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) {
        error_setg_errno(errp, errno,
                         "reserve %zu bytes for jit buffer", span);
        return NULL;
    }
    start = QEMU_ALIGN_PTR_UP(reserved, align);
    if (mmap(start, size, prot, flags | MAP_FIXED, fd, 0) == MAP_FAILED) {
        error_setg_errno(errp, errno,
                         "allocate %zu bytes for jit buffer", size);
        munmap(reserved, span);
        return NULL;
    }
    if (start > reserved) {
        munmap(reserved, start - reserved);
    }
    munmap(start + size, reserved + span - (start + size));
    return start;
}
#endif
