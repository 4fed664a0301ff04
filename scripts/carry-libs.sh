# Sourced by scripts/device-run and scripts/device-debian-mpi: what a staged carry (a folder the device
# tool copies to the GPU machine) needs besides its binaries. That machine (Ubuntu 24.04) has
# glibc, libstdc++, the driver and CUDA 13; every other shared library is carried, found by ldd.

# On the device already: the C library family, the C++ runtime and the driver's libraries.
carry_system_re='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libgcc_s|libstdc\+\+|libcuda|libnvidia-[a-z-]+)\.so'
# Only the driver may be missing here (this machine has no GPU driver).
carry_driver_re='^(libcuda|libnvidia-[a-z-]+)\.so'

# carry_libs ROOT SEARCH_PATH DIR...: copies every library that the files under the DIRs need
# into ROOT/lib (libcudart into ROOT/lib-cudart: the device's own runtime is preferred, ours is
# the fallback), to a fixed point. Each goes as one real file under the name the loader asks
# for: symbolic links may not survive the transfer. Fails on a need ldd cannot find here.
carry_libs() {
  local root=$1 search=$2; shift 2
  local changed=1 f name arrow path dest
  mkdir -p "$root/lib" "$root/lib-cudart"
  while [ $changed = 1 ]; do
    changed=0
    while IFS= read -r f; do
      while read -r name arrow path _; do
        [ "$arrow" = "=>" ] || continue
        [[ $name =~ $carry_system_re ]] && continue
        if [ "$path" = "not" ]; then
          [[ $name =~ $carry_driver_re ]] && continue
          echo "carry_libs: $(basename "$f") needs $name, which ldd cannot find here" >&2; return 1
        fi
        case "$path" in "$root"/*) continue ;; esac
        dest=$root/lib
        case "$name" in libcudart.so*) dest=$root/lib-cudart ;; esac
        [ -e "$dest/$name" ] && continue
        cp -L "$path" "$dest/$name"
        changed=1
      done < <(LD_LIBRARY_PATH="$search" ldd "$f" 2>/dev/null)
    done < <(carry_elves "$@")
  done
}

# carry_unresolved SEARCH_PATH DIR...: prints each file under the DIRs with a need that does not
# resolve from SEARCH_PATH (the driver's excepted); returns 1 if there is one.
carry_unresolved() {
  local search=$1; shift
  local f nf bad=0
  while IFS= read -r f; do
    nf=$(LD_LIBRARY_PATH="$search" ldd "$f" 2>/dev/null | awk '/not found/ {print $1}' | grep -Ev "$carry_driver_re" || true)
    if [ -n "$nf" ]; then echo "unresolved in $(basename "$f"): $nf" >&2; bad=1; fi
  done < <(carry_elves "$@")
  return $bad
}

# The regular files under the DIRs that are ELF binaries or libraries.
carry_elves() {
  local f
  while IFS= read -r f; do
    [ "$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"
  done < <(find "$@" -type f 2>/dev/null)
}
