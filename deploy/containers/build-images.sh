#!/usr/bin/env bash
# Builds the agent and controller images with podman from the .debs this tree's build makes,
# without a registry: the base is a debootstrap of Debian 12 (minbase), imported once as
# localhost/loadlab-base:bookworm (kept; BASE=IMAGE uses another, e.g. debian:12-slim). Needs
# root, podman with runc, debootstrap, and the network for apt inside the build. podman reads
# deploy/containers/containers.conf (runc, cgroupfs) unless CONTAINERS_CONF names another file.
#
# Env: BUILD_DIR (default build), TAG (default the package version), MIRROR, AGENT_EXTRA_PACKAGES
# (Debian packages added to the agent image: the targets' runtimes, linux-perf for profiles).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/deploy/containers/containers.conf}
BUILD_DIR=${BUILD_DIR:-build}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
for tool in podman debootstrap cpack; do
  command -v "$tool" > /dev/null || { echo "build-images.sh: needs $tool (apt-get install podman runc debootstrap)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "build-images.sh: run as root (debootstrap, podman's root storage)" >&2; exit 2; }
[ -f "$BUILD_DIR/CPackConfig.cmake" ] || { echo "build-images.sh: $BUILD_DIR is not a configured build (make programs)" >&2; exit 2; }

BASE=${BASE:-localhost/loadlab-base:bookworm}
if [ "$BASE" = localhost/loadlab-base:bookworm ] && ! podman image exists "$BASE"; then
  root=$(mktemp -d /var/tmp/loadlab-base.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  echo "debootstrap: Debian 12 minbase from $MIRROR"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" > "$root.log" 2>&1 || { tail "$root.log" >&2; exit 1; }
  rm -f "$root.log"
  tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE" > /dev/null
  rm -rf "$root"
fi

debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
cmake --build "$BUILD_DIR" --target loadlab loadlab-agent loadlab-target loadlab-load loadlab-target-secure \
  loadlab-target-h3 loadlab-load-secure loadlab-load-h3
(cd "$BUILD_DIR" && cpack -G DEB --config CPackConfig.cmake -B "$debs" > "$debs/cpack.log") || { tail "$debs/cpack.log" >&2; exit 1; }
version=$(basename "$debs"/loadlab-agent_*.deb | sed 's/^loadlab-agent_\([^_]*\)_.*/\1/')
TAG=${TAG:-$version}
for target in agent controller; do
  name=loadlab-$target
  [ "$target" = controller ] && name=loadlab-controller
  # The image this tag named before, removed once the tag moves (not left as <none>, 0.4 GB a build).
  old=$(podman image inspect -f '{{.Id}}' "localhost/$name:$TAG" 2> /dev/null || true)
  extra=()
  [ "$target" = agent ] && extra=(--build-arg AGENT_EXTRA_PACKAGES="${AGENT_EXTRA_PACKAGES:-}")
  podman build -q -f deploy/containers/Containerfile.debs --build-arg BASE="$BASE" "${extra[@]}" --target "$target" \
    -t "localhost/$name:$TAG" "$debs" > /dev/null
  new=$(podman image inspect -f '{{.Id}}' "localhost/$name:$TAG")
  if [ -n "$old" ] && [ "$old" != "$new" ]; then podman rmi "$old" > /dev/null 2>&1 || true; fi
  echo "localhost/$name:$TAG"
done
