/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * In-guest stale-TLB stress, run as the initramfs's init
 * ("rdinit=/tlb-stress -- [SECONDS]"), one thread per CPU:
 *   remap     thread 0 replaces a page with MAP_FIXED and a new
 *             generation number, then publishes the number; every
 *             other thread reads the number, then the page, and must
 *             never see an older generation (a stale translation
 *             would show the freed page);
 *   private   each thread mmaps, fills, mprotects read-only and back,
 *             rewrites and munmaps its own pages, verifying each step;
 *   fork      every 16th round a thread forks; the child rewrites the
 *             pages (copy on write) and checks them, the parent checks
 *             that its copy did not change.
 * Prints "STRESS PASS <rounds>" or "STRESS FAIL <what>", then powers the
 * guest off.  Built static by bin/guest-kernel.
 */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_PAGES 16

static long page_size;
static uint64_t *remap_page;            /* fixed address, remapped */
static uint64_t published_gen;
static int stop;                        /* atomic */
static int failed;
static long total_rounds;

static void fail(const char *what, uint64_t seen, uint64_t expected)
{
    printf("STRESS FAIL %s: saw %llu, expected %llu\n", what,
           (unsigned long long)seen, (unsigned long long)expected);
    fflush(stdout);
    failed = 1;
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
}

static void remap_round(uint64_t gen)
{
    uint64_t *p = mmap(remap_page, page_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

    if (p != remap_page) {
        fail("mmap MAP_FIXED", (uintptr_t)p, (uintptr_t)remap_page);
        return;
    }
    p[0] = gen;
    __atomic_store_n(&published_gen, gen, __ATOMIC_RELEASE);
}

static void check_remap(void)
{
    uint64_t gen = __atomic_load_n(&published_gen, __ATOMIC_ACQUIRE);
    uint64_t seen = __atomic_load_n(&remap_page[0], __ATOMIC_RELAXED);

    /* 0: the new page, not yet written; a stale one holds old data. */
    if (seen != 0 && seen < gen) {
        fail("remapped page", seen, gen);
    }
}

static int check_pages(uint64_t *p, uint64_t tag, const char *what)
{
    for (int i = 0; i < N_PAGES; i++) {
        uint64_t want = tag + i;
        uint64_t seen = p[i * page_size / sizeof(*p)];

        if (seen != want) {
            fail(what, seen, want);
            return 0;
        }
    }
    return 1;
}

static void fill_pages(uint64_t *p, uint64_t tag)
{
    for (int i = 0; i < N_PAGES; i++) {
        p[i * page_size / sizeof(*p)] = tag + i;
    }
}

static void private_round(int id, uint64_t round)
{
    size_t len = N_PAGES * page_size;
    uint64_t tag = ((uint64_t)id << 40) | (round << 8);
    uint64_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    fill_pages(p, tag);
    mprotect(p, len, PROT_READ);
    check_pages(p, tag, "read-only pages");
    mprotect(p, len, PROT_READ | PROT_WRITE);
    fill_pages(p, tag + 0x80);
    check_pages(p, tag + 0x80, "rewritten pages");

    if (round % 16 == 0) {
        pid_t pid = fork();
        int status;

        if (pid == 0) {
            fill_pages(p, tag + 0xc0);
            _exit(check_pages(p, tag + 0xc0, "child's pages") ? 0 : 1);
        }
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fail("child after fork", status, 0);
        }
        check_pages(p, tag + 0x80, "parent's pages after fork");
    }
    munmap(p, len);
}

static void *worker(void *arg)
{
    int id = (intptr_t)arg;
    uint64_t round;

    for (round = 1; !__atomic_load_n(&stop, __ATOMIC_RELAXED); round++) {
        if (id == 0) {
            remap_round(round);
        } else {
            check_remap();
        }
        private_round(id, round);
    }
    __atomic_fetch_add(&total_rounds, round - 1, __ATOMIC_RELAXED);
    return NULL;
}

int main(int argc, char **argv)
{
    int ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    int seconds = argc > 1 ? atoi(argv[1]) : 10;
    pthread_t threads[ncpus];

    page_size = getauxval(AT_PAGESZ);
    remap_page = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    remap_round(0);
    for (int i = 0; i < ncpus; i++) {
        pthread_create(&threads[i], NULL, worker, (void *)(intptr_t)i);
    }
    sleep(seconds);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < ncpus; i++) {
        pthread_join(threads[i], NULL);
    }
    if (!failed) {
        printf("STRESS PASS %d CPUs, %ld rounds\n", ncpus, total_rounds);
    }
    puts("booted");
    fflush(stdout);
    reboot(RB_POWER_OFF);
    return 1;
}
