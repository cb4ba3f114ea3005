#!/usr/bin/env bash
# Builds the moe-a2a container image with podman (buildah underneath; no Docker daemon) from
# deploy/container/Containerfile. Default: FROM scratch, with a jlink-trimmed JDK 25 runtime and the
# C libraries it and the jar's native code (OpenBLAS, Netty epoll) load, copied from this machine.
#   deploy/container/build-image.sh [--base IMAGE] [--tag TAG]
# --base IMAGE (say eclipse-temurin:25-jre) puts only the jar on an image that has a JDK 25 java.
# Needs the CLI jar: ./mvnw -B -q install -DskipTests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
base=scratch
tag=moe-a2a:0.1.0-SNAPSHOT
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    *) echo "build-image.sh: unknown argument $1 (expected: --base IMAGE, --tag TAG)" >&2; exit 2 ;;
  esac
done
jar=$(ls "$root"/cli/target/moe-a2a-cli-*-all.jar 2>/dev/null | head -1)
[ -n "$jar" ] || { echo "build-image.sh: no CLI jar; run ./mvnw -B -q install -DskipTests" >&2; exit 1; }
ctx="$root/target/image-context"
rm -rf "$ctx"
mkdir -p "$ctx/opt/moe-a2a" "$ctx/tmp"
cp "$jar" "$ctx/opt/moe-a2a/moe-a2a.jar"

if [ "$base" = scratch ]; then
  # shellcheck source=../../bin/find-jdk
  . "$root/bin/find-jdk"
  jdk=$(moe_a2a_find_jdk) || exit $?
  # The modules jdeps finds in the jar, plus the management and logging ones it reaches by name.
  "$jdk/bin/jlink" --add-modules java.base,java.desktop,java.logging,java.management,java.naming,java.sql,jdk.httpserver,jdk.incubator.vector,jdk.jfr,jdk.management,jdk.unsupported \
    --strip-debug --no-header-files --no-man-pages --compress=zip-6 --output "$ctx/opt/java"
  # The C libraries: what the runtime's own libraries load (not the X11 ones: the image is
  # headless), and what OpenBLAS' libraries from the jar load; then the dynamic loader.
  natives=$(mktemp -d)
  (cd "$natives" && "$jdk/bin/jar" xf "$jar" org/bytedeco/openblas/linux-x86_64 org/bytedeco/javacpp/linux-x86_64)
  objects=$(find "$ctx/opt/java" "$natives" -name '*.so*' -o -path '*/bin/java' | grep -v -e xawt -e splashscreen -e jawt)
  for o in $objects; do
    ldd "$o" 2>/dev/null | awk '/=> \// {print $3}'
  done | sort -u | grep -v -e "^$natives" -e "^$ctx" | while read -r lib; do
    mkdir -p "$ctx$(dirname "$lib")"
    cp -L "$lib" "$ctx$lib"
  done
  loader=$(ldd "$ctx/opt/java/bin/java" | awk '/ld-linux/ {print $1}')
  mkdir -p "$ctx$(dirname "$loader")"
  cp -L "$loader" "$ctx$loader"
  rm -rf "$natives"
fi
chmod 1777 "$ctx/tmp"
podman build --format docker --build-arg BASE="$base" -f "$root/deploy/container/Containerfile" -t "$tag" "$ctx"
podman image inspect "$tag" --format '{{.Size}}' | awk -v t="$tag" '{printf "%s: %.1f MiB\n", t, $1 / 1048576}'
