#!/usr/bin/env bash
# Builds tollgate's release archives, reproducibly: the same commit gives the
# same bytes on any machine with the same Go version.
#
#   scripts/release.sh VERSION [DIST]        (make release VERSION=v0.1.0 [DIST=dir])
#
# For each target (TARGETS, default linux/amd64 linux/arm64 darwin/arm64) it
# writes DIST/tollgate_VERSION_OS_ARCH.tar.gz holding the static binaries
# tollgate (the server) and tollgate-lab (simulate, attack, replay,
# conformance) (CGO_ENABLED=0, -trimpath, the commit recorded by -buildvcs, no
# build ID, no build paths), LICENSE, README.md, CHANGELOG.md, docs/, tollgate.example.yaml
# and what the deploy docs install from it (FILES below: the systemd unit, its
# env example and drop-in, the alert rules, the dashboard), with every file's
# time set to the commit's; a CycloneDX SBOM of the Go modules
# per target (cyclonedx-gomod, pinned, from the Go module proxy; the server's,
# which holds every module tollgate-lab's does: deploy/release_test.go checks); and
# SHA256SUMS over all of them. DIST defaults to dist/. The SBOM tool is
# github.com/CycloneDX/cyclonedx-gomod, pinned below. The Python client's
# sdist and wheel (tollgate-X.Y.Z.tar.gz, tollgate-X.Y.Z-py3-none-any.whl,
# with tollgate.django) come from scripts/build-python.sh, offline, with
# the same times, and the TypeScript client's npm tarball
# (tollgate-client-X.Y.Z.tgz, with @tollgate/client/express, installable
# with `npm install ./tollgate-client-X.Y.Z.tgz`) from
# scripts/build-npm.sh, offline; SHA256SUMS covers them too.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${1:-}
DIST=${2:-dist}
TARGETS=${TARGETS:-linux/amd64 linux/arm64 darwin/arm64}
GO=${GO:-go}
CYCLONEDX=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
# What an archive holds beside the binary, at the same paths as in the
# repository (so deploy/systemd/README.md's `install deploy/systemd/…` lines
# work in the unpacked archive), except the example config, kept at the top.
# deploy/release_test.go fails when a deploy doc installs a file not in it.
FILES="LICENSE README.md CHANGELOG.md docs/*.md
  deploy/systemd/README.md deploy/systemd/tollgate.service
  deploy/systemd/tollgate.env.example deploy/systemd/redis-password.conf
  deploy/prometheus/alerts.yaml deploy/grafana/tollgate.json"

if ! [[ $VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: scripts/release.sh vMAJOR.MINOR.PATCH[-PRE] [DIST]" >&2
  exit 2
fi
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "release: not a Git checkout: a release records its commit" >&2
  exit 1
fi
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "release: warning: the tree has uncommitted changes; the binaries will say modified" >&2
fi

# Every time in the archives is the commit's, and every mode this umask's, so a
# rebuild is byte-identical.
umask 022
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
export SOURCE_DATE_EPOCH
mkdir -p "$DIST"
DIST=$(cd "$DIST" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The SBOM tool, built for this machine (GOOS and GOARCH below are the
# target's, which the tool reads to pick the target's modules), unless
# CYCLONEDX_BIN names one already built.
sbom=${CYCLONEDX_BIN:-}
if [ -z "$sbom" ]; then
  GOBIN=$work/bin GOFLAGS= "$GO" install "$CYCLONEDX"
  sbom=$work/bin/cyclonedx-gomod
fi

for target in $TARGETS; do
  os=${target%/*} arch=${target#*/}
  name=tollgate_${VERSION}_${os}_${arch}
  dir=$work/$name
  mkdir -p "$dir"
  echo "release: building $name" >&2
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch GOFLAGS= "$GO" build -trimpath -buildvcs=true \
    -ldflags "-s -w -buildid= -X main.version=$VERSION" -o "$dir/tollgate" ./cmd/tollgate
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch GOFLAGS= "$GO" build -trimpath -buildvcs=true \
    -ldflags "-s -w -buildid=" -o "$dir/tollgate-lab" ./cmd/tollgate-lab
  for f in $FILES; do
    install -D -m 0644 "$f" "$dir/$f"
  done
  install -m 0644 cmd/tollgate/tollgate.example.yaml "$dir/"
  chmod 0755 "$dir/tollgate" "$dir/tollgate-lab"
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$work" -cf - "$name" | gzip -n -9 >"$DIST/$name.tar.gz"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch GOFLAGS= "$sbom" app -json \
    -noserial -notimestamp -main cmd/tollgate -output "$DIST/$name.cdx.json" . 2>"$work/sbom.log" ||
    { cat "$work/sbom.log" >&2; exit 1; }
done

echo "release: building the Python package" >&2
scripts/build-python.sh "$DIST" >/dev/null
echo "release: building the npm package" >&2
scripts/build-npm.sh "$DIST" >/dev/null
(cd "$DIST" && sha256sum -- *.tar.gz *.whl *.tgz *.cdx.json >SHA256SUMS)
echo "release: $DIST/SHA256SUMS" >&2
cat "$DIST/SHA256SUMS"
