# Entry points; each target runs one script of bin/ (see README.md).

.PHONY: all deps assemble qemu baseline debug docs tsan guest image build-image boot compare check functional bench export clean

all: compare

deps:
	bin/install-deps

assemble: deps
	bin/assemble

qemu baseline debug docs tsan: assemble
	bin/build $@

guest: deps
	bin/guest-kernel

image: deps
	bin/guest-image

build-image: deps guest
	bin/guest-build-image

boot: qemu
	bin/boot-time

compare: qemu guest
	bin/compare

check: qemu debug tsan guest image build-image
	bin/check

functional: qemu
	bin/functional

bench: qemu baseline image
	bin/bench

export:
	bin/export-patches

clean:
	rm -rf build/qemu build/baseline build/debug build/docs build/tsan build/check build/series
