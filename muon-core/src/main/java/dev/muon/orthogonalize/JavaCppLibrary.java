package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;

import org.bytedeco.javacpp.Loader;

import java.io.File;
import java.io.IOException;

/**
 * The JavaCPP half of {@link NativeLibrary}'s loading, apart so that the loader itself names no bytedeco class: it
 * runs only where JavaCPP's libtorch preset is on the class path, never in muon-djl's JVM.
 */
final class JavaCppLibrary {
    private JavaCppLibrary() {
    }

    /**
     * Loads libtorch, then extracts {@code resource} into JavaCPP's cache, beside libtorch's natives
     * ({@code ~/.javacpp/cache}, or {@code -Dorg.bytedeco.javacpp.cachedir}): JavaCPP keys the copy by the jar,
     * re-extracts it when the jar changes, and serialises concurrent JVMs; where libtorch's natives load, this one
     * does too.
     *
     * @param resource the library's absolute resource name
     * @return the cached file, to {@code System.load}
     * @throws IOException if it cannot be extracted
     */
    static File afterLibtorch(String resource) throws IOException {
        // Before libtorch loads: see TorchNatives for the crash this prevents.
        TorchNatives.extract();
        // libtorch first, so that our libgomp.so.1 is libtorch's and its OpenMP pool is the one we use.
        Loader.load(org.bytedeco.pytorch.global.torch.class);
        // Not null: the probe saw the resource.
        return Loader.cacheResource(JavaCppLibrary.class, resource);
    }
}
