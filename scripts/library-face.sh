#!/usr/bin/env bash
# What a library user and a packager get, checked (run by .ci/run):
# - the library builds without the binary's dependencies (`--no-default-features`);
# - a consumer crate with a `#[serde(flatten)]` map of numbers builds and passes with cchist in
#   its build (no `arbitrary_precision` forced on it): tests/consumer;
# - the package holds the source, the pipelines, README, CHANGELOG and licences only, builds
#   on its own (cargo package verifies), and no file of it holds anything `cchist check` finds;
# - the declared MSRV (Cargo.toml's rust-version) checks every target.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"

echo "-- library without the cli feature"
cargo build --locked --lib --no-default-features
# What a feature turns off fails in words (a `.zst` import source without `zstd`).
cargo test --locked --quiet --lib --no-default-features import::tests

echo "-- consumer crate (tests/consumer)"
CARGO_TARGET_DIR="$TARGET/consumer" cargo test --quiet --manifest-path tests/consumer/Cargo.toml

echo "-- package contents"
# Its own target folder: cargo's verify build of the unpacked package shares the unit hashes of
# this tree's lib and bin, and in the same folder it would leave their fingerprints pointing at
# the package's copy of the sources, so later builds of this tree would be taken as fresh.
CARGO_TARGET_DIR="$TARGET/package-verify" cargo package --locked --allow-dirty --quiet
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
crate="$TARGET/package-verify/package/cchist-$version.crate"
list=$(tar -tzf "$crate")
if grep -E '^cchist-[^/]*/(tests|scripts|\.ci|benches|fuzz)/|\.jsonl$|/tests\.rs$' <<<"$list"; then
  echo "error: the package holds test data or tooling (above)" >&2
  exit 1
fi
for f in LICENSE-MIT LICENSE-APACHE README.md CHANGELOG.md; do
  grep -qx "cchist-$version/$f" <<<"$list" || { echo "error: $f missing from the package" >&2; exit 1; }
done
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
tar -xzf "$crate" -C "$unpacked"
cargo build --locked --quiet --bin cchist
files=()
while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$unpacked" -type f -print0)
"$TARGET/debug/cchist" check "${files[@]}" >/dev/null 2>&1 && status=0 || status=$?
if [ "$status" -ne 0 ]; then
  "$TARGET/debug/cchist" check "${files[@]}" || true
  echo "error: cchist check finds something in the packaged files (exit $status)" >&2
  exit 1
fi
echo "package: $(wc -l <<<"$list") files, nothing found by cchist check"

echo "-- MSRV"
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
if rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1; then
  CARGO_TARGET_DIR="$TARGET/msrv" cargo "+$msrv" check --locked --all-targets --quiet
  echo "rust $msrv: every target checks"
else
  echo "error: could not install Rust $msrv to check the declared MSRV" >&2
  exit 1
fi
