#!/usr/bin/env bash
# Builds the GPU test bundle: everything muon-cuda's tests (the @Tag("gpu") ones included, and the GPU training
# run CudaTrainingGpuTest) need on a Linux x86-64 machine with an NVIDIA driver but no Java and no Maven.
#
#   muon-cuda/src/test/gpu/bundle.sh [OUT]      (OUT defaults to .gpubundle/ at the repository root)
#
# Needs, on the building machine: Maven with network access (libtorch's GPU natives are 458 MB), nvcc (the kernels
# must be in the jar), apt-get (Debian's JRE), readelf, unzip, split and sha256sum. Never part of `mvn verify`.
#
# Writes OUT/parts/muon-gpu-bundle.tar.part-NN (at most MUON_GPU_PART_BYTES bytes each, default 55000000) and
# OUT/parts/SHA256SUMS (every part and the whole archive), with join.sh and cuda-libs.txt beside them. On the GPU
# machine, join.sh checks and joins the parts, and the archive's run.sh runs the tests; docs/cuda.md gives the
# sequence.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
out=${1:-$repo/.gpubundle}
part_bytes=${MUON_GPU_PART_BYTES:-55000000}
dependency_plugin=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

say() { printf 'bundle.sh: %s\n' "$*" >&2; }

for tool in mvn apt-get readelf unzip split sha256sum tar; do
    command -v "$tool" >/dev/null 2>&1 || { say "$tool is needed to build the bundle"; exit 1; }
