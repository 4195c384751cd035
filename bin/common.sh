# Shared settings of the bin/ scripts; sourced, never run.
#
# The pinned upstream: Debian's source package of QEMU 10.2.2 and the sha256
# of its orig tarball, checked on every fetch.
QEMU_DEBIAN_PACKAGE=qemu
QEMU_DEBIAN_VERSION=1:10.2.2+ds-1
QEMU_DEBIAN_SUITE=sid
QEMU_ORIG_TARBALL=qemu_10.2.2+ds.orig.tar.xz
QEMU_ORIG_SHA256=be05230fe47a6937cd29f28f562932c8125f9c93c2a82c625198f7a4aa601dfb

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$REPO/build
SRC=$BUILD/src
BASELINE_SRC=$BUILD/baseline-src
VENV=$BUILD/venv

# configure's arguments for every build: the same features on every
# machine, whatever else is installed, so that builds and hosts compare
# like with like.  Debian's ipxe-qemu has the firmware -M virt loads.
FIRMWARE_PATH=/usr/lib/ipxe/qemu
QEMU_CONFIGURE_ARGS=(--python="$VENV/bin/python3" --disable-download
    --target-list=aarch64-softmmu --without-default-features
    --enable-tcg --enable-fdt=system --disable-docs
    --firmwarepath="$FIRMWARE_PATH" --gdb=/usr/bin/gdb-multiarch)

# The series' patches in order, NUL-separated: patches/*.patch but the
# cover letter, which 'git am' would take for an empty patch.
COVER_LETTER=0000-cover-letter.patch
series_patches()
{
    find "$REPO/patches" -maxdepth 1 -name '*.patch' ! -name "$COVER_LETTER" -print0 |
        sort -z
}

# Digest of the patch series, recorded when build/src matches it.
patches_digest()
{
    series_patches | xargs -0 -r cat | sha256sum | cut -d' ' -f1
}

# Run apt-get or apt-cache (TOOL) with a private configuration in DIR, whose
# sources.list the caller writes, so that the system's apt state is untouched.
private_apt()
{
    local dir=$1 tool=$2
    shift 2
    mkdir -p "$dir/sources.list.d" "$dir/lists/partial" "$dir/cache/archives/partial"
    "$tool" -o "Dir::Etc::SourceList=$dir/sources.list" \
        -o "Dir::Etc::SourceParts=$dir/sources.list.d" \
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" "$@"
}

die()
{
    echo "${0##*/}: error: $*" >&2
    exit 1
}

note()
{
    echo "${0##*/}: $*" >&2
}

# Run module harness.NAME of downstream/ with build/venv's Python, on QEMU's
# own Python libraries from the assembled tree (qemu.machine, qemu.qmp).
harness()
{
    local module=$1
    shift
    [ -x "$VENV/bin/python3" ] || die "no build/venv; run bin/install-deps"
    [ -d "$SRC/python/qemu/machine" ] || die "no build/src/python; run bin/assemble"
    PYTHONPATH=$REPO/downstream:$SRC/python exec "$VENV/bin/python3" \
        -m "harness.$module" "$@"
}
