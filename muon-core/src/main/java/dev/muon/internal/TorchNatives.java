package dev.muon.internal;

import org.bytedeco.javacpp.Loader;

import java.io.IOException;
import java.net.JarURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * Puts every native file of the libtorch preset for this platform into JavaCPP's cache before libtorch is first
 * loaded, so that a system-wide libtorch cannot be mapped beside ours.
 *
 * <p>Why: on an empty cache, JavaCPP extracts each library just before it loads it, and it loads
 * {@code libtorch.so} before {@code libtorch_cpu.so}. {@code libtorch.so} needs {@code libtorch_cpu.so}, which is
 * not in the cache yet, so the dynamic linker looks for it elsewhere; where a system libtorch is installed
 * (Debian's {@code python3-torch} puts libtorch 1.13 in {@code /lib/x86_64-linux-gnu}) it finds that one through
 * {@code ld.so.cache}. Two libtorch builds then share one process and the JVM dies with a SIGSEGV in
 * {@code pthread_mutex_lock}. With every file already in the cache, {@code $ORIGIN} resolves each dependency to the
 * cached file. JavaCPP has no option that extracts a preset whole, hence this class.
 *
 * <p>{@link #extract()} runs once per JVM and costs a few {@code stat} calls on a warm cache; on an empty one it
 * extracts what JavaCPP would have extracted anyway, a few hundred kilobytes more. Call it from a static initializer
 * of every public class a user may touch before libtorch (configs and enums included: user code that builds its
 * model right after {@code MuonConfig.defaults()} loads libtorch itself), before any field that touches libtorch.
 * {@code EntryTypesTest} checks that every public class, record and enum of the API packages does.
 *
 * <p>Not API: this package is an implementation detail shared by the modules of this project.
 */
public final class TorchNatives {
    private static final System.Logger LOG = System.getLogger(TorchNatives.class.getName());
    /** The preset's resource folder; the natives lie in its sub-folder named after the platform. */
    private static final String PRESET = "org/bytedeco/pytorch/";
    /** Set by the first {@link #extract()}: lets a test see which classes call it when they are initialized. */
    private static volatile boolean requested;

    private TorchNatives() {
    }

    /**
     * Extracts the preset's native files for this platform into the JavaCPP cache, once per JVM; later calls
     * return at once. Failures are logged, not thrown: JavaCPP then extracts as it always did and reports its own
     * error if loading fails.
     *
     * @return whether the files are in the cache (false if extraction failed or JavaCPP loads no libraries)
     */
    public static boolean extract() {
        requested = true;
        // The holder's initialization runs once, and other threads wait for it: no lock of our own.
        return Once.DONE;
    }

    /**
     * Whether {@link #extract()} has been called in this class's class loader.
     *
     * @return true once it has
     */
    static boolean requested() {
        return requested;
    }

    /**
     * Extracts and exits: for build steps that start a JVM on the user's behalf, so that the JVM after it finds a
     * complete cache.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        extract();
    }

    /**
     * The files {@link #extract()} puts into the cache, for tests and logs: every file directly inside a
     * {@code org/bytedeco/pytorch/<platform>[-extension]/} folder of a jar on the class path.
     *
     * @param loader the class loader whose jars to search
     * @return the files' URLs, empty if the natives are not in jars (then nothing needs extracting)
     * @throws IOException if a jar cannot be read
     */
    public static List<URL> nativeFiles(ClassLoader loader) throws IOException {
        String platform = Loader.getPlatform();
        List<URL> files = new ArrayList<>();
        Enumeration<URL> folders = loader.getResources(PRESET);
        while (folders.hasMoreElements()) {
            URL folder = folders.nextElement();
            URLConnection connection = folder.openConnection();
            if (!(connection instanceof JarURLConnection jar)) {
                // Natives in a plain folder are loaded where they lie: no cache, no ordering problem.
                continue;
            }
            connection.setUseCaches(false);
            String base = folder.toString().substring(0, folder.toString().indexOf("!/") + 2);
            try (JarFile file = jar.getJarFile()) {
                Enumeration<JarEntry> entries = file.entries();
                while (entries.hasMoreElements()) {
                    JarEntry entry = entries.nextElement();
                    if (!entry.isDirectory() && isPlatformFile(entry.getName(), platform)) {
                        files.add(new URL(base + entry.getName()));
                    }
                }
            }
        }
        return files;
    }

    /** {@code org/bytedeco/pytorch/<platform>/<file>} or {@code .../<platform>-gpu/<file>}, no deeper. */
    private static boolean isPlatformFile(String name, String platform) {
        if (!name.startsWith(PRESET)) {
            return false;
        }
        String rest = name.substring(PRESET.length());
        int slash = rest.indexOf('/');
        if (slash < 0 || rest.indexOf('/', slash + 1) >= 0) {
            return false;
        }
        String folder = rest.substring(0, slash);
        return folder.equals(platform) || folder.startsWith(platform + "-");
    }

    /**
     * Whether JavaCPP is on the class path at all: muon-djl uses this module's configs and rules (whose static
     * initializers call {@link #extract()}) without bytedeco's bindings, and then there is nothing to extract.
     */
    private static boolean bindingsPresent() {
        return onClassPath("org.bytedeco.javacpp.Loader", TorchNatives.class.getClassLoader());
    }

    /**
     * Whether a class is on a class path, asked without initializing it, so that nothing native loads.
     *
     * @param className the class's binary name
     * @param loader    the class loader to ask
     * @return true if the loader finds it
     */
    static boolean onClassPath(String className, ClassLoader loader) {
        try {
            Class.forName(className, false, loader);
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    private static final class Once {
        static final boolean DONE = bindingsPresent() && Extraction.run();
    }

    /** The extraction itself, in a class of its own so that nothing loads JavaCPP's classes when it is absent. */
    private static final class Extraction {
        private static boolean run() {
            if (!Loader.isLoadLibraries()) {
                return false;
            }
            long start = System.nanoTime();
            try {
                List<URL> files = nativeFiles(TorchNatives.class.getClassLoader());
                for (URL file : files) {
                    // Skips a file whose size and time stamp already match, as JavaCPP's own loading does.
                    Loader.cacheResource(file);
                }
                LOG.log(System.Logger.Level.DEBUG, () -> "libtorch natives in the JavaCPP cache: " + files.size()
                        + " files in " + (System.nanoTime() - start) / 1_000_000 + " ms");
                return true;
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "could not put libtorch's native files into the JavaCPP "
                        + "cache before loading them (" + e + "); if a system-wide libtorch is installed, the "
                        + "first JVM on an empty cache may crash (SIGSEGV in pthread_mutex_lock); a program "
                        + "prevents it by calling org.bytedeco.javacpp.Loader.cacheResource for libtorch_cpu before "
                        + "it touches libtorch (Getting started, 'A system-wide libtorch and the first run')", e);
                return false;
            }
        }
    }
}
