/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The init of the benchmark guest's initramfs: report that userspace was
 * reached, then power off.  Built static for aarch64 by bin/guest-kernel.
 */

#include <stdio.h>
#include <sys/reboot.h>
#include <unistd.h>

int main(void)
{
    puts("booted");
    fflush(stdout);
    sync();
    reboot(RB_POWER_OFF);
    return 1;
}
