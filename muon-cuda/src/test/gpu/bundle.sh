#!/usr/bin/env bash
# Builds the GPU test bundle: what muon-cuda's GPU checks (gpu-checks.sh: the @Tag("gpu") tests, the golden cases on
# CUDA, the training run, the timings) need on a Linux x86-64 machine with an NVIDIA GPU but no Java and no Maven.
#
#   muon-cuda/src/test/gpu/bundle.sh [OUT]      (OUT defaults to .gpubundle/ at the repository root)
#
# Needs, on the building machine: JDK 17 (jlink, jdeps), Maven (the first run downloads libtorch's GPU natives,
# 458 MB), nvcc (the kernels must be in the jar), xz (or zstd, see MUON_GPU_COMPRESSOR), unzip, readelf, sha256sum. Never part
# of `mvn verify`; GpuBundleScriptsTest checks the scripts the bundle carries, and docs/cuda.md records a dry run.
#
# Writes OUT/parts/ (docs/cuda.md, "GPU test bundle for a machine without Java or Maven"):
#   muon-gpu-core.tar.xz            a jlink runtime, our jars and test classes, JUnit's console launcher, the JNI
#                                   libraries (natives.txt, archive "core"), run.sh and gpu-checks.sh; enough on a
#                                   machine whose own libtorch (a Python PyTorch's torch/lib) the bindings accept
#   muon-gpu-torch.tar.xz.part-NN   libtorch's own GPU build (archive "torch"), split so that part 00 fits beside
#                                   the core in one copy of MUON_GPU_PART_BYTES (default 55000000) and every other
#                                   part in one copy of its own
#   SHA256SUMS                      every file above and the whole torch archive
#   join.sh, cuda-libs.txt          to check, stash and join the parts on the GPU machine
# and OUT/sizes.tsv (bytes of every file, of the archives and of the parts). OUT/torch-archive/ keeps the whole torch
# archive with a stamp of its inputs: a later build with the same torch natives reuses it.
#
# Environment: MUON_GPU_PART_BYTES; MUON_GPU_COMPRESSOR (xz, the default, or zstd) and MUON_GPU_LEVEL (its level:
# 9e for xz, 22 for zstd; a low one for a quick trial of the scripts); MUON_JLINK_COMPRESS (jlink's --compress level,
# default 2); MUON_MVN_ARGS (extra Maven arguments, e.g. -o).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
out=${1:-$repo/.gpubundle}
part_bytes=${MUON_GPU_PART_BYTES:-55000000}
compressor=${MUON_GPU_COMPRESSOR:-xz}
jlink_compress=${MUON_JLINK_COMPRESS:-2}
dependency_plugin=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

say() { printf 'bundle.sh: %s\n' "$*" >&2; }

case "$compressor" in
    xz) suffix=xz; pack=(xz -T0 "-${MUON_GPU_LEVEL:-9e}" -c) ;;
    zstd) suffix=zst; pack=(zstd -q -T0 --ultra "-${MUON_GPU_LEVEL:-22}" --long=27 -c) ;;
    *) say "MUON_GPU_COMPRESSOR must be xz or zstd, got $compressor"; exit 2 ;;
esac
for tool in mvn jlink jdeps unzip readelf sha256sum tar "$compressor"; do
    command -v "$tool" >/dev/null 2>&1 || { say "$tool is needed to build the bundle"; exit 1; }
