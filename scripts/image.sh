#!/usr/bin/env bash
# Builds tollgate's container image (Containerfile) with whichever builder is
# installed: podman, buildah or docker (one whose engine answers). The binaries
# (tollgate and tollgate-lab) are built here, on the host (static, -trimpath,
# the commit recorded), and put into the image by the Containerfile's prebuilt target, so no registry
# is needed; the image is FROM scratch.
#
#   scripts/image.sh [IMAGE]        (make image [IMAGE=name:tag] [VERSION=v0.1.0])
#
# IMAGE defaults to ghcr.io/tollgate-auth/tollgate:VERSION, VERSION to
# `git describe`. GOARCH picks the image's architecture (default: this
# machine's). Prints the image's name on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
IMAGE=${1:-${IMAGE:-ghcr.io/tollgate-auth/tollgate:$VERSION}}
ARCH=${GOARCH:-$("$GO" env GOARCH)}

builder=""
for b in podman buildah docker; do
  command -v "$b" >/dev/null || continue
  if [ "$b" = docker ] && ! docker info >/dev/null 2>&1; then
    continue # the docker CLI without an engine
  fi
  builder=$b
  break
done
if [ -z "$builder" ]; then
  echo "image: no podman, buildah or docker (with an engine) is installed" >&2
  exit 3
fi

REVISION=$(git rev-parse HEAD 2>/dev/null || echo "")
CREATED=$(date -u -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)" +%Y-%m-%dT%H:%M:%SZ)

# build/image/ is what the prebuilt stage copies: the binaries, the CA
# certificates (for rediss:// and an https JWKS URL), passwd and group for
# UID/GID 65532.
out=build/image
rm -rf build
mkdir -p "$out/etc/ssl/certs"
CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH GOFLAGS= "$GO" build -trimpath -buildvcs=true \
  -ldflags "-s -w -buildid= -X main.version=$VERSION" -o "$out/tollgate" ./cmd/tollgate
CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH GOFLAGS= "$GO" build -trimpath -buildvcs=true \
  -ldflags "-s -w -buildid=" -o "$out/tollgate-lab" ./cmd/tollgate-lab
cp /etc/ssl/certs/ca-certificates.crt "$out/etc/ssl/certs/"
echo 'tollgate:x:65532:65532:tollgate:/nonexistent:/sbin/nologin' >"$out/etc/passwd"
echo 'tollgate:x:65532:' >"$out/etc/group"
chmod 0755 "$out/tollgate" "$out/tollgate-lab"
chmod 0644 "$out/etc/passwd" "$out/etc/group" "$out/etc/ssl/certs/ca-certificates.crt"

args=(--target prebuilt --build-arg "VERSION=$VERSION"
  --build-arg "REVISION=$REVISION" --build-arg "CREATED=$CREATED"
  --platform "linux/$ARCH" -f Containerfile -t "$IMAGE")
case $builder in
  podman) podman build --format docker "${args[@]}" . >&2 ;;
  buildah) buildah bud --format docker "${args[@]}" . >&2 ;;
  docker) docker build "${args[@]}" . >&2 ;;
esac
echo "image: built $IMAGE with $builder" >&2
echo "$IMAGE"
