# Sourced by the bench scripts: installs the Debian packages named as
# arguments that are missing (PyTorch and friends are only needed here, so
# scripts/install-deps.sh leaves them out).
ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "${missing[@]}"
  fi
}