done
if [[ "$out" == "$repo"/* ]] && ! git -C "$repo" check-ignore -q "$out/parts/x"; then
    # The parts would otherwise travel with every copy of the working tree.
    say "$out is not ignored by git; add it to .gitignore or .git/info/exclude, or pass an OUT outside the repository"
    exit 1
fi

stage="$out/stage/muon-gpu-bundle"
torch_stage="$out/stage-torch/muon-gpu-bundle"
jars="$out/stage-jars"
rm -rf "$out/stage" "$out/stage-torch" "$jars" "$out/parts"
mkdir -p "$stage"/{lib,junit,classes,natives} "$torch_stage/natives" "$jars" "$out/parts"
start=$(date +%s)

# 1. Our jars and test classes, with muon-cuda's test class path minus JUnit (the console launcher brings it) and
#    minus every natives jar (the natives come from natives.txt). requireNvcc: a bundle without kernels would only
#    test the libtorch fallback.
say "building muon-cuda and muon-core (package, tests skipped)"
rm -rf "$repo/muon-cuda/target/dependency"
(cd "$repo" && mvn -B -q ${MUON_MVN_ARGS:-} -pl muon-cuda -am -DskipTests -Dmuon.cuda.requireNvcc=true \
    package "$dependency_plugin:copy-dependencies" -DincludeScope=test -DexcludeClassifiers=linux-x86_64 \
    -DexcludeGroupIds=org.junit.jupiter,org.junit.platform,org.opentest4j,org.apiguardian)
jar=$(ls "$repo"/muon-cuda/target/muon-cuda-*.jar | grep -v -E -- '-(tests|javadoc|sources)\.jar$' | head -n 1)
for image in ns_symmetric.fatbin ns_symmetric_sm90.fatbin ns_elementwise.fatbin; do
    unzip -l "$jar" "dev/muon/cuda/$image" >/dev/null || { say "$jar holds no $image"; exit 1; }
done
cp "$jar" "$stage/lib/"
cp "$repo"/muon-cuda/target/dependency/*.jar "$stage/lib/"
cp -r "$repo/muon-cuda/target/test-classes" "$stage/classes/test"
if ls "$stage"/lib/*-linux-x86_64*.jar >/dev/null 2>&1; then
    say "a natives jar is on the class path: $(ls "$stage"/lib/*-linux-x86_64*.jar | xargs -n1 basename | tr '\n' ' ')"
    exit 1
fi

# 2. The natives jars (taken apart below, never put on the class path: JavaCPP would extract all of libtorch from
#    them) and JUnit's console launcher, of the platform version that goes with the project's JUnit (5.x.y -> 1.x.y).
versions() { sed -n "s:.*<$1>\(.*\)</$1>.*:\1:p" "$repo/pom.xml" | head -n 1; }
pytorch_version=$(versions pytorch.version)
cuda_version=$(versions cuda.version)
javacpp_version=$(versions javacpp.version)
openblas_version=$(versions openblas.version)
junit_version=$(versions junit.version)
for artifact in "org.bytedeco:pytorch:$pytorch_version:jar:linux-x86_64-gpu" \
                "org.bytedeco:cuda:$cuda_version:jar:linux-x86_64" \
                "org.bytedeco:javacpp:$javacpp_version:jar:linux-x86_64" \
                "org.bytedeco:openblas:$openblas_version:jar:linux-x86_64"; do
    (cd "$repo" && mvn -B -q ${MUON_MVN_ARGS:-} "$dependency_plugin:copy" -Dartifact="$artifact" \
        -DoutputDirectory="$jars" -N)
done
(cd "$repo" && mvn -B -q ${MUON_MVN_ARGS:-} "$dependency_plugin:copy" \
    -Dartifact="org.junit.platform:junit-platform-console-standalone:1.${junit_version#5.}" \
    -DoutputDirectory="$stage/junit" -N)

# 3. A Java runtime of the modules the class path needs (jdeps), plus jdk.unsupported (JavaCPP's Unsafe, which jdeps
#    cannot see through reflection) and java.logging (System.Logger's backend, so that INFO lines are printed).
modules=$(jdeps --print-module-deps --ignore-missing-deps --multi-release 17 -q \
    "$stage"/lib/*.jar "$stage"/junit/*.jar "$stage/classes/test" | tail -n 1)
modules=$(tr ',' '\n' <<< "$modules,jdk.unsupported,java.logging" | sort -u | paste -sd, -)
say "jlink: $modules (--compress=$jlink_compress)"
jlink --add-modules "$modules" --strip-debug --no-header-files --no-man-pages --compress="$jlink_compress" \
    --output "$stage/jre"
"$stage/jre/bin/java" -version 2>&1 | sed 's/^/    /' >&2

# 4. The natives of natives.txt, each into its archive's tree at its resource path: JavaCPP loads a library that lies
#    in a folder of the class path where it is, with no copy into its cache.
while read -r kind archive a b c; do
    [[ -z "$kind" || "$kind" == \#* ]] && continue
    case "$archive" in core) root="$stage" ;; torch) root="$torch_stage" ;; *) say "natives.txt: archive $archive?"; exit 1 ;; esac
    if [[ "$kind" == file ]]; then
        # shellcheck disable=SC2086
        source_jar=$(ls "$jars"/$a 2>/dev/null | head -n 1)
        [[ -n "$source_jar" ]] || { say "natives.txt: no jar matches $a"; exit 1; }
        mkdir -p "$root/natives/$(dirname "$b")"
        unzip -p "$source_jar" "$b" > "$root/natives/$b"
        [[ -s "$root/natives/$b" ]] || { say "natives.txt: $(basename "$source_jar") holds no $b"; exit 1; }
    else
        ln -sfn "$b" "$root/natives/$a"
    fi
done < "$here/natives.txt"

# 5. The CUDA libraries the natives need and the bundle does not hold, which run.sh looks for on the machine:
#    "required", a NEEDED entry of a native; "driver", comes with the NVIDIA driver; "optional", opened on demand
#    (kept by hand in cuda-libs.txt: JavaCPP's preload list of the pytorch preset, cuDNN's engine libraries, NVRTC).
provided=$(find "$stage/natives" "$torch_stage/natives" \( -type f -o -type l \) -printf '%f\n' | sort -u)
system='^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so'
needed=$(find "$stage/natives" "$torch_stage/natives" -type f -name '*.so*' -exec readelf -d {} \; \
    | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u | while read -r soname; do
        if grep -qxF "$soname" <<< "$provided" || [[ "$soname" =~ $system ]]; then
            continue
        fi
        case "$soname" in
            libcuda.so.*|libnvidia-*) echo "driver $soname" ;;
            *) echo "required $soname" ;;
        esac
    done)
if ! diff -u <(grep -E '^(required|driver) ' "$here/cuda-libs.txt" | sort) <(sort <<< "$needed") >&2; then
    say "the CUDA libraries these natives need differ from the required and driver lines of $here/cuda-libs.txt"
    exit 1
fi

# 6. The scripts, the list of CUDA libraries, and a record of what went in.
cp "$here/run.sh" "$here/gpu-checks.sh" "$here/cuda-libs.txt" "$stage/"
chmod +x "$stage/run.sh" "$stage/gpu-checks.sh"
{
    echo "muon-gpu-bundle, built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$repo" rev-parse HEAD)$(git -C "$repo" diff --quiet HEAD || echo ' (with uncommitted changes)')"
    echo "Java runtime: $("$stage/jre/bin/java" -version 2>&1 | head -n 1), modules $modules"
    echo "JUnit console: $(basename "$stage"/junit/*.jar)"
    echo "class path: classes/test natives/ and"
    (cd "$stage/lib" && ls -1 | sed 's/^/  /')
    echo "natives (core):"
    (cd "$stage/natives" && find . -type f -o -type l | sort | sed 's/^\./  /')
    echo "natives (torch archive):"
    (cd "$torch_stage/natives" && find . -type f | sort | sed 's/^\./  /')
} > "$stage/MANIFEST.txt"

# 7. Two compressed archives; the torch one split so that part 00 travels with the core.
#    The tar streams do not depend on when or by whom the files were written, so that the same natives give the
#    same torch archive; it is kept in OUT/torch-archive/ with a stamp of its inputs, and a later build whose torch
#    natives and compression are the same reuses it instead of compressing 840 MB again.
core="muon-gpu-core.tar.$suffix"
torch="muon-gpu-torch.tar.$suffix"
plain_tar() { tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$1" -cf - muon-gpu-bundle; }
say "compressing with ${pack[*]}"
plain_tar "$out/stage" | "${pack[@]}" > "$out/parts/$core"
stamp=$( (cd "$out/stage-torch" && find muon-gpu-bundle -type f -print0 | sort -z | xargs -0 sha256sum; \
    echo "${pack[*]}") | sha256sum | awk '{print $1}')
mkdir -p "$out/torch-archive"
if [[ -f "$out/torch-archive/$torch" && "$(cat "$out/torch-archive/stamp" 2>/dev/null)" == "$stamp" ]]; then
    say "the torch archive of the previous build has the same inputs: reused"
else
    rm -f "$out/torch-archive/stamp"
    plain_tar "$out/stage-torch" | "${pack[@]}" > "$out/torch-archive/$torch"
    echo "$stamp" > "$out/torch-archive/stamp"
fi
cp "$out/torch-archive/$torch" "$out/$torch"
core_bytes=$(stat -c %s "$out/parts/$core")
if ((core_bytes > part_bytes)); then
    say "the core archive ($core_bytes bytes) is larger than a part ($part_bytes)"
    exit 1
fi
first=$((part_bytes - core_bytes))
(cd "$out/parts" && head -c "$first" "../$torch" > "$torch.part-00" \
    && tail -c +$((first + 1)) "../$torch" | split -b "$part_bytes" -a 2 --numeric-suffixes=1 - "$torch.part-")
(cd "$out/parts" && sha256sum "$core" "$torch".part-* > SHA256SUMS && cd .. && sha256sum "$torch" >> parts/SHA256SUMS)
cp "$here/join.sh" "$here/cuda-libs.txt" "$out/parts/"

# 8. Sizes: every file of the two trees, uncompressed, then the archives and the parts.
{
    printf 'file\tbytes\n'
    (cd "$out/stage" && find muon-gpu-bundle -type f -printf '%p\t%s\n' | sort)
    (cd "$out/stage-torch" && find muon-gpu-bundle -type f -printf '%p\t%s\n' | sort)
    printf 'parts/%s\t%s\n' "$core" "$core_bytes"
    printf 'parts/%s\t%s\n' "$torch" "$(stat -c %s "$out/$torch")"
    (cd "$out/parts" && for p in "$torch".part-*; do printf 'parts/%s\t%s\n' "$p" "$(stat -c %s "$p")"; done)
} > "$out/sizes.tsv"
rm -rf "$out/stage" "$out/stage-torch" "$jars" "$out/$torch"
count=$(ls "$out"/parts/"$torch".part-* | wc -l)
say "core: $core_bytes bytes; torch: $count parts; in $out/parts ($(($(date +%s) - start)) s)"
ls -l "$out/parts" >&2
