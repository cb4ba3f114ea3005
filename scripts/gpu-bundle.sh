#!/usr/bin/env bash
# Builds target/gpu-bundle/: a jlink-trimmed Java runtime plus the jars gpu-check needs (GpuCheck,
# and the served path's control plane and worker over gRPC in process: no OpenBLAS, no Netty, no
# Prometheus), for a GPU machine without Java or network. Run it here, then carry
# target/gpu-bundle to the GPU machine and run scripts/gpu-check.sh there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/target/gpu-bundle"
cd "$root"

./mvnw -B -q install -DskipTests -pl cli -am
rm -rf "$out"
mkdir -p "$out/lib"
cp cli/target/moe-a2a-cli-*-SNAPSHOT.jar "$out/lib/"
netty=netty-buffer,netty-codec-base,netty-codec-compression,netty-codec-http,netty-codec-http2,netty-codec-socks,netty-common,netty-handler,netty-handler-proxy,netty-resolver,netty-transport,netty-transport-classes-epoll,netty-transport-native-epoll,netty-transport-native-unix-common
prometheus=micrometer-registry-prometheus,prometheus-metrics-config,prometheus-metrics-core,prometheus-metrics-exporter-common,prometheus-metrics-exporter-httpserver,prometheus-metrics-exposition-formats,prometheus-metrics-exposition-textformats,prometheus-metrics-model,prometheus-metrics-tracer-common
./mvnw -B -q -pl cli org.apache.maven.plugins:maven-dependency-plugin:3.11.0:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$out/lib" \
  -DexcludeArtifactIds="openblas,grpc-netty,grpc-netty-shaded,$netty,$prometheus,jfreechart,picocli,logback-classic,logback-core,jul-to-slf4j,moe-a2a-bench"
# A logging backend of 16 KB in logback's place, so the worker's and control plane's log lines
# (fallbacks, refusals, failures) reach the run's output.
slf4j=$(./mvnw -B -q help:evaluate -Dexpression=slf4j.version -DforceStdout -N)
./mvnw -B -q org.apache.maven.plugins:maven-dependency-plugin:3.11.0:copy -N \
  -Dartifact="org.slf4j:slf4j-simple:$slf4j" -DoutputDirectory="$out/lib"
# Only the presets' JNI libraries the checks load (cudart with the driver API, NCCL, cuBLAS,
# NVRTC): the others (cuDNN, cuSPARSE, NPP, ...) are room the device run cannot spare.
for native in "$out"/lib/cuda-*-linux-x86_64.jar; do
  unused=$(unzip -Z1 "$native" | grep -E '^org/bytedeco/cuda/linux-x86_64/libjni.*\.so$' \
    | grep -vE '/libjni(cudart|nccl|cublas|nvrtc)\.so$' || true)
  if [ -n "$unused" ]; then
    # shellcheck disable=SC2086
    zip -q -d "$native" $unused
  fi
done
# The runtime is trimmed from the project's JDK 25 (bin/find-jdk), whatever java the PATH has.
# shellcheck source=../bin/find-jdk
. "$root/bin/find-jdk"
jdk=$(moe_a2a_find_jdk) || exit $?
"$jdk/bin/jlink" --add-modules java.base,jdk.unsupported,java.management,java.logging,jdk.management,java.naming,jdk.incubator.vector \
  --strip-debug --no-header-files --no-man-pages --compress=zip-9 --output "$out/jre"
# the JVM's native symbols: 5 MiB the device run's 64 MiB cannot spare
strip --strip-unneeded "$out/jre/lib/server/libjvm.so"
# the commit the bundle was built from, for gpu-check's report (and whether the tree had changes)
commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit (with uncommitted changes)"
fi
echo "$commit" > "$out/COMMIT"
du -sh "$out/jre" "$out/lib" "$out"
# A device run carries the tracked tree too, within the same 64 MiB.
bundle_bytes=$(du -sb "$out" | cut -f1)
tree_bytes=$( (cd "$root" && git ls-files -z 2>/dev/null | du -cb --files0-from=- 2>/dev/null) | tail -1 | cut -f1 || true)
if [ -z "$tree_bytes" ]; then
  echo "gpu-bundle: the tracked tree's size is unknown (no git checkout?); counting the bundle alone" >&2
  tree_bytes=0
fi
total_mib=$(( (bundle_bytes + tree_bytes + 1048575) / 1048576 ))
if [ "$total_mib" -ge 64 ]; then
  echo "gpu-bundle: ${total_mib} MiB with the tracked tree, over the 64 MiB a device run can carry" >&2
  exit 1
fi
echo "gpu-bundle: ${total_mib} MiB with the tracked tree ($((bundle_bytes / 1048576)) MiB in $out)"
