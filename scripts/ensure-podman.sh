#!/usr/bin/env bash
# Makes sure an image builder is installed for the image test of deploy/
# (deploy/image_test.go builds the Containerfile, exports the image's root
# filesystem and checks it): podman from the system's packages (Debian's
# podman) when none of podman, buildah or a docker with an engine is there.
# Where no builder can be installed the test says so and skips only the
# build; the Containerfile's own checks still run.
set -euo pipefail
have() {
  command -v podman >/dev/null || command -v buildah >/dev/null ||
    { command -v docker >/dev/null && docker info >/dev/null 2>&1; }
}
if have; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "ensure-podman: installing podman from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  if apt-get install -y -qq podman >/dev/null && have; then
    exit 0
  fi
fi
echo "ensure-podman: no image builder (podman, buildah, docker) could be installed; the image build test will be skipped" >&2
exit 0
