#!/usr/bin/env bash
# Installs the standard library's source (rustup's `rust-src` component) for the toolchain that
# builds tensorbook. The kernel's completion and hover read it through rust-analyzer: without
# it a Tab after `v.` on a `Vec` finds none of its methods, and the analysis of a session has
# no `core`, `alloc` or `std` to resolve a cell's types against. rustup's default profile leaves
# it out. Idempotent: a second run costs one rustup call.
set -euo pipefail
cd "$(dirname "$0")/.."
sysroot=$(rustc --print sysroot)
if [ -f "$sysroot/lib/rustlib/src/rust/library/Cargo.toml" ]; then
    exit 0
fi
if ! command -v rustup > /dev/null 2>&1; then
    echo "install/rust-src.sh: no rustup, and $sysroot has no library source: completion and hover will not know the standard library (install your toolchain's rust-src)" >&2
    exit 0
fi
if ! rustup component add rust-src; then
    echo "install/rust-src.sh: rustup could not add rust-src: completion and hover will not know the standard library" >&2
    exit 0
fi
echo "install/rust-src.sh: the standard library's source is in $sysroot/lib/rustlib/src/rust/library"
