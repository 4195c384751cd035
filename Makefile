# Entry points; each target runs one script of bin/ (see README.md).

.PHONY: all deps assemble qemu baseline debug guest image boot check export clean

all: boot

deps:
	bin/install-deps

assemble: deps
	bin/assemble

qemu baseline debug: assemble
	bin/build $@

guest: deps
	bin/guest-kernel

image: deps
	bin/guest-image

boot: qemu
	bin/boot-time

check: qemu debug guest
	bin/check

export:
	bin/export-patches

clean:
	rm -rf build/qemu build/baseline build/debug build/check
