#!/usr/bin/env python3
#
# Functional test that boots the local Debian arm64 benchmark image (built
# offline by "make image") under TCG and checks that the guest powers off
# cleanly once systemd has reached multi-user.target.
#
# SPDX-License-Identifier: GPL-2.0-or-later

import os
from pathlib import Path

from qemu_test import QemuSystemTest


def image_dir():
    """QEMU_TEST_DEBIAN_IMAGE_DIR, or build/image of the repository that
    holds this file."""
    default = Path(__file__).resolve().parents[2] / 'build' / 'image'
    return Path(os.environ.get('QEMU_TEST_DEBIAN_IMAGE_DIR', default))


class Aarch64DebianImage(QemuSystemTest):

    timeout = 600

    def boot_to_poweroff(self, smp, accel):
        image = image_dir()
        for name in ('vmlinuz', 'initrd.img', 'rootfs.ext4'):
            if not (image / name).is_file():
                self.skipTest(f'no {image / name}; build it with "make image"')
        self.set_machine('virt')
        self.require_accelerator('tcg')
        console = Path(self.log_file('guest-console.log'))
        self.vm.add_args('-cpu', 'max', '-m', '1G', '-smp', str(smp),
                         '-accel', accel, '-nic', 'none', '-no-reboot',
                         '-serial', f'file:{console}',
                         '-kernel', str(image / 'vmlinuz'),
                         '-initrd', str(image / 'initrd.img'),
                         '-append', 'root=/dev/vda console=ttyAMA0 panic=-1',
                         '-drive', f'file={image / "rootfs.ext4"},format=raw,'
                         'if=virtio,snapshot=on')
        # booted.service prints "booted" after multi-user.target, then
        # powers off.  A kernel panic or initramfs failure reboots
        # (panic=-1), which -no-reboot turns into an exit: either way QEMU
        # ends, and the console file says which.
        self.vm.launch()
        self.vm.wait(timeout=self.timeout)
        output = console.read_text(errors='replace')
        tail = output[-2000:]
        self.assertRegex(output, r'(?m)^booted\r?$', tail)
        self.assertIn('reboot: Power down', output, tail)
        self.assertEqual(self.vm.exitcode(), 0)

    def test_poweroff(self):
        self.boot_to_poweroff(2, 'tcg')

    def test_poweroff_relaxed_tlb_flush(self):
        self.boot_to_poweroff(4, 'tcg,tlb-flush=relaxed')


if __name__ == '__main__':
    QemuSystemTest.main()
