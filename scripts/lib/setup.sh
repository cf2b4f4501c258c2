# scripts/lib/setup.sh — sourced by scripts/demo and scripts/test.
# Installs the Debian 12 packages lease needs when any is missing, so both
# commands work on a fresh machine. Nothing is downloaded at build time.

lease_packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libboost-dev libhowardhinnant-date-dev tzdata
  libsqlite3-dev libhiredis-dev libpq-dev
  catch2 librapidcheck-dev libbenchmark-dev
  redis-server postgresql   # real servers the store tests start on loopback
  spin python3              # model/: the protocol checked exhaustively (scripts/model-check)
  prometheus-cpp-dev prometheus libcli11-dev  # lease::prometheus (promtool validates it), leasectl
  faketime libfaketime  # test/chaos: a stepped wall clock in one instance process
)

lease_say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

lease_ensure_packages() {
  local missing=()
  for p in "${lease_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  lease_say "installing missing Debian packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: need root (or sudo) to apt-get install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Jobs for the build: the machine has 2 cores; never more than it has.
lease_jobs() { nproc 2>/dev/null || echo 2; }
