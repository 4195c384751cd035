"""downstream/functional/test_aarch64_debian_image.py through bin/functional,
run as QEMU's functional tests run and under avocado."""

import os

import pytest

from conftest import run
from harness.paths import IMAGE, QEMU_BUILD, REPO

FUNCTIONAL = REPO / "bin" / "functional"


def functional(*args, image=IMAGE):
    env = dict(os.environ, QEMU_BUILD=str(QEMU_BUILD),
               QEMU_TEST_DEBIAN_IMAGE_DIR=str(image))
    return run([FUNCTIONAL, *args], env=env, timeout=1800)


@pytest.mark.parametrize("mode", [[], ["--avocado"]])
def test_it_skips_naming_the_missing_image(mode, tmp_path):
    proc = functional(*mode, image=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reason = f'no {tmp_path}/vmlinuz; build it with "make image"'
    assert proc.stdout.count(reason) == 2


def test_it_fails_when_the_guest_cannot_mount_its_root(tmp_path):
    """Negative control: the image's kernel with a blank root device;
    initramfs-tools gives up and, told panic=-1, reboots at once."""
    if not (IMAGE / "rootfs.ext4").is_file():
        pytest.skip(f"no {IMAGE}/rootfs.ext4; run 'make image'")
    for name in ("vmlinuz", "initrd.img"):
        (tmp_path / name).symlink_to(IMAGE / name)
    with open(tmp_path / "rootfs.ext4", "wb") as blank:
        blank.truncate(64 << 20)
    proc = functional(image=tmp_path)
    assert proc.returncode != 0
    assert proc.stdout.count("not ok") == 2


@pytest.mark.parametrize("mode, passed", [
    ([], "ok 1 test_aarch64_debian_image.Aarch64DebianImage.test_poweroff\n"),
    (["--avocado"], "RESULTS    : PASS 2 | ERROR 0 | FAIL 0 | SKIP 0"),
])
def test_the_debian_image_boots_and_powers_off(mode, passed):
    if not (IMAGE / "rootfs.ext4").is_file():
        pytest.skip(f"no {IMAGE}/rootfs.ext4; run 'make image'")
    proc = functional(*mode)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert passed in proc.stdout
    assert "SKIP" not in proc.stdout.replace("SKIP 0", "")
