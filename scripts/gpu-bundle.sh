#!/usr/bin/env bash
# Builds target/gpu-bundle/: a jlink-trimmed Java runtime plus the jars GpuCheck needs (no
# OpenBLAS, no Netty), for a GPU machine without Java or network. Run it here, then carry
# target/gpu-bundle to the GPU machine and run scripts/gpu-check.sh there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/target/gpu-bundle"
cd "$root"

./mvnw -B -q install -DskipTests -pl gpu -am
rm -rf "$out"
mkdir -p "$out/lib"
cp gpu/target/moe-a2a-gpu-*.jar "$out/lib/"
./mvnw -B -q -pl gpu org.apache.maven.plugins:maven-dependency-plugin:3.11.0:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$out/lib" \
  -DexcludeArtifactIds=openblas,netty-transport,netty-buffer,netty-common,netty-resolver,netty-codec-base,netty-transport-native-epoll,netty-transport-native-unix-common,netty-transport-classes-epoll,gson
# The runtime is trimmed from the project's JDK 25 (bin/find-jdk), whatever java the PATH has.
# shellcheck source=../bin/find-jdk
. "$root/bin/find-jdk"
jdk=$(moe_a2a_find_jdk) || exit $?
"$jdk/bin/jlink" --add-modules java.base,jdk.unsupported,java.management,java.logging,jdk.management,java.naming,jdk.incubator.vector \
  --strip-debug --no-header-files --no-man-pages --compress=zip-6 --output "$out/jre"
du -sh "$out/jre" "$out/lib" "$out"
total_mib=$(du -sm "$out" | cut -f1)
if [ "$total_mib" -ge 64 ]; then
  echo "gpu-bundle: ${total_mib} MiB, over the 64 MiB a device run can carry" >&2
  exit 1
fi
echo "gpu-bundle: ${total_mib} MiB in $out"
