# Sourced by setup-deps, build and test: where the dependency cache is, and where the source
# archives that Debian does not serve are looked for. Neither archive is needed by the README's
# two commands: each builds something optional (the MPICH 5 peer; the host tests against UCX
# 1.22.0), which is built when its archive is found and left out, with a line naming the
# download, when it is not.
#
# An archive is looked for, in this order: its own setting (UCXDT_MPICH_ARCHIVE,
# UCXDT_UCX_ARCHIVE); then each folder of UCXDT_ARCHIVE_PATH (colon-separated; default:
# ../shared/deps beside the clone, then the cache's archives/, where setup-deps keeps a copy of
# every archive it has built from, so that a later run from any clone finds it).

UCXDT_CACHE_DIR=${UCXDT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucxdt}

# archive_setting NAME: the environment variable that names archive NAME directly.
archive_setting() {
  case "$1" in
    mpich-*) echo UCXDT_MPICH_ARCHIVE ;;
    ucx-*) echo UCXDT_UCX_ARCHIVE ;;
    *) echo "archives.sh: unknown archive $1" >&2; return 2 ;;
  esac
}

# archive_url NAME: where NAME is published.
archive_url() {
  case "$1" in
    mpich-5.0.1.tar.gz) echo https://github.com/pmodels/mpich/releases/download/v5.0.1/mpich-5.0.1.tar.gz ;;
    ucx-1.22.0.tar.gz) echo https://github.com/openucx/ucx/releases/download/v1.22.0/ucx-1.22.0.tar.gz ;;
    *) echo "archives.sh: unknown archive $1" >&2; return 2 ;;
  esac
}

# archive_find NAME: prints the path of archive NAME, or returns 1 when it is nowhere above. A
# setting that names a file which does not exist is an error (returns 2), not a reason to look on.
archive_find() {
  local var given dir here
  var=$(archive_setting "$1") || return 2
  given=${!var:-}
  if [ -n "$given" ]; then
    [ -f "$given" ] || { echo "$var=$given: no such file" >&2; return 2; }
    echo "$given"; return 0
  fi
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  local IFS=:
  for dir in ${UCXDT_ARCHIVE_PATH:-$here/../shared/deps:$UCXDT_CACHE_DIR/archives}; do
    [ -n "$dir" ] && [ -f "$dir/$1" ] && { echo "$dir/$1"; return 0; }
  done
  return 1
}

# archive_missing NAME: one line that says NAME was not found, where it was looked for, and
# where to download it.
archive_missing() {
  local var
  var=$(archive_setting "$1") || return 2
  echo "no $1 (looked in $var, then ${UCXDT_ARCHIVE_PATH:-../shared/deps and $UCXDT_CACHE_DIR/archives}): download it from $(archive_url "$1") and set $var to it"
}