done
if [[ "$out" == "$repo"/* ]] && ! git -C "$repo" check-ignore -q "$out/parts/x"; then
    # The parts would otherwise travel with every copy of the working tree.
    say "$out is not ignored by git; add it to .gitignore or .git/info/exclude, or pass an OUT outside the repository"
    exit 1
fi

stage="$out/stage/muon-gpu-bundle"
rm -rf "$out/stage" "$out/parts"
mkdir -p "$stage"/{lib,junit,jre,classes} "$out/parts"

# 1. Main and test classes with the GPU profile's test class path. requireNvcc: a bundle without kernels would only
#    test the libtorch fallback.
say "building muon-cuda with -Pgpu (downloads libtorch's GPU natives once, 458 MB)"
rm -rf "$repo/muon-cuda/target/dependency"
(cd "$repo" && mvn -B -q ${MUON_MVN_ARGS:-} -Pgpu -pl muon-cuda -am -DskipTests -Dmuon.cuda.requireNvcc=true \
    package "$dependency_plugin:copy-dependencies" -DincludeScope=test \
    -DexcludeGroupIds=org.junit.jupiter,org.junit.platform,org.opentest4j,org.apiguardian)
jar=$(ls "$repo"/muon-cuda/target/muon-cuda-*.jar | grep -v -E -- '-(tests|javadoc|sources)\.jar$' | head -n 1)
for image in ns_symmetric.fatbin ns_symmetric_sm90.fatbin ns_elementwise.fatbin; do
    unzip -l "$jar" "dev/muon/cuda/$image" >/dev/null || { say "$jar holds no $image"; exit 1; }
done
cp "$jar" "$stage/lib/"
cp "$repo"/muon-cuda/target/dependency/*.jar "$stage/lib/"
cp -r "$repo/muon-cuda/target/test-classes" "$stage/classes/test"
for needed in "pytorch-*-linux-x86_64-gpu.jar" "cuda-*-linux-x86_64.jar" "javacpp-*-linux-x86_64.jar" \
              "openblas-*-linux-x86_64.jar"; do
    # shellcheck disable=SC2086
    ls "$stage"/lib/$needed >/dev/null 2>&1 || { say "the test class path lacks $needed"; exit 1; }
done
if ls "$stage"/lib/pytorch-*-linux-x86_64.jar >/dev/null 2>&1; then
    say "the CPU natives of libtorch are on the class path too; the gpu profile should have replaced them"
    exit 1
fi

# 2. JUnit's console launcher, of the platform version that goes with the project's JUnit (5.x.y -> 1.x.y).
junit_version=$(sed -n 's:.*<junit.version>\(.*\)</junit.version>.*:\1:p' "$repo/pom.xml")
platform_version="1.${junit_version#5.}"
(cd "$repo" && mvn -B -q ${MUON_MVN_ARGS:-} "$dependency_plugin:copy" \
    -Dartifact="org.junit.platform:junit-platform-console-standalone:$platform_version" \
    -DoutputDirectory="$stage/junit" -N)

# 3. Debian's JRE, unpacked by run.sh on the GPU machine.
(cd "$stage/jre" && apt-get download openjdk-17-jre-headless 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2)
ls "$stage"/jre/openjdk-17-jre-headless_*_amd64.deb >/dev/null

# 4. The CUDA libraries the natives need and the bundle does not hold: what run.sh looks for on the machine.
#    "required": a NEEDED entry of libtorch's GPU natives or of the CUDA runtime bindings (CudaSupport, CudaKernels);
#    "driver": comes with the NVIDIA driver; "optional": opened on demand (JavaCPP's preload list of the pytorch
#    preset, cuDNN's engine libraries, NVRTC for run-time compiled kernels), so a missing one fails only some ops.
natives="$out/stage/natives"
mkdir -p "$natives"
unzip -q -o -j "$stage"/lib/pytorch-*-linux-x86_64-gpu.jar '*.so*' -d "$natives"
unzip -q -o -j "$stage"/lib/cuda-*-linux-x86_64.jar '*/libjnicudart.so' -d "$natives"
provided=$(for j in "$stage"/lib/*-linux-x86_64*.jar; do unzip -Z1 "$j" | grep -E '\.so(\.[0-9]+)*$' | xargs -r -n1 basename; done | sort -u)
system='^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so'
{
    echo "# Written by bundle.sh from readelf -d of the bundle's natives; run.sh finds each of these on the machine."
    for f in "$natives"/*.so*; do
        readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
    done | sort -u | while read -r soname; do
        if grep -qxF "$soname" <<< "$provided" || [[ "$soname" =~ $system ]]; then
            continue
        fi
        case "$soname" in
            libcuda.so.*|libnvidia-*) echo "driver $soname" ;;
            *) echo "required $soname" ;;
        esac
    done
    for soname in libnvJitLink.so.13 libnvrtc.so.13 libcudnn_engines_precompiled.so.9 \
                  libcudnn_engines_runtime_compiled.so.9 libcudnn_heuristic.so.9; do
        echo "optional $soname"
    done
} > "$stage/cuda-libs.txt"
rm -rf "$natives"
# The repository keeps a copy for `run.sh libs`/`run.sh env` before any bundle exists (a Maven run on a GPU machine);
# a new libtorch or CUDA preset must update it.
if ! diff -u "$here/cuda-libs.txt" "$stage/cuda-libs.txt" >&2; then
    say "the CUDA libraries of these natives differ from $here/cuda-libs.txt; copy $stage/cuda-libs.txt over it"
    exit 1
fi

# 5. The launcher and a record of what went in.
cp "$here/run.sh" "$stage/run.sh"
chmod +x "$stage/run.sh"
{
    echo "muon-gpu-bundle, built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$repo" rev-parse HEAD)$(git -C "$repo" diff --quiet HEAD || echo ' (with uncommitted changes)')"
    echo "JRE: $(basename "$stage"/jre/*.deb)"
    echo "JUnit console: $(basename "$stage"/junit/*.jar)"
    echo "class path:"
    (cd "$stage/lib" && ls -1 | sed 's/^/  /')
    echo "CUDA libraries looked for on the machine:"
    grep -v '^#' "$stage/cuda-libs.txt" | sed 's/^/  /'
} > "$stage/MANIFEST.txt"

# 6. One uncompressed archive (the jars and the .deb are compressed already), split into parts.
archive=muon-gpu-bundle.tar
tar -cf "$out/$archive" -C "$out/stage" muon-gpu-bundle
cp "$stage/cuda-libs.txt" "$out/parts/cuda-libs.txt"
rm -rf "$out/stage"
(cd "$out/parts" && split -b "$part_bytes" -d -a 2 "../$archive" "$archive.part-")
(cd "$out/parts" && sha256sum "$archive".part-* > SHA256SUMS && cd .. && sha256sum "$archive" >> parts/SHA256SUMS)
rm "$out/$archive"
cp "$here/join.sh" "$out/parts/join.sh"
total=$(cat "$out"/parts/"$archive".part-* | wc -c)
count=$(ls "$out"/parts/"$archive".part-* | wc -l)
say "bundle: $total bytes in $count parts of at most $part_bytes bytes, in $out/parts"
ls -l "$out/parts" >&2
