#!/usr/bin/env bash
# A clone alone configures (issue 60). Clones this repository into an empty folder, so that no
# ../shared is beside it, and runs the clone's `scripts/build --configure-only` in a new user's
# environment (no UCXDT_* settings, no UCX_ROOT) with no archive to be found, over the cache this
# build came from. Passes when the configure succeeds over that cache's UCX 1.13.1, with pml
# ucxdt's Open MPI 5 when this build has one, and with the MPICH 5 peer left out by a line that
# names its download. Tests the committed tree: what a user clones.
# Usage: clone_alone.sh SOURCE_DIR UCX_ROOT [OMPI5_PREFIX]. Exit 77 (skipped) where the clone
# would have to build its dependencies: SOURCE_DIR is not a git checkout, or UCX_ROOT is not a
# complete UCX of setup-deps' cache.
set -uo pipefail
src=$1 ucx_root=$2 ompi5=${3:-}
skip() { echo "skipped: $*"; exit 77; }
fail() { echo "FAILED: $*"; [ ! -f "${log:-}" ] || sed 's/^/  | /' "$log"; exit 1; }
[ -f "$ucx_root/.complete" ] || skip "$ucx_root is not a UCX built by scripts/setup-deps"
[ -z "$ompi5" ] || [ -f "$ompi5/.complete" ] || skip "$ompi5 is not an Open MPI 5 built by scripts/setup-deps"
command -v git >/dev/null && git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || skip "$src is not a git checkout"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/home" "$tmp/no-archives"
clone=$tmp/home/ucxdt log=$tmp/build.log
git clone -q "$src" "$clone" || fail "git clone $src"
[ ! -e "$tmp/home/shared" ] || fail "something named shared beside the clone"

settings=(HOME="$HOME" PATH="$PATH" UCXDT_CACHE="$(dirname "$ucx_root")" UCXDT_ARCHIVE_PATH="$tmp/no-archives")
[ -n "$ompi5" ] || settings+=(UCXDT_OMPI5=n)  # as this build, which has no Open MPI 5
start=$SECONDS
env -i "${settings[@]}" timeout -k 10 240 "$clone/scripts/build" --configure-only >"$log" 2>&1 ||
  fail "the clone's scripts/build --configure-only exited $?"
echo "configured in $((SECONDS - start)) s"

grep -qxF "[build] UCX_ROOT=$ucx_root" "$log" || fail "not over the cache's UCX $ucx_root"
if [ -n "$ompi5" ]; then
  grep -qxF "[build] UCXDT_OMPI5_PREFIX=$ompi5" "$log" || fail "not with the cache's Open MPI 5 $ompi5"
  grep -qF "ucxdt: pml ucxdt against Open MPI 5 at $ompi5" "$log" || fail "pml ucxdt not configured"
fi
grep -q '^\[build\] the MPICH 5 peer and MPICH.s test suite are left out: no mpich-5\.0\.1\.tar\.gz .*https://github\.com/pmodels/mpich/releases/download/v5\.0\.1/mpich-5\.0\.1\.tar\.gz' "$log" ||
  fail "no line saying the MPICH 5 peer is left out and where to download it"
grep -qx 'UCXDT_MPICH5_PREFIX:PATH=' "$clone/build/CMakeCache.txt" || fail "the clone's build has an MPICH 5 peer"
! grep -q '^UCXDT_MPICH_ARCHIVE:FILEPATH=.' "$clone/build/CMakeCache.txt" || fail "the clone's build has MPICH's test suite"
grep -F -e '[build]' -e 'ucxdt:' "$log"
echo "PASSED"
